"""``ServiceRole``: a process rladapt runs beside the training job, and ``PortSpec``, a port a job or a role opens.

They sit in a module of their own, under ``native`` (whose ``NativeLaunch`` carries them) and under the modules that
build roles from a spec (``rladapt.evaluate.role``, ``pool_serving``), so that ``native`` can ask those for the
roles without an import circle.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# as native's models: frozen, no unknown field, the validator built on first use (pydantic "defer_build")
_CONFIG = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class PortSpec(BaseModel):
    model_config = _CONFIG

    name: str
    port: int
    protocol: str = "TCP"
    purpose: str = "other"


class ServiceRole(BaseModel):
    """A process rladapt runs beside the training job (an evaluator, a serving group): framework-neutral, derived
    from the spec (``services``), rendered by each launcher as its own unit (a process group on local, a Ray job on
    Ray, a job step on Slurm, a Job on Kubernetes) so that training never waits for it."""

    model_config = _CONFIG

    name: str = Field(
        pattern=r"^[a-z][a-z0-9-]{0,39}$", description="Unique in the launch; names its unit and log."
    )
    argv: tuple[str, ...] = Field(
        description="The command; argv[0] is the job's interpreter (spec.runtime.python) unless a program is named."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Added to the job's environment.")
    cpus: int = Field(1, ge=1)
    memory: str | None = Field(None, description="Kubernetes/Slurm memory form, e.g. 4Gi; None: not asked.")
    gpus: int = Field(0, ge=0)
    ports: tuple[PortSpec, ...] = ()
    restart: Literal["on-failure", "never"] = Field(
        "on-failure", description="Started again when it exits non-zero while the job runs."
    )
    outlives_job: bool = Field(
        False,
        description="False: stopped when the training job ends. True: left to finish its own work (an evaluator "
        "draining the last versions) and stopped by rladapt stop.",
    )
    reads: tuple[str, ...] = Field(
        (),
        description="The spec fields naming what the training job writes and this role reads "
        "(spec.checkpoint.dir, spec.pool.store): a launcher that runs the role apart from the job (Ray: a job "
        "of its own, with a copy of its own of the working directory) refuses them off shared storage.",
    )
