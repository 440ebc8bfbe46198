"""Each OpenRLHF patch against the real code it works around: the driver's ``ray.init`` of each wheel merged with
the rendered job runtime_env by Ray's own merge function, and the training actor's NCCL_CUMEM_ENABLE handling read
from each wheel. Every test also renders without patches (translate alone) and shows the failure."""

from __future__ import annotations

import ast
import re
import zipfile
from types import SimpleNamespace
from typing import Any

import pytest
from packaging.version import Version
from ray.runtime_env.runtime_env import _merge_runtime_env

from rladapt.adapters.openrlhf.patches import PATCHES
from rladapt.plugins import NativeLaunch, Registry
from rladapt.primitives import RLJob

from .conftest import PINNED, job, render, source, wheel

pytestmark = pytest.mark.conformance


def unpatched(registry: Registry, spec: RLJob, version: str) -> NativeLaunch:
    adapter = registry.framework("openrlhf")
    return adapter.translate(spec, adapter.resolve_version(version))


def test_every_patch_names_its_upstream_issue_and_range() -> None:
    for patch in PATCHES:
        assert re.match(r"^https://github\.com/OpenRLHF/OpenRLHF/issues/\d+$", patch.issue), patch.id
        assert patch.framework == "openrlhf" and patch.kind == "env"
        assert any(patch.applies_to("openrlhf", v) for v in PINNED)


# --- openrlhf-ray-init-runtime-env-override --------------------------------------------------------------------


def driver_runtime_env(version: str, driver_env: dict[str, str]) -> dict[str, Any] | None:
    """The runtime_env that the wheel's driver passes to ``ray.init`` (None when it calls no ray.init with one)."""
    tree = ast.parse(source(version))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "init"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "ray"
        ):
            for keyword in node.keywords:
                if keyword.arg == "runtime_env":
                    # os.environ of the driver is the job's runtime_env env_vars (Ray applies them to the entrypoint)
                    expr = ast.Expression(keyword.value)
                    value = eval(
                        compile(expr, "ray.init", "eval"), {"os": SimpleNamespace(environ=driver_env)}
                    )
                    assert isinstance(value, dict)
                    return value
    return None


def ray_driver_merge(native: NativeLaunch, version: str) -> tuple[bool, dict[str, Any] | None]:
    """What ``ray.init`` in the driver ends with: (has a ray.init runtime_env, merged env or None = ValueError)."""
    job_env = dict(native.runtime_env.get("env_vars", {}))
    driver = driver_runtime_env(version, job_env)
    if driver is None:
        return False, None
    override = job_env.get("RAY_OVERRIDE_JOB_RUNTIME_ENV") == "1"
    # Ray's own merge, the one ray.init runs in a job's driver (it accepts plain dicts at runtime)
    return True, _merge_runtime_env(dict(native.runtime_env), driver, override=override)  # type: ignore[arg-type]


USER_ENV = {"NCCL_DEBUG": "INFO", "TOKENIZERS_PARALLELISM": "false"}
#: Expressible by every pinned version, 0.5.9.post1 included.
RLOO = {"algorithm": {"name": "rloo", "kl": {"coef": 0.01, "in": "reward"}}}


@pytest.mark.parametrize("version", PINNED)
def test_driver_ray_init_merges_with_the_jobs_runtime_env(version: str, registry: Registry) -> None:
    spec = job(**RLOO, env=USER_ENV)
    native = render(spec, version, registry).native
    has_init, merged = ray_driver_merge(native, version)
    if not has_init:
        assert "openrlhf-ray-init-runtime-env-override" not in native.patches
        return
    assert merged is not None, "ray.init in the driver would raise 'Failed to merge the Job's runtime env'"
    if Version(version) >= Version("0.9.10"):
        assert merged["env_vars"]["NCCL_DEBUG"] == "INFO"
    else:
        assert merged["env_vars"]["NCCL_DEBUG"] == "WARN"  # hard-coded by the driver before #1212
        assert any("OpenRLHF/OpenRLHF#1212" in note for note in native.notes)

    _, without = ray_driver_merge(unpatched(registry, spec, version), version)
    assert without is None, "without the patch the merge must conflict (the bug this patch exists for)"


# --- openrlhf-nccl-cumem-consistent ---------------------------------------------------------------------------


def actor_forces_cumem_off_unconditionally(version: str) -> bool:
    with zipfile.ZipFile(wheel(version)) as archive:
        name = next(n for n in archive.namelist() if n.endswith("openrlhf/trainer/ray/ppo_actor.py"))
        text = archive.read(name).decode()
    lines = text.splitlines()
    sets = [
        i for i, line in enumerate(lines) if re.search(r'os\.environ\["NCCL_CUMEM_ENABLE"\]\s*=\s*"0"', line)
    ]
    assert sets, f"{version}: the training actor no longer sets NCCL_CUMEM_ENABLE"
    return all(not any("vllm.__version__" in line for line in lines[max(0, i - 8) : i]) for i in sets)


@pytest.mark.parametrize("version", PINNED)
def test_every_process_agrees_with_the_actor_on_nccl_cumem(version: str, registry: Registry) -> None:
    spec = job(**RLOO)
    native = render(spec, version, registry).native
    job_env = native.runtime_env.get("env_vars", {})
    if actor_forces_cumem_off_unconditionally(version):
        # The actor forces 0 in its own process; vLLM >= 0.16 no longer does, so every worker must be told.
        assert job_env.get("NCCL_CUMEM_ENABLE") == "0" and native.env.get("NCCL_CUMEM_ENABLE") == "0"
        assert "NCCL_CUMEM_ENABLE" not in unpatched(registry, spec, version).runtime_env.get("env_vars", {})
    else:
        # Gated on vLLM < 0.16 by OpenRLHF itself; forcing 0 would break ncclCommInitRank with NCCL 2.27+.
        assert "NCCL_CUMEM_ENABLE" not in job_env


# --- openrlhf-multinode-socket-ifname -------------------------------------------------------------------------

MULTI_NODE = {
    **RLOO,
    "env": {"NCCL_SOCKET_IFNAME": "eth1"},
    "placement": {
        "pools": [
            {"name": "train", "nodes": 2, "gpus_per_node": 8, "roles": ["actor", "ref"]},
            {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
        ]
    },
    "training": {"global_batch": 64, "mini_batch": 32},
}


@pytest.mark.parametrize("version", PINNED)
def test_multi_node_jobs_use_one_socket_interface_for_nccl_and_gloo(version: str, registry: Registry) -> None:
    spec = job(**MULTI_NODE)
    native = render(spec, version, registry).native
    for env in (native.runtime_env["env_vars"], native.env):
        assert env["GLOO_SOCKET_IFNAME"] == env["NCCL_SOCKET_IFNAME"] == "eth1"
    assert "openrlhf-multinode-socket-ifname" in native.patches
    assert "GLOO_SOCKET_IFNAME" not in unpatched(registry, spec, version).runtime_env["env_vars"]


def test_single_node_jobs_keep_their_socket_settings(registry: Registry) -> None:
    native = render(job(env={"NCCL_SOCKET_IFNAME": "eth1"}), PINNED[-1], registry).native
    assert "GLOO_SOCKET_IFNAME" not in native.runtime_env["env_vars"]
    assert "openrlhf-multinode-socket-ifname" not in native.patches
