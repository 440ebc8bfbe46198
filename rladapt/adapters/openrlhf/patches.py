"""Known OpenRLHF pitfalls, as named patches (each with its upstream issue and a test that fails without it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from rladapt.plugins.patches import Patch

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch
    from rladapt.primitives import RLJob

#: Variables the driver's own ``ray.init(runtime_env=...)`` sets in every OpenRLHF release since 0.6.
DRIVER_ENV_KEYS = ("TOKENIZERS_PARALLELISM", "NCCL_DEBUG", "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS")
SOCKET_IFNAME_KEYS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


def with_env(native: NativeLaunch, extra: dict[str, str], note: str | None = None) -> NativeLaunch:
    """``native`` with ``extra`` in both the process environment and the Ray job's runtime_env."""
    runtime_env = dict(native.runtime_env)
    runtime_env["env_vars"] = {**runtime_env.get("env_vars", {}), **extra}
    update: dict[str, object] = {"env": {**native.env, **extra}, "runtime_env": runtime_env}
    if note:
        update["notes"] = (*native.notes, note)
    return native.model_copy(update=update)


def _job_env(native: NativeLaunch) -> dict[str, str]:
    return {**native.env, **native.runtime_env.get("env_vars", {})}


# --- the driver's ray.init against the job's runtime_env -----------------------------------------------------


def _allow_driver_runtime_env(native: NativeLaunch, job: RLJob) -> NativeLaunch:
    env = _job_env(native)
    clobbered = [k for k in DRIVER_ENV_KEYS[:2] if k in env]
    note = None
    if clobbered and Version(native.version) < Version("0.9.10"):
        note = (
            f"openrlhf {native.version} sets {', '.join(clobbered)} to its own values in every Ray worker "
            "(TOKENIZERS_PARALLELISM=true, NCCL_DEBUG=WARN); the job's values reach the driver only "
            "(fixed in 0.9.10, OpenRLHF/OpenRLHF#1212)"
        )
    return with_env(native, {"RAY_OVERRIDE_JOB_RUNTIME_ENV": "1"}, note)


RAY_INIT_ENV_OVERRIDE = Patch(
    id="openrlhf-ray-init-runtime-env-override",
    framework="openrlhf",
    versions=">=0.6.0",
    issue="https://github.com/OpenRLHF/OpenRLHF/issues/1138",
    summary="The driver calls ray.init(runtime_env={'env_vars': {NCCL_DEBUG, TOKENIZERS_PARALLELISM, ...}}); a "
    "job submitted with any of those variables in --runtime-env-json then dies in ray.init with 'Failed to "
    "merge the Job's runtime env'. RAY_OVERRIDE_JOB_RUNTIME_ENV=1 lets Ray merge them.",
    kind="env",
    apply=_allow_driver_runtime_env,
)


# --- NCCL_CUMEM_ENABLE on both sides of the weight-sync group ------------------------------------------------


def _cumem_off(native: NativeLaunch, job: RLJob) -> NativeLaunch:
    return with_env(native, {"NCCL_CUMEM_ENABLE": "0"})


def _nccl_sync(native: NativeLaunch, job: RLJob) -> bool:
    argv = list(native.argv)
    for flag in ("--vllm_sync_backend", "--vllm.sync_backend"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1] == "nccl"
    return True  # nccl is the default of every release this patch covers


NCCL_CUMEM_CONSISTENT = Patch(
    id="openrlhf-nccl-cumem-consistent",
    framework="openrlhf",
    versions="<0.9.5",
    issue="https://github.com/OpenRLHF/OpenRLHF/issues/1193",
    summary="Before 0.9.5 the training actor sets NCCL_CUMEM_ENABLE=0 in its own process only; vLLM >= 0.16 no "
    "longer does, so the weight-sync NCCL group mixes settings and ncclCommInitRank fails. Setting it for every "
    "process of the job makes both sides agree with any vLLM.",
    kind="env",
    apply=_cumem_off,
    when=_nccl_sync,
)


# --- socket interfaces on multi-node jobs --------------------------------------------------------------------


def _multi_node_with_ifname(native: NativeLaunch, job: RLJob) -> bool:
    env = _job_env(native)
    return native.total_nodes > 1 and any(k in env for k in SOCKET_IFNAME_KEYS)


def _mirror_ifname(native: NativeLaunch, job: RLJob) -> NativeLaunch:
    env = _job_env(native)
    value = next(env[k] for k in SOCKET_IFNAME_KEYS if k in env)
    missing = {k: value for k in SOCKET_IFNAME_KEYS if k not in env}
    return with_env(native, missing) if missing else native


SOCKET_IFNAME = Patch(
    id="openrlhf-multinode-socket-ifname",
    framework="openrlhf",
    versions=">=0",
    issue="https://github.com/OpenRLHF/OpenRLHF/issues/865",
    summary="Across nodes, the vLLM engines and the weight-sync group bootstrap over both NCCL and Gloo; with "
    "only one of NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME set, the other picks the first interface and the "
    "engines hang before generating. The one that is set is copied to the other, in every Ray worker.",
    kind="env",
    apply=_mirror_ifname,
    when=_multi_node_with_ifname,
)

PATCHES: tuple[Patch, ...] = (RAY_INIT_ENV_OVERRIDE, NCCL_CUMEM_CONSISTENT, SOCKET_IFNAME)
