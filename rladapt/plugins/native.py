"""``NativeLaunch``: what a framework adapter returns and every launcher consumes.

It is the whole native launch of one job on one framework version, with nothing left to compute: the launcher
only wraps it (a process, a Ray job, an sbatch script, a RayJob manifest). Its JSON form (``to_json``) is a stable,
documented interface (``rladapt render --format json``); the field order below is the output order.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rladapt.primitives.paths import all_inputs

from .metrics import METRICS_DIR  # defined with the metric names: its readers need no pydantic models
from .service import PortSpec, ServiceRole

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

#: 2: a secret carries its sources in order (``SecretRef.sources``), no longer one kind/name/key.
NATIVE_FORMAT_VERSION = 2


class _Frozen(BaseModel):
    # defer_build: NativeLaunch's validator (with its nested models') is built on first use, not one per class
    # at import, as for the spec models (pydantic docs, "Model config: defer_build")
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


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


SecretKind = Literal["k8s_secret", "env", "file"]


class SecretSourceRef(_Frozen):
    """One place a secret's value can come from, by name only."""

    kind: SecretKind
    name: str = Field(description="Secret name (k8s_secret), variable name (env) or file path (file).")
    key: str | None = None

    @property
    def label(self) -> str:
        """``env HF_TOKEN``, ``file "~/.hf token"``, ``k8s_secret hf/token``: one line, names only.

        A file path may hold any character: it is JSON-quoted, so a newline in it cannot end a comment line of a
        rendered script or forge a line of a message.
        """
        if self.kind == "file":
            return f"file {json.dumps(self.name)}"
        if self.kind == "env":
            return f"env {self.name}"
        return f"k8s_secret {self.name}" + (f"/{self.key}" if self.key else "")


class SecretRef(_Frozen):
    """An environment variable whose value is never rendered: only where it comes from.

    ``sources`` are in the spec's order; a launcher takes the first one it can read (``first``).
    """

    env: str
    sources: tuple[SecretSourceRef, ...] = Field(min_length=1)

    def first(self, kinds: Sequence[SecretKind]) -> SecretSourceRef | None:
        """The first source of one of ``kinds`` (what a launcher can read), or None."""
        return next((s for s in self.sources if s.kind in kinds), None)

    def readable(self, kinds: Sequence[SecretKind]) -> tuple[SecretSourceRef, ...]:
        """The sources of one of ``kinds``, in order: what a launcher that falls back at run time tries."""
        return tuple(s for s in self.sources if s.kind in kinds)

    @property
    def labels(self) -> str:
        return ", ".join(s.label for s in self.sources)


class VolumeSpec(_Frozen):
    name: str
    mount: str
    kind: Literal["host_path", "pvc", "nfs", "memory"]
    source: str = Field(description="host path, PVC name, server:path (nfs) or size (memory).")
    read_only: bool = False
    #: pvc only: the claim to create when absent (None: an existing claim, used as it is).
    size: str | None = None
    storage_class: str | None = None
    #: None: the launcher chooses (the kubernetes one from how many pods mount the claim).
    access_mode: str | None = None

    @property
    def creates_claim(self) -> bool:
        """A claim the launch creates when none of that name exists (and never deletes)."""
        return self.kind == "pvc" and self.size is not None


class Resume(_Frozen):
    mode: Literal["auto", "never", "path"] = "auto"
    path: str | None = None


