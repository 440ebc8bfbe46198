"""Continuous evaluation on the README's TRL run, for real on the CPU: TRL 1.16.0 trains the tiny model and
publishes a version every two steps; the evaluator role (the launch's ``evaluator``
service, its own process group beside the training, started by the local launcher's supervisor) measures each version on a held-out suite. It is SIGKILLed in the middle of
a version (while it holds that version's lease, before its result exists) and the supervisor starts it again: it evaluates only
what was missing. Every version ends with exactly one result per suite, equal to the score computed here
independently from that version's weights (greedy), and the gate promoted exactly the versions at its threshold."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from rladapt.evaluate import EvalSettings, Evaluator, read_results
from rladapt.evaluate.results import read_gate
from rladapt.launch import Runner
from rladapt.pool import VersionStore
from tests.conftest import REPO
from tests.pool.test_cli import rladapt
from tests.support.evaluation import SUITE, VAL, continuous, independent_score

pytest.importorskip("torch", reason="the evaluator generates with torch (the trl extra's environment)")
pytest.importorskip("transformers", reason="the evaluator generates with transformers")

SPEC = "examples/grpo-tiny-trl.yaml"
GATE_MIN = 0.05


def _evaluator_state(run_dir: Path) -> dict[str, object] | None:
    """The evaluator role as the local launcher's supervisor last wrote it (``services/state.json``)."""
    try:
        roles = json.loads((run_dir / "services" / "state.json").read_text())
    except (OSError, ValueError):
        return None  # not written yet, or being replaced
    return next((r for r in roles if r["name"] == "evaluator"), None)


