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
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rladapt.launchers._common import (
    check_env_name,
    complete_lines,
    file_lines,
    local_path,
    nothing_to_stop,
    quote_path,
    ray_job_config_lines,
    refuse_role_resources,
    run_id_option,
    script_secret_plan,
    secret_lines,
    unreadable_secrets,
)
from rladapt.plugins import Artifacts, Launcher, NativeLaunch, RunStatus, hookimpl
from rladapt.plugins.launcher import Command, Option
from rladapt.primitives.errors import LaunchError
from rladapt.runs import write_atomic

SCRIPT = "run.sh"
LOG_FILE = "output.log"
EXIT_FILE = "exit_code"
STOP_FILE = "stop_requested"
DEFAULT_GRACE = 15.0
#: ``run.sh`` given this argument checks the job's interpreter in the job's directory and environment, then exits.
PREFLIGHT_ARG = "--rladapt-preflight"
PREFLIGHT_CODE = "import rladapt.bootstrap"
PREFLIGHT_TIMEOUT = 60.0

# Runs run.sh and records its exit status. The TERM/INT traps are handlers, not "ignore", so the job (started
# after them) keeps default signal dispositions, while this shell survives a group-wide SIGTERM long enough to
# record the job's status (143 for a job ended by SIGTERM).
_WRAPPER = """trap 'true' TERM INT HUP
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
    # Before the secrets and files: the check reads no secret and writes nothing. The wrapper passes no argument.
    lines.append(_preflight_line(command.python))
    lines.extend(secret_lines(native, "the local launcher"))
    lines.extend(file_lines(dict(native.files)))
    lines.append("exec " + shlex.join(command.argv))
    return "\n".join(lines) + "\n"


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


# --- process inspection (Linux /proc, with a portable fallback) ---------------------------------------------


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, pgid, start time in clock ticks) of ``pid`` from /proc, or None when it does not exist."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[2]), int(fields[19])


def _start_time(pid: int) -> int | None:
    stat = _proc_stat(pid)
    return stat[2] if stat else None


def _pid_alive(pid: int, start_time: int | None) -> bool:
    """True when ``pid`` runs (not a zombie) and, when known, is the same process that was started."""
    if Path("/proc").is_dir():
        stat = _proc_stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            return False
        return start_time is None or stat[2] == start_time
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_alive(pgid: int) -> bool:
    """True while any non-zombie process of the group is left (zombies of an unreaped leader do not count)."""
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            stat = _proc_stat(int(entry.name))
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    def render(self, native: NativeLaunch, options: dict[str, Any]) -> Artifacts:
        opts = LocalLauncher.merge_options(native, options)
        run_id_option(opts, self.PLUGIN_NAME)
        refuse_role_resources(
            native,
            self.PLUGIN_NAME,
            "a process group on this machine takes the CPUs and memory that are free; nothing reserves them",
        )
        command = self.command(native)
        request: dict[str, Any] = {"python": command.python, "working_dir": native.working_dir}
        secrets = _secret_sources(native)
        if secrets:
            request["secrets"] = secrets
        request["stop_grace"] = opts["stop_grace"]
        return Artifacts(
            launcher=self.PLUGIN_NAME, files={SCRIPT: render_script(native, command)}, request=request
        )

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        if SCRIPT not in artifacts.files:
            raise LaunchError(
                f"the local launcher needs {SCRIPT} in the artifacts (render with --launcher local)"
            )
        # Nothing is written or started before these: a missing secret or interpreter leaves no half-made run.
        _check_secrets(artifacts.request)
        if "python" in artifacts.request:
            _check_interpreter(artifacts.files[SCRIPT], str(artifacts.request["python"]))
        run_dir.mkdir(parents=True, exist_ok=True)
        script = run_dir / SCRIPT
        script.write_text(artifacts.files[SCRIPT], encoding="utf-8")
        script.chmod(0o755)
        for stale in (EXIT_FILE, STOP_FILE):
            (run_dir / stale).unlink(missing_ok=True)
        cwd = os.getcwd()
        with open(run_dir / LOG_FILE, "ab") as log:
            try:
                proc = subprocess.Popen(
                    ["bash", "-c", _WRAPPER, "rladapt-local", str(script), str(run_dir / EXIT_FILE)],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise LaunchError(f"cannot start bash for the local launch: {exc}") from None
        return {
            "pid": proc.pid,
            "pgid": proc.pid,
            "start_time": _start_time(proc.pid),
            "host": socket.gethostname(),
            "cwd": cwd,
            "log": LOG_FILE,
            "stop_grace": float(artifacts.request.get("stop_grace", DEFAULT_GRACE)),
        }

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        stopped = (run_dir / STOP_FILE).exists()
        code = _read_exit_code(run_dir)
        if code is not None:
            if stopped:
                return RunStatus("STOPPED", code, "stopped by rladapt stop")
            if code == 0:
                return RunStatus("SUCCEEDED", 0, "")
            return RunStatus("FAILED", code, f"exited with code {code}" + _signal_note(code))
        host = handle.get("host")
        if host and host != socket.gethostname():
            return RunStatus("UNKNOWN", None, f"the run was started on host {host}; ask there")
        if _pid_alive(int(handle["pid"]), handle.get("start_time")):
            return RunStatus("RUNNING", None, f"pid {handle['pid']}")
        if stopped:
            return RunStatus("STOPPED", None, "stopped by rladapt stop (killed)")
        return RunStatus(
            "FAILED", None, "the process ended without recording an exit code (killed from outside?)"
        )

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        path = run_dir / str(handle.get("log", LOG_FILE))
        with open(path, encoding="utf-8", errors="replace", newline="") as stream:
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
        current = self.status(handle, run_dir)
        if current.terminal:
            return nothing_to_stop(current)
        if current.state != "RUNNING":
            raise LaunchError(f"cannot stop the run: {current.message}")
        write_atomic(run_dir / STOP_FILE, f"{time.time()}\n")
        pgid = int(handle["pgid"])
        grace = float(handle.get("stop_grace", DEFAULT_GRACE))
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
            while _group_alive(pgid):
                time.sleep(0.05)
        # The wrapper writes the exit file just before it exits; give its rename a moment to land.
        for _ in range(20):
            if _read_exit_code(run_dir) is not None or not _pid_alive(int(handle["pid"]), None):
                break
            time.sleep(0.05)
        return self.status(handle, run_dir)


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
