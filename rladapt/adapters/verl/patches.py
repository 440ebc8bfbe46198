"""Known verl pitfalls, fixed as named patches (applied by the pipeline after ``translate``).

Each patch names the upstream issue it works around and the versions it applies to; the conformance suite has a
test per patch that fails without it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rladapt.plugins.patches import Patch

from .entrypoints import FULLY_ASYNC_MODULE, MEGATRON_ENGINE, ONE_STEP_OFF_MODULE
from .versions import keys

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch
    from rladapt.primitives import RLJob

#: Legacy top-level reward keys -> their ``reward.*`` home (verl's own ``migrate_legacy_reward_impl`` table).
LEGACY_REWARD_KEYS: dict[str, str] = {
    "custom_reward_function.": "reward.custom_reward_function.",
    "sandbox_fusion.": "reward.sandbox_fusion.",
    "reward_model.num_workers": "reward.num_workers",
    "reward_model.reward_manager": "reward.reward_manager.name",
    "reward_model.reward_loop_source": "reward.reward_manager.source",
    "reward_model.reward_loop_module_path": "reward.reward_manager.module.path",
    "reward_model.reward_loop_class_name": "reward.reward_manager.module.name",
    "reward_model.model.path": "reward.reward_model.model_path",
    "reward_model.enable_resource_pool": "reward.reward_model.enable_resource_pool",
    "reward_model.enable": "reward.reward_model.enable",
    "reward_model.n_gpus_per_node": "reward.reward_model.n_gpus_per_node",
    "reward_model.nnodes": "reward.reward_model.nnodes",
    "reward_model.rollout.": "reward.reward_model.rollout.",
    "reward_model.reward_kwargs": "+reward.reward_kwargs",
}

#: Where the experimental trainers find ``ppo_trainer`` once verl is installed (not a CWD-relative path).
TRAINER_SEARCHPATH = "hydra.searchpath=[pkg://verl.trainer.config]"

#: Slurm's CPU count for the task that runs the driver; null (Ray's autodetection) outside Slurm.
#: Set by the runtime half of the patch (``export_slurm_num_cpus``) in the process that composes verl's config.
NUM_CPUS_ENV = "RLADAPT_RAY_NUM_CPUS"
SLURM_NUM_CPUS = "'${oc.decode:${oc.env:" + NUM_CPUS_ENV + ",null}}'"


def _split(item: str) -> tuple[str, str, str]:
    prefix = item[: len(item) - len(item.lstrip("+~"))]
    key, sep, value = item[len(prefix) :].partition("=")
    return prefix, key, sep + value


def migrate_legacy_reward(native: NativeLaunch, job: RLJob) -> NativeLaunch:
    argv = []
    for item in native.argv:
        prefix, key, rest = _split(item)
        new = item
        for old, target in LEGACY_REWARD_KEYS.items():
            if key == old or (old.endswith(".") and key.startswith(old)):
                moved = target + key[len(old) :] if old.endswith(".") else target
                plus = "+" if moved.startswith("+") else ""
                new = (prefix or plus) + moved.lstrip("+") + rest
                break
        argv.append(new)
    return native.model_copy(update={"argv": tuple(argv)})


def _has_legacy_reward(native: NativeLaunch, job: RLJob) -> bool:
    return any(
        _split(item)[1].startswith(tuple(k.rstrip(".") for k in LEGACY_REWARD_KEYS))
        for item in native.argv[3:]
    )


def trainer_searchpath(native: NativeLaunch, job: RLJob) -> NativeLaunch:
    argv = [a for a in native.argv if not a.startswith("hydra.searchpath=")]
    return native.model_copy(update={"argv": (*argv, TRAINER_SEARCHPATH)})


def _experimental(native: NativeLaunch, job: RLJob) -> bool:
    return ONE_STEP_OFF_MODULE in native.argv or FULLY_ASYNC_MODULE in native.argv


def export_slurm_num_cpus() -> None:
    """Runtime half, run by ``rladapt.bootstrap`` before verl composes its config.

    Only a driver that starts its own Ray inside a Slurm allocation must pin ``num_cpus`` to the allocation; one
    that joins an existing cluster (``RAY_ADDRESS``, as the slurm launcher's Ray head/worker recipe does) must not
    pass it at all: Ray refuses ``num_cpus`` when connecting to a running cluster.
    """
    cpus = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if cpus.isdigit() and not os.environ.get("RAY_ADDRESS"):
        os.environ[NUM_CPUS_ENV] = cpus
    else:
        os.environ.pop(NUM_CPUS_ENV, None)


def slurm_num_cpus(native: NativeLaunch, job: RLJob) -> NativeLaunch:
    key = f"{keys(native.version).ray_init}.num_cpus"
    if any(_split(a)[1] == key for a in native.argv):
        return native  # the user fixed it already (native.verl)
    module_end = 3
    while native.argv[module_end : module_end + 1] in (("--config-name",), ("--config-path",)):
        module_end += 2  # the config flags translate writes right after the module stay there
    if native.argv[module_end : module_end + 1] == (MEGATRON_ENGINE,):
        module_end += 1  # the engine choice stays first, as translate (and upstream's scripts) write it
    argv = [*native.argv[:module_end], f"{key}={SLURM_NUM_CPUS}", *native.argv[module_end:]]
    return native.model_copy(update={"argv": tuple(argv)})


PATCHES: list[Patch] = [
    Patch(
        id="verl-legacy-reward-keys",
        framework="verl",
        versions=">=0.9.0",
        issue="https://github.com/verl-project/verl/pull/7331",
        summary="0.9.x main_ppo no longer migrates top-level custom_reward_function.* / reward_model.* / "
        "sandbox_fusion.* into reward.*: Hydra accepts them and verl silently ignores them; rewrite to reward.*",
        kind="config",
        apply=migrate_legacy_reward,
        when=_has_legacy_reward,
    ),
    Patch(
        id="verl-experimental-searchpath",
        framework="verl",
        versions=">=0.8.0",
        issue="https://github.com/verl-project/verl/issues/2735",
        summary="one_step_off_ppo_trainer.yaml searches file://verl/trainer/config relative to the CWD ('Could "
        "not load ppo_trainer' outside a verl checkout); search the installed package instead",
        kind="config",
        apply=trainer_searchpath,
        when=_experimental,
    ),
    Patch(
        id="verl-slurm-ray-num-cpus",
        framework="verl",
        versions=">=0.5.0",
        issue="https://github.com/verl-project/verl/issues/523",
        summary="ray.init(num_cpus=None) under Slurm fails with 'Failed to register worker to Raylet'; pass "
        "SLURM_CPUS_PER_TASK when the driver starts its own Ray in the allocation (null, i.e. unchanged, outside "
        "Slurm or when joining a running cluster)",
        kind="runtime",
        apply=slurm_num_cpus,
        runtime_hook="rladapt.adapters.verl.patches:export_slurm_num_cpus",
    ),
]
