"""How a job is started: the bootstrap's argv and the environment variables it reads, part of the launcher contract.

A launcher runs ``Command.argv`` (``bootstrap_argv``) with ``Command.env`` added; the job's bootstrap
(``rladapt.bootstrap``) and the resume rule (``rladapt.resume``) read these names where the job runs. They live
here, in the contract, because both sides need them: the contract builds the command a launcher runs, the
bootstrap reads it, and the contract must not import the bootstrap (a tool of the layer above it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .native import NativeLaunch

__all__ = [
    "ATTEMPTS_ENV",
    "ATTEMPTS_FILE",
    "BOOTSTRAP_MODULE",
    "FILES_ENV",
    "LITERAL_ENV",
    "PATCHES_ENV",
    "PREVIOUS_EXIT_ENV",
    "PUBLISH_ENV",
    "RESTART_ENV",
    "RUN_ATTEMPT_ENV",
    "RUN_ID_ENV",
    "SECRET_FILES_ENV",
    "SETTINGS_ENV",
    "TAKE_OVER_ENV",
    "WORKER_SETUP_HOOK",
    "ResumeSettings",
    "bootstrap_argv",
    "is_python",
    "json_env_value",
    "publish_settings",
    "resume_settings",
    "run_env",
    "trained_world_size",
]

#: The module a job is started through: ``python -m rladapt.bootstrap [--patch HOOK]... -- <native argv>``.
BOOTSTRAP_MODULE = "rladapt.bootstrap"
#: Comma-separated ``module:function`` runtime patch hooks, applied in the driver and in every Ray worker.
PATCHES_ENV = "RLADAPT_RUNTIME_PATCHES"
#: JSON ``{relative path: text}``: files the bootstrap writes (relative to its cwd) before running the
#: command, for launchers that cannot ship files otherwise (a Ray job's entrypoint runs on the cluster).
FILES_ENV = "RLADAPT_FILES"
#: JSON ``{name: value}``: environment variables to set verbatim. Ray expands ``$VAR`` in runtime_env env_vars
#: (``os.path.expandvars``, no escape), so a launcher passes values holding ``$`` here, ``$`` JSON-escaped.
LITERAL_ENV = "RLADAPT_LITERAL_ENV"
#: JSON ``{name: path}``: secrets to read from files where the process runs, so that only the path travels (a
#: Ray job's runtime_env is stored in Ray's job table, which anyone who can reach the dashboard can list).
SECRET_FILES_ENV = "RLADAPT_SECRET_FILES"
#: The Ray ``runtime_env.worker_process_setup_hook`` that applies the patches of ``PATCHES_ENV`` in each worker.
WORKER_SETUP_HOOK = f"{BOOTSTRAP_MODULE}.worker_setup"
#: JSON ``ResumeSettings``: what the job resumes from is decided where it runs (``rladapt.resume``).
SETTINGS_ENV = "RLADAPT_CHECKPOINTS"
#: The job's model-pool publishing settings (JSON: ``rladapt.pool.publisher.PublishSettings`` without the run id,
#: which the job reads from ``RUN_ID_ENV``), when the spec has ``spec.pool``.
PUBLISH_ENV = "RLADAPT_POOL_PUBLISH"
#: The file (in the run directory) each start of the job appends a line to: when, which restart, from which step.
ATTEMPTS_ENV = "RLADAPT_ATTEMPTS"
ATTEMPTS_FILE = "attempts.jsonl"
#: The run and the attempt (the job name: ``<run id>`` for the launch, ``<run id>-aN`` for a resume) the job belongs
#: to: its bootstrap holds the checkpoint directory for them (``rladapt.runs.owner``) and tells a restart of the
#: same attempt (a Slurm requeue, a pod retry) from its first start.
RUN_ID_ENV = "RLADAPT_RUN_ID"
RUN_ATTEMPT_ENV = "RLADAPT_RUN_ATTEMPT"
#: Set by a launcher whose job script restarts the driver itself (Slurm's restart loop): which restart of the job this
#: start is (1, 2, ...) and the exit code of the start before it. Each start is a fresh bootstrap, so these are how it
#: knows that the previous start, recorded last in ``ATTEMPTS_ENV``, failed on the step it resumed from.
RESTART_ENV = "RLADAPT_RESTART"
PREVIOUS_EXIT_ENV = "RLADAPT_PREVIOUS_EXIT"
#: ``1``: the job takes its checkpoint directory over from another run (``--take-over``).
TAKE_OVER_ENV = "RLADAPT_TAKE_OVER"

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?\Z")


def json_env_value(value: object) -> str:
    """JSON for an environment variable with every ``$`` escaped (``\\u0024``): shells and Ray leave it alone."""
    return json.dumps(value, sort_keys=True).replace("$", "\\u0024")


def is_python(program: str) -> bool:
    return bool(_PYTHON_NAME.match(Path(program).name))


def bootstrap_argv(native: NativeLaunch) -> list[str]:
    """The command a launcher runs: the native argv wrapped by the bootstrap, with its runtime patches.

    The native interpreter (``argv[0]`` when it is a Python) also runs the bootstrap, so the in-process path
    applies and the framework runs in the environment it was meant for.
    """
    argv = list(native.argv)
    python = argv[0] if argv and is_python(argv[0]) else "python3"
    patches = [arg for hook in native.runtime_patches for arg in ("--patch", hook)]
    return [python, "-m", BOOTSTRAP_MODULE, *patches, "--", *argv]


@dataclass(frozen=True)
class ResumeSettings:
    """What the job needs to decide: the framework and version, the checkpoint directory, the resume rule."""

    framework: str
    version: str
    dir: str
    resume: str = "auto"
    path: str | None = None
    max_restarts: int = 0
    #: The processes that write a step's per-rank files (``trained_world_size``): a step with fewer ranks' files
    #: is incomplete even when the files cannot tell (TRL's last ``rng_state_R.pth``). None: decided from the files.
    world_size: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "framework": self.framework,
            "version": self.version,
            "dir": self.dir,
            "resume": self.resume,
            "path": self.path,
            "max_restarts": self.max_restarts,
        }
        if self.world_size is not None:
            out["world_size"] = self.world_size
        return out

    @classmethod
    def from_json(cls, data: Any) -> ResumeSettings:
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), str) for k in ("framework", "version")
        ):
            raise ValueError("expected an object with framework, version, dir, resume")
        return cls(
            framework=str(data["framework"]),
            version=str(data["version"]),
            dir=str(data.get("dir") or ""),
            resume=str(data.get("resume") or "auto"),
            path=None if data.get("path") is None else str(data["path"]),
            max_restarts=int(data.get("max_restarts") or 0),
            world_size=int(data["world_size"]) if data.get("world_size") else None,
        )


def trained_world_size(native: NativeLaunch) -> int | None:
    """The processes a checkpoint is sharded over: those of the pool that trains the actor (every actor rank
    writes its own shard), one per node on CPU; None without pools.

    Only the trained pool counts: a separate rollout or reward pool writes nothing into a step (verl's FSDP world
    is ``trainer.nnodes x trainer.n_gpus_per_node`` of the actor pool, OpenRLHF's ``actor_num_nodes x
    actor_num_gpus_per_node``; TRL is always one process on one pool of one GPU).
    """
    if not native.pools:
        return None
    pool = next((p for p in native.pools if "actor" in p.roles), native.pools[0])
    return pool.nodes * max(pool.gpus_per_node, 1)


def resume_settings(native: NativeLaunch, *, restarts_in_job: bool) -> ResumeSettings | None:
    """The settings of ``native``; None without a checkpoint directory. ``restarts_in_job``: the bootstrap
    restarts failed attempts itself (the launcher has no retry of its own)."""
    if not native.checkpoint_dir:
        return None
    restarts = int(native.lifecycle.get("max_restarts") or 0) if restarts_in_job else 0
    return ResumeSettings(
        framework=native.framework,
        version=native.version,
        dir=native.checkpoint_dir,
        resume=native.resume.mode,
        path=native.resume.path,
        max_restarts=restarts,
        world_size=trained_world_size(native),
    )


def publish_settings(native: NativeLaunch) -> dict[str, Any] | None:
    """What the job's pool publisher needs (``rladapt.pool.publisher.PublishSettings``); None without
    ``spec.pool`` or without a checkpoint directory to publish from."""
    if native.publish is None or not native.checkpoint_dir:
        return None
    return {**native.publish, "framework": native.framework, "version": native.version,
            "dir": native.checkpoint_dir}  # fmt: skip


def run_env(run_id: str, attempt: str, *, take_over: bool = False) -> dict[str, str]:
    """The variables that tell a job which run and attempt it is (see ``RUN_ID_ENV``)."""
    env = {RUN_ID_ENV: run_id, RUN_ATTEMPT_ENV: attempt}
    if take_over:
        env[TAKE_OVER_ENV] = "1"
    return env
