"""Restarts and the resume decision in the job's own bootstrap, with real processes.

The trainer here is a stand-in (``FAKE_TRAINER``): a Python program that writes NeMo-RL's checkpoint layout
(``tmp_step_N`` renamed to ``step_N``, as ``CheckpointManager`` does) and dies with SIGKILL on its first attempt,
because NeMo-RL cannot run on this machine. Everything else is real: ``python -m rladapt.bootstrap``, its
``RLADAPT_CHECKPOINTS`` settings, the NeMo-RL adapter's scan, the restart loop and the attempts file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rladapt.adapters.nemo_rl import NemoRLAdapter
from rladapt.plugins.checkpoints import ASIDE_DIR, mark_bad, read_bad
from rladapt.plugins.job import RUN_ATTEMPT_ENV, RUN_ID_ENV
from rladapt.resume import ATTEMPTS_ENV, SETTINGS_ENV, ResumeRefused, Settings, decide, read_attempts
from rladapt.runs.owner import (
    HEARTBEAT_ENV,
    OWNER_FILE,
    STALE_AFTER,
    DirectoryHeld,
    Owner,
    check_free,
    read_owner,
    take,
)

#: Resumes from the highest step_N (as NeMo-RL does), trains to step 4, checkpoints every step; the first attempt
#: leaves a half-written tmp_step_3 and kills itself with SIGKILL.
FAKE_TRAINER = r"""
import json, os, pickle, signal, sys
from pathlib import Path
root = Path("ckpt")
done = sorted(int(p.name[5:]) for p in root.glob("step_*")) if root.exists() else []
start = done[-1] if done else 0
print(f"trainer: starting at step {start}", flush=True)
for step in range(start + 1, 5):
    tmp = root / f"tmp_step_{step}"
    (tmp / "policy" / "weights").mkdir(parents=True, exist_ok=True)
    (tmp / "training_info.json").write_text(json.dumps({"step": step}))
    if step == 3 and not Path("killed-once").exists():
        Path("killed-once").write_text("")
        os.kill(os.getpid(), signal.SIGKILL)
    (tmp / "config.yaml").write_text("a: 1\n")
    # files that pass the scan's content checks: an empty safetensors (8-byte header length, "{}"), JSON, a pickle
    for sub, data in (
        ("policy/weights/w.safetensors", b"\x02" + bytes(7) + b"{}"),
        ("policy/tokenizer/t.json", b"{}"),
        ("train_dataloader.pt", pickle.dumps({"step": step})),
    ):
        (tmp / sub).parent.mkdir(parents=True, exist_ok=True)
        (tmp / sub).write_bytes(data)
    tmp.rename(root / f"step_{step}")
