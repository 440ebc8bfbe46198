"""The ``local`` launcher: the native launch as a detached process group on this machine.

``render`` writes ``run.sh``: a bash script that changes to the working directory, exports the environment
(every value quoted), reads secrets by reference at run time, writes the adapter's files and ``exec``s the
native argv through the patch bootstrap (``Launcher.command``); with runtime patches it also hands Ray's
``worker_process_setup_hook`` to the framework's own ``ray.init``, so the Ray workers it starts are patched
too. ``submit`` first checks what would otherwise only fail once the job runs: every secret's source (a
variable of the submitting shell, or a readable file) and the job's interpreter (``run.sh
--rladapt-preflight`` stops after the environment and imports ``rladapt.bootstrap`` with it). It
then starts the script in a new session behind a tiny wrapper that records the exit code in the run directory,
so ``status`` works from any shell after the submitting process is gone. ``stop`` sends SIGTERM to the whole
group, then SIGKILL after a grace period.

A submission cut short is found again: the intent names the pid file (``job.pid``) that the wrapper writes
before anything else, and ``find`` turns it into the handle ``submit`` would have returned. A stop requested
during the submission (``STOP_REQUEST_FILE``) is honoured after the preflight, before the fork, and by the
wrapper itself, after it has recorded its pid and before it starts the job.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rladapt.launchers._common import (
    check_env_name,
    check_run_id,
    check_services,
    complete_lines,
    file_lines,
    local_path,
    nothing_to_stop,
    quote_path,
    ray_job_config_lines,
    refuse_claim_creation,
    refuse_missing_inputs,
    refuse_role_resources,
    script_secret_plan,
    secret_lines,
    unreadable_secrets,
)
from rladapt.launchers.supervise import PLAN_FILE, SERVICES_DIR, STATE_FILE, script_name
from rladapt.plugins import (
    Artifacts,
    Launcher,
    NativeLaunch,
    RunStatus,
    ServiceRole,
    ServiceStatus,
    hookimpl,
)
from rladapt.plugins.job import ATTEMPTS_ENV, ATTEMPTS_FILE
from rladapt.plugins.launcher import STOP_REQUEST_FILE, Command, Option, stop_requested
from rladapt.primitives.errors import LaunchError
from rladapt.processes import alive, group_alive, start_time

SCRIPT = "run.sh"
LOG_FILE = "output.log"
EXIT_FILE = "exit_code"
#: Written by ``stop`` of a started job (or by the wrapper when it refused to start one); not the runner's
#: ``STOP_REQUEST_FILE``, which asks that a job being submitted never start.
STOP_FILE = "stop_requested"
#: "<pid> <start time>" of the wrapper, written by the wrapper itself before anything else (``intent``/``find``).
PID_FILE = "job.pid"
#: How long ``find`` waits for the pid file of a wrapper that was started but has not written it yet.
_PID_FILE_WAIT = 2.0
DEFAULT_GRACE = 15.0
#: ``run.sh`` given this argument checks the job's interpreter in the job's directory and environment, then exits.
PREFLIGHT_ARG = "--rladapt-preflight"
PREFLIGHT_CODE = "import rladapt.bootstrap"
PREFLIGHT_TIMEOUT = 60.0

# Runs run.sh and records its exit status. Before anything else it records itself, the session and process-group
# leader (submit starts it with start_new_session), as "$$ <start time>" in the pid file (atomically: tmp + mv),
# so that `find` knows the job whatever happens to rladapt; only then does it look for the stop request, which
# `rladapt stop` creates before it looks for the pid file: one of the two always sees the other. A refused start
# records 143 and the stop, as a stopped job does. The start time is field 22 of /proc/$$/stat (proc(5)), the
# fields counted after the command name's last ')'. The TERM/INT traps are handlers, not "ignore", so the job
# (started after them) keeps default signal dispositions, while this shell survives a group-wide SIGTERM long
# enough to record the job's status (143 for a job ended by SIGTERM). With service roles ($6: the interpreter of the
# supervisor, $7: the run directory, $8: the stop grace) it starts their supervisor (rladapt.launchers.supervise)
# in the background right before the job: in the job's group, so that `rladapt stop` reaches it, and on this
# detached side, so that it outlives the rladapt command that launched the run.
_WRAPPER = """trap 'true' TERM INT HUP
start=
if read -r stat < /proc/$$/stat 2>/dev/null; then read -ra fields <<< "${stat##*) }"; start=${fields[19]-}; fi
printf '%s %s\\n' "$$" "$start" > "$3.tmp" && mv -f "$3.tmp" "$3" || exit 1
if [[ -e "$4" ]]; then
  printf '%s\\n' "refused" > "$5.tmp" && mv -f "$5.tmp" "$5"
  printf '%s\\n' 143 > "$2.tmp" && mv -f "$2.tmp" "$2"
  exit 143
