"""Real TRL training on the local launcher, killed and resumed: the same per-step loss and reward as a run that
was never interrupted.

Everything is real: ``rladapt.launch.Runner``, the local launcher, the bootstrap's resume decision, TRL 1.16.0 on
CPU torch with the tiny model of ``examples/``. Two kills: SIGKILL of the whole job from outside once
``checkpoint-2`` is complete (then ``Runner.resume``, as ``rladapt resume`` does), and a kill while
``checkpoint-4`` is being written (``tests/support/kill_in_save``, a fault injected in transformers' own save),
which ``lifecycle.max_restarts: 1`` brings back by itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rladapt.adapters.trl.checkpoints import scan
from rladapt.launch import Runner
from rladapt.plugins.checkpoints import ASIDE_DIR
from rladapt.resume import read_attempts
from rladapt.runs import RunStore
from tests.launchers.test_slurm import slurm, slurm_env  # noqa: F401 (fixtures: the real Slurm of .ci/slurm.sh)

REPO = Path(__file__).resolve().parents[1]
SPEC = "examples/grpo-tiny-trl.yaml"
KILL_IN_SAVE = REPO / "tests" / "support" / "kill_in_save"
VERSION = "trl==1.16.0"


def _overrides(ck: Path, *extra: str) -> list[str]:
    return [
        "spec.training.steps=4",
        "spec.checkpoint.every_steps=2",
        "spec.checkpoint.keep_last=3",
        "spec.checkpoint.resume=auto",
        f"spec.checkpoint.dir={ck}",
        f"spec.runtime.python={sys.executable}",
        *extra,
    ]


def _per_step(ck: Path) -> dict[int, tuple[float, float]]:
    """The last (loss, reward) logged for each step: a step redone after a kill counts once, as redone."""
    out = {}
    for line in (ck / "rladapt-metrics.jsonl").read_text().splitlines():
        entry = json.loads(line)
        out[int(entry["step"])] = (float(entry["loss"]), float(entry["reward"]))
    return out


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[float, float]]:
    ck = tmp_path_factory.mktemp("uninterrupted") / "ck"
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        # its own store: a module fixture starts before the per-test RLADAPT_HOME of tests/conftest.py
        runner = Runner(store=RunStore(tmp_path_factory.mktemp("home")))
        run = runner.launch(SPEC, _overrides(ck), framework=VERSION)
        final = runner.wait(run, interval=0.2, timeout=300)
    finally:
        os.chdir(cwd)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-2000:]
    steps = _per_step(ck)
    assert sorted(steps) == [1, 2, 3, 4]
    return steps


def test_sigkill_after_a_checkpoint_then_resume_matches_the_uninterrupted_run(
    uninterrupted: dict[int, tuple[float, float]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(REPO)
    ck = tmp_path / "ck"
    runner = Runner()
    started = time.monotonic()
    run = runner.launch(SPEC, _overrides(ck), framework=VERSION)
    deadline = time.monotonic() + 300
    while not any(c.step == 2 and c.complete for c in scan(ck, "1.16.0").checkpoints):
        assert time.monotonic() < deadline, (run.dir / "output.log").read_text()[-2000:]
        time.sleep(0.05)
    handle = run.handle
    assert handle is not None
    os.killpg(int(handle["pgid"]), signal.SIGKILL)  # the whole job, wrapper included: a lost node
    killed_after = time.monotonic() - started
    assert runner.wait(run, interval=0.1, timeout=30).state == "FAILED"

    attempt, chosen = runner.resume(run)
    assert attempt == 2 and chosen is not None and chosen.step == 2
    final = runner.wait(run, interval=0.2, timeout=300)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-2000:]
    assert _per_step(ck) == uninterrupted
    starts = read_attempts(run.dir)
    assert [s["from_step"] for s in starts] == [None, 2]
    assert [a.kind for a in run.refresh().record.attempts] == ["launch", "resume"]
    # what `rladapt status` and `rladapt runs` show of it
    from rladapt.cli import main as cli_main

    for verb in ("status", "runs"):
        capsys.readouterr()
        cli_main([verb, *([run.id] if verb == "status" else [])])  # returns on success, exits otherwise
        shown = capsys.readouterr().out
        if verb == "status":
            assert "  2. resume " in shown and ", from step 2" in shown
            assert "start 2: " in shown and "start, from step 2" in shown
        else:
            assert f"{run.id}  local" in shown and "2 (from 2)" in shown
    print(
        f"killed {killed_after:.1f} s after launch; resumed run ended {time.monotonic() - started:.1f} s after"
    )


def test_a_kill_while_a_checkpoint_is_written_comes_back_by_itself_with_max_restarts(
    uninterrupted: dict[int, tuple[float, float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    ck = tmp_path / "ck"
    mark = tmp_path / "killed-once"
    runner = Runner()
    run = runner.launch(
        SPEC,
        _overrides(
            ck,
            "spec.lifecycle.max_restarts=1",
            f"spec.env.PYTHONPATH={KILL_IN_SAVE}",
            f"spec.env.RLADAPT_TEST_KILL_MARK={mark}",
            "spec.env.RLADAPT_TEST_KILL_STEP='4'",
        ),
        framework=VERSION,
    )
    final = runner.wait(run, interval=0.2, timeout=300)
    log = (run.dir / "output.log").read_text()
    assert final.state == "SUCCEEDED", log[-2000:]
    assert mark.exists()  # the kill happened
    assert "the attempt exited with 137; restart 1 of 1" in log
    # the partial checkpoint-4 (weights and optimizer, no rng_state.pth nor trainer_state.json) went aside, logged
    aside = list((ck / ASIDE_DIR).iterdir())
    assert [p.name.split(".")[0] for p in aside] == ["checkpoint-4"]
    assert not (aside[0] / "trainer_state.json").exists() and (aside[0] / "optimizer.pt").exists()
    assert f"moved {ck / 'checkpoint-4'} aside" in log
    # what the scan said of it, read again from a directory holding only that checkpoint (a copy by rename)
    alone = tmp_path / "alone"
    alone.mkdir()
    aside[0].rename(alone / "checkpoint-4")
    [partial] = scan(alone, "1.16.0").checkpoints
    assert (partial.step, partial.complete) == (4, False)
    assert partial.reason == "missing rng_state.pth, trainer_state.json"
    assert [(s["restart"], s["from_step"]) for s in read_attempts(run.dir)] == [(0, None), (1, 2)]
    assert _per_step(ck) == uninterrupted


# --- the same on the real Slurm (.ci/slurm.sh): the script's own restart loop, and a requeue ---------------------

SLURM_OPTIONS = {"ray": "false", "gpus_per_node": "0", "cpus_per_task": "2", "mem": "4G"}


def _slurm_output(run_dir: Path) -> str:
    return "".join(p.read_text() for p in sorted(run_dir.glob("slurm-*.out")))


@pytest.mark.engine
@pytest.mark.usefixtures("slurm_env")
def test_on_slurm_a_kill_in_a_save_is_restarted_by_the_script_and_resumes(
    uninterrupted: dict[int, tuple[float, float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    ck, mark = tmp_path / "ck", tmp_path / "killed-once"
    runner = Runner()
    run = runner.launch(
        SPEC,
        _overrides(
            ck,
            "spec.lifecycle.max_restarts=1",
            f"spec.env.PYTHONPATH={KILL_IN_SAVE}",
            f"spec.env.RLADAPT_TEST_KILL_MARK={mark}",
            "spec.env.RLADAPT_TEST_KILL_STEP='4'",
        ),
        framework=VERSION,
        launcher="slurm",
        options=SLURM_OPTIONS,
    )
    final = runner.wait(run, interval=0.5, timeout=600)
    output = _slurm_output(run.dir)
    assert final.state == "SUCCEEDED", output[-3000:]
    assert mark.exists() and "restart 1 of 1" in output  # the script's loop, not the bootstrap's
    assert "resuming from step 2" in output
    # the script's loop numbers its restarts for the job (RLADAPT_RESTART): the second start is restart 1
    assert [(s["restart"], s["from_step"]) for s in read_attempts(run.dir)] == [(0, None), (1, 2)]
    assert _per_step(ck) == uninterrupted


@pytest.mark.engine
@pytest.mark.usefixtures("slurm_env")
def test_on_slurm_a_requeued_job_resumes_from_its_newest_complete_checkpoint(
    uninterrupted: dict[int, tuple[float, float]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    ck = tmp_path / "ck"
    mark = tmp_path / "held"
    runner = Runner()
    # the job holds inside the save of checkpoint-4 (checkpoint-2 complete, 4 partial) until the requeue kills it:
    # the requeue lands at that moment however fast or slow the machine is
    run = runner.launch(
        SPEC,
        _overrides(
            ck,
            f"spec.env.PYTHONPATH={KILL_IN_SAVE}",
            f"spec.env.RLADAPT_TEST_KILL_MARK={mark}",
            "spec.env.RLADAPT_TEST_KILL_STEP='4'",
            "spec.env.RLADAPT_TEST_KILL_MODE=hold",
        ),
        framework=VERSION,
        launcher="slurm",
        options=SLURM_OPTIONS,
    )
    deadline = time.monotonic() + 600
    while not mark.exists():
        assert time.monotonic() < deadline, _slurm_output(run.dir)[-3000:]
        time.sleep(0.05)
    assert any(c.step == 2 and c.complete for c in scan(ck, "1.16.0").checkpoints)
    handle = run.handle
    assert handle is not None
    subprocess.run(
        ["scontrol", "requeue", str(handle["job_id"])], check=True, capture_output=True, timeout=60
    )
    final = runner.wait(run, interval=0.5, timeout=900)
    output = _slurm_output(run.dir)
    assert final.state == "SUCCEEDED", output[-3000:]
    assert "resuming from step 2" in output
    assert [s["from_step"] for s in read_attempts(run.dir)] == [None, 2]
    assert _per_step(ck) == uninterrupted
