"""What each pinned TRL release can express, and the names it uses for it.

Read from each wheel's ``trl/trainer/grpo_config.py`` and ``rloo_config.py`` (the config dataclasses, subclasses of
transformers' ``TrainingArguments``) and the trainers beside them; the conformance suite
(``tests/adapters/trl/``) instantiates each version's real ``GRPOConfig`` / ``RLOOConfig`` from the rendered
config.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from packaging.version import Version

V0_26_0 = Version("0.26.0")
V0_29_0 = Version("0.29.0")
V1_16_0 = Version("1.16.0")

#: Capabilities of every pinned TRL version.
_BASE = frozenset(
    {
        # one process: the trainer generates with the policy itself (model.generate), the reference model (beta > 0)
        # lives in the same process
        "placement.colocated",
        "rollout.sync",
        "rollout.engine.hf",
        "algorithm.grpo",  # GRPOTrainer (trl/trainer/grpo_trainer.py, every pinned version)
        # RLOOTrainer with reward functions and num_generations (trl/trainer/rloo_trainer.py, rewritten in 0.23.0
        # to GRPOTrainer's interface; every pinned version)
        "algorithm.rloo",
        "advantage.no_std",  # GRPOConfig.scale_rewards="none" (grpo_config.py, every pinned version)
        "kl.loss",  # GRPO: beta * k3 in the loss (grpo_trainer.py _compute_loss, per_token_kl)
        "kl.reward",  # RLOO: rewards - beta * k1 (rloo_trainer.py _generate_and_score_completions, 0.23.1)
        "reward.function",
        "checkpoint.resume_path",  # trainer.train(resume_from_checkpoint=PATH)
        "checkpoint.keep_last",  # TrainingArguments.save_total_limit
        # TrainingArguments.warmup_ratio: ceil(max_steps * ratio) steps (transformers 4.57.6 get_warmup_steps)
        "optimizer.warmup_ratio",
        "logging.wandb",  # TrainingArguments.report_to
        "logging.tensorboard",
        "logging.mlflow",
    }
)


@cache
def capabilities(version: str) -> frozenset[str]:
    """The capability set of one TRL version (see ``rladapt.plugins.capabilities.KNOWN_CAPABILITIES``).

    Never listed: PPO (``WHY_NOT`` in the adapter says why), vLLM/SGLang rollout (``use_vllm`` is not mapped),
    separate placement, async rollout, Megatron/DeepSpeed/FSDP backends (``accelerate`` configs are not mapped),
    LoRA (needs peft, not mapped), reward models and remote rewards, dynamic batching, off-policy staleness,
    evaluation before training, and the by_data_source / math_dapo / gsm8k scorers (TRL ships none).
    """
    v = Version(version)
    caps = set(_BASE)
    if v >= V0_29_0:
        # trl/rewards/accuracy_rewards.py accuracy_reward (math-verify on the `solution` column): 0.29.1 and 1.16.0
        # have it; 0.23.1's trl.rewards holds only think_format_reward and get_soft_overlong_punishment
        caps.add("reward.builtin.math")
        # no max_prompt_length any more: the driver drops the longer prompts (translate._data)
        caps.add("data.overlong_prompts.drop")
    else:
        # GRPOConfig.max_prompt_length keeps a longer prompt's last tokens (grpo_config.py 0.23.1)
        caps.add("data.overlong_prompts.truncate_left")
    return frozenset(caps)


@dataclass(frozen=True)
class Keys:
    """The config facts of one TRL version that moved between releases."""

    version: Version

    @property
    def max_prompt_length(self) -> bool:
        """``GRPOConfig.max_prompt_length`` / ``RLOOConfig.max_prompt_length`` (truncates prompts on the left).

        Deprecated in 0.26.0 ("filter your dataset before training", grpo_config.py 0.26.2) and gone in 0.29.1:
        there the driver drops the longer prompts instead.
        """
        return self.version < V0_29_0

    @property
    def top_k_off(self) -> int | None:
        """The ``top_k`` that disables top-k: ``None`` in 0.23.1 (``Optional[int]``, default None), ``0`` from
        0.29.1 (``int``, default 0; grpo_config.py)."""
        return None if self.version < V0_29_0 else 0

    @property
    def entropy_coef(self) -> bool:
        """``GRPOConfig.entropy_coef``, an entropy bonus in the loss (grpo_config.py 1.16.0; not in 0.29.1)."""
        return self.version >= V1_16_0


def keys(version: str) -> Keys:
    return Keys(Version(version))
