"""Talking to Slurm: running sbatch, scontrol and scancel, and reading what they answer."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from rladapt.plugins import RunState, RunStatus
from rladapt.primitives.errors import LaunchError

#: Seconds a Slurm client command may take; sbatch/scontrol retry for a while when slurmctld is unreachable.
CLIENT_TIMEOUT = 90.0
JOB_ID = re.compile(r"\d+(_\d+)?")

# Slurm job states (scontrol's JobState) -> rladapt run states; anything unlisted is UNKNOWN.
_STATES: dict[str, RunState] = {
    "PENDING": "PENDING",
    "CONFIGURING": "PENDING",
    "REQUEUED": "PENDING",
    "REQUEUE_HOLD": "PENDING",
    "REQUEUE_FED": "PENDING",
    "RESV_DEL_HOLD": "PENDING",
    "SUSPENDED": "PENDING",
    "RUNNING": "RUNNING",
    "COMPLETING": "RUNNING",
    "RESIZING": "RUNNING",
    "SIGNALING": "RUNNING",
    "STAGE_OUT": "RUNNING",
    "COMPLETED": "SUCCEEDED",
    "CANCELLED": "STOPPED",
    "FAILED": "FAILED",
    "TIMEOUT": "FAILED",
    "NODE_FAIL": "FAILED",
    "OUT_OF_MEMORY": "FAILED",
    "BOOT_FAIL": "FAILED",
    "DEADLINE": "FAILED",
    "PREEMPTED": "FAILED",
    "SPECIAL_EXIT": "FAILED",
    "REVOKED": "FAILED",
}
_FAILURE_NOTES = {
    "TIMEOUT": "the time limit was reached",
    "NODE_FAIL": "a node failed",
    "OUT_OF_MEMORY": "out of memory",
    "BOOT_FAIL": "a node failed to boot",
    "DEADLINE": "the deadline was reached",
    "PREEMPTED": "preempted",
}


def _run(argv: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        raise LaunchError(
            f"Slurm is not available here: `{argv[0]}` is not on PATH (install the Slurm client tools, "
            "or run rladapt on a login node of the cluster)"
        )
    try:
        return subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{what}: `{shlex.join(argv)}` did not answer in {CLIENT_TIMEOUT:g} s") from None
    except OSError as exc:
        raise LaunchError(f"{what}: cannot run {argv[0]}: {exc}") from None


def _slurm_message(proc: subprocess.CompletedProcess[str]) -> str:
    text = (proc.stderr.strip() or proc.stdout.strip() or f"exit code {proc.returncode}").splitlines()
    return " ".join(line.strip() for line in text[-3:])


def _unreachable(message: str) -> bool:
    lowered = message.lower()
    return any(
        marker in lowered
        for marker in (
            "unable to contact slurm controller",
            "connection refused",
            "unable to establish",
            "could not establish",
            "unable to connect",
            "zero bytes were transmitted",
        )
    )


def job_id_of(handle: dict[str, Any]) -> str:
    """The Slurm job id in a run's handle, refused unless it is one."""
    job_id = str(handle.get("job_id", ""))
    if not JOB_ID.fullmatch(job_id):
        raise LaunchError(f"the run record holds no valid Slurm job id (found {job_id!r})")
    return job_id


def sbatch(script: Path, run_dir: Path) -> tuple[str, str]:
    """Submit ``script`` with ``--chdir=run_dir`` from the current directory; (job id, cluster or "")."""
    proc = _run(["sbatch", "--parsable", f"--chdir={run_dir}", str(script)], "sbatch")
    if proc.returncode != 0:
        message = _slurm_message(proc)
        if _unreachable(message):
            raise LaunchError(f"the Slurm controller is unreachable: {message}")
        raise LaunchError(f"sbatch refused the job: {message}")
    job_id = proc.stdout.strip().splitlines()[-1].split(";")[0].strip() if proc.stdout.strip() else ""
    if not JOB_ID.fullmatch(job_id):
        raise LaunchError(f"sbatch answered without a job id: {proc.stdout.strip()!r}")
    cluster = proc.stdout.strip().splitlines()[-1].partition(";")[2].strip()
    return job_id, cluster