def services(job: RLJob, framework: str = "", version: str = "") -> tuple[ServiceRole, ...]:
    """The service roles the spec asks for (continuous evaluation, a serving group), in a fixed order."""
    # imported here, not at the top: the evaluate package's face also loads its results reader, which a module
    # every plugin imports should not pay for until a launch is built
    from rladapt.evaluate.role import evaluator_roles

    from .pool_serving import pool_serving

    return (*evaluator_roles(job, framework, version), *pool_serving(job))


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
    metrics_dir: str | None = Field(
        None,
        description="Where the job writes the TensorBoard events rladapt reads back, as the framework resolves it "
        "(relative to the working directory, or absolute); the events may lie in folders below it. None: "
        "``<checkpoint_dir>/rladapt-metrics``, the directory rladapt chooses when the launch names none.",
    )
    resume: Resume = Field(default_factory=Resume)
    runtime_env: dict[str, Any] = Field(
        default_factory=dict, description="Ray runtime_env for Ray submission."
    )
    labels: dict[str, str] = Field(default_factory=dict)
    launcher_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    lifecycle: dict[str, Any] = Field(default_factory=dict)
    publish: dict[str, Any] | None = Field(
        None, description="spec.pool: the job publishes each complete checkpoint to this model pool."
    )
    services: tuple[ServiceRole, ...] = Field(
        (), description="Processes run beside the training job (evaluator, serving group): ``ServiceRole``."
    )
    notes: tuple[str, ...] = Field((), description="Human-readable remarks from the adapter (warnings).")
    origins: dict[str, str] = Field(
        default_factory=dict,
        description="Native key (Hydra key, flag, config key) -> the spec field or patch that set it; native "
        "validation names it when the framework version rejects the key.",
    )
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="Spec field -> the path it names that the job reads (interpreter, model, data, reward, agent "
        "and tool files), as written: each launcher checks that the job will find it where it runs.",
    )

    @classmethod
    def from_job(
        cls,
        job: RLJob,
        *,
        framework: str,
        version: str,
        argv: Sequence[str],
        files: Mapping[str, str] | None = None,
        passthrough: Sequence[str] = (),
        origins: Mapping[str, str] | None = None,
        patches: Sequence[str] = (),
        runtime_patches: Sequence[str] = (),
        runtime_env: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
        metrics_dir: str | None = None,
    ) -> NativeLaunch:
        """The native launch of ``job``: the framework's part is given, the rest is derived from the spec.

        An adapter's ``translate`` builds its result with this, so every adapter derives the same placement, ports,
        volumes, secrets, resume point, labels, lifecycle, launcher options, environment, image, working and
        checkpoint directories from the job.
        """
        spec = job.spec
        return cls(
            framework=framework,
            version=version,
            job_name=job.metadata.name,
            argv=tuple(argv),
            env=dict(spec.env),
            secrets=secrets(job),
            files=dict(files or {}),
            passthrough=tuple(passthrough),
            origins=dict(origins or {}),
            patches=tuple(patches),
            runtime_patches=tuple(runtime_patches),
            pools=pools(job),
            placement=placement(job),
            ports=ports(job),
            volumes=volumes(job),
            working_dir=spec.runtime.working_dir,
            image=spec.runtime.image,
            checkpoint_dir=job.checkpoint_dir,
            metrics_dir=metrics_dir,
            resume=resume(job),
            runtime_env=dict(runtime_env or {}),
            labels=dict(job.metadata.labels),
            launcher_options={k: dict(v) for k, v in spec.launcher.items()},
            lifecycle=spec.lifecycle.model_dump(),
            publish=spec.pool.model_dump() if spec.pool is not None else None,
            services=services(job, framework, version),
            notes=tuple(notes),
            inputs=all_inputs(job),
        )

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

    def events_dir(self) -> str | None:
        """Where the job writes the TensorBoard events rladapt reads back, relative to the working directory or
        absolute: ``metrics_dir``, else ``<checkpoint_dir>/rladapt-metrics``; None with neither."""
        if self.metrics_dir:
            return self.metrics_dir
        if self.checkpoint_dir:
            return posixpath.join(self.checkpoint_dir, METRICS_DIR)
        return None

    def with_env(self, extra: dict[str, str]) -> NativeLaunch:
        """A copy with ``extra`` merged over the environment (the originals are never changed)."""
        return self.model_copy(update={"env": {**self.env, **extra}})


# --- the parts derived from the spec the same way for every framework (from_job) ---


def pools(job: RLJob) -> tuple[PoolSpec, ...]:
    return tuple(
        PoolSpec(name=p.name, nodes=p.nodes, gpus_per_node=p.gpus_per_node, roles=tuple(p.roles))
        for p in job.placement.pools
    )


def placement(job: RLJob) -> dict[str, RolePlacement]:
    out: dict[str, RolePlacement] = {}
    for pool in job.placement.pools:
        for role in pool.roles:
            res = job.spec.roles.get(role)
            gpus = res.gpus if res is not None and res.gpus is not None else pool.gpus
            nodes = max(1, gpus // pool.gpus_per_node) if gpus >= pool.gpus_per_node else 1
            per_node = pool.gpus_per_node if gpus >= pool.gpus_per_node else gpus
            out[role] = RolePlacement(
                pool=pool.name,
                nodes=nodes,
                gpus_per_node=per_node,
                colocated_with=tuple(r for r in pool.roles if r != role),
                cpus_per_gpu=res.cpus_per_gpu if res is not None else None,
                memory=res.memory if res is not None else None,
            )
    return out


def ports(job: RLJob) -> tuple[PortSpec, ...]:
    return tuple(
        PortSpec(name=p.name, port=p.port, protocol=p.protocol, purpose=p.purpose) for p in job.spec.ports
    )


def volumes(job: RLJob) -> tuple[VolumeSpec, ...]:
    out = []
    for v in job.spec.volumes:
        src = v.source
        if src.host_path is not None:
            kind, value = "host_path", src.host_path
        elif src.pvc is not None:
            kind, value = "pvc", src.pvc
        elif src.nfs is not None:
            kind, value = "nfs", f"{src.nfs.server}:{src.nfs.path}"
        else:
            kind, value = "memory", str(src.memory)
        out.append(
            VolumeSpec(
                name=v.name,
                mount=v.mount,
                kind=kind,
                source=value,
                read_only=v.read_only,
                size=src.size,
                storage_class=src.storage_class,
                access_mode=src.access_mode,
            )
        )
    return tuple(out)


def secrets(job: RLJob) -> tuple[SecretRef, ...]:
    out = []
    for s in job.spec.secrets:
        sources = []
        for f in s.from_:
            if f.k8s_secret is not None:
                sources.append(
                    SecretSourceRef(kind="k8s_secret", name=f.k8s_secret.name, key=f.k8s_secret.key)
                )
            elif f.env is not None:
                sources.append(SecretSourceRef(kind="env", name=f.env))
            else:
                sources.append(SecretSourceRef(kind="file", name=str(f.file)))
        out.append(SecretRef(env=s.env, sources=tuple(sources)))
    return tuple(out)


def resume(job: RLJob) -> Resume:
    ck = job.spec.checkpoint
    return Resume(mode=ck.resume, path=ck.resume_path)
