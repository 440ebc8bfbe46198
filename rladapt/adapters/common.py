"""Helpers every adapter uses to turn the neutral spec into the parts of a NativeLaunch that do not depend on
the framework: placement, ports, volumes, secrets, resume point."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rladapt.plugins.native import PoolSpec, PortSpec, Resume, RolePlacement, SecretRef, VolumeSpec
from rladapt.primitives.errors import Problem, SpecError

if TYPE_CHECKING:
    from rladapt.primitives import RLJob


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
        out.append(VolumeSpec(name=v.name, mount=v.mount, kind=kind, source=value, read_only=v.read_only))
    return tuple(out)


def secrets(job: RLJob) -> tuple[SecretRef, ...]:
    out = []
    for s in job.spec.secrets:
        f = s.from_
        if f.k8s_secret is not None:
            out.append(SecretRef(env=s.env, kind="k8s_secret", name=f.k8s_secret.name, key=f.k8s_secret.key))
        elif f.env is not None:
            out.append(SecretRef(env=s.env, kind="env", name=f.env))
        else:
            out.append(SecretRef(env=s.env, kind="file", name=str(f.file)))
    return tuple(out)


def resume(job: RLJob) -> Resume:
    ck = job.spec.checkpoint
    return Resume(mode=ck.resume, path=ck.resume_path)


def common_fields(job: RLJob) -> dict[str, object]:
    """The framework-independent NativeLaunch fields, as keyword arguments."""
    return {
        "job_name": job.metadata.name,
        "env": dict(job.spec.env),
        "secrets": secrets(job),
        "pools": pools(job),
        "placement": placement(job),
        "ports": ports(job),
        "volumes": volumes(job),
        "working_dir": job.spec.runtime.working_dir,
        "image": job.spec.runtime.image,
        "checkpoint_dir": job.checkpoint_dir,
        "resume": resume(job),
        "labels": dict(job.metadata.labels),
        "launcher_options": {k: dict(v) for k, v in job.spec.launcher.items()},
        "lifecycle": job.spec.lifecycle.model_dump(),
    }


#: Files Ray must never upload with a job's working dir: weights and data sets (verl issue 696,
#: HTTPRequestEntityTooLarge). Each adapter adds its own framework's output folders.
WEIGHT_EXCLUDES: tuple[str, ...] = (
    "*.safetensors",
    "*.bin",
    "*.pt",
    "*.pth",
    "*.ckpt",
    "*.gguf",
    "*.parquet",
    "*.arrow",
)


# Hydra's override grammar, as far as a passthrough item must follow it: an optional +, ++ or ~, a dotted key
# (config-group paths may hold / and @), and an optional =value.
_HYDRA_OVERRIDE = re.compile(r"(?:~|\+{1,2})?[A-Za-z_][A-Za-z0-9_.\-@/]*(?:=.*)?", re.S)


def hydra_passthrough(job: RLJob, framework: str) -> list[str]:
    """``spec.native.<framework>`` for a Hydra-configured framework: each item must be a Hydra override."""
    items = list(job.spec.native.get(framework, []))
    bad = [
        Problem(
            f"spec.native.{framework}[{i}]",
            "not a Hydra override",
            "KEY=VALUE, +KEY=VALUE, ++KEY=VALUE or ~KEY",
            item,
        )
        for i, item in enumerate(items)
        if not _HYDRA_OVERRIDE.fullmatch(item)
    ]
    if bad:
        raise SpecError(bad)
    return items


def override_notes(
    framework: str, passthrough: Iterable[tuple[int, str]], generated: Iterable[str]
) -> list[str]:
    """Notes for escape-hatch items that replace a value rladapt derived from the spec.

    The escape hatch may override anything (that is what it is for), but never silently: the render and the
    dry run say which derived value lost. ``passthrough`` holds (index in spec.native.<framework>, key);
    ``generated`` the ``key=value`` (or ``--flag[=value]``) items rladapt emitted.
    """
    derived: dict[str, str] = {}
    for item in generated:
        derived.setdefault(item.split("=", 1)[0].lstrip("+~"), item)
    return [
        f"spec.native.{framework}[{i}] overrides {derived[key]!r}, which rladapt derived from the spec"
        for i, key in passthrough
        if key in derived
    ]
