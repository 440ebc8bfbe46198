"""``rladapt compare``, ``status`` and ``watch`` through the CLI on real TRL runs: two runs of the tiny example
(4 steps, evaluated every 2) with different learning rates and seeds, the second with a health threshold off."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rladapt.launch import Runner
from rladapt.metrics import read_run_metrics
from rladapt.runs import Run, RunStore
from tests.cli.test_cli import rladapt
from tests.conftest import REPO

from .conftest import KL_WHEN, SPEC, STEPS, overrides

#: The second run: another learning rate and data order; the length rule off (the tiny example's responses of
#: at most 8 tokens are nearly all cut, which the first run is warned about).
SECOND = ["spec.training.optimizer.lr=0.05", "spec.data.seed=1", "spec.health.response_clip_ratio_max=null"]


@dataclass(frozen=True)
class TwoRuns:
    a: Run
    b: Run
    home: Path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return rladapt(*args, env={"RLADAPT_HOME": str(self.home)})


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoRuns]:
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    root = tmp_path_factory.mktemp("trl-compare")
    home = root / "home"
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        runner = Runner(store=RunStore(home))
        a = runner.launch(SPEC, overrides(root / "ck-a"), framework="trl")
        b = runner.launch(SPEC, overrides(root / "ck-b", *SECOND), framework="trl")
        finals = [runner.wait(run, interval=0.2, timeout=600) for run in (a, b)]
    finally:
        os.chdir(cwd)
    for run, final in zip((a, b), finals, strict=True):
        assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-3000:]
    yield TwoRuns(a=a.refresh(), b=b.refresh(), home=home)


def test_compare_table_gives_each_step_and_the_difference(two_runs: TwoRuns) -> None:
    a, b = (read_run_metrics(r) for r in (two_runs.a, two_runs.b))
    res = two_runs.cli("compare", two_runs.a.id, two_runs.b.id[:-3], "-m", "reward_mean", "-m", "val_score")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == [f"A: {two_runs.a.id} (trl 1.16.0) (baseline)", f"B: {two_runs.b.id} (trl 1.16.0)"]
    start = lines.index("reward_mean (higher is better)")
    assert lines[start + 1].split() == ["step", "A", "B", "B-A"]
    rows = [line.split() for line in lines[start + 2 : start + 2 + STEPS]]
    assert [int(r[0]) for r in rows] == list(range(1, STEPS + 1))
    for step, va, vb, diff in rows:
        want_a, want_b = a.series["reward_mean"][int(step)], b.series["reward_mean"][int(step)]
        assert float(va) == pytest.approx(want_a, rel=1e-5) and float(vb) == pytest.approx(want_b, rel=1e-5)
        assert float(diff) == pytest.approx(want_b - want_a, rel=1e-4, abs=1e-7)
    assert lines[start + 2 + STEPS].split()[0] == "mean"
    val = lines.index("val_score (higher is better)")
    assert [line.split()[0] for line in lines[val + 2 : val + 4]] == ["2", "4"]  # evaluated every 2 steps


def test_compare_json_and_csv(two_runs: TwoRuns) -> None:
    a, b = (read_run_metrics(r) for r in (two_runs.a, two_runs.b))
    res = two_runs.cli("compare", two_runs.a.id, two_runs.b.id, "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["baseline"] == two_runs.a.id
    # by default every neutral name both runs logged (TRL 1.16.0 with beta 0 logs no KL)
    assert list(doc["metrics"])[:2] == ["policy_loss", "reward_mean"] and "kl" not in doc["metrics"]
    assert list(doc["metrics"])[-1] == "val_score"
    entropy = doc["metrics"]["entropy"]
    assert entropy["unit"] == "nats"
    for row in entropy["steps"]:
        s = row["step"]
        assert row["values"] == {two_runs.a.id: a.series["entropy"][s], two_runs.b.id: b.series["entropy"][s]}
        assert row["diff"][two_runs.b.id] == pytest.approx(b.series["entropy"][s] - a.series["entropy"][s])
    assert entropy["mean_diff"][two_runs.b.id]["steps"] == STEPS

    res = two_runs.cli("compare", two_runs.a.id, two_runs.b.id, "--format", "csv", "-m", "val_score")
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(res.stdout.splitlines()))
    assert [(r["step"], r["run"]) for r in rows] == [
        (s, r) for s in ("2", "4") for r in (two_runs.a.id, two_runs.b.id)
    ]
    assert rows[0]["diff_vs_baseline"] == "" and float(rows[1]["diff_vs_baseline"]) == pytest.approx(
        b.series["val_score"][2] - a.series["val_score"][2]
    )


def test_compare_plot(two_runs: TwoRuns, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra")
    png = tmp_path / "compare.png"
    metrics = ["reward_mean", "val_score", "entropy", "response_clip_ratio"]
    res = two_runs.cli(
        "compare", two_runs.a.id, two_runs.b.id, "--plot", str(png), *(f"-m{m}" for m in metrics)
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == f"plot: {png}"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000

    from rladapt.metrics.compare import compare
    from rladapt.metrics.plot import figure

    fig = figure(compare([read_run_metrics(two_runs.a), read_run_metrics(two_runs.b)], metrics))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split()[0] for ax in panels] == metrics
    assert all(len(ax.get_lines()) == 2 for ax in panels)
    assert [np.asarray(line.get_xdata()).size for line in panels[1].get_lines()] == [
        2,
        2,
    ]  # val_score at steps 2 and 4


def test_compare_errors_exit_2(two_runs: TwoRuns) -> None:
    a, b = two_runs.a.id, two_runs.b.id
    cases = {
        ("compare", a): "compare needs at least two runs (RUN_A RUN_B), got 1",
        ("compare", a, "nope"): "no run 'nope'",
        ("compare", a, a[:-3]): f"{a[:-3]!r} and {a!r} are the same run",
        (
            "compare",
            a,
            b,
            "-m",
            "reward",
        ): "--metric reward: no such metric; expected a neutral name (policy_loss,",
        ("compare", a, b, "-m", "generation_time_s"): (
            f"--metric generation_time_s: no run logged it ({a}: TRL times no generation on its own"
        ),
        ("compare", a, b, "-m", "kl"): (f"--metric kl: no run logged it ({a}: {KL_WHEN}; {b}: {KL_WHEN})"),
    }
    for args, message in cases.items():
        res = two_runs.cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert message in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.stderr
    assert two_runs.cli("compare").returncode == 2


def test_status_shows_progress_and_the_recorded_thresholds(two_runs: TwoRuns) -> None:
    res = two_runs.cli("status", two_runs.a.id)
    assert res.returncode == 0, res.stderr
    lines = dict(line.split(":", 1) for line in res.stdout.splitlines() if ":" in line and line[0] != " ")
    assert lines["step"].strip() == f"{STEPS} / {STEPS} (100%)"
    assert lines["per step"].strip().endswith(" s")
    assert "eta" not in lines  # the run ended
    m = read_run_metrics(two_runs.a)
    reward, val = m.latest("reward_mean"), m.latest("val_score")
    assert reward is not None and val is not None
    assert lines["reward"].strip() == f"{reward[1] + 0.0:.4g} (step {STEPS})"
    # the validation score is status's own line (with the best checkpoint), not repeated by the progress rows
    assert "val" not in lines and lines["validation"].startswith(f" {val[1]:.4g} at step {STEPS}, best ")
    assert "length_limit: " in lines["warning"] and "above response_clip_ratio_max 0.2" in lines["warning"]

    # the second run was launched with the length rule off: no warning, and the record says why
    res = two_runs.cli("status", "--json", two_runs.b.id)
    doc = json.loads(res.stdout)
    assert doc["health"]["response_clip_ratio_max"] is None and doc["total_steps"] == STEPS
    progress = doc["progress"]
    assert (progress["step"], progress["total_steps"], progress["eta_seconds"]) == (STEPS, STEPS, None)
    assert progress["val_score"]["step"] == STEPS and progress["warnings"] == []
    assert progress["seconds_per_step"] > 0


def test_watch_a_finished_run(two_runs: TwoRuns) -> None:
    res = two_runs.cli("watch", two_runs.a.id)
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert out[0].startswith(f"step {STEPS} / {STEPS} | per step ") and " | reward " in out[0]
    assert out[1].startswith("warning: length_limit: ")
    assert out[-1] == f"run {two_runs.a.id}: SUCCEEDED"


def test_watch_follows_a_running_run_until_it_ends(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    env = {**os.environ, "RLADAPT_HOME": str(tmp_path / "home")}
    launched = subprocess.run(
        [
            sys.executable,
            "-m",
            "rladapt.cli",
            "launch",
            "-f",
            "trl",
            SPEC,
            # 8 steps, saved every 2: long enough for a few reads while it runs
            *overrides(tmp_path / "ck", *SECOND, steps=8),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    run_id = launched.stdout.strip()
    watched = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "watch", run_id, "--interval", "0.3", "--timeout", "600"],
        capture_output=True,
        text=True,
        env=env,
        timeout=660,
    )
    assert watched.returncode == 0, watched.stderr
    out = watched.stdout.splitlines()
    steps = [int(line.split()[1]) for line in out if line.startswith("step ")]
    assert steps == sorted(set(steps)) and steps[-1] == 8  # each step once, in order, to the last
    # while it ran (the last step is logged before the final save): an ETA from the time per step
    assert any(" | eta " in line for line in out), out
    assert out[-1] == f"run {run_id}: SUCCEEDED"


def test_watch_a_failed_run_exits_1(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    env = {"RLADAPT_HOME": str(tmp_path / "home")}
    args = [*overrides(tmp_path / "ck"), "spec.reward.function.name=nowhere"]
    res = rladapt("launch", "-f", "trl", "--follow", SPEC, *args, env=env, cwd=REPO)
    run_id = res.stdout.split()[0]
    res = rladapt("watch", run_id, env=env)
    assert res.returncode == 1
    assert res.stdout.splitlines() == ["no metrics logged", f"run {run_id}: FAILED"]
    assert f"error: run {run_id} ended FAILED (exit code 2)" in res.stderr
    status = rladapt("status", run_id, env=env)
    assert "metrics:   none logged yet" in status.stdout
    other = rladapt("launch", "-f", "trl", "--follow", SPEC, *args, env=env, cwd=REPO).stdout.split()[0]
    res = rladapt("compare", run_id, other, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"error: no metrics logged yet by {run_id}, {other} (see `rladapt metrics RUN`)" in res.stderr


@pytest.mark.parametrize("bad", ["--interval=0", "--timeout=-1"])
def test_watch_bad_options_exit_2(two_runs: TwoRuns, bad: str) -> None:
    assert two_runs.cli("watch", two_runs.a.id, bad).returncode == 2