def test_the_readme_trl_run_is_evaluated_once_per_version_across_a_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ck, pool = tmp_path / "ck", tmp_path / "pool"
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    gated = continuous(f", gate: {{suite: {SUITE}, min: {GATE_MIN}, promote: serving}}")
    overrides = [
        "spec.training.steps=6",
        "spec.checkpoint.every_steps=2",
        "spec.checkpoint.keep_last=3",
        f"spec.checkpoint.dir={ck}",
        f"spec.runtime.python={sys.executable}",
        f"spec.pool.store={pool}",
        gated,
    ]
    runner = Runner()
    planned = runner.dryrun(SPEC, overrides, framework="trl==1.16.0")
    (role,) = planned.native.services
    assert (role.name, role.outlives_job, role.argv[1:3]) == ("evaluator", True, ("-m", "rladapt.evaluate"))
    settings = EvalSettings.from_json(json.loads(role.argv[-1]))
    assert settings.final_step == 6 and settings.store == str(pool)

    run = runner.launch(
        SPEC, overrides, framework="trl==1.16.0"
    )  # the local launcher starts the evaluator role
    log = run.dir / "services" / "evaluator.log"
    store = VersionStore(pool)
    results = ck / "rladapt-eval"
    killed_in: str | None = None
    state: dict[str, object] | None = None
    before: dict[str, tuple[int, int]] = {}
    offset = 0
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and killed_in is None:
        state = _evaluator_state(run.dir)
        if state is not None and state["state"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            break  # it ended before it could be caught in the middle of a version
        held = [p.parent.name for p in (pool / "leases").glob("v*/evaluator.json")]
        done = {p.parent.name: p for p in results.glob("v*/share-of-a.json")}
        busy = [v for v in held if v not in done]
        if state is not None and state["state"] == "RUNNING" and done and busy:
            offset = log.stat().st_size
            os.killpg(int(state["pgid"]), signal.SIGKILL)  # type: ignore[call-overload]  # mid-version: leased, no result
            killed_in = busy[0]
            before = {v: (p.stat().st_ino, p.stat().st_mtime_ns) for v, p in done.items()}
        time.sleep(0.02)
    assert killed_in is not None, log.read_text()[-3000:]
    assert not (results / killed_in / "share-of-a.json").exists()

    final = runner.wait(run, interval=0.2, timeout=600)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-2000:]
    versions = [(m.version, m.source.step) for m, _ in store.of_run(run.id)]
    assert [step for _, step in versions] == [2, 4, 6]

    # the supervisor restarted it (it outlives the job: it drains the last versions, then exits 0)
    while time.monotonic() < deadline:
        state = _evaluator_state(run.dir)
        if state is not None and state["state"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            break
        time.sleep(0.2)
    assert state is not None and (state["state"], state["restarts"]) == ("SUCCEEDED", 1), (
        state,
        log.read_text()[-3000:],
    )
    after_kill = log.read_text()[offset:]
    evaluated_again = sorted(line.split()[1] for line in after_kill.splitlines()
                             if "share-of-a: score" in line)  # fmt: skip
    assert evaluated_again == sorted(v for v, _ in versions if v not in before)
    assert killed_in in evaluated_again
    for version, (inode, mtime) in before.items():  # what was measured before the kill is not measured again
        stat = (results / version / "share-of-a.json").stat()
        assert (stat.st_ino, stat.st_mtime_ns) == (inode, mtime), version

    found, warnings = read_results(results, run.id)
    assert warnings == []
    assert sorted((r.version, r.suite, r.step) for r in found) == [(v, "share-of-a", s) for v, s in versions]
    assert sorted(p.name for p in results.iterdir() if p.is_dir()) == [v for v, _ in versions]
    for result in found:
        assert result.score == pytest.approx(independent_score(store.path(result.version)), abs=1e-9)
        assert len(result.samples) == len(VAL.read_text().splitlines())

    passing = [r.version for r in found if r.score >= GATE_MIN]
    for result in found:
        decision = read_gate(results, result.version)
        assert decision is not None and decision["passed"] == (result.version in passing), decision
    aliases = store.aliases()
    if passing:  # the newest passing version serves: each promotion moved it forward, never back
        assert aliases["serving"] == passing[-1]
        assert [h["version"] for h in store.alias_state("serving").history] == passing
    else:
        assert "serving" not in aliases
    assert [lease for lease in store.leases() if lease.holder == "evaluator"] == []

    # the results are the run's metrics: at the step of each version, naming it
    code, out, err = rladapt(
        capsys, "metrics", run.id, "--format", "json", "--metric", "eval/share-of-a/score"
    )
    assert code == 0, err
    doc = json.loads(out)
    scores = {r.step: r.score for r in found}
    assert [(row["step"], row["eval/share-of-a/score"]) for row in doc["steps"] if row["eval/share-of-a/score"]
            is not None] == sorted(scores.items())  # fmt: skip
    assert doc["versions"]["eval/share-of-a/score"] == {str(s): v for v, s in versions}
    code, out, err = rladapt(capsys, "metrics", run.id)
    assert code == 0 and "eval/share-of-a/score" in out.splitlines()[0], err

    # status: how far behind the evaluator is
    code, out, err = rladapt(capsys, "status", run.id, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["evaluation"] == {"versions": 3, "evaluated": 3, "behind": 0, "pending": [],
                                             "suites": ["share-of-a"]}  # fmt: skip
    code, out, err = rladapt(capsys, "status", run.id)
    assert "evaluator: 3 of 3 versions evaluated on share-of-a (up to date)" in out, out

    # on demand: nothing is measured twice unless asked; bad input is exit 2
    code, out, err = rladapt(capsys, "eval", run.id, "--step", "4")
    assert (code, out.strip()) == (0, "nothing to evaluate: every chosen version has a result for every suite "
                                      "(--force to measure again)"), err  # fmt: skip
    code, out, err = rladapt(capsys, "eval", run.id, "--version", "2", "--force", "--format", "json")
    assert code == 0, err
    (again,) = json.loads(out)
    assert (again["version"], again["step"], again["score"]) == ("v00000002", 4, scores[4])
    for args, says in [
        (("--suite", "nope"), "--suite 'nope': the run has no such suite (suites: share-of-a)"),
        (("--step", "3"), "--step 3: the run has no version of that step (steps: 2, 4, 6)"),
        (("--version", "v00000009"), "has no version v00000009"),
        (("--version", "2", "--step", "4"), "give one of them"),
    ]:
        code, out, err = rladapt(capsys, "eval", run.id, *args)
        assert code == 2 and says in err and "Traceback" not in err, (args, err)

    # follow: checkpoints, on a copy of the run's checkpoint directory: each complete step is a version of its own,
    # measured from the checkpoint's files, with the score its pool version had
    copy = tmp_path / "ck-copy"
    shutil.copytree(ck, copy, ignore=shutil.ignore_patterns("rladapt-eval"))
    by_steps = settings.continuous.model_copy(update={"follow": "checkpoints", "gate": None})
    by_checkpoint = Evaluator(dataclasses.replace(settings, continuous=by_steps, checkpoint_dir=str(copy),
                                                  store=None), run_id=run.id, say=lambda _: None)  # fmt: skip
    made = by_checkpoint.run_pass()
    assert [(r.version, r.step, r.score) for r in made] == [(f"step-{s}", s, scores[s]) for s in (2, 4, 6)]
    assert by_checkpoint.run_pass() == []
