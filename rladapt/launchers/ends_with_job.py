"""``python -m rladapt.launchers.ends_with_job DIR -- ARGV...``: run a service role that ends with the training job.

Ray ends no job with another, and nothing else watches the training where the role runs, so the role watches the
job itself: this wrapper starts ``ARGV`` as its own process group and reads the job's end marker in the run's
checkpoint directory ``DIR`` (``rladapt.runs.owner.job_ended``: the owner file the job's bootstrap holds says
ended, or its heartbeat stopped) every ``--poll`` seconds. Once the end stands (``ended_for_good``: no restart of
the attempt took the directory again within two heartbeats) it stops the role: SIGTERM to its group, SIGKILL
after ``--grace`` seconds; and exits 0, so a restart loop around it (``restart: on-failure``) ends too. Started
after the job ended, it does not start the role at all.

The role's own exit is the wrapper's (its code, 128 + N for a signal): a crash is restarted by the launcher as
before. A SIGTERM or SIGINT to the wrapper (a stop) goes to the role's group. The run and the attempt are the
job's (``$RLADAPT_RUN_ID``, ``$RLADAPT_RUN_ATTEMPT``, in every role's environment); without a run id there is
no marker to watch, and the role runs as it would without the wrapper.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rladapt.plugins import NativeLaunch, ServiceRole
from rladapt.plugins.job import RUN_ATTEMPT_ENV, RUN_ID_ENV, is_python
from rladapt.processes import end_group, signal_group

__all__ = ["MODULE", "main", "role_command", "wrap"]

MODULE = "rladapt.launchers.ends_with_job"
DEFAULT_POLL = 2.0
DEFAULT_GRACE = 30.0


def wrap(python: str, checkpoint_dir: str, argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run under this wrapper with ``python`` (the job's interpreter, which has rladapt)."""
    return (python, "-m", MODULE, checkpoint_dir, "--", *argv)


def role_command(native: NativeLaunch, role: ServiceRole) -> tuple[str, ...]:
    """The command a launcher that ends no unit with another (Ray, Kubernetes) runs for ``role``: a role that
    ends with the job under this wrapper, watching the job's checkpoint directory; any other as it is (without a
    checkpoint directory the job holds none, so there is no end marker to watch)."""
    if role.outlives_job or not native.checkpoint_dir:
        return role.argv
    python = role.argv[0] if is_python(role.argv[0]) else "python3"
    return wrap(python, native.checkpoint_dir, role.argv)


def _say(message: str) -> None:
    print(f"rladapt.ends_with_job: {message}", file=sys.stderr, flush=True)


def _end(proc: subprocess.Popen[bytes], grace: float) -> int:
    """SIGTERM to the role's group, SIGKILL after ``grace`` seconds; its exit code."""
    end_group(proc.pid, grace)
    code = proc.wait()
    return 128 - code if code < 0 else code


def run(checkpoint_dir: Path, argv: Sequence[str], *, poll: float, grace: float) -> int:
    # imported here: launchers import this module for role_command on every render, which must not load the run
    # store (tests/cli/test_startup.py)
    from rladapt.runs.owner import ended_for_good, job_ended

    run_id = os.environ.get(RUN_ID_ENV)
    attempt = os.environ.get(RUN_ATTEMPT_ENV) or None
    seen = job_ended(checkpoint_dir, run_id, attempt) if run_id else None
    if seen is not None and ended_for_good(checkpoint_dir, seen):
        _say(f"the training job of run {run_id} has ended: {argv[0]} is not started")
        return 0
    stopping: list[int] = []
    try:
        # its own group: stopping it reaches whatever it started (a serving group's replicas)
        proc = subprocess.Popen(list(argv), start_new_session=True)
    except OSError as exc:
        _say(f"cannot run {argv[0]!r}: {exc.strerror or exc}")
        return 127

    def forward(signum: int, frame: object) -> None:
        stopping.append(signum)
        signal_group(proc.pid, signal.Signals(signum))

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while True:
        code = proc.poll()
        if code is not None:
            return 128 - code if code < 0 else code
        if run_id and not stopping:
            seen = job_ended(checkpoint_dir, run_id, attempt)
            if seen is not None and ended_for_good(checkpoint_dir, seen, _sleep_unless(proc)):
                if proc.poll() is not None:
                    continue  # it ended by itself meanwhile: its own exit code says how
                _say(f"the training job of run {run_id} has ended: stopping {argv[0]}")
                code = _end(proc, grace)
                _say(f"{argv[0]} stopped (exit code {code})")
                return 0
        time.sleep(poll)


def _sleep_unless(proc: subprocess.Popen[bytes]) -> Callable[[float], None]:
    """A sleep that ends early when the role exits (its exit code is then the wrapper's, without waiting)."""

    def sleep(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(min(0.1, seconds))

    return sleep


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint_dir", help="the run's checkpoint directory as the job sees it")
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL, help="seconds between two looks")
    parser.add_argument("--grace", type=float, default=DEFAULT_GRACE, help="seconds from SIGTERM to SIGKILL")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the role's command")
    ns = parser.parse_args(sys.argv[1:] if args is None else args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    if not argv:
        parser.error("no command after --")
    return run(Path(ns.checkpoint_dir), argv, poll=ns.poll, grace=ns.grace)


if __name__ == "__main__":
    sys.exit(main())
