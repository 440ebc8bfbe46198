"""The built-in NeMo-RL adapter: a pluggy plugin registering framework ``nemo-rl``.

A job becomes ``uv run python examples/run_grpo[_math].py --config rladapt-configs/<job>-<digest>.yaml <overrides>``, run from
a NeMo-RL checkout of the pinned tag; the generated config inherits that tag's ``grpo_math_1B.yaml``. NeMo-RL has
no real PyPI release and needs Python >= 3.12, so validation uses the adapter's own per-version schema
(``schema.py``).
"""

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


#: nemo_rl/data/processors.py (math_hf_data_processor and the others, every pinned tag): a prompt of
#: data.max_input_seq_length tokens or more stays in the data, cut to at most 4 tokens per message, with
#: loss_multiplier 0 (it is generated for and masked out of the loss)
_OVERLONG = (
    "NeMo-RL keeps an overlong prompt, cut to a 4-token stub per message and masked out of the loss "
    "(loss_multiplier 0, nemo_rl/data/processors.py): it neither drops nor truncates it"
)


_NEMO_PRODUCT = (
    "NeMo-RL weighs by the product over a response only with GSPO's sequence_level_importance_ratios, which "
    "changes the policy ratio too"
)


class NemoRLAdapter(ImportingFolderAdapter):
    PLUGIN_NAME = "nemo-rl"
    DESCRIPTION = (
        "NeMo-RL (NVIDIA-NeMo/RL): uv run python examples/run_grpo*.py --config <file> <Hydra overrides>"
    )

    #: NeMo-RL's PyPI name ``nemo-rl`` holds only a 0.0.0 placeholder: its releases are git tags
    RELEASES = (
        "NeMo-RL publishes only a placeholder on PyPI (nemo-rl 0.0.0); its releases are the git tags of "
        "NVIDIA-NeMo/RL: check https://github.com/NVIDIA-NeMo/RL/tags by hand"
    )
    MATRIX = bundled("nemo-rl")
    SNAPSHOTS = bundled_snapshots("nemo-rl")
    SNAPSHOT_SOURCE = "a checkout of the NeMo-RL tag (git worktree add DIR v<version>)"
    #: entrypoints of a release: the examples/run_*.py scripts
    RELEASE_ENTRYPOINTS = r"^examples/(run_[^/]+)\.py$"
    #: the TensorBoard backend and its directory rladapt adds (translate.py, rladapt.metrics.names)
    READ_BACK_KEYS = ("logger.tensorboard_enabled", "logger.log_dir")
    #: ENV_REGISTRY (nemo_rl/environments/utils.py, 0.5.0 to 0.7.0; 0.2.1 and 0.4.0 wire the environment in the
    #: script) has no environment for these: one environment scores a whole dataset, and none checks GSM8K's format.
    WHY_NOT = {
        "weight_sync.run_ahead_fraction": "NeMo-RL bounds a trajectory's age in whole steps "
        "(grpo.async_grpo.max_trajectory_age_steps, which max_staleness sets)",
        # algorithms/loss_functions.py (0.4.0) and loss/loss_functions.py (0.6.0, 0.7.0)
        "off_policy_correction.sequence.truncate": _NEMO_PRODUCT,
        "off_policy_correction.sequence.mask": _NEMO_PRODUCT,
        "off_policy_correction.sequence_geometric_mean.truncate": "NeMo-RL uses a response's geometric-mean ratio "
        "only to mask it (truncated_importance_sampling_type seq-mask-tis)",
        "reward.builtin.by_data_source": "NeMo-RL scores each dataset with one environment, not by a sample's "
        "data source",
        "reward.builtin.gsm8k": "no NeMo-RL environment checks GSM8K's '#### ' answer format",
        "data.overlong_prompts.drop": _OVERLONG,
        "data.overlong_prompts.truncate_left": _OVERLONG,
        "data.overlong_prompts.truncate_right": _OVERLONG,
        "data.overlong_prompts.truncate_middle": _OVERLONG,
        "offload.critic.params": "NeMo-RL's GRPO trains no critic",
        "offload.critic.optimizer": "NeMo-RL's GRPO trains no critic",
        "loss_aggregation.seq_mean_token_sum": "NeMo-RL's policy loss is a token mean or a mean of sequence "
        "means (loss_fn.token_level_loss), never a mean of token sums",
        "loss_aggregation.seq_mean_token_sum_norm": "NeMo-RL's policy loss is a token mean or a mean of "
        "sequence means (loss_fn.token_level_loss), never token sums over the length budget",
        "optimizer.warmup_ratio": "NeMo-RL's warmup is a number of iterations (policy.scheduler, "
        "megatron_cfg.scheduler.lr_warmup_iters), never a ratio of the total steps: use "
        "training.optimizer.warmup_steps",
        # grpo.py calls finish_generation() (vLLM sleep) after every colocated generation, never otherwise
        "rollout.free_cache": "NeMo-RL decides itself: a colocated vLLM always sleeps while the policy trains, "
        "a separate one never does",
        # nemo_rl/models/generation/__init__.py configure_generation_config, every pinned tag
        "rollout.load_weights_from_disk": "NeMo-RL sets vllm_cfg.load_format itself (dummy for training, "
        "filled by the first refit), over any configured value",
        "rollout.layered_weight_sync": "NeMo-RL's refit has no layer-by-layer mode to choose",
        # nemo_rl/experience/rollouts.py run_multi_turn_rollout, every pinned tag: each turn generates one reply
        # per sample, then the sample's environment (env.<name>, a Ray actor chosen by the dataset's task) steps
        # and returns the observation, the reward and whether the episode ended
        "multi_turn.max_user_turns": "NeMo-RL counts a turn as one reply and the environment's answer "
        "(grpo.max_rollout_turns, from multi_turn.max_assistant_turns); there is no separate cap",
        "multi_turn.tools": "NeMo-RL has no tool config file: the environment (env.<name>, a class in code) "
        "answers the model's turns",
        "multi_turn.interaction": "NeMo-RL has no interaction config file: the environment (env.<name>, a class "
        "in code) answers the model's turns",
        "multi_turn.tool_call_format": "NeMo-RL parses no tool calls itself: each environment reads the replies",
        "rollout.agent": "NeMo-RL's rollouts are stepped by environment classes (env.<name>), not an agent "
        "function file",
    }

    def capabilities(self, version: str) -> frozenset[str]:
        return capabilities(version)

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        from . import translate as _translate

        return _translate.translate(job, version)

    def check_native(self, native: NativeLaunch) -> list[Problem]:
        # NeMo-RL cannot be installed next to rladapt: the snapshot check is the only one, so no deep check
        from . import validate as _validate

        return _validate.validate_native(native)

    def checkpoint_layout(self, native: NativeLaunch) -> CheckpointLayout:
        return CheckpointLayout(
            root=native.checkpoint_dir or "results/grpo",
            step_dir_pattern="step_{step}",
            latest_marker=None,
            resume_args=(),
            notes=(
                "step_N/ holds training_info.json (step, epoch, consumed samples), config.yaml, policy/weights, "
                "policy/optimizer (DTensor), policy/tokenizer and train_dataloader.pt",
                "resume is automatic: a run picks the highest step_N in checkpointing.checkpoint_dir; there is no "
                "flag to resume from another path or to start fresh (NVIDIA-NeMo/RL issue 345)",
                "reusing a checkpoint_dir with another model silently resumes the old run (issue 415)",
                "writes go to tmp_step_N and are renamed when complete; keep_top_k prunes the oldest",
            ),
        )


@hookimpl
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    return [NemoRLAdapter()]


@hookimpl
def rladapt_register_patches() -> list[Patch]:
    return list(PATCHES)


def __getattr__(name: str) -> ModuleType:
    # translate and validate load on first use (a render of another framework never needs them); this keeps
    # ``rladapt.adapters.nemo_rl.translate`` / ``.validate`` reachable as attributes, as when they were eager
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
