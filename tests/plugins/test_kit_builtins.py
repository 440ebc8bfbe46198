"""The conformance kit plugin authors use, applied to every built-in adapter, launcher and patch.

The classes are the ones the README advertises, subclassed as a plugin's own suite would; the plain functions
(``check_adapter`` and friends) are run once too, since other runners use them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.plugins import BUILTIN_PLUGINS, load_registry
from rladapt.plugins.testing import (
    AdapterConformance,
    LauncherConformance,
    PatchConformance,
    check_adapter,
    check_launcher,
    check_patches,
)
from rladapt.primitives import RLJob, load_job
from tests.conftest import EXAMPLES, GPU_EXAMPLES, REPO, TRL_EXAMPLES

REGISTRY = load_registry(use_entry_points=False)
FRAMEWORKS = sorted(n for n, r in REGISTRY.frameworks.items() if r.plugin in BUILTIN_PLUGINS)
LAUNCHERS = sorted(n for n, r in REGISTRY.launchers.items() if r.plugin in BUILTIN_PLUGINS)
PATCHES = sorted(n for n, r in REGISTRY.patches.items() if r.plugin in BUILTIN_PLUGINS)
K8S_OPTIONS = {"image": "registry.example/rl:1"}


def _nemo_rl_job(*overrides: str) -> RLJob:
    """grpo-gsm8k as NeMo-RL expresses it: a reward model on its own node, JSON-lines data."""
    return load_job(
        REPO / "examples" / "grpo-gsm8k.yaml",
        [
            "spec.reward.function=null",
            "spec.reward.model={path: Skywork/Skywork-Reward-V2-Qwen3-0.6B, micro_batch_per_gpu: 2}",
            "spec.data.train=[data/gsm8k/train.jsonl]",
            "spec.data.val=[data/gsm8k/test.jsonl]",
            "spec.placement.pools=[{name: all, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]},"
            "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
            *overrides,
        ],
    )


NEMO_RL_SPECS: list[Path | RLJob] = [*EXAMPLES, _nemo_rl_job(), _nemo_rl_job("spec.rollout.mode=sync")]


def test_every_builtin_plugin_loads() -> None:
    assert REGISTRY.broken == []
    assert {"verl", "openrlhf", "nemo-rl", "trl"} <= set(FRAMEWORKS)
    assert {"local", "ray", "slurm", "kubernetes"} <= set(LAUNCHERS)


# --- the classes, as a plugin author subclasses them ----------------------------------------------------------


class TestVerl(AdapterConformance):
    framework = "verl"
    specs = EXAMPLES


class TestOpenRLHF(AdapterConformance):
    framework = "openrlhf"
    specs = EXAMPLES


class TestNemoRL(AdapterConformance):
    framework = "nemo-rl"
    specs = NEMO_RL_SPECS
    known_gaps = {
        # its built-in math reward (reward.builtin.math) is there, but it trains only on its own HF datasets
        "0.2.1": "nemo-rl 0.2.1 reads no local data files (spec.data.train, first in 0.4.0): no job translates"
    }


class TestTrl(AdapterConformance):
    framework = "trl"
    specs = EXAMPLES


class _Launchers(LauncherConformance):
    framework = ("verl", "openrlhf")
    specs = EXAMPLES


class TestLocal(_Launchers):
    launcher = "local"


class TestRay(_Launchers):
    launcher = "ray"


class TestSlurm(_Launchers):
    launcher = "slurm"


class TestKubernetes(_Launchers):
    launcher = "kubernetes"
    options = K8S_OPTIONS


class TestBuiltinPatches(PatchConformance):
    patches = PATCHES


# --- the plain functions --------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["verl", "openrlhf"])
def test_check_adapter(framework: str) -> None:
    failures = check_adapter(REGISTRY.framework(framework), EXAMPLES)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_check_launcher(launcher: str) -> None:
    from rladapt.pipeline import render_native

    natives = [render_native(load_job(p), "verl", REGISTRY).native for p in GPU_EXAMPLES]
    natives += [render_native(load_job(p), "trl", REGISTRY).native for p in TRL_EXAMPLES]
    options = K8S_OPTIONS if launcher == "kubernetes" else {}
    failures = check_launcher(REGISTRY.launcher(launcher), natives, options)
    assert not failures, "\n".join(failures)


def test_check_patches() -> None:
    assert PATCHES, "the built-ins register patches"
    failures = check_patches([REGISTRY.patches[p].obj for p in PATCHES], REGISTRY)
    assert not failures, "\n".join(failures)


def test_kit_refuses_a_reason_for_a_capability_the_adapter_has() -> None:
    """WHY_NOT (the reason shown when no version can) must not explain a capability some version declares."""
    adapter = REGISTRY.framework("openrlhf")
    assert not [f for f in check_adapter(adapter, []) if "WHY_NOT" in f]

    class Contradicting(type(adapter)):  # type: ignore[misc]
        WHY_NOT = {**adapter.WHY_NOT, "reward.model": "a wrong reason"}  # every version has a reward model

    failures = [f for f in check_adapter(Contradicting(), []) if "WHY_NOT" in f]
    assert failures == [
        f"WHY_NOT explains 'reward.model', which {', '.join(v.version for v in adapter.versions())} declare"
    ]
