"""The local launcher's service supervisor: ``python -m rladapt.launchers.supervise RUN_DIR WRAPPER_PID GRACE``.

The local job's wrapper starts it in the background, in the job's process group, right before the job; so it
lives on the detached side and outlives the ``rladapt`` command that launched the run. It runs each service role
(``NativeLaunch.services``) as its own process group (``bash services/<name>.sh``, output appended to
``services/<name>.log``), starts a role with ``restart: on-failure`` again when it exits non-zero while the job
runs (waiting longer after each failure, at most ``MAX_BACKOFF`` seconds) -- a role that outlives the job also
after it ended, at most ``MAX_RESTARTS_AFTER_JOB`` times (an evaluator killed while draining the last versions has
work left; one that cannot start at all must not loop forever) -- and when the job ends (its exit file
appears, or the wrapper is gone) stops each role that does not outlive the job: SIGTERM to its group, SIGKILL
after ``GRACE`` seconds. A role that outlives the job is left to end by itself; the supervisor exits once every
role has ended. SIGTERM (``rladapt stop`` signals the job's whole group) stops every role, outliving or not.

What it sees is written to ``services/state.json`` (atomically) after every change: per role its pid, process
group, start time, state, exit code and restarts, which ``LocalLauncher.services`` reads and ``stop`` uses to
reach a role whose supervisor was killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rladapt.processes import alive, end_group, start_time

#: The folder of the run directory that holds each role's script, log, the plan and the state.
SERVICES_DIR = "services"
#: What ``submit`` writes for the supervisor: ``[{"name", "restart", "outlives_job"}, ...]`` in the launch's order.
PLAN_FILE = "plan.json"
STATE_FILE = "state.json"
#: The exit file of the job (the wrapper writes it when the job has ended): the local launcher's ``EXIT_FILE``.
JOB_EXIT_FILE = "exit_code"
MAX_BACKOFF = 30.0
MAX_RESTARTS_AFTER_JOB = 5
_POLL = 0.2


def script_name(name: str) -> str:
    return f"{SERVICES_DIR}/{name}.sh"


def log_name(name: str) -> str:
    return f"{SERVICES_DIR}/{name}.log"


class _Role:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.name = str(plan["name"])
        self.restart = str(plan.get("restart", "on-failure"))
        self.outlives_job = bool(plan.get("outlives_job", False))
        self.proc: subprocess.Popen[bytes] | None = None
        self.state = "PENDING"
        self.exit_code: int | None = None
        self.restarts = 0
        self.restarts_after_job = 0
        self.started: int | None = None
        self.next_start = 0.0
        self.message = ""

    def to_json(self) -> dict[str, Any]:
        pid = self.proc.pid if self.proc is not None else None
        return {
            "name": self.name,
            "pid": pid,
            "pgid": pid,
            "start_time": self.started,
            "state": self.state,
            "exit_code": self.exit_code,
            "restarts": self.restarts,
            "message": self.message,
            "log": log_name(self.name),
        }


class Supervisor:
    def __init__(self, run_dir: Path, wrapper_pid: int, grace: float) -> None:
        self.run_dir = run_dir
        self.wrapper_pid = wrapper_pid
        self.wrapper_started = start_time(wrapper_pid)
        self.grace = grace
        plan = json.loads((run_dir / SERVICES_DIR / PLAN_FILE).read_text(encoding="utf-8"))
        self.roles = [_Role(item) for item in plan]
        self.stopping = False

    # --- the job ---

    def job_running(self) -> bool:
        if (self.run_dir / JOB_EXIT_FILE).exists():
            return False
        return alive(self.wrapper_pid, self.wrapper_started)

    # --- the roles ---

    def start(self, role: _Role) -> None:
        with open(self.run_dir / log_name(role.name), "ab") as log:
            if role.restarts:
                log.write(f"--- rladapt: restart {role.restarts} of service {role.name} ---\n".encode())
                log.flush()
            role.proc = subprocess.Popen(
                ["bash", str(self.run_dir / script_name(role.name))],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # its own process group: stopping it never reaches the job, stopping the job never reaches it
                start_new_session=True,
            )
        role.started = start_time(role.proc.pid)
        role.state, role.exit_code, role.message = "RUNNING", None, ""

    def reap(self, role: _Role, job_running: bool) -> None:
        """Note how a role that has exited ended; schedule its restart when the job still runs."""
        assert role.proc is not None
        code = role.proc.returncode
        role.exit_code = code
        if self.stopping:
            role.state, role.message = "STOPPED", "stopped by rladapt stop"
        elif code == 0:
            role.state, role.message = "SUCCEEDED", ""
        elif role.restart == "on-failure" and self.may_restart(role, job_running):
            backoff = min(MAX_BACKOFF, 2.0**role.restarts)
            role.restarts += 1
            role.state = "PENDING"
            role.message = f"exited with code {code}; restart {role.restarts} in {backoff:g} s"
            role.next_start = time.monotonic() + backoff
            return
        else:
            role.state, role.message = "FAILED", f"exited with code {code}"

    def may_restart(self, role: _Role, job_running: bool) -> bool:
        if job_running:
            return True
        if not role.outlives_job or role.restarts_after_job >= MAX_RESTARTS_AFTER_JOB:
            return False
        role.restarts_after_job += 1
        return True

    def end(self, role: _Role, why: str, state: str) -> None:
        """Stop a running role: SIGTERM to its group, SIGKILL after the grace period."""
        if role.proc is None or role.proc.poll() is not None:
            if role.state == "PENDING":  # waiting for its restart: it will not start again
                role.state, role.message = state, why
            return
        end_group(role.proc.pid, self.grace)
        role.proc.wait()
        role.exit_code = role.proc.returncode
        role.state, role.message = state, why

    # --- the loop ---

    def write_state(self) -> None:
        path = self.run_dir / SERVICES_DIR / STATE_FILE
        tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps([role.to_json() for role in self.roles], indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def run(self) -> int:
        def on_term(signum: int, frame: object) -> None:
            self.stopping = True

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGHUP, on_term)
        job_was_running = True
        for role in self.roles:
            self.start(role)
        self.write_state()
        while True:
            changed = False
            running = self.job_running()
            if self.stopping:
                for role in self.roles:
                    self.end(role, "stopped by rladapt stop", "STOPPED")
                self.write_state()
                return 0
            if job_was_running and not running:
                job_was_running = False
                for role in self.roles:
                    if not role.outlives_job:
                        self.end(role, "the job ended", "STOPPED")
                changed = True
            for role in self.roles:
                if role.state == "RUNNING" and role.proc is not None and role.proc.poll() is not None:
                    self.reap(role, running)
                    changed = True
                elif role.state == "PENDING" and role.restarts and time.monotonic() >= role.next_start:
                    if running or role.outlives_job:
                        self.start(role)
                    else:
                        role.state, role.message = "FAILED", f"{role.message.split(';')[0]}; the job ended"
                    changed = True
            if changed:
                self.write_state()
            if all(role.state in ("SUCCEEDED", "FAILED", "STOPPED") for role in self.roles):
                return 0
            time.sleep(_POLL)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m rladapt.launchers.supervise RUN_DIR WRAPPER_PID GRACE", file=sys.stderr)
        return 2
    # A SIGINT to the terminal the run was launched from must not stop the services: only `rladapt stop` does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return Supervisor(Path(args[0]), int(args[1]), float(args[2])).run()


if __name__ == "__main__":
    sys.exit(main())
