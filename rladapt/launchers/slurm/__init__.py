"""The ``slurm`` launcher: an sbatch script that brings up a Ray cluster on its nodes and runs the driver.

``render`` writes ``job.sbatch``, following the recipe verl, OpenRLHF and NeMo-RL document for Ray on Slurm:
``#SBATCH`` lines from the placement (one task per node, GPUs per node, and the roles' ``--mem`` and
``--cpus-per-gpu``) and from the options (partition, account, time, ...); then, in bash, the job
environment (every value quoted, secrets read by reference at run time), the adapter's files, a Ray head on
the node that runs the script and one Ray worker on every other node (each a background ``srun`` step), a
bounded wait until ``ray status`` counts every node, and finally the driver (the native argv behind the patch
bootstrap) on the head node with ``RAY_ADDRESS`` set. The script exits with the driver's exit code; an EXIT
trap records that code next to the output file, so a run's result survives slurmctld forgetting the job
(``MinJobAge``), and stops the Ray steps.

``submit`` runs ``sbatch --parsable --chdir RUN_DIR`` from the current directory (the job changes back to it,
``$SLURM_SUBMIT_DIR``, before the working directory), so the output file lands in the run directory, which
must therefore be on a filesystem the nodes share. ``status`` reads ``scontrol show job -o``; ``stop`` is
``scancel``.

The job is named after the run id (``--job-name``), known before ``sbatch`` runs: ``intent`` records that name,
and ``find`` looks it up (``squeue --name``, then ``sacct --name``, then the job's own output file in the run
directory) when the submitter died before it saved the job id.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rladapt.files import write_text
from rladapt.launchers._common import (
    check_services,
    complete_lines,
    nothing_to_stop,
    refuse_claim_creation,
    refuse_missing_inputs,
    script_secret_plan,
    unreadable_secrets,
)
from rladapt.plugins import Artifacts, Command, Launcher, NativeLaunch, RunStatus, ServiceStatus, hookimpl
from rladapt.primitives.errors import LaunchError

from .scheduler import job_id_of, jobs_named, sbatch, scancel, show_job, status_from_scontrol
from .script import (
    EXIT_SUFFIX,
    OPTIONS,
    OUTPUT_PATTERN,
    PLUGIN_NAME,
    SCRIPT,
    SERVICES_DIR,
    ScriptOptions,
    render_script,
)

__all__ = [
    "PLUGIN_NAME",
    "SCRIPT",
    "SlurmLauncher",
    "render_script",
    "rladapt_register_launchers",
    "status_from_scontrol",
]

STOP_FILE = "stop_requested"
STOP_WAIT = 60.0
#: The files a started job leaves in its run directory, named after its job id.
_JOB_FILE = re.compile(r"slurm-(\d+(?:_\d+)?)(?:\.out|" + re.escape(EXIT_SUFFIX) + r")")


_SERVICE_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"})


def _listing(run_dir: Path) -> list[str]:
    try:
        return [entry.name for entry in run_dir.iterdir()]
    except OSError:
        return []


def _read_exit_code(path: Path) -> int | None:
    """The exit code the job's EXIT trap recorded next to its output file (None before it ends)."""
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


