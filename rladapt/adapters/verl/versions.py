"""What each verl release can express, and the key names it uses for it.

Everything here was read from the released wheels (composed ``ppo_trainer`` key sets, ``AdvantageEstimator``,
the rollout registry); the conformance suite re-checks it against the real wheel of every pinned version.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from packaging.version import Version

V0_6_1 = Version("0.6.1")
V0_7_1 = Version("0.7.1")
V0_8_0 = Version("0.8.0")
V0_9_0 = Version("0.9.0")

#: Capabilities every pinned verl version has.
_BASE = frozenset(
    {
        "placement.colocated",
        "rollout.async",
        "rollout.engine.vllm",
        "rollout.engine.sglang",
        "backend.fsdp",
        "backend.fsdp2",
        "backend.megatron",
        "algorithm.grpo",
        "algorithm.ppo",
        "algorithm.rloo",
        "algorithm.reinforce_pp",
        "algorithm.reinforce_pp_baseline",
        "algorithm.remax",
        # GRPO + clip-higher + token-mean loss (the default loss_agg_mode); its dynamic sampling is a capability
        # of its own (algorithm.filter_groups), so a DAPO with dynamic_sampling: false runs on every version
        "algorithm.dapo",
        # algorithm.norm_adv_by_std_in_grpo (trainer/config/algorithm.py AlgoConfig, every pinned wheel)
        "advantage.no_std",
        # actor.loss_agg_mode: token-mean, seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm
        # (trainer/ppo/core_algos.py agg_loss, 0.5.0 to 0.9.1)
        "loss_aggregation.token_mean",
        "loss_aggregation.seq_mean_token_mean",
        "loss_aggregation.seq_mean_token_sum",
        "loss_aggregation.seq_mean_token_sum_norm",
        # actor.clip_ratio_c, the dual clip core_algos.compute_policy_loss always applies (default 3.0)
        "clip.dual",
        "kl.loss",
        "kl.reward",
        "reward.function",
        "reward.model",
        # verl/utils/reward_score/ of every pinned wheel: default_compute_score, gsm8k, math_verify, math_dapo
        "reward.builtin.by_data_source",
        "reward.builtin.math",
        "reward.builtin.math_dapo",
        "reward.builtin.gsm8k",
        "lora",
        "dynamic_batch",
        "optimizer.warmup_ratio",  # optim.lr_warmup_steps_ratio, read while lr_warmup_steps < 0
        # data.filter_overlong_prompts: RLHFDataset drops them when it loads the files (utils/dataset/rl_dataset.py)
        "data.overlong_prompts.drop",
        # fsdp_config.* / megatron.* param_offload and optimizer_offload of every role (read by the workers)
        "offload.actor.params",
        "offload.actor.optimizer",
        "offload.ref.params",
        "offload.critic.params",
        "offload.critic.optimizer",
        "pack_sequences",  # model.use_remove_padding (FSDP); the Megatron forward packs (thd) by itself
        # --config-path/--config-name of a launch's own config file (hydra/_internal/utils.py _run_hydra: both
        # flags replace what @hydra.main names; verl/trainer/main_ppo.py, 0.5.0 to 0.9.1)
        "runtime.config",
        "checkpoint.resume_path",
        "checkpoint.keep_last",
        "checkpoint.never",  # trainer.save_freq=-1: ray_trainer.py saves only while save_freq > 0
        # actor_rollout_ref.rollout.* (enforce_eager, enable_chunked_prefill, max_num_batched_tokens,
        # free_cache_engine, load_format, layered_summon) in every pinned wheel's config
        "rollout.enforce_eager",
        "rollout.chunked_prefill",
        "rollout.max_batched_tokens",
        "rollout.free_cache",
        "rollout.load_weights_from_disk",
        "rollout.layered_weight_sync",
        # rollout.multi_turn.{enable, max_assistant_turns, max_user_turns, tool_config_path, format}: read by
        # sglang_rollout.py (synchronous SGLang, 0.5.0 and 0.6.1; not format) and by
        # experimental/agent_loop/tool_agent_loop.py (every pinned wheel); which path a job takes is translate's
        "multi_turn",
        "multi_turn.max_user_turns",
        "multi_turn.tools",
        "multi_turn.tool_call_format",
        # the dapo reward manager's overlong buffer (reward_kwargs.overlong_buffer_cfg): workers/reward_manager/
        # dapo.py (0.5.0, 0.6.1 sync), experimental/reward/reward_loop/dapo.py (0.6.1 async),
        # experimental/reward_loop/reward_manager/dapo.py (0.7.1+); what it cannot do alone is translate's
        "reward.overlong_penalty",
        "eval.before_training",
        "logging.wandb",
        "logging.tensorboard",
        "logging.mlflow",
    }
)


@cache
def capabilities(version: str) -> frozenset[str]:
    """The capability set of one verl version (see ``rladapt.plugins.capabilities.KNOWN_CAPABILITIES``)."""
    v = Version(version)
    caps = set(_BASE)
    if v < V0_7_1:
        # 0.7.1 removed the synchronous rollout mode ("Rollout mode 'sync' has been removed") and the HF rollout.
        caps |= {"rollout.sync", "rollout.engine.hf"}
        # data.truncation: RLHFDataset.__getitem__ tokenizes and cuts the prompt (utils/dataset/rl_dataset.py,
        # 0.5.0 and 0.6.1). From 0.7.1 the dataset returns the raw chat and the agent loop tokenizes, and the key
        # is stored but never read; 0.9.1's agent loop cuts every prompt from the left by itself.
        caps |= {
            "data.overlong_prompts.truncate_left",
            "data.overlong_prompts.truncate_right",
            "data.overlong_prompts.truncate_middle",
        }
    if v >= V0_9_0:
        # experimental/agent_loop/agent_loop.py _cap_text_prompt_length: prompt_ids[-rollout.prompt_length:]
        caps.add("data.overlong_prompts.truncate_left")
    if v < V0_8_0:
        # multi_turn.interaction_config_path: read by sglang_rollout.py (0.5.0, 0.6.1) and tool_agent_loop.py
        # (0.6.1, 0.7.1); 0.8.0 removed it with verl/interactions/ (rollout/rollout.yaml, workers/config/rollout.py)
        caps.add("multi_turn.interaction")
    if v >= V0_6_1:
        caps.add("algorithm.gspo")  # policy_loss.loss_mode=gspo
        # algorithm.rollout_correction.rollout_is token | sequence (the product of token ratios), weights cut at
        # rollout_is_threshold (trainer/ppo/rollout_corr_helper.py compute_rollout_correction_weights, 0.6.1+)
        caps |= {"off_policy_correction.token.truncate", "off_policy_correction.sequence.truncate"}
    if v >= V0_8_0:
        # The one-step-off / fully-async entrypoints ship in the wheel from 0.8.0 (0.7.x: source checkout only).
        caps |= {"placement.separate", "weight_sync.off_policy"}
        # async_training.partial_rollout of the fully-async trainer (fully_async_rollouter.py, 0.8.0+)
        caps.add("weight_sync.partial_rollout")
        # async_training.staleness_threshold: fully_async_rollouter.py max_required_samples = required_samples *
        # (staleness_threshold + 1) * trigger_parameter_sync_step (0.8.0, 0.9.1)
        caps.add("weight_sync.run_ahead_fraction")
        # rollout_is_threshold "lower_upper": IcePop, weights outside [lower, upper] zeroed, the others kept
        # (rollout_corr_helper.py _parse_rollout_is_threshold, 0.8.0+; 0.6.1 and 0.7.1 take an upper bound only)
        caps |= {"off_policy_correction.token.mask", "off_policy_correction.sequence.mask"}
    if v >= V0_9_0:
        # algorithm.filter_groups (FilterGroupsConfig) joined the main trainer config in 0.9.0 (before: the DAPO
        # recipe's own trainer, not in the wheel)
        caps.add("algorithm.dynamic_sampling")
    return frozenset(caps)


@dataclass(frozen=True)
class Keys:
    """The override keys of one verl version that moved between releases."""

    version: Version

    @property
    def ray_init(self) -> str:
        return "ray_init" if self.version < V0_6_1 else "ray_kwargs.ray_init"

    @property
    def reward_tree(self) -> bool:
        """``reward.*`` (0.7.1+) instead of top-level ``custom_reward_function.*`` / ``reward_model.*``."""
        return self.version >= V0_7_1

    @property
    def custom_reward_function(self) -> str:
        return "reward.custom_reward_function" if self.reward_tree else "custom_reward_function"

    @property
    def reward_manager(self) -> str:
        """The reward manager's name: ``reward_model.reward_manager`` before 0.7.1 (read by trainer/ppo/reward.py
        load_reward_manager and, 0.6.1's agent loop, experimental/reward/reward_manager.py), then
        ``reward.reward_manager.name`` (trainer/ppo/reward.py, experimental/reward_loop/reward_loop.py)."""
        return "reward.reward_manager.name" if self.reward_tree else "reward_model.reward_manager"

    @property
    def reward_kwargs(self) -> str:
        """The reward manager's keyword arguments (declared in no pinned config, so added with ``+``): before
        0.7.1 main_ppo.py passes ``reward_model.reward_kwargs`` to the manager and 0.6.1's reward loop reads it;
        from 0.7.1 the reward loop's dapo manager reads ``config.reward.reward_kwargs``."""
        return "reward.reward_kwargs" if self.reward_tree else "reward_model.reward_kwargs"

    @property
    def reward_loop(self) -> bool:
        """Rewards are scored by the reward loop (experimental/reward_loop) from 0.7.1; before, by the legacy
        manager (workers/reward_manager), or in 0.6.1's async rollout without a reward model by
        experimental/reward/reward_loop."""
        return self.version >= V0_7_1

    @property
    def has_data_seed(self) -> bool:
        return self.version >= V0_6_1

    @property
    def raw_chat_default(self) -> bool:
        """``data.return_raw_chat`` defaults to true from 0.7.1 (false in 0.5.0 and 0.6.1: legacy_data.yaml)."""
        return self.version >= V0_7_1

    @property
    def has_default_agent_loop(self) -> bool:
        """``rollout.agent.default_agent_loop`` from 0.6.1 (experimental/agent_loop/agent_loop.py); 0.5.0 takes
        the agent loop of each sample from the data's ``agent_name`` column only (single_turn_agent without it).
        """
        return self.version >= V0_6_1

    @property
    def has_tokenizer_path(self) -> bool:
        return self.version >= V0_6_1

    @property
    def has_reward_pool(self) -> bool:
        return self.version >= V0_6_1

    @property
    def lora_tree(self) -> bool:
        """``model.lora.*`` (Megatron LoRA) exists from 0.8.0."""
        return self.version >= V0_8_0

    @property
    def has_rollout_pool(self) -> bool:
        """A rollout on its own GPU pool (the one-step-off / fully-async entrypoints) from 0.8.0."""
        return self.version >= V0_8_0

    @property
    def fsdp_critic_warmup_steps(self) -> bool:
        """The FSDP critic optimizer takes ``lr_warmup_steps`` from 0.6.1 (0.5.0: only a warmup ratio)."""
        return self.version >= V0_6_1

    def grad_clip_keys(self, megatron: bool) -> tuple[str, ...]:
        """Where this version reads the gradient-norm clip of a role (relative to the role's config).

        Megatron: ``optim.clip_grad`` (verl/utils/megatron/optimizer.py, every pinned version). FSDP: 0.5.0 to
        0.7.1's workers read ``grad_clip`` (workers/actor/dp_actor.py, workers/critic/dp_critic.py); 0.6.1 and
        0.7.1 also ship the engine workers (``use_legacy_worker_impl``), which read ``optim.clip_grad``
        (workers/engine/fsdp/transformer_impl.py); from 0.8.0 only the engines remain and ``grad_clip`` is
        declared but never read (0.9.1 workers/config/actor.py).
        """
        if megatron:
            return ("optim.clip_grad",)
        if self.version < V0_6_1:
            return ("grad_clip",)
        if self.version < V0_8_0:
            return ("grad_clip", "optim.clip_grad")
        return ("optim.clip_grad",)

    @property
    def reads_truncation(self) -> bool:
        """``data.truncation`` is read (by RLHFDataset.__getitem__, for the synchronous rollout) before 0.7.1."""
        return self.version < V0_7_1

    @property
    def agent_loop_truncates_left(self) -> bool:
        """0.9.x's agent loop cuts every prompt to its last ``rollout.prompt_length`` tokens, with a warning."""
        return self.version >= V0_9_0

    @property
    def critic_fsdp(self) -> str:
        """The FSDP critic's engine settings: ``critic.model.fsdp_config`` before 0.8.0, ``critic.fsdp`` after."""
        return "critic.fsdp" if self.version >= V0_8_0 else "critic.model.fsdp_config"

    @property
    def megatron_remove_padding(self) -> str:
        """Who decides whether the Megatron workers pack sequences.

        ``always``: 0.5.0 and 0.6.1, whose forward always packs (models/mcore/model_forward.py "Forward pass for
        models with sequence packing"); ``actor``: 0.7.1, whose actor (and the ref, by interpolation) reads
        ``actor.megatron.use_remove_padding`` (workers/actor/megatron_actor.py: thd or bshd) while the critic
        still always packs; ``model``: 0.8.0+, whose engine workers read ``model.use_remove_padding`` of each
        role (workers/engine_workers.py).
        """
        if self.version >= V0_8_0:
            return "model"
        return "actor" if self.version >= V0_7_1 else "always"

    @property
    def megatron_by_engine_choice(self) -> bool:
        """main_ppo selects Megatron with ``model_engine=megatron`` on ppo_trainer from 0.8.0, whose
        trainer/config/ppo_megatron_trainer.yaml is "[Deprecated] ... for backward compatibility, please use
        ppo_trainer.yaml instead. python3 -m verl.trainer.main_ppo model_engine=megatron ..." (0.8.0, 0.9.1);
        before, ``model_engine`` has no megatron choice (0.7.1 trainer/config/model_engine: dp, torchtitan,
        veomni) and ``--config-name ppo_megatron_trainer`` is the way. The experimental entrypoints' own
        ``*_ppo_megatron_trainer.yaml`` are not deprecated (0.9.1) and stay."""
        return self.version >= V0_8_0

    @property
    def has_filter_groups(self) -> bool:
        """``algorithm.filter_groups`` (dynamic sampling) in the main trainer config from 0.9.0."""
        return self.version >= V0_9_0

    @property
    def megatron_critic_transformer_config(self) -> bool:
        """The Megatron critic has its own ``override_transformer_config`` from 0.6.1 (0.5.0: the actor's)."""
        return self.version >= V0_6_1


def keys(version: str) -> Keys:
    return Keys(Version(version))
