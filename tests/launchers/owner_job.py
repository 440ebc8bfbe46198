"""A training job as every launcher starts it, for the tests of what watches its end: the real bootstrap
(``python -m rladapt.bootstrap``, told its run, attempt and checkpoint settings) holds the checkpoint directory and
keeps its heartbeat going, around a "trainer" that waits for a file to appear and exits with a given code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rladapt.plugins.job import RUN_ATTEMPT_ENV, RUN_ID_ENV
from rladapt.resume import ATTEMPTS_ENV, SETTINGS_ENV, Settings
from rladapt.runs.owner import HEARTBEAT_ENV, read_owner

RUN = "tiny-0a1b2c3d"
ATTEMPT = RUN
#: Seconds between two heartbeats of the job: an end then stands after two of them (``SETTLE_AFTER``); a heartbeat
#: is stale after four, which a loaded machine's start of the heartbeat process must not reach
BEAT = "2"
CHECKPOINT_DIR = "ck"

_TRAINER = """import pathlib, sys, time
go = pathlib.Path(sys.argv[1])
while not go.exists():
    time.sleep(0.05)
sys.exit(int(sys.argv[2]))
"""


def job_env(run: str = RUN, attempt: str = ATTEMPT) -> dict[str, str]:
    """What the job's roles are told as well: the run, the attempt and the heartbeat interval."""
    return {**os.environ, RUN_ID_ENV: run, RUN_ATTEMPT_ENV: attempt, HEARTBEAT_ENV: BEAT}


def start_job(
    cwd: Path, go: Path, code: int = 0, *, run: str = RUN, attempt: str = ATTEMPT
) -> subprocess.Popen[bytes]:
    """Start the job in ``cwd`` (its checkpoint directory ``cwd/ck``) and wait until it holds the directory."""
    settings = Settings("nemo-rl", "0.7.0", CHECKPOINT_DIR, resume="never")
    env = {
        **job_env(run, attempt),
        SETTINGS_ENV: json.dumps(settings.to_json()),
        ATTEMPTS_ENV: str(cwd / "attempts.jsonl"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", _TRAINER, str(go), str(code)],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        owner = read_owner(cwd / CHECKPOINT_DIR)
        if owner is not None and owner.pid == proc.pid and owner.holds():
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"the job exited with {proc.returncode} before it held {CHECKPOINT_DIR}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the job did not hold its checkpoint directory within 120 s")


def end_job(proc: subprocess.Popen[bytes], cwd: Path, go: Path) -> int:
    """Let the trainer exit; wait until the heartbeat has said that the job ended. The job's exit code."""
    go.touch()
    code = proc.wait(timeout=120)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        owner = read_owner(cwd / CHECKPOINT_DIR)
        if owner is not None and owner.ended is not None:
            return code
        time.sleep(0.05)
    raise AssertionError("the heartbeat did not mark the job ended within 120 s")