class SlurmLauncher(Launcher):
    #: The script runs the driver again on failure, lifecycle.max_restarts times (script.py, _driver_lines).
    RESTARTS_ITSELF = True
    PLUGIN_NAME = PLUGIN_NAME
    DESCRIPTION = "Submit an sbatch script: a Ray head and workers on the allocated nodes, then the driver."
    OPTIONS = OPTIONS

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        opts = ScriptOptions(native, self.merge_options(native, options), run_id)
        check_services(native, self.PLUGIN_NAME)
        refuse_claim_creation(
            native,
            self.PLUGIN_NAME,
            "Slurm mounts nothing; a volume must already be on every node's file system",
        )
        request = {
            "sbatch": ["sbatch", "--parsable", "--chdir=<run directory>", SCRIPT],
            "job_name": opts.job_name,
            "nodes": native.total_nodes,
            "ray": opts.ray,
        }
        if native.inputs:  # checked at submit, from here: a Slurm cluster's nodes share its file system
            request["inputs"] = dict(native.inputs)
            request["working_dir"] = native.working_dir
        secrets = script_secret_plan(native)
        if secrets:  # names only: sbatch hands the job this shell's environment, checked at submit
            request["secrets"] = secrets
        if native.services:  # each a job step beside the driver (script.py, _service_lines)
            request["services"] = [
                {"name": r.name, "restart": r.restart, "outlives_job": r.outlives_job}
                for r in native.services
            ]
        return Artifacts(
            launcher=self.PLUGIN_NAME,
            files={SCRIPT: render_script(native, opts, command)},
            request=request,
        )

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        if SCRIPT not in artifacts.files:
            raise LaunchError(
                f"the slurm launcher needs {SCRIPT} in the artifacts (render with --launcher slurm)"
            )
        # The job would wait in the queue, then die at its first lines: refuse now. A file is read on the node.
        unset = unreadable_secrets(artifacts.request.get("secrets", []), None)
        if unset:
            raise LaunchError(f"no source of these secrets can be read in this shell: {', '.join(unset)}")
        refuse_missing_inputs(
            artifacts.request.get("inputs") or {}, str(artifacts.request.get("working_dir", ".")), PLUGIN_NAME
        )
        run_dir = run_dir.absolute()
        run_dir.mkdir(parents=True, exist_ok=True)
        script = write_text(
            run_dir / SCRIPT, artifacts.files[SCRIPT], what="sbatch script", make_parents=True
        )
        script.chmod(0o755)
        (run_dir / STOP_FILE).unlink(missing_ok=True)
        # From the current directory: the job returns to it ($SLURM_SUBMIT_DIR) before its working directory.
        job_id, cluster = sbatch(script, run_dir)
        handle: dict[str, Any] = {
            "job_id": job_id,
            "script": str(script),
            "output": str(run_dir / OUTPUT_PATTERN.replace("%j", job_id)),
        }
        if cluster:
            handle["cluster"] = cluster
        if artifacts.request.get("services"):
            handle["services"] = [str(item["name"]) for item in artifacts.request["services"]]
        return handle

    def intent(self, artifacts: Artifacts, run_id: str) -> dict[str, Any]:
        return {"job_name": str(artifacts.request.get("job_name") or run_id), "run_id": run_id}

    def find(self, intent: dict[str, Any], run_dir: Path) -> dict[str, Any] | None:
        name = str(intent["job_name"])
        found = jobs_named(name)
        if not found:
            # Forgotten by slurmctld (MinJobAge) and no accounting: a job that started wrote its output here.
            found = sorted(
                {m.group(1) for f in _listing(run_dir) if (m := _JOB_FILE.fullmatch(f))},
                key=lambda job_id: int(job_id.split("_")[0]),
            )
        if not found:
            return None
        run_dir = run_dir.absolute()
        job_id = found[-1]
        handle: dict[str, Any] = {
            "job_id": job_id,
            "script": str(run_dir / SCRIPT),
            "output": str(run_dir / OUTPUT_PATTERN.replace("%j", job_id)),
        }
        if len(found) > 1:
            handle["warnings"] = [
                f"{len(found)} Slurm jobs are named {name}: took the newest, {job_id} (the others: "
                f"{', '.join(found[:-1])})"
            ]
        return handle

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        job_id = job_id_of(handle)
        listed = show_job(job_id)
        if listed is not None:
            return listed
        # slurmctld forgets finished jobs after MinJobAge: the exit file written by the job's trap remains.
        code = _read_exit_code(run_dir / f"slurm-{job_id}{EXIT_SUFFIX}")
        stopped = (run_dir / STOP_FILE).exists()
        if code is None:
            if stopped:
                return RunStatus("STOPPED", None, f"Slurm job {job_id} was cancelled and is no longer listed")
            return RunStatus(
                "UNKNOWN", None, f"Slurm no longer lists job {job_id} and it recorded no exit code"
            )
        if stopped:
            return RunStatus("STOPPED", code, f"Slurm job {job_id} cancelled (exit code {code})")
        if code == 0:
            return RunStatus("SUCCEEDED", 0, f"Slurm job {job_id} completed")
        return RunStatus("FAILED", code, f"Slurm job {job_id} failed: exit code {code}")

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        path = Path(str(handle.get("output") or run_dir / OUTPUT_PATTERN.replace("%j", job_id_of(handle))))
        stream = None
        pending = ""
        try:
            while True:
                # The status before the data: if it is terminal, the read below sees everything ever written.
                done = not follow or self.status(handle, run_dir).terminal
                if stream is None:
                    try:
                        stream = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115
                    except FileNotFoundError:
                        if done:
                            return
                        time.sleep(0.5)  # still pending: Slurm creates the file when the job starts
                        continue
                chunk = stream.read()
                lines, pending = complete_lines(pending, chunk)
                yield from lines
                if done:
                    break
                if not chunk:
                    time.sleep(0.5)
            if pending:
                yield pending
        finally:
            if stream is not None:
                stream.close()

    def services(self, handle: dict[str, Any], run_dir: Path) -> tuple[ServiceStatus, ...]:
        """Each role's last line in its state file (``services/NAME.state``, written by the job's script)."""
        names = handle.get("services")
        if not isinstance(names, list):  # a handle found again (find): the roles whose state the job wrote
            names = sorted(p.stem for p in (run_dir / SERVICES_DIR).glob("*.state"))
        job_id = job_id_of(handle)
        job_ended = _read_exit_code(run_dir / f"slurm-{job_id}{EXIT_SUFFIX}") is not None
        out = []
        for name in names:
            unit = f"Slurm job {job_id} step {name}"
            try:
                last = (run_dir / SERVICES_DIR / f"{name}.state").read_text().splitlines()[-1].split()
            except (OSError, IndexError):
                out.append(ServiceStatus(str(name), "PENDING", 0, unit, "not started yet"))
                continue
            state = last[0] if last and last[0] in _SERVICE_STATES else "UNKNOWN"
            restarts = int(last[1]) if len(last) > 1 and last[1].isdigit() else 0
            code = last[2] if len(last) > 2 else "-"
            if state in ("RUNNING", "PENDING") and job_ended:
                state, message = "UNKNOWN", "the job ended without recording how this service ended"
            elif state == "PENDING":
                message = f"exited with code {code}; restart {restarts} coming"
            elif state in ("FAILED", "STOPPED"):
                message = f"exit code {code}"
            else:
                message = ""
            out.append(ServiceStatus(str(name), state, restarts, unit, message))  # type: ignore[arg-type]
        return tuple(out)

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        current = self.status(handle, run_dir)
        if current.terminal:
            return nothing_to_stop(current)
        job_id = job_id_of(handle)
        from rladapt.runs import write_atomic  # the run store: only once a run exists

        write_atomic(run_dir / STOP_FILE, f"{time.time()}\n")
        scancel(job_id)
        deadline = time.monotonic() + STOP_WAIT
        status = self.status(handle, run_dir)
        while not status.terminal and time.monotonic() < deadline:
            time.sleep(0.5)
            status = self.status(handle, run_dir)
        if not status.terminal:
            return RunStatus(status.state, status.exit_code, f"cancel requested; {status.message}")
        return status


@hookimpl
def rladapt_register_launchers() -> list[Launcher]:
    return [SlurmLauncher()]