def show_job(job_id: str) -> RunStatus | None:
    """The job's status from ``scontrol show job``; None once Slurm no longer lists it (after MinJobAge)."""
    proc = _run(["scontrol", "show", "job", "-o", job_id], "scontrol")
    if proc.returncode == 0 and proc.stdout.strip():
        return status_from_scontrol(_fields(proc.stdout.strip().splitlines()[0]))
    message = _slurm_message(proc)
    if "invalid job id" not in message.lower():
        if _unreachable(message):
            raise LaunchError(f"the Slurm controller is unreachable: {message}")
        raise LaunchError(f"scontrol cannot show Slurm job {job_id}: {message}")
    return None


def jobs_named(name: str) -> list[str]:
    """Ids of this user's Slurm jobs named ``name``, oldest first: those slurmctld still knows (``squeue``),
    else those accounting recorded (``sacct``, when the cluster keeps accounting).

    ``squeue --states=all`` lists finished jobs too until MinJobAge; sacct answers for older ones. A cluster
    without accounting (``sacct``: "Slurm accounting storage is disabled") gives what squeue knows.
    """
    proc = _run(
        ["squeue", "--me", "--states=all", "--noheader", f"--name={name}", "--format=%i|%V"], "squeue"
    )
    if proc.returncode != 0:
        message = _slurm_message(proc)
        if _unreachable(message):
            raise LaunchError(f"the Slurm controller is unreachable: {message}")
        raise LaunchError(f"squeue cannot list the Slurm jobs named {name}: {message}")
    found = _id_and_time(proc.stdout)
    if not found and shutil.which("sacct") is not None:
        # sacct's default window starts at midnight: ask from the beginning.
        proc = _run(
            ["sacct", "--noheader", "--parsable2", "--allocations", f"--name={name}",
             "--format=JobID,Submit", "--starttime=1970-01-02"],
            "sacct",
        )  # fmt: skip
        if proc.returncode == 0:
            found = _id_and_time(proc.stdout)
        elif _unreachable(_slurm_message(proc)):
            raise LaunchError(f"the Slurm controller is unreachable: {_slurm_message(proc)}")
    return [job_id for _, job_id in sorted((when, job_id) for job_id, when in found.items())]


def _id_and_time(text: str) -> dict[str, tuple[str, int]]:
    """``JOBID|SUBMIT`` lines as {job id: (submit time, number)}: ISO times and job ids sort by age."""
    found: dict[str, tuple[str, int]] = {}
    for line in text.splitlines():
        job_id, _, when = line.strip().partition("|")
        if JOB_ID.fullmatch(job_id):
            found[job_id] = (when, int(job_id.split("_")[0]))
    return found


def scancel(job_id: str) -> None:
    """Cancel the job; one that is already completing is not an error."""
    proc = _run(["scancel", job_id], "scancel")
    if proc.returncode != 0:
        message = _slurm_message(proc)
        if "already completing or completed" not in message.lower():
            raise LaunchError(f"scancel could not cancel Slurm job {job_id}: {message}")


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` tokens of ``scontrol show job -o`` (a value with spaces keeps its first word)."""
    out: dict[str, str] = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep and key and key not in out:
            out[key] = value
    return out


def status_from_scontrol(fields: dict[str, str]) -> RunStatus:
    """One job's ``scontrol show job`` fields as a RunStatus (exit code ``rc:signal`` -> rc or 128+signal)."""
    slurm_state = fields.get("JobState", "")
    state: RunState = _STATES.get(slurm_state, "UNKNOWN")
    exit_code: int | None = None
    rc, _, sig = fields.get("ExitCode", "").partition(":")
    if rc.isdigit() and sig.isdigit() and state in ("SUCCEEDED", "FAILED", "STOPPED"):
        exit_code = 128 + int(sig) if int(sig) else int(rc)
        if state == "STOPPED" and exit_code == 0:
            exit_code = None  # cancelled before it ran: there is no exit code to report
    reason = fields.get("Reason", "None")
    job = f"Slurm job {fields.get('JobId', '?')}"
    if state == "PENDING":
        message = f"{job} {slurm_state.lower()}" + (f" ({reason})" if reason not in ("None", "") else "")
    elif state == "RUNNING":
        message = f"{job} {slurm_state.lower()} on {fields.get('NodeList', '?')}"
    elif state == "SUCCEEDED":
        message = f"{job} completed"
    elif state == "STOPPED":
        message = f"{job} cancelled"
    elif state == "FAILED":
        note = _FAILURE_NOTES.get(slurm_state, f"exit code {exit_code}")
        message = f"{job} {slurm_state.lower()}: {note}"
    else:
        message = f"{job} in Slurm state {slurm_state or '?'}"
    return RunStatus(state, exit_code, message)
