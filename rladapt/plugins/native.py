"""``NativeLaunch``: what a framework adapter returns and every launcher consumes.

It is the whole native launch of one job on one framework version, with nothing left to compute: the launcher
only wraps it (a process, a Ray job, an sbatch script, a RayJob manifest). Its JSON form (``to_json``) is a stable,
documented interface (``rladapt render --format json``); the field order below is the output order.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NATIVE_FORMAT_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RolePlacement(_Frozen):
    """Where one role runs: its pool and the GPUs it gets there, and what else it needs on each node."""

    pool: str
    nodes: int
    gpus_per_node: int
    colocated_with: tuple[str, ...] = ()
    cpus_per_gpu: int | None = Field(None, description="spec.roles.<role>.cpus_per_gpu; None: not asked.")
    memory: str | None = Field(
        None, description="spec.roles.<role>.memory per node, e.g. 200Gi; None: not asked."
    )


class PoolSpec(_Frozen):
    name: str
    nodes: int
    gpus_per_node: int
    roles: tuple[str, ...]


class SecretRef(_Frozen):
    """An environment variable whose value is never rendered: only where it comes from."""

    env: str
    kind: Literal["k8s_secret", "env", "file"]
    name: str = Field(description="Secret name (k8s_secret), variable name (env) or file path (file).")
    key: str | None = None


class PortSpec(_Frozen):
    name: str
    port: int
    protocol: str = "TCP"
    purpose: str = "other"


class VolumeSpec(_Frozen):
    name: str
    mount: str
    kind: Literal["host_path", "pvc", "nfs", "memory"]
    source: str = Field(description="host path, PVC name, server:path (nfs) or size (memory).")
    read_only: bool = False


class Resume(_Frozen):
    mode: Literal["auto", "never", "path"] = "auto"
    path: str | None = None


class NativeLaunch(_Frozen):
    framework: str
    version: str
    job_name: str
    argv: tuple[str, ...] = Field(description="The native command; argv[0] is the interpreter or program.")
    env: dict[str, str] = Field(default_factory=dict)
    secrets: tuple[SecretRef, ...] = ()
    files: dict[str, str] = Field(
        default_factory=dict, description="Relative path -> text, written before launch."
    )
    passthrough: tuple[str, ...] = Field(
        (), description="The spec's native.<framework> items, verbatim, so native validation can blame them."
    )
    patches: tuple[str, ...] = Field((), description="Ids of the patches applied, in order.")
    runtime_patches: tuple[str, ...] = Field(
        (), description="Patch ids the bootstrap applies in each process."
    )
    pools: tuple[PoolSpec, ...] = ()
    placement: dict[str, RolePlacement] = Field(default_factory=dict)
    ports: tuple[PortSpec, ...] = ()
    volumes: tuple[VolumeSpec, ...] = ()
    working_dir: str = "."
    image: str | None = None
    checkpoint_dir: str | None = None
    resume: Resume = Field(default_factory=Resume)
    runtime_env: dict[str, Any] = Field(
        default_factory=dict, description="Ray runtime_env for Ray submission."
    )
    labels: dict[str, str] = Field(default_factory=dict)
    launcher_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    lifecycle: dict[str, Any] = Field(default_factory=dict)
    notes: tuple[str, ...] = Field((), description="Human-readable remarks from the adapter (warnings).")

    @property
    def total_nodes(self) -> int:
        return sum(p.nodes for p in self.pools) or 1

    @property
    def gpus_per_node(self) -> int:
        return max((p.gpus_per_node for p in self.pools), default=0)

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        return {"format": NATIVE_FORMAT_VERSION, **data}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def with_env(self, extra: dict[str, str]) -> NativeLaunch:
        """A copy with ``extra`` merged over the environment (the originals are never changed)."""
        return self.model_copy(update={"env": {**self.env, **extra}})