print("trainer: done", flush=True)
"""


def _bootstrap(tmp_path: Path, settings: Settings) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        SETTINGS_ENV: json.dumps(settings.to_json()),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
    }
    return subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", FAKE_TRAINER],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_failed_attempt_comes_back_from_the_newest_complete_step(tmp_path: Path) -> None:
    result = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt", max_restarts=1))
    assert result.returncode == 0, result.stderr
    assert "the attempt exited with 137; restart 1 of 1" in result.stderr
    assert "trainer: starting at step 2" in result.stdout
    # the half-written tmp_step_3 was moved aside, not deleted, and the move was logged
    moved = list((tmp_path / "ckpt" / ASIDE_DIR).iterdir())
    assert [p.name.split(".")[0] for p in moved] == ["tmp_step_3"]
    assert f"moved {tmp_path / 'ckpt' / 'tmp_step_3'} aside" in result.stderr
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("step_*")) == [
        "step_1",
        "step_2",
        "step_3",
        "step_4",
    ]
    starts = read_attempts(tmp_path)
    assert [(s["restart"], s["from_step"]) for s in starts] == [(0, None), (1, 2)]


def test_without_restarts_a_failure_is_final(tmp_path: Path) -> None:
    result = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt"))
    assert result.returncode == -9  # exec'd/in-process: the trainer's own death is the job's
    assert "trainer: done" not in result.stdout
    again = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt"))  # a requeue: decided again at start
    assert again.returncode == 0, again.stderr
    assert "resuming from step 2" in again.stderr


def test_resume_never_on_a_directory_with_steps_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "ckpt" / "global_step_1").mkdir(parents=True)  # even an empty step counts
    result = _bootstrap(tmp_path, Settings("verl", "0.9.1", "ckpt", resume="never"))
    assert result.returncode == 2
    assert "spec.checkpoint.resume is never" in result.stderr and "Traceback" not in result.stderr


def _complete_step(root: Path, step: int) -> None:
    """A step as FAKE_TRAINER commits it (NeMo-RL's layout)."""
    tmp = root / f"step_{step}"
    (tmp / "policy" / "weights").mkdir(parents=True, exist_ok=True)
    (tmp / "training_info.json").write_text(json.dumps({"step": step}))
    (tmp / "config.yaml").write_text("a: 1\n")
    # the same files FAKE_TRAINER writes, which pass the scan's content checks
    for sub, data in (
        ("policy/weights/w.safetensors", b"\x02" + bytes(7) + b"{}"),
        ("policy/tokenizer/t.json", b"{}"),
        ("train_dataloader.pt", pickle.dumps({"step": step})),
    ):
        (tmp / sub).parent.mkdir(parents=True, exist_ok=True)
        (tmp / sub).write_bytes(data)


def test_a_resume_path_applies_to_the_first_start_only_a_restart_keeps_its_progress(tmp_path: Path) -> None:
    """`rladapt resume --from-step 1` is `resume: path` on step 1: the restart after the fault continues from
    step 2, which the failed attempt committed, not from step 1 again."""
    _complete_step(tmp_path / "ckpt", 1)
    settings = Settings("nemo-rl", "0.7.0", "ckpt", resume="path", path="ckpt/step_1", max_restarts=2)
    result = _bootstrap(tmp_path, settings)
    assert result.returncode == 0, result.stderr
    starts = read_attempts(tmp_path)
    assert [(s["restart"], s["from_step"]) for s in starts] == [(0, 1), (1, 2)]
    assert "trainer: starting at step 2" in result.stdout


def test_max_restarts_with_resume_never_continues_the_attempts_own_checkpoints(tmp_path: Path) -> None:
    """`resume: never` refuses steps written before the run started; the restart continues its own steps."""
    result = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt", resume="never", max_restarts=1))
    assert result.returncode == 0, result.stderr
    assert "spec.checkpoint.resume is never" not in result.stderr
    starts = read_attempts(tmp_path)
    assert [(s["restart"], s["from_step"]) for s in starts] == [(0, None), (1, 2)]


def test_a_run_whose_restarts_fail_ends_with_the_attempts_code_never_the_usage_code(tmp_path: Path) -> None:
    """A fault in every attempt of a `resume: never` run is an infrastructure failure: the job ends with the
    last attempt's code (137, SIGKILL), not with 2 from the never-check refusing its own steps."""
    # each attempt leaves a step behind and dies
    trainer = (
        "import os, pathlib, signal; p = pathlib.Path('ckpt'); p.mkdir(exist_ok=True); "
        "(p / 'step_1').write_text('not a directory'); os.kill(os.getpid(), signal.SIGKILL)"
    )
    env = {
        **os.environ,
        SETTINGS_ENV: json.dumps(
            Settings("nemo-rl", "0.7.0", "ckpt", resume="never", max_restarts=1).to_json()
        ),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", trainer],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 137, result.stderr
    assert "no restart left" in result.stderr and "Traceback" not in result.stderr


def _start(tmp_path: Path, settings: Settings, **env: str) -> subprocess.CompletedProcess[str]:
    """One start of the job as a launcher that restarts by itself makes it (the Slurm script's loop, a pod retry):
    a new bootstrap each time, told its run and attempt."""
    full = {
        **os.environ,
        SETTINGS_ENV: json.dumps(settings.to_json()),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
        HEARTBEAT_ENV: "0.2",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", FAKE_TRAINER],
        cwd=tmp_path, env=full, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


JOB = {RUN_ID_ENV: "grpo-0a1b2c3d", RUN_ATTEMPT_ENV: "grpo-0a1b2c3d-a2"}


def test_a_requeue_of_an_attempt_continues_its_own_progress_not_the_step_it_was_told(tmp_path: Path) -> None:
    """`rladapt resume --from-step 1` on a launcher that restarts by itself: the requeue after the fault
    continues from step 2, which the attempt committed, because the directory's owner file says the last start
    was this very attempt."""
    _complete_step(tmp_path / "ckpt", 1)
    settings = Settings("nemo-rl", "0.7.0", "ckpt", resume="path", path="ckpt/step_1")
    first = _start(tmp_path, settings, **JOB)
    assert first.returncode == -9, first.stderr
    again = _start(tmp_path, settings, **JOB)
    assert again.returncode == 0, again.stderr
    assert [s["from_step"] for s in read_attempts(tmp_path)] == [1, 2]
    assert "a restart of grpo-0a1b2c3d-a2" in again.stderr


def test_a_requeue_of_a_resume_never_run_continues_its_own_steps(tmp_path: Path) -> None:
    settings = Settings("nemo-rl", "0.7.0", "ckpt", resume="never")
    first = _start(tmp_path, settings, **JOB)
    assert first.returncode == -9, first.stderr
    again = _start(tmp_path, settings, **JOB)
    assert again.returncode == 0, again.stderr
    assert [s["from_step"] for s in read_attempts(tmp_path)] == [None, 2]
    # a new attempt of the run (a resume), or another run, is a first start: its own rule applies
    (tmp_path / "ckpt" / OWNER_FILE).unlink()
    refused = _start(tmp_path, settings, **JOB)
    assert refused.returncode == 2 and "spec.checkpoint.resume is never" in refused.stderr
    assert not (tmp_path / "ckpt" / OWNER_FILE).exists()  # a refused start holds nothing


def _wait_for_owner(root: Path, run: str, timeout: float = 30.0) -> Owner:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        owner = read_owner(root)
        if owner is not None and owner.run == run:
            return owner
        time.sleep(0.05)
    raise AssertionError(f"no owner file for {run} in {root}")


def test_the_job_refuses_a_checkpoint_directory_another_run_holds_and_takes_a_stale_one(
    tmp_path: Path,
) -> None:
    """The bootstrap's own check (a requeue never passes through the runner), with real processes: a job of
    run A holds the directory with its heartbeat; a job of run B is refused, exit 2, naming A; once A's job is
    gone its file says so, and B starts."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rladapt.bootstrap",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
        ],
        cwd=tmp_path,
        env={
            **os.environ,
            SETTINGS_ENV: json.dumps(Settings("nemo-rl", "0.7.0", "ckpt").to_json()),
            # stale after 4 s: long enough that a loaded machine does not free it while the test looks
            HEARTBEAT_ENV: "1",
            RUN_ID_ENV: "run-a-00000000",
        },
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        owner = _wait_for_owner(tmp_path / "ckpt", "run-a-00000000")
        deadline = time.monotonic() + 30
        while (beaten := read_owner(tmp_path / "ckpt")) is not None and beaten.heartbeat == owner.heartbeat:
            assert time.monotonic() < deadline, "the heartbeat never came"
            time.sleep(0.05)
        other = {RUN_ID_ENV: "run-b-11111111"}
        refused = _start(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt"), **other)
        assert refused.returncode == 2, refused.stderr
        assert "Traceback" not in refused.stderr
        for part in ("held by run run-a-00000000", f"pid {holder.pid}", "last heartbeat", "--take-over"):
            assert part in refused.stderr, refused.stderr
        assert not (tmp_path / "killed-once").exists()  # the trainer never ran
    finally:
        holder.kill()
        holder.wait()
    ended = time.monotonic() + 10
    while (o := read_owner(tmp_path / "ckpt")) is not None and o.ended is None and time.monotonic() < ended:
        time.sleep(0.05)
    assert o is not None and o.ended is not None  # the heartbeat process saw its job die and said so
    started = _start(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt", max_restarts=1), **other)
    assert started.returncode == 0, started.stderr
    assert "took the checkpoint directory" in started.stderr


def test_a_stale_heartbeat_holds_nothing_and_take_over_takes_a_fresh_one(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    mine, before = take(root, "run-a-00000000", "run-a-00000000")
    assert before is None
    with pytest.raises(DirectoryHeld, match="held by run run-a-00000000"):
        take(root, "run-b-11111111", "run-b-11111111")
    taken, before = take(root, "run-b-11111111", "run-b-11111111", take_over=True)
    assert before is not None and before.token == mine.token
    # B's job died without a word (SIGKILL of its whole group): STALE_AFTER intervals later it holds nothing
    old = dataclasses.replace(taken, heartbeat=time.time() - STALE_AFTER * taken.interval - 1)
    (root / OWNER_FILE).write_text(old.to_json())
    check_free(root, "run-c-22222222")
    _, before = take(root, "run-c-22222222", "run-c-22222222")
    assert before is not None and before.run == "run-b-11111111"


def test_a_holder_the_runner_records_as_ended_holds_nothing_for_the_runner(tmp_path: Path) -> None:
    # Slurm kills a job's whole step, heartbeat process included, so the file may never say "ended"; the runner's
    # own record of that run says it, and another run's launch must not wait STALE_AFTER intervals for it.
    root = tmp_path / "ckpt"
    take(root, "run-a-00000000", "run-a-00000000")
    with pytest.raises(DirectoryHeld, match="held by run run-a-00000000"):
        check_free(root, "run-b-11111111", ended=lambda run: False)
    check_free(root, "run-b-11111111", ended=lambda run: run == "run-a-00000000")


#: Resumes from the highest step_N as NeMo-RL does, and fails to load a step whose dataloader state is poisoned
#: (complete by every content check, yet not loadable: what a load_state_dict mismatch does to a real job).
LOADING_TRAINER = r"""
import json, pickle, sys
from pathlib import Path
root = Path("ckpt")
done = sorted(int(p.name[5:]) for p in root.glob("step_*")) if root.exists() else []
start = done[-1] if done else 0
if start:
    state = pickle.loads((root / f"step_{start}" / "train_dataloader.pt").read_bytes())
    if state.get("poison"):
        raise RuntimeError(f"Error(s) in loading state_dict for step {start}")
print(f"trainer: starting at step {start}", flush=True)
for step in range(start + 1, 5):
    tmp = root / f"tmp_step_{step}"
    for sub, data in (
        ("training_info.json", json.dumps({"step": step}).encode()),
        ("config.yaml", b"a: 1\n"),
        ("policy/weights/w.safetensors", b"\x02" + bytes(7) + b"{}"),
        ("policy/tokenizer/t.json", b"{}"),
        ("train_dataloader.pt", pickle.dumps({"step": step})),
    ):
        (tmp / sub).parent.mkdir(parents=True, exist_ok=True)
        (tmp / sub).write_bytes(data)
    tmp.rename(root / f"step_{step}")
print("trainer: done", flush=True)
"""


def _run_loading(tmp_path: Path, settings: Settings) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        SETTINGS_ENV: json.dumps(settings.to_json()),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
        RUN_ATTEMPT_ENV: "grpo-0a1b2c3d",
    }
    return subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", LOADING_TRAINER],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_step_that_fails_to_load_is_marked_bad_and_never_chosen_again(tmp_path: Path) -> None:
    """Before: every restart took step 2 again and failed the same way (the run ended FAILED, step 1 never
    tried). Now the first failure marks step 2 bad, the restart moves it aside and continues from step 1."""
    root = tmp_path / "ckpt"
    _complete_step(root, 1)
    _complete_step(root, 2)
    (root / "step_2" / "train_dataloader.pt").write_bytes(pickle.dumps({"step": 2, "poison": True}))
    result = _run_loading(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt", max_restarts=2))
    assert result.returncode == 0, result.stderr
    assert [(s["restart"], s["from_step"]) for s in read_attempts(tmp_path)] == [(0, 2), (1, 1)]
    assert "trainer: starting at step 1" in result.stdout
    # the job's log says which step, why, and where it went
    reason = "the first start resumed from it and exited with 1 before committing a later step"
    assert f"step 2 ({root / 'step_2'}) is marked bad, never chosen again: {reason}" in result.stderr
    assert (
        f"moved {root / 'step_2'} aside" in result.stderr
        and f"failed to load on a start: {reason}" in result.stderr
    )
    # the mark is kept in the checkpoint directory, for every later start and `rladapt resume`
    marks = read_bad(root)
    assert [(m["step"], m["path"], m["reason"], m["attempt"]) for m in marks] == [
        (2, "step_2", reason, "grpo-0a1b2c3d")
    ]
    aside = [p.name.split(".")[0] for p in (root / ASIDE_DIR).iterdir()]
    assert aside == ["step_2"]
    # the step 2 the restart saved again is a new directory: not the one marked, complete
    scan = NemoRLAdapter().scan_checkpoints(root, "0.7.0").judged()
    assert [(c.step, c.complete) for c in scan.checkpoints] == [(1, True), (2, True), (3, True), (4, True)]


def test_a_marked_step_still_on_disk_is_partial_for_every_later_decision(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    _complete_step(root, 1)
    _complete_step(root, 2)
    scan = NemoRLAdapter().scan_checkpoints(root, "0.7.0")
    two = scan.step(2)
    assert two is not None and two.complete
    mark_bad(root, two, "the first start resumed from it and exited with 1", "grpo-0a1b2c3d")
    decision = decide(
        NemoRLAdapter(), Settings("nemo-rl", "0.7.0", "ckpt"), ["python", "train.py"], base=tmp_path
    )
    assert decision is not None and decision.chosen is not None and decision.chosen.step == 1
    assert root / "step_2" in decision.plan.move_aside  # NeMo-RL would take the highest step_N by itself
    # a resume told to take it is refused with the reason
    told = Settings("nemo-rl", "0.7.0", "ckpt", resume="path", path="ckpt/step_2")
    with pytest.raises(ResumeRefused, match="failed to load on a start: the first start resumed from it"):
        decide(NemoRLAdapter(), told, ["python", "train.py"], base=tmp_path)


def test_a_kill_after_loading_marks_nothing(tmp_path: Path) -> None:
    """A signal (a kill, an OOM, a preemption) says nothing about the step the attempt loaded."""
    root = tmp_path / "ckpt"
    _complete_step(root, 1)
    trainer = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    env = {
        **os.environ,
        SETTINGS_ENV: json.dumps(Settings("nemo-rl", "0.7.0", "ckpt", max_restarts=1).to_json()),
    }
    result = subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", trainer],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 137, result.stderr
    assert "marked bad" not in result.stderr and read_bad(root) == []
