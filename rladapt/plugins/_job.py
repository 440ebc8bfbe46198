"""The framework-independent parts of a native launch, derived from the neutral spec: placement, ports, volumes,
secrets, resume point. ``NativeLaunch.from_job`` fills them in (the built-in adapters also read ``placement``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .native import PoolSpec, PortSpec, Resume, RolePlacement, SecretRef, VolumeSpec

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
