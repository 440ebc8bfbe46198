"""``read_run_metrics`` / ``read_metrics_dir`` on a real TRL run: the TensorBoard events its rendered launch wrote,
in neutral names, agreeing with what the driver's progress callback saw for each step."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from rladapt.adapters.trl.metrics import names
from rladapt.launch import Runner
from rladapt.metrics import METRICS_DIR, NAMES, Absent, read_metrics_dir, read_run_metrics
from rladapt.metrics.events import event_dirs
from tests.adapters.trl.conftest import trl_root
from tests.conftest import REPO

from .conftest import SPEC, STEPS, TrlRun, overrides


def test_a_trl_run_reads_back_in_neutral_names(trl_run: TrlRun) -> None:
    m = read_run_metrics(trl_run.run)
    assert m.run_id == trl_run.run.id and m.framework == "trl" and m.version == "1.16.0"
    # the rendered launch wrote its events where rladapt reads them
    assert event_dirs(trl_run.checkpoint_dir / METRICS_DIR)
    assert m.steps()[-1] == STEPS
    # the job's start, as the bootstrap recorded it: before its first logged step (what no_first_step reads)
    assert m.started is not None and m.started <= min(m.wall_time.values())
    for name in ("policy_loss", "reward_mean", "response_length_mean", "response_clip_ratio", "entropy"):
        assert sorted(m.series[name]) == list(range(1, STEPS + 1)), name
    for name in ("grad_norm", "lr", "step_time_s"):
        assert set(m.series[name]) == set(range(1, STEPS + 1)), name
    assert m.native["reward_mean"] == "train/reward"
    assert m.native["policy_loss"] == "train/loss"
    assert m.native["response_length_mean"] == "train/completions/mean_length"
    # a native tag read as a neutral name is not repeated; tags without a neutral meaning keep theirs
    assert "train/reward" not in m.series
    assert "train/reward_std" in m.series and "train/num_tokens" in m.series
    # 1.16.0 logs no throughput nor generation time: absent, not approximated
    assert "throughput_tokens_per_s_per_gpu" not in m.series and "generation_time_s" not in m.series
    # kl: logged only with beta != 0 (the example's beta is TRL's default 0.0)
    assert "kl" not in m.series

    # the same figures the driver's progress callback recorded from the Trainer's own logs
    rows = [
        json.loads(line)
        for line in (trl_run.checkpoint_dir / "rladapt-metrics.jsonl").read_text().splitlines()
    ]
    by_step = {r["step"]: r for r in rows if "reward" in r["logs"]}
    for step, row in by_step.items():
        assert math.isclose(m.series["reward_mean"][step], row["logs"]["reward"], rel_tol=1e-6)
        assert math.isclose(m.series["policy_loss"][step], row["logs"]["loss"], rel_tol=1e-6, abs_tol=1e-7)
        assert math.isclose(m.series["lr"][step], row["logs"]["learning_rate"], rel_tol=1e-6)


def test_validation_scores_are_read_at_the_eval_steps(trl_run: TrlRun) -> None:
    m = read_run_metrics(trl_run.run)
    assert sorted(m.series["val_score"]) == [2, 4]
    assert m.native["val_score"] == "eval/reward"
    assert all(0.0 <= v <= 1.0 for v in m.series["val_score"].values())  # share_of_a is a share
    best = m.best("val_score")
    assert best is not None and best[1] == max(m.series["val_score"].values())


def test_read_metrics_dir_without_a_run(trl_run: TrlRun) -> None:
    m = read_metrics_dir(trl_run.checkpoint_dir / METRICS_DIR, "trl", "1.16.0")
    assert m.run_id == "" and set(m.series) >= {"reward_mean", "val_score"}
    # without a version: no mapping, every tag under its native name
    raw = read_metrics_dir(trl_run.checkpoint_dir / METRICS_DIR, "trl", None)
    assert not set(raw.series) & NAMES and "train/reward" in raw.series and raw.native == {}
    # an empty directory: no series, no error
    empty = read_metrics_dir(trl_run.checkpoint_dir / "nowhere", "trl", "1.16.0")
    assert empty.series == {} and empty.last_step() is None


@pytest.mark.parametrize("version", ["0.23.1", "0.29.1"])
def test_the_older_pinned_trl_versions_read_back_too(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real training with each older pinned TRL (its wheel first on the job's path, as the conformance suite
    imports it), 2 steps, one evaluation: each version's names are read back under the neutral ones."""
    monkeypatch.chdir(REPO)
    path = f"{trl_root(version)}{os.pathsep}{REPO}"
    ck = tmp_path / "ck"
    runner = Runner()
    run = runner.launch(
        SPEC, overrides(ck, f"spec.env={{PYTHONPATH: '{path}'}}", steps=2), framework=f"trl=={version}"
    )
    final = runner.wait(run, interval=0.2, timeout=600)
    output = (run.dir / "output.log").read_text()
    assert final.state == "SUCCEEDED", output[-3000:]
    assert f"[rladapt] TRL {version} GRPO" in output  # that version trained, not the installed one
    m = read_run_metrics(run.refresh())
    assert m.version == version
    mapping = names(version)
    logged = {n for n, e in mapping.entries.items() if not isinstance(e, Absent)}
    # every neutral quantity the version logs is there (kl only with beta != 0), the absent ones are not
    assert set(m.series) & NAMES == logged - {"kl"}
    assert sorted(m.series["reward_mean"]) == [1, 2] and sorted(m.series["val_score"]) == [2]
    assert ("step_time_s" in m.series) == (version != "0.23.1")
