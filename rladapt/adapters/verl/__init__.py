"""The built-in verl adapter: a pluggy plugin registering framework ``verl`` and its patches."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from rladapt.compat import bundled, bundled_snapshots
from rladapt.plugins import CheckpointLayout, FrameworkAdapter, FrameworkVersion, Patch, hookimpl

from ..folder import ImportingFolderAdapter
from .patches import PATCHES
from .versions import capabilities

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch
    from rladapt.primitives import Problem, RLJob

_LAZY_SUBMODULES = frozenset({"translate", "validate"})


#: rollout_is weighs per token or by the product over the response; its geometric mean (rollout_rs: geometric)
#: only rejects samples, with no weight (trainer/ppo/rollout_corr_helper.py, 0.6.1 to 0.9.1).
_VERL_GEOMETRIC = (
    "verl weighs per token or by the product of a response's token ratios (rollout_is); its geometric-mean "
    "statistic (rollout_rs) only rejects samples, without weights"
)


class VerlAdapter(ImportingFolderAdapter):
    PLUGIN_NAME = "verl"
    DISTRIBUTION = "verl"
    DESCRIPTION = "verl (volcengine): python3 -m verl.trainer.main_ppo with Hydra overrides"

    MATRIX = bundled("verl")
    SNAPSHOTS = bundled_snapshots("verl")
    SNAPSHOT_SOURCE = "the verl wheel (or an unpacked verl package directory)"
    #: entrypoints of a release: config files under verl/trainer/config (Hydra config names and group options)
    RELEASE_ENTRYPOINTS = r"(?:^|/)verl/trainer/config/(.+)\.yaml$"
    #: the TensorBoard backend and its directory rladapt adds (translate.py, rladapt.metrics.names)
    READ_BACK_KEYS = ("trainer.logger",)
    WHY_NOT = {
        # utils/dataset/rl_dataset.py RLHFDataset reads data.train_files; no dataset is resolved by a name
        "data.builtin": "verl reads its training data from files (data.train_files); name them in spec.data.train",
        # the entry module follows from the spec: translate.py picks main_ppo or an experimental trainer by
        # spec.weight_sync, and the importer maps those trainers back to it
        "runtime.entrypoint": "verl's entry module follows from the spec (spec.weight_sync selects the one-step-off "
        "and fully-async trainers); leave spec.runtime.entrypoint null",
        # trainer/ppo/rollout_corr_helper.py compute_rollout_correction_weights, 0.6.1 to 0.9.1
        "off_policy_correction.truncate_min": "verl cuts IS weights from above only (rollout_is_threshold); a "
        "lower bound masks instead (mode mask, 0.8.0+)",
        "off_policy_correction.sequence_geometric_mean.truncate": _VERL_GEOMETRIC,
        "off_policy_correction.sequence_geometric_mean.mask": _VERL_GEOMETRIC,
        # experimental/agent_loop/agent_loop.py, 0.5.0 to 0.9.1: custom agent loops are AgentLoopBase classes
        # registered by a YAML of Hydra targets (rollout.agent.agent_loop_config_path), not an agent function file
        "rollout.agent": "verl's custom rollouts are agent loop classes (rollout.agent.agent_loop_config_path, "
        "an AgentLoopBase subclass), not an agent function: use rollout.multi_turn with tools, or spec.native",
        # trainer/ppo/ray_trainer.py _save_checkpoint of 0.5.0 to 0.9.1 prunes by max_actor_ckpt_to_keep, oldest first
        "checkpoint.keep_best": "verl keeps the newest checkpoints only (trainer.max_actor_ckpt_to_keep), never "
        "by a validation metric: use checkpoint.keep_last",
        "advantage.leave_one_out_std": "no verl estimator divides a leave-one-out advantage by the group std "
        "(rloo: the score minus the others' mean; grpo: the group mean's baseline; trainer/ppo/core_algos.py)",
    }

    def capabilities(self, version: str) -> frozenset[str]:
        return capabilities(version)

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        from . import translate as _translate

        return _translate.translate(job, version)

    def check_native(self, native: NativeLaunch) -> list[Problem] | None:
        from . import validate as _validate

        return _validate.check_native(native)

    def validate_native(self, native: NativeLaunch) -> list[Problem] | None:
        from . import validate as _validate

        return _validate.validate_native(native)

    def checkpoint_layout(self, native: NativeLaunch) -> CheckpointLayout:
        resume = tuple(
            a for a in native.argv if a.startswith(("trainer.resume_mode=", "trainer.resume_from_path="))
        )
        return CheckpointLayout(
            root=native.checkpoint_dir or "checkpoints",
            step_dir_pattern="global_step_{step}",
            latest_marker="latest_checkpointed_iteration.txt",
            resume_args=resume,
            notes=(
                "global_step_N/actor (and critic/) hold the sharded model, optimizer and extra state; "
                "global_step_N/data.pt the dataloader state",
                "resume_mode=auto reads latest_checkpointed_iteration.txt; resume_from_path must name a "
                "global_step_N directory",
                "merge to Hugging Face format: python -m verl.model_merger merge --backend fsdp "
                "--local_dir <root>/global_step_N/actor --target_dir <out>",
            ),
        )


@hookimpl
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    return [VerlAdapter()]


@hookimpl
def rladapt_register_patches() -> list[Patch]:
    return list(PATCHES)


def __getattr__(name: str) -> ModuleType:
    # translate and validate load on first use (a render of another framework never needs them); this keeps
    # ``rladapt.adapters.verl.translate`` / ``.validate`` reachable as attributes, as when they were eager
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
