"""The built-in OpenRLHF adapter: a pluggy plugin registering framework ``openrlhf`` and its patches.

A job becomes ``python3 -m openrlhf.cli.train_ppo_ray <flags>`` in the flag names of the chosen release, submitted
with ``ray job submit --runtime-env-json ... -- <argv>`` (``NativeLaunch.runtime_env`` is that JSON).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from rladapt.compat import bundled, bundled_snapshots
from rladapt.plugins import CheckpointLayout, FrameworkAdapter, FrameworkVersion, Patch, hookimpl

from ..folder import ImportingFolderAdapter
from . import versions
from .patches import PATCHES

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch
    from rladapt.primitives import Problem, RLJob

_LAZY_SUBMODULES = frozenset({"translate", "validate"})


_ORLHF_PRODUCT = (
    "OpenRLHF's sequence-level statistic is the geometric mean of the token ratios (level "
    "sequence_geometric_mean), never their product"
)


class OpenRLHFAdapter(ImportingFolderAdapter):
    PLUGIN_NAME = "openrlhf"
    DISTRIBUTION = "openrlhf"
    DESCRIPTION = "OpenRLHF: python3 -m openrlhf.cli.train_ppo_ray <flags>, submitted as a Ray job"

    MATRIX = bundled("openrlhf")
    SNAPSHOTS = bundled_snapshots("openrlhf")
    SNAPSHOT_SOURCE = "the openrlhf wheel (or a train_ppo_ray.py, or a checkout)"
    #: entrypoints of a release: the openrlhf/cli modules
    RELEASE_ENTRYPOINTS = r"(?:^|/)openrlhf/cli/(?!__init__)([^/]+)\.py$"
    #: the TensorBoard switch and its directory rladapt adds (translate.py, rladapt.metrics.names); the
    #: directory by its name before and from 0.10.2
    READ_BACK_KEYS = ("--use_tensorboard", "--logger.tensorboard_dir")
    #: The built-in scorers are refused rather than generated: a reward function rladapt writes (as it does for
    #: spec.reward.function, --remote_rm_url on a .py) would have to call a scorer present where OpenRLHF runs,
    #: and none is. No pinned wheel requires math-verify (Requires-Dist of 0.5.9.post1 to 0.11.2), none ships
    #: verl's gsm8k / DAPO checks or a per-data_source dispatcher; openrlhf.utils.math_utils (0.9.10+) is a
    #: different grader (PRM800K's sympy grade_answer), which would change the scores.
    WHY_NOT = {
        # datasets/utils.py blending_datasets (0.10.2) loads --prompt_data as a file, folder or Hub dataset id
        "data.builtin": "OpenRLHF loads --prompt_data as a file, folder or Hub dataset id; name it in "
        "spec.data.train",
        # the trainer module follows from the spec (openrlhf.cli.train_ppo_ray for every PPO-family algorithm)
        "runtime.entrypoint": "OpenRLHF's trainer module follows from the spec (openrlhf.cli.train_ppo_ray); "
        "leave spec.runtime.entrypoint null",
        "weight_sync.run_ahead_fraction": "OpenRLHF's rollout queue holds whole rollout batches "
        "(--async_queue_size, which max_staleness sets)",
        # models/loss.py PolicyLoss, 0.8.11 to 0.11.2: seq level = the geometric mean; clip needs level token
        "off_policy_correction.sequence.truncate": _ORLHF_PRODUCT,
        "off_policy_correction.sequence.mask": _ORLHF_PRODUCT,
        "off_policy_correction.sequence_geometric_mean.truncate": "OpenRLHF only masks at the sequence level "
        "(is_correction_mode clip requires level token; seq-mask-tis masks)",
        "reward.builtin.by_data_source": "OpenRLHF has no default scorer chosen by a sample's data source",
        "reward.builtin.math": "OpenRLHF neither requires math-verify nor ships a math-verify scorer",
        "reward.builtin.math_dapo": "OpenRLHF ships no DAPO math check",
        "reward.builtin.gsm8k": "OpenRLHF ships no GSM8K answer check",
        "data.overlong_prompts.drop": "OpenRLHF's PromptDataset keeps every prompt (datasets/prompts_dataset.py): "
        "an overlong one is cut, never dropped",
        "data.overlong_prompts.truncate_middle": "OpenRLHF cuts an overlong prompt at one end only",
        "offload.actor.params": "OpenRLHF's DeepSpeed training config never offloads parameters "
        "(get_train_ds_config(offload=False)); --deepspeed_enable_sleep moves them to CPU only while a colocated "
        "rollout generates",
        "offload.critic.params": "OpenRLHF's DeepSpeed training config never offloads parameters "
        "(get_train_ds_config(offload=False))",
        # cli/train_ppo_ray.py of 0.5.9.post1 to 0.11.2 ends with actor_model.async_save_model() unconditionally
        # cli/train_ppo_ray.py, 0.5.9.post1 to 0.11.2: no turn, tool or interaction flag; an episode's turns are
        # its agent's (utils/agent.py MultiTurnAgentExecutor runs the agent's step until it says done)
        "multi_turn": "OpenRLHF runs several turns only inside an agent function, whose step decides when the "
        "episode ends: use rollout.agent (no turn caps, tool or interaction files)",
        "multi_turn.max_user_turns": "OpenRLHF has no turn caps: the agent function's step ends the episode",
        "multi_turn.tools": "OpenRLHF has no tool config file: tools are the agent function's own code",
        "multi_turn.interaction": "OpenRLHF has no interaction config file: the agent function's step answers",
        "multi_turn.tool_call_format": "OpenRLHF parses no tool calls: the agent function reads the reply",
        "checkpoint.never": "OpenRLHF always saves the final model (to --save_path) at the end of training",
        # trainer/ray/vllm_engine.py builds vllm.LLM from a fixed set of its own flags (0.5.9.post1 to 0.11.2)
        "rollout.chunked_prefill": "OpenRLHF passes no chunked-prefill setting to its vLLM engines",
        "rollout.max_batched_tokens": "OpenRLHF passes no max_num_batched_tokens to its vLLM engines",
        "rollout.layered_weight_sync": "OpenRLHF broadcasts each parameter as DeepSpeed gathers it; there is no "
        "layered mode to choose",
        "advantage.leave_one_out_std": "no OpenRLHF estimator divides a leave-one-out advantage by the group "
        "std (rloo: r minus the others' mean; group_norm: the group mean's baseline; experience_maker.py)",
        "loss_aggregation.seq_mean_token_sum": "OpenRLHF's policy loss is a token mean or a mean of sequence "
        "means (models/loss.py), never a mean of token sums",
        "loss_aggregation.seq_mean_token_sum_norm": "OpenRLHF's policy loss is a token mean or a mean of "
        "sequence means (models/loss.py), never token sums over the length budget",
    }

    #: OpenRLHF's own capability names (versions.capabilities): its colocation flags, sleep modes, native
    #: advantage estimators (versions.ESTIMATORS) and switches no other framework has.
    OWN_CAPABILITIES: ClassVar[dict[str, str]] = {
        "openrlhf.colocate.all": "every model on the same GPUs (--colocate_all_models)",
        "openrlhf.colocate.actor_ref": "actor and reference model on the same GPUs (--colocate_actor_ref)",
        "openrlhf.colocate.critic_reward": "critic and reward model on the same GPUs (--colocate_critic_reward)",
        "openrlhf.vllm_sleep": "vLLM sleeps between rollouts (--vllm_enable_sleep)",
        "openrlhf.deepspeed_sleep": "DeepSpeed offloads between training phases (--deepspeed_enable_sleep)",
        "openrlhf.eval": "evaluation on a data set of its own (--eval_dataset)",
        "openrlhf.async_train": "asynchronous training (--async_train)",
        "openrlhf.async_queue_size": "the asynchronous rollout queue's size (--async_queue_size)",
        **{
            f"openrlhf.estimator.{name}": f"the {name} advantage estimator (--advantage_estimator, from {since})"
            for name, since in versions.ESTIMATORS.items()
        },
    }

    def capabilities(self, version: str) -> frozenset[str]:
        return versions.capabilities(version)

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
        resume = (versions.spell(native.version, "load_checkpoint"),)
        return CheckpointLayout(
            root=native.checkpoint_dir or "ckpt/checkpoints_ppo_ray",
            step_dir_pattern="_actor/global_step{step}",
            latest_marker="_actor/latest",
            resume_args=resume if resume[0] in native.argv else (),
            notes=(
                "_actor/global_stepN holds DeepSpeed shards; _actor/latest (written by DeepSpeed) names the tag "
                "that a resume loads",
                "_critic/ has the same layout when the estimator is gae (PPO with a critic)",
                "global_stepN_hf/ holds Hugging Face weights when checkpoint.save_hf is set; the final model is "
                "written to <ckpt>/final after training",
                "the resume state changed at 0.8.1 and 0.9.1 (consumed_samples, then global_step/episode with a "
                "stateful dataloader, then total_consumed_prompts): resume with the release that saved",
            ),
        )


@hookimpl
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    return [OpenRLHFAdapter()]


@hookimpl
def rladapt_register_patches() -> list[Patch]:
    return list(PATCHES)


def __getattr__(name: str) -> ModuleType:
    # translate and validate load on first use (a render of another framework never needs them); this keeps
    # ``rladapt.adapters.openrlhf.translate`` / ``.validate`` reachable as attributes, as when they were eager
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