fi
if [[ -n "${6-}" ]]; then "$6" -m rladapt.launchers.supervise "$7" "$$" "$8" </dev/null >> "$7/services/supervisor.log" 2>&1 & fi
bash "$1" </dev/null
rc=$?
printf '%s\\n' "$rc" > "$2.tmp" && mv -f "$2.tmp" "$2"
exit "$rc"
"""


def render_script(native: NativeLaunch, command: Command) -> str:
    """The bash script that runs ``command`` for ``native`` here; pure, and safe for any value the spec can hold."""
    lines = [
        "#!/usr/bin/env bash",
        f"# rladapt local launch: {json.dumps(native.job_name)} on {json.dumps(native.framework)} "
        f"{json.dumps(native.version)}",
        *_environment_lines(native, command),
    ]
    # Before the secrets and files: the check reads no secret and writes nothing. The wrapper passes no argument.
    lines.append(_preflight_line(command.python))
    lines.extend(secret_lines(native, "the local launcher"))
    lines.extend(file_lines(dict(native.files)))
    lines.append("exec " + shlex.join(command.argv))
    return "\n".join(lines) + "\n"


def render_service_script(native: NativeLaunch, command: Command, role: ServiceRole) -> str:
    """The bash script of one service role: the job's directory, environment and secrets, the role's own
    environment over them, then its command (the supervisor runs it as its own process group)."""
    lines = [
        "#!/usr/bin/env bash",
        f"# rladapt local service {json.dumps(role.name)} of {json.dumps(native.job_name)}",
        *_environment_lines(native, command),
        *secret_lines(native, "the local launcher"),
        *(
            f"export {check_env_name(k, f'services.{role.name}.env')}={shlex.quote(v)}"
            for k, v in role.env.items()
        ),
        "exec " + shlex.join(role.argv),
    ]
    return "\n".join(lines) + "\n"


def _environment_lines(native: NativeLaunch, command: Command) -> list[str]:
    """The working directory and the environment of the job (its secrets and files apart)."""
    lines = [
        "set -euo pipefail",
        f"cd -- {quote_path(native.working_dir)}",
        'export PYTHONUNBUFFERED="${PYTHONUNBUFFERED:-1}"',
    ]
    if command.ray_runtime_env:
        # The Ray workers that the framework's ray.init starts run the patch hooks, which may live in the working
        # directory: make it importable there too, as the slurm script and the ray launcher's working_dir do.
        lines.append('export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"')
    for key, value in native.env.items():
        lines.append(f"export {check_env_name(key, 'env')}={shlex.quote(value)}")
    lines.extend(f"export {check_env_name(k, 'env')}={shlex.quote(v)}" for k, v in command.env.items())
    lines.extend(ray_job_config_lines(command))
    return lines


def _preflight_line(python: str) -> str:
    return (
        f'if [[ "${{1-}}" == {PREFLIGHT_ARG} ]]; then '
        f"exec {shlex.quote(python)} -c {shlex.quote(PREFLIGHT_CODE)}; fi"
    )


def _secret_sources(native: NativeLaunch) -> list[dict[str, Any]]:
    """Where each secret comes from, by name only: ``submit`` checks them before it starts anything."""
    return script_secret_plan(native)


def _check_secrets(request: dict[str, Any]) -> None:
    """Refuse to start when no source of a secret can be read here, as run.sh would find at its start."""
    # run.sh runs from the current directory and changes to the working directory before it reads a file.
    job_dir = local_path(str(request.get("working_dir", ".")), Path.cwd())
    unreadable = unreadable_secrets(request.get("secrets", []), job_dir)
    if unreadable:
        raise LaunchError(f"no source of these secrets can be read in this shell: {', '.join(unreadable)}")


def _check_interpreter(script: str, python: str) -> None:
    """Run the script's preflight: the job's interpreter must exist and import rladapt where the job runs."""
    if _preflight_line(python) not in script:
        return  # not a script of this version's render: it has no preflight, and running it would start the job
    try:
        proc = subprocess.run(
            ["bash", "-c", script, SCRIPT, PREFLIGHT_ARG],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PREFLIGHT_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"the job's interpreter {python!r} did not import rladapt within {PREFLIGHT_TIMEOUT:g} s"
        ) from None
    except OSError as exc:
        raise LaunchError(f"cannot run bash for the local launch: {exc}") from None
    if proc.returncode == 0:
        return
    detail = " ".join(line.strip() for line in proc.stderr.strip().splitlines()[-2:]) or "no output"
    # The interpreter running rladapt right now has it: the likeliest right answer for a local run.
    has_it = f"set spec.runtime.python to an interpreter that has rladapt (this one does: {sys.executable})"
    if proc.returncode == 127:
        raise LaunchError(
            f"the job's interpreter {python!r} was not found ({detail}); install it, or {has_it}"
        )
    fix = f"install rladapt into that environment, or {has_it}"
    if "No module named" in detail or "ImportError" in detail:
        raise LaunchError(
            f"the job's interpreter {python!r} cannot import rladapt, which the local launcher runs it with "
            f"(`{python} -m rladapt.bootstrap`): {detail}; {fix}"
        )
    raise LaunchError(
        f"checking the job's interpreter {python!r} failed (exit code {proc.returncode}): {detail}"
    )


def _read_exit_code(run_dir: Path) -> int | None:
    try:
        return int((run_dir / EXIT_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


class LocalLauncher(Launcher):
    PLUGIN_NAME = "local"
    DESCRIPTION = "Run on this machine as a detached process group (logs and exit code in the run directory)."
    OPTIONS = (
        Option(
            "stop_grace",
            float,
            "seconds between SIGTERM and SIGKILL on stop",
            default=DEFAULT_GRACE,
            minimum=0,
            expected="a number of seconds >= 0",
        ),
    )
    LOCAL_STATUS = True

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        opts = LocalLauncher.merge_options(native, options)
        check_run_id(run_id, self.PLUGIN_NAME)
        refuse_role_resources(
            native,
            self.PLUGIN_NAME,
            "a process group on this machine takes the CPUs and memory that are free; nothing reserves them",
        )
        refuse_claim_creation(
            native, self.PLUGIN_NAME, "a process group on this machine uses its file system as it is"
        )
        request: dict[str, Any] = {"python": command.python, "working_dir": native.working_dir}
        if native.inputs:  # checked at submit: the job reads them from this machine's file system
            request["inputs"] = dict(native.inputs)
        secrets = _secret_sources(native)
        if secrets:
            request["secrets"] = secrets
        request["stop_grace"] = opts["stop_grace"]
        files = {SCRIPT: render_script(native, command)}
        check_services(native, self.PLUGIN_NAME)
        if native.services:
            # each its own process group beside the job, supervised on the job's detached side (supervise.py)
            request["services"] = [
                {"name": r.name, "restart": r.restart, "outlives_job": r.outlives_job}
                for r in native.services
            ]
            files.update(
                {script_name(r.name): render_service_script(native, command, r) for r in native.services}
            )
        return Artifacts(launcher=self.PLUGIN_NAME, files=files, request=request)

    def intent(self, artifacts: Artifacts, run_id: str) -> dict[str, Any]:
        """The pid file (a name inside the run directory) that the wrapper writes before anything else."""
        return {"pid_file": PID_FILE, "stop_grace": float(artifacts.request.get("stop_grace", DEFAULT_GRACE))}

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        from rladapt.runs import write_atomic  # the run store: only once a run exists

        if SCRIPT not in artifacts.files:
            raise LaunchError(
                f"the local launcher needs {SCRIPT} in the artifacts (render with --launcher local)"
            )
        # Nothing is written or started before these: a missing secret or interpreter leaves no half-made run.
        _check_secrets(artifacts.request)
        refuse_missing_inputs(
            artifacts.request.get("inputs") or {},
            str(artifacts.request.get("working_dir", ".")),
            self.PLUGIN_NAME,
        )
        if "python" in artifacts.request:
            _check_interpreter(artifacts.files[SCRIPT], str(artifacts.request["python"]))
        # The preflight may take long enough for `rladapt stop` to come in: the runner records the stop.
        if stop_requested(run_dir):
            raise LaunchError(
                "`rladapt stop` asked during the submission that the run not start; nothing started"
            )
        script = run_dir / SCRIPT
        write_atomic(script, artifacts.files[SCRIPT])
        script.chmod(0o755)
        services = _service_plan(artifacts)
        if services:
            (run_dir / SERVICES_DIR).mkdir(exist_ok=True)
            (run_dir / SERVICES_DIR / STATE_FILE).unlink(missing_ok=True)
            for item in services:
                write_atomic(run_dir / script_name(item["name"]), artifacts.files[script_name(item["name"])])
            write_atomic(run_dir / SERVICES_DIR / PLAN_FILE, json.dumps(services, indent=2) + "\n")
        # STOP_FILE says that a started job was stopped; STOP_REQUEST_FILE (the runner's) is never removed here.
        for stale in (EXIT_FILE, STOP_FILE, PID_FILE):
            (run_dir / stale).unlink(missing_ok=True)
        cwd = os.getcwd()
        argv = [
            "bash", "-c", _WRAPPER, "rladapt-local", str(script), str(run_dir / EXIT_FILE),
            str(run_dir / PID_FILE), str(run_dir / STOP_REQUEST_FILE), str(run_dir / STOP_FILE),
            # the supervisor of the service roles runs with this interpreter, which has rladapt
            sys.executable if services else "", str(run_dir),
            str(float(artifacts.request.get("stop_grace", DEFAULT_GRACE))),
        ]  # fmt: skip
        try:
            with open(run_dir / LOG_FILE, "ab") as log:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    # each start of the job appends the step it resumed from here (rladapt.resume)
                    env={**os.environ, ATTEMPTS_ENV: str(run_dir / ATTEMPTS_FILE)},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as exc:
            raise LaunchError(f"cannot start bash for the local launch: {exc}") from None
        return _handle(
            proc.pid, start_time(proc.pid), cwd, float(artifacts.request.get("stop_grace", DEFAULT_GRACE))
        )

    def find(self, intent: dict[str, Any], run_dir: Path) -> dict[str, Any] | None:
        """The handle of the job whose wrapper wrote the pid file, or None when no wrapper ever started.

        A wrapper writes the file first thing; the output log is opened just before the wrapper is started, so
        a log without a pid file is a wrapper that may be a moment away from writing it: wait for it briefly.
        """
        from rladapt.runs import DamagedRecord, run_path  # the run store: only once a run exists

        pid_file = run_path(run_dir, intent.get("pid_file", PID_FILE), "intent.pid_file")
        grace = intent.get("stop_grace", DEFAULT_GRACE)
        grace = (
            float(grace)
            if isinstance(grace, (int, float)) and math.isfinite(grace) and grace >= 0
            else DEFAULT_GRACE
        )
        deadline = time.monotonic() + (_PID_FILE_WAIT if (run_dir / LOG_FILE).exists() else 0.0)
        while True:
            try:
                text = pid_file.read_text(encoding="utf-8")
                break
            except FileNotFoundError:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.05)
            except (OSError, UnicodeDecodeError) as exc:
                raise LaunchError(f"cannot read the local job's pid file {str(pid_file)!r}: {exc}") from None
        fields = text.split()
        if not 1 <= len(fields) <= 2 or not all(f.isdigit() for f in fields) or int(fields[0]) <= 0:
            raise DamagedRecord(run_dir, f"{PID_FILE} holds {text[:40]!r}, expected '<pid> <start time>'")
        pid = int(fields[0])
        started = int(fields[1]) if len(fields) == 2 else None
        try:
            cwd: str | None = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            cwd = None
        return _handle(pid, started, cwd, grace)

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        job = _read_handle(handle, run_dir)
        stopped = (run_dir / STOP_FILE).exists()
        code = _read_exit_code(run_dir)
        if code is not None:
            if stopped:
                return RunStatus("STOPPED", code, "stopped by rladapt stop")
            if code == 0:
                return RunStatus("SUCCEEDED", 0, "")
            return RunStatus("FAILED", code, f"exited with code {code}" + _signal_note(code))
        if job.host and job.host != socket.gethostname():
            return RunStatus("UNKNOWN", None, f"the run was started on host {job.host!r}; ask there")
        if alive(job.pid, job.start_time):
            return RunStatus("RUNNING", None, f"pid {job.pid}")
        if stopped:
            return RunStatus("STOPPED", None, "stopped by rladapt stop (killed)")
        return RunStatus(
            "FAILED", None, "the process ended without recording an exit code (killed from outside?)"
        )

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        path = _read_handle(handle, run_dir).log
        try:
            stream = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            raise LaunchError(
                f"the output of run {run_dir.name} is gone: {str(path)!r} does not exist (deleted?)"
            ) from None
        except OSError as exc:
            raise LaunchError(
                f"cannot read the output of run {run_dir.name} ({str(path)!r}): {exc.strerror}"
            ) from None
        with stream:
            pending = ""
            while True:
                # Read the status before the data: if it is terminal, this read sees everything ever written.
                done = not follow or self.status(handle, run_dir).terminal
                chunk = stream.read()
                lines, pending = complete_lines(pending, chunk)
                yield from lines
                if done:
                    break
                if not chunk:
                    time.sleep(0.2)
            if pending:
                yield pending

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        from rladapt.runs import write_atomic  # the run store: only once a run exists

        job = _read_handle(handle, run_dir)
        current = self.status(handle, run_dir)
        if current.terminal:
            if any(not s.terminal for s in self.services(handle, run_dir)):
                # the job has ended, a service that outlives it has not: its supervisor is the group's last
                self._stop_services(job, run_dir)
                return RunStatus(
                    current.state, current.exit_code, "the job had ended; its services are stopped"
                )
            return nothing_to_stop(current)
        if current.state != "RUNNING":
            raise LaunchError(f"cannot stop the run: {current.message}")
        write_atomic(run_dir / STOP_FILE, f"{time.time()}\n")
        _signal_group(job.pgid, signal.SIGTERM)
        deadline = time.monotonic() + job.stop_grace
        while group_alive(job.pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_alive(job.pgid):
            _signal_group(job.pgid, signal.SIGKILL)
            while group_alive(job.pgid):
                time.sleep(0.05)
        # The wrapper writes the exit file just before it exits; give its rename a moment to land.
        for _ in range(20):
            if _read_exit_code(run_dir) is not None or not alive(job.pid, None):
                break
            time.sleep(0.05)
        self._kill_left_services(run_dir)
        return self.status(handle, run_dir)

    def services(self, handle: dict[str, Any], run_dir: Path) -> tuple[ServiceStatus, ...]:
        """Each role's state as its supervisor last wrote it, checked against its process."""
        entries = _read_service_state(run_dir)
        out = []
        for entry in entries:
            state, message = entry["state"], entry["message"]
            pid, started = entry["pid"], entry["start_time"]
            if state == "RUNNING" and not (isinstance(pid, int) and alive(pid, started)):
                # the supervisor was killed (SIGKILL) before it saw the role end
                state, message = "UNKNOWN", "ended without its supervisor seeing it"
            out.append(
                ServiceStatus(
                    name=entry["name"],
                    state=state if state in _SERVICE_STATES else "UNKNOWN",
                    restarts=entry["restarts"],
                    unit=f"pid {pid}" if pid else "",
                    message=message,
                )
            )
        planned = [str(item.get("name")) for item in _read_plan(run_dir)]
        seen = {s.name for s in out}
        # a role its supervisor has not written yet (it is starting, or never started)
        out.extend(
            ServiceStatus(name, "PENDING", message="not started yet") for name in planned if name not in seen
        )
        return tuple(out)

    def _stop_services(self, job: _Job, run_dir: Path) -> None:
        if group_alive(
            job.pgid
        ):  # a group with a member left cannot have been reused: it is the supervisor's
            _signal_group(job.pgid, signal.SIGTERM)  # the supervisor, in the job's group, stops its roles
        deadline = time.monotonic() + job.stop_grace + 1.0
        while group_alive(job.pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_alive(job.pgid):
            _signal_group(job.pgid, signal.SIGKILL)
        self._kill_left_services(run_dir)

    def _kill_left_services(self, run_dir: Path) -> None:
        """SIGKILL the group of each role still alive once its supervisor is gone (killed before it could)."""
        for entry in _read_service_state(run_dir):
            pid = entry["pid"]
            if isinstance(pid, int) and alive(pid, entry["start_time"]):
                _signal_group(pid, signal.SIGKILL)


_SERVICE_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"})


def _service_plan(artifacts: Artifacts) -> list[dict[str, Any]]:
    plan = artifacts.request.get("services") or []
    missing = [
        str(item.get("name")) for item in plan if script_name(str(item.get("name"))) not in artifacts.files
    ]
    if missing:
        raise LaunchError(
            f"the local launcher's artifacts lack the scripts of the services {', '.join(missing)}"
        )
    return [dict(item) for item in plan]


def _read_plan(run_dir: Path) -> list[dict[str, Any]]:
    try:
        plan = json.loads((run_dir / SERVICES_DIR / PLAN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [item for item in plan if isinstance(item, dict)] if isinstance(plan, list) else []


def _read_service_state(run_dir: Path) -> list[dict[str, Any]]:
    """The supervisor's state file, each entry's fields of their types (a damaged entry is left out)."""
    try:
        data = json.loads((run_dir / SERVICES_DIR / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        pid, started, restarts = entry.get("pid"), entry.get("start_time"), entry.get("restarts", 0)
        out.append(
            {
                "name": entry["name"],
                "state": str(entry.get("state", "UNKNOWN")),
                "pid": pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
                "start_time": started if isinstance(started, int) and not isinstance(started, bool) else None,
                "restarts": restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0,
                "message": str(entry.get("message") or ""),
            }
        )
    return out


@dataclass(frozen=True)
class _Job:
    """A local handle, read back from a record that anyone with access to the home could have edited."""

    pid: int
    pgid: int
    start_time: int | None
    host: str | None
    log: Path
    stop_grace: float


def _handle(pid: int, started: int | None, cwd: str | None, grace: float) -> dict[str, Any]:
    """What ``submit`` and ``find`` return: the wrapper is its session's and process group's leader."""
    return {
        "pid": pid,
        "pgid": pid,
        "start_time": started,
        "host": socket.gethostname(),
        "cwd": cwd,
        "log": LOG_FILE,
        "stop_grace": grace,
    }


def _read_handle(handle: dict[str, Any], run_dir: Path) -> _Job:
    """The handle's fields, each of its type, and the log confined to the run directory; else DamagedRecord."""
    from rladapt.runs import DamagedRecord, run_path  # the run store: only once a run exists

    problems = []

    def positive(name: str) -> int:
        value = handle.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            problems.append(f"handle.{name} is {value!r:.60}, expected a positive integer")
            return 0
        return value

    pid, pgid = positive("pid"), positive("pgid")
    started = handle.get("start_time")
    if started is not None and (isinstance(started, bool) or not isinstance(started, int)):
        problems.append(f"handle.start_time is {started!r:.60}, expected an integer or null")
    host = handle.get("host")
    if host is not None and not isinstance(host, str):
        problems.append(f"handle.host is {host!r:.60}, expected a string or null")
    grace = handle.get("stop_grace", DEFAULT_GRACE)
    if (
        isinstance(grace, bool)
        or not isinstance(grace, (int, float))
        or not math.isfinite(grace)
        or grace < 0
    ):
        problems.append(f"handle.stop_grace is {grace!r:.60}, expected a number of seconds >= 0")
    if problems:
        raise DamagedRecord(run_dir, "; ".join(problems))
    log = run_path(run_dir, handle.get("log", LOG_FILE), "handle.log")
    return _Job(pid, pgid, started, host, log, float(grace))


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError as exc:
        raise LaunchError(f"not allowed to signal process group {pgid}: {exc}") from None


def _signal_note(code: int) -> str:
    if code > 128:
        try:
            return f" (killed by {signal.Signals(code - 128).name})"
        except ValueError:
            return ""
    return ""


@hookimpl
def rladapt_register_launchers() -> list[Launcher]:
    return [LocalLauncher()]
