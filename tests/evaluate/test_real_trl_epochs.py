"""A run counted in epochs ends its evaluator too, for real on the CPU: the README's TRL job (TRL 1.16.0, the tiny
model) trained for one epoch over a few prompts, so nobody knows its last step before it ends; the local launcher
starts the evaluator role beside it. Once the training has ended, the evaluator measures what the job left and
exits 0 by itself (no `rladapt stop`), every published version measured exactly once."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the TRL job and the evaluator need torch")
pytest.importorskip("trl")

from rladapt.evaluate import EvalSettings, read_results
from rladapt.launch import Runner
from rladapt.pool import VersionStore
from rladapt.runs.owner import HEARTBEAT_ENV, read_owner
from tests.evaluate.test_real_trl import REPO, SPEC, _evaluator_state


def test_the_evaluator_of_a_run_counted_in_epochs_exits_by_itself_once_every_version_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ck, pool = tmp_path / "ck", tmp_path / "pool"
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(HEARTBEAT_ENV, "1")  # the job's and the evaluator's: the end stands after 2 s
    train = tmp_path / "train.jsonl"
    train.write_text(
        "".join((REPO / "examples/tiny/prompts.jsonl").read_text().splitlines(keepends=True)[:8])
    )
    overrides = [
        "spec.training.steps=null",
        "spec.training.epochs=1",
        f"spec.data.train=[{train}]",
        "spec.checkpoint.every_steps=2",
        "spec.checkpoint.keep_last=10",
        f"spec.checkpoint.dir={ck}",
        f"spec.runtime.python={sys.executable}",
        f"spec.pool.store={pool}",
        "spec.eval.continuous={follow: pool, suites: [{name: share-of-a, data: [examples/tiny/val.jsonl], "
        "scorer: {function: {path: examples/tiny/reward.py, name: share_of_a}}, "
        "generation: {max_new_tokens: 4, temperature: 0.0}}]}",
    ]
    runner = Runner()
    (role,) = runner.dryrun(SPEC, overrides, framework="trl==1.16.0").native.services
    assert EvalSettings.from_json(json.loads(role.argv[-1])).final_step is None  # epochs: no known last step

    run = runner.launch(SPEC, overrides, framework="trl==1.16.0")
    final = runner.wait(run, interval=0.2, timeout=900)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-2000:]

    log = run.dir / "services" / "evaluator.log"
    deadline = time.monotonic() + 900
    state = _evaluator_state(run.dir)
    while time.monotonic() < deadline and not (
        state and state["state"] in ("SUCCEEDED", "FAILED", "STOPPED")
    ):
        time.sleep(0.2)
        state = _evaluator_state(run.dir)
    assert state is not None and (state["state"], state["exit_code"], state["restarts"]) == (
        "SUCCEEDED",
        0,
        0,
    ), (
        state,
        log.read_text()[-3000:] if log.exists() else "",
    )
    assert "the training ended (it exited) and every version it left is measured: done" in log.read_text()
    owner = read_owner(ck)
    assert owner is not None and owner.run == run.id and owner.ended is not None  # the job's end marker

    versions = [(m.version, m.source.step) for m, _ in VersionStore(pool).of_run(run.id)]
    assert len(versions) >= 2, versions
    found, warnings = read_results(ck / "rladapt-eval", run.id)
    assert warnings == []
    assert sorted((r.version, r.step) for r in found) == sorted(versions)
    measured = [line.split()[1] for line in log.read_text().splitlines() if "share-of-a: score" in line]
    assert sorted(measured) == sorted(v for v, _ in versions)  # each once
