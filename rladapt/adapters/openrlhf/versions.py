"""What each OpenRLHF version can express, and how it spells each ``train_ppo_ray`` flag.

Flags are named here by their flat spelling (``actor_num_nodes``, the only spelling up to 0.10.1.post2); from 0.10.2
every flag has a dotted name (``--actor.num_nodes``) and the flat ones are gone, with no aliases.

Version bounds are exact at every pinned version: the conformance suite parses the flags below with each pinned
version's real parser. Between pinned versions a bound is the release that changed the flag where that is known
(removals of ``--flash_attn``, ``--bf16``, ``--prompt_max_len``), otherwise a release no later than the first
pinned one that has it; only pinned versions are ever resolved.
"""

from __future__ import annotations

from functools import lru_cache

from packaging.version import Version

#: First release whose ``train_ppo_ray`` only knows dotted flags (commit "dotted config hierarchy").
DOTTED_SINCE = Version("0.10.2")

#: First release whose fit loop counts steps from 0: ``ppo_train(global_step)`` runs the actor while
#: ``global_step > freezing_actor_steps`` (trainer/ppo_trainer.py), so N freezes N + 1 steps; up to 0.8.11 the loop
#: counts from 1 and N freezes N steps (0.5.9.post1 to 0.8.11; 0.9.10 to 0.11.2 count from 0). No later than 0.9.10,
#: the first pinned release with the new loop.
FREEZE_COUNTS_FROM_ZERO = Version("0.9.10")


def freezing_actor_steps(version: str | Version, critic_only: int) -> int:
    """``--freezing_actor_steps`` for ``critic_only`` critic-only steps at ``version`` (-1, OpenRLHF's own: none)."""
    if Version(str(version)) >= FREEZE_COUNTS_FROM_ZERO:
        return critic_only - 1 if critic_only else -1
    return critic_only


def critic_only_steps(version: str | Version, freezing: int) -> int:
    """The critic-only steps of ``--freezing_actor_steps freezing`` at ``version`` (the inverse of the above)."""
    if freezing < 0:
        return 0
    return freezing + 1 if Version(str(version)) >= FREEZE_COUNTS_FROM_ZERO else freezing


#: Flat name -> dotted name, for every flag rladapt emits. Where 0.10.2 split one flat optimizer flag per model,
#: the flat name spells the actor's and ``critic_<name>`` (dotted versions only) the critic's.
DOTTED: dict[str, str] = {
    # placement
    "actor_num_nodes": "actor.num_nodes",
    "actor_num_gpus_per_node": "actor.num_gpus_per_node",
    "ref_num_nodes": "ref.num_nodes",
    "ref_num_gpus_per_node": "ref.num_gpus_per_node",
    "critic_num_nodes": "critic.num_nodes",
    "critic_num_gpus_per_node": "critic.num_gpus_per_node",
    "reward_num_nodes": "reward.num_nodes",
    "reward_num_gpus_per_node": "reward.num_gpus_per_node",
    "colocate_actor_ref": "train.colocate_actor_ref",
    "colocate_critic_reward": "train.colocate_critic_reward",
    "colocate_all_models": "train.colocate_all",
    # vLLM
    "vllm_num_engines": "vllm.num_engines",
    "vllm_tensor_parallel_size": "vllm.tensor_parallel_size",
    "vllm_gpu_memory_utilization": "vllm.gpu_memory_utilization",
    "vllm_enable_sleep": "vllm.enable_sleep",
    "deepspeed_enable_sleep": "ds.enable_sleep",
    "vllm_sync_backend": "vllm.sync_backend",
    # models and reward
    "pretrain": "actor.model_name_or_path",
    "reward_pretrain": "reward.model_name_or_path",
    "critic_pretrain": "critic.model_name_or_path",
    "remote_rm_url": "reward.remote_url",
    # algorithm
    "advantage_estimator": "algo.advantage.estimator",
    "n_samples_per_prompt": "rollout.n_samples_per_prompt",
    "init_kl_coef": "algo.kl.init_coef",
    "use_kl_loss": "algo.kl.use_loss",
    "kl_estimator": "algo.kl.estimator",
    "eps_clip": "actor.eps_clip",
    "eps_clip_low_high": "actor.eps_clip_low_high",
    "entropy_loss_coef": "actor.entropy_coef",
    "policy_loss_type": "actor.policy_loss_type",
    "gamma": "algo.advantage.gamma",
    "lambd": "algo.advantage.lambd",
    "dynamic_filtering": "algo.dynamic_filtering_enable",
    "dynamic_filtering_reward_range": "algo.dynamic_filtering_range",
    # PolicyLoss(dual_clip=...) (trainer/ray/ppo_actor.py, models/loss.py: asserts > 1.0)
    "dual_clip": "actor.dual_clip",
    # the rollout log-prob mismatch correction (models/loss.py PolicyLoss, built in trainer/ray/ppo_actor.py):
    # 0.8.11 to 0.10.2 a switch, one type and the bounds; from 0.11.2 level, mode, gating and the bounds
    "enable_vllm_is_correction": "algo.advantage.is_correction_enable",
    "vllm_is_truncated_threshold": "algo.advantage.is_correction_threshold",
    "vllm_is_correction_type": "algo.advantage.is_correction_type",
    "is_correction_level": "algo.advantage.is_correction_level",
    "is_correction_mode": "algo.advantage.is_correction_mode",
    "is_correction_gating": "algo.advantage.is_correction_gating",
    # vLLM pause/resume instead of a lock around the weight sync (trainer/ppo_trainer_async.py, 0.9.10+)
    "partial_rollout": "train.partial_rollout_enable",
    # PolicyLoss(token_level_loss=loss_agg_mode == "token-mean") (trainer/ray/ppo_actor.py, 0.11.2)
    "loss_agg_mode": "actor.loss_agg_mode",
    # DAPO's overlong penalty on the rewards (trainer/ppo_utils/experience_maker.py in 0.8.11, length_penalty.py
    # from 0.9.10): relative to generate_max_len / max_new_tokens, else max_len
    "overlong_buffer_len": "reward.overlong_buffer_len",
    "overlong_penalty_factor": "reward.overlong_penalty_factor",
    # batches, lengths, loop
    "train_batch_size": "train.batch_size",
    "micro_train_batch_size": "train.micro_batch_size",
    "rollout_batch_size": "rollout.batch_size",
    "micro_rollout_batch_size": "rollout.micro_batch_size",
    "max_epochs": "train.max_epochs",
    "num_episodes": "train.num_episodes",
    # the critic warm-up (cli/train_ppo_ray.py --freezing_actor_steps 0.5.9.post1 to 0.10.1.post2,
    # --critic.freezing_steps from 0.10.2; read in trainer/ppo_trainer.py ppo_train)
    "freezing_actor_steps": "critic.freezing_steps",
    "max_samples": "data.max_samples",
    "max_len": "data.max_len",
    "max_new_tokens": "rollout.max_new_tokens",
    "use_dynamic_batch": "train.dynamic_batch_enable",
    "train_max_tokens_per_gpu": "train.max_tokens_per_gpu",
    "rollout_max_tokens_per_gpu": "rollout.max_tokens_per_gpu",
    "async_train": "train.async_enable",
    "async_queue_size": "train.async_queue_size",
    "seed": "train.seed",
    # sampling
    "temperature": "rollout.temperature",
    "top_p": "rollout.top_p",
    # data and eval
    "prompt_data": "data.prompt_dataset",
    "input_key": "data.input_key",
    "apply_chat_template": "data.apply_chat_template",
    "eval_dataset": "eval.dataset",
    "eval_steps": "eval.steps",
    "eval_temperature": "eval.temperature",
    "eval_n_samples_per_prompt": "eval.n_samples_per_prompt",
    # optimizer
    "actor_learning_rate": "actor.adam.lr",
    "critic_learning_rate": "critic.adam.lr",
    "l2": "actor.adam.weight_decay",
    "lr_warmup_ratio": "actor.lr_warmup_ratio",
    "critic_l2": "critic.adam.weight_decay",
    "critic_lr_warmup_ratio": "critic.lr_warmup_ratio",
    # gradient clipping: before 0.10.2 one --max_norm builds the DeepspeedStrategy both roles train with
    # (utils/utils.py get_strategy -> DeepspeedStrategy(max_norm=...) -> "gradient_clipping", 0.9.10); from 0.10.2 each
    # role clips with its own (trainer/ray/ppo_actor.py args.actor.max_norm, ppo_critic.py args.critic.max_norm)
    "max_norm": "actor.max_norm",
    "critic_max_norm": "critic.max_norm",
    # DeepSpeed and model
    "zero_stage": "ds.zero_stage",
    "param_dtype": "ds.param_dtype",
    "gradient_checkpointing": "actor.gradient_checkpointing_enable",
    "ring_attn_size": "ds.ring_attn_size",
    "packing_samples": "ds.packing_samples",
    # CPU offload: one --adam_offload builds the DeepSpeed strategy of actor and critic (utils/deepspeed/deepspeed.py
    # get_train_ds_config(adam_offload=...) -> offload_optimizer device cpu); the reference model's eval config
    # offloads its parameters (trainer/ray/launcher.py get_ds_eval_config(offload=...)): one --ref_reward_offload
    # for the reference and reward models to 0.10.1.post2, --ref.offload and --reward.offload from 0.10.2
    "adam_offload": "ds.adam_offload",
    "ref_reward_offload": "ref.offload",
    "lora_rank": "ds.lora.rank",
    "lora_alpha": "ds.lora.alpha",
    "target_modules": "ds.lora.target_modules",
    # checkpoints
    "save_path": "ckpt.output_dir",
    "ckpt_path": "ckpt.path",
    "save_steps": "ckpt.save_steps",
    "max_ckpt_num": "ckpt.max_num",
    "load_checkpoint": "ckpt.load_enable",
    "save_hf_ckpt": "ckpt.save_hf",
    "best_metric_key": "ckpt.best_metric_key",
    "agent_func_path": "train.agent_func_path",
    "enforce_eager": "vllm.enforce_eager",
    # logging
    "use_wandb": "logger.wandb.key",
    "wandb_project": "logger.wandb.project",
    "wandb_run_name": "logger.wandb.run_name",
    "use_tensorboard": "logger.tensorboard_dir",
}

#: Flat -> dotted names of flags rladapt never emits but reads: the post-parse rules (``checks``, ``adjust``)
#: and the import of a launch (``rladapt.adapters.openrlhf.importer``). A flag in neither table keeps its flat name.
READ_DOTTED: dict[str, str] = {
    "ds_tensor_parallel_size": "ds.tensor_parallel_size",
    "vllm_generate_batch_size": "rollout.vllm_generate_batch_size",
    "input_template": "data.input_template",
    "attn_implementation": "ds.attn_implementation",
    "max_images_per_prompt": "data.max_images_per_prompt",
}

#: Flags that exist only in a version range [since, until); flags not listed exist in every pinned version.
#: ``None`` leaves that side open.
RANGES: dict[str, tuple[str | None, str | None]] = {
    "critic_l2": ("0.10.2", None),
    "critic_lr_warmup_ratio": ("0.10.2", None),
    "critic_max_norm": ("0.10.2", None),
    "use_kl_estimator_k3": (None, "0.6.0.post1"),
    "use_kl_loss": ("0.6.0", None),
    "kl_estimator": ("0.6.0.post1", None),
    "deepspeed_enable_sleep": ("0.6.0.post1", None),
    "entropy_loss_coef": ("0.7.0", None),
    "eval_dataset": ("0.7.0", None),
    "eval_temperature": ("0.7.0", None),
    "eval_n_samples_per_prompt": ("0.7.0", None),
    "ring_attn_size": ("0.7.0", None),
    "eps_clip_low_high": ("0.8.0", None),
    "async_train": ("0.8.0", None),
    "policy_loss_type": ("0.8.6", None),
    "dynamic_filtering": ("0.8.6", None),
    "dynamic_filtering_reward_range": ("0.8.6", None),
    # not in 0.7.5, in 0.8.11 (the first pinned release that has them)
    "dual_clip": ("0.8.11", None),
    "overlong_buffer_len": ("0.8.11", None),
    "overlong_penalty_factor": ("0.8.11", None),
    "loss_agg_mode": ("0.11.2", None),
    "use_dynamic_batch": ("0.8.6", None),
    "train_max_tokens_per_gpu": ("0.8.6", None),
    "rollout_max_tokens_per_gpu": ("0.8.6", None),
    "flash_attn": (None, "0.8.10"),
    "bf16": (None, "0.9.2"),
    "param_dtype": ("0.9.2", None),
    "async_queue_size": ("0.9.1", None),
    "prompt_max_len": (None, "0.9.8"),
    "generate_max_len": (None, "0.9.8"),
    "max_new_tokens": ("0.9.8", None),
    "best_metric_key": ("0.9.10", None),
    # not in 0.7.5, in 0.8.11 (one upper bound, nargs=1); LOW HIGH from 0.9.10; HIGH or LOW HIGH from 0.11.2
    "enable_vllm_is_correction": ("0.8.11", "0.11.2"),
    "vllm_is_truncated_threshold": ("0.8.11", None),
    "vllm_is_correction_type": ("0.9.10", "0.11.2"),
    "is_correction_level": ("0.11.2", None),
    "is_correction_mode": ("0.11.2", None),
    "is_correction_gating": ("0.11.2", None),
    "partial_rollout": ("0.9.10", None),
    "agent_func_path": ("0.8.0", None),  # cli/train_ppo_ray.py: in the 0.8.0 wheel, not in 0.7.5
}

#: Native advantage estimators and the release that added each.
ESTIMATORS: dict[str, str] = {
    "gae": "0.5.1",
    "reinforce": "0.5.1",
    "rloo": "0.5.3",
    "reinforce_baseline": "0.6.0",
    "group_norm": "0.6.0",
    "dr_grpo": "0.6.3.post2",
    "flash_reinforce": "0.11.2",
}

#: Before this release PolicyLoss reduces per sequence, then over sequences (masked_mean(dim=-1).mean(),
#: models/loss.py of 0.5.9.post1); from it the token mean (token_level_loss=True, the default PolicyLoss of 0.7.5 to
#: 0.10.2 is built with), except GSPO's, which is per sequence (models/loss.py: policy_loss_type == "gspo" ->
#: token_level_loss = False, 0.8.11+). 0.7.5 is the first pinned release that has it.
TOKEN_LEVEL_LOSS_SINCE = "0.7.5"

#: Estimators that compare the samples of one prompt: one sample per prompt makes every advantage zero.
GROUP_ESTIMATORS = frozenset({"rloo", "reinforce_baseline", "group_norm", "dr_grpo"})

#: rladapt algorithm -> (estimator, extra flat flags that define it).
ALGORITHMS: dict[str, tuple[str, dict[str, object]]] = {
    "ppo": ("gae", {}),
    "grpo": ("group_norm", {}),
    "rloo": ("rloo", {}),
    "reinforce_pp": ("reinforce", {}),
    "reinforce_pp_baseline": ("reinforce_baseline", {}),
    # DAPO's dynamic sampling (--dynamic_filtering) is spec.algorithm.dynamic_sampling, on by default for dapo
    "dapo": ("group_norm", {}),
    "gspo": ("group_norm", {"policy_loss_type": "gspo"}),
}


def _v(text: str) -> Version:
    return Version(text)


def dotted(version: str | Version) -> bool:
    return _v(str(version)) >= DOTTED_SINCE


def has_flag(version: str | Version, flat: str) -> bool:
    since, until = RANGES.get(flat, (None, None))
    v = _v(str(version))
    return (since is None or v >= _v(since)) and (until is None or v < _v(until))


def spell(version: str | Version, flat: str) -> str:
    """The option string ``version`` uses for the flag rladapt calls ``flat``."""
    return f"--{DOTTED[flat]}" if dotted(version) else f"--{flat}"


def option(version: str | Version, flat: str) -> str:
    """The option string of any flag named by its flat name: ``spell`` for the ones rladapt emits, else the
    ``READ_DOTTED`` name (dotted versions) or the flat name itself."""
    if not dotted(version):
        return f"--{flat}"
    return f"--{DOTTED.get(flat) or READ_DOTTED.get(flat) or flat}"


def dest(version: str | Version, flat: str) -> str:
    """The argparse ``dest`` of ``flat`` in ``version``."""
    return spell(version, flat)[2:]


def estimators(version: str | Version) -> tuple[str, ...]:
    v = _v(str(version))
    return tuple(name for name, since in ESTIMATORS.items() if v >= _v(since))


@lru_cache(maxsize=64)
def capabilities(version: str) -> frozenset[str]:
    """Every capability string ``version`` can express (rladapt's vocabulary plus ``openrlhf.*`` details)."""
    v = _v(version)
    caps = {
        "placement.colocated",
        "placement.separate",
        # OpenRLHF's trainer schedules generation itself; the spec's rollout mode does not change its launch.
        "rollout.sync",
        "rollout.async",
        "rollout.engine.vllm",
        # no --apply_chat_template: preprocess_data takes data[input_key] as the prompt (with --input_template
        # formatting it when given; openrlhf/datasets/prompts_dataset.py, 0.5.9.post1 to 0.11.2)
        "data.raw_prompts",
        "backend.deepspeed",
        # FSDP's full sharding is expressed as ZeRO-3, the same sharding of parameters, gradients and optimizer.
        "backend.fsdp",
        "backend.fsdp2",
        "kl.reward",
        "reward.function",
        "reward.model",
        "reward.remote",
        "lora",
        "checkpoint.keep_last",
        "optimizer.warmup_ratio",  # --lr_warmup_ratio (--actor.lr_warmup_ratio from 0.10.2)
        "rollout.enforce_eager",  # --enforce_eager (--vllm.enforce_eager from 0.10.2)
        "rollout.free_cache",  # --vllm_enable_sleep (--vllm.enable_sleep)
        "rollout.load_weights_from_disk",  # always from disk: true is noted, false refused
        "logging.wandb",
        "logging.tensorboard",
        "openrlhf.colocate.all",
        "openrlhf.colocate.actor_ref",
        "openrlhf.colocate.critic_reward",
        "openrlhf.vllm_sleep",
    }
    available = set(estimators(v))
    caps.update(f"openrlhf.estimator.{name}" for name in available)
    for algorithm, (estimator, extra) in ALGORITHMS.items():
        if estimator in available and all(has_flag(v, flag) for flag in extra):
            caps.add(f"algorithm.{algorithm}")
    if has_flag(v, "use_kl_loss"):
        caps.add("kl.loss")
    if "algorithm.dapo" in caps and not has_flag(v, "eps_clip_low_high"):
        caps.discard("algorithm.dapo")
    if has_flag(v, "deepspeed_enable_sleep"):
        caps.add("openrlhf.deepspeed_sleep")
    if has_flag(v, "eval_dataset"):
        caps.add("openrlhf.eval")
    if has_flag(v, "async_train"):
        caps.update({"weight_sync.off_policy", "openrlhf.async_train"})
    if has_flag(v, "async_queue_size"):
        caps.add("openrlhf.async_queue_size")
    if has_flag(v, "use_dynamic_batch"):
        caps.add("dynamic_batch")
    if has_flag(v, "agent_func_path"):
        # --agent_func_path (--train.agent_func_path from 0.10.2): cli/train_ppo_ray.py from 0.8.x; the vLLM
        # actor loads the file's AgentExecutor (trainer/ray/vllm_engine_async.py 0.8.11, vllm_engine.py 0.9.10+)
        caps.add("rollout.agent")
    # a prompt longer than the limit: to 0.9.8 the experience maker tokenizes prompts with truncation=True at
    # --prompt_max_len (trainer/ppo_utils/experience_maker.py tokenize_fn: the tokenizer's truncation side, right
    # by default); from 0.9.8 the agent executor keeps its last max_len - max_new_tokens tokens (utils/agent.py
    # SingleTurnAgentExecutor: prompt_token_ids[-max_prompt_length:])
    caps.add(
        "data.overlong_prompts.truncate_left"
        if has_flag(v, "max_new_tokens")
        else "data.overlong_prompts.truncate_right"
    )
    caps |= {"offload.actor.optimizer", "offload.critic.optimizer", "offload.ref.params", "pack_sequences"}
    if has_flag(v, "best_metric_key"):
        caps.add("checkpoint.keep_best")
    if has_flag(v, "dynamic_filtering"):
        caps.add("algorithm.dynamic_sampling")
    if "dr_grpo" in available:
        caps.add("advantage.no_std")  # Dr. GRPO: rewards minus the group mean, no std (experience_maker.py)
    if has_flag(v, "dual_clip"):
        caps.add("clip.dual")
    if has_flag(v, "overlong_buffer_len"):
        caps.add("reward.overlong_penalty")
    caps |= _correction_capabilities(v)
    if has_flag(v, "partial_rollout"):
        caps.add("weight_sync.partial_rollout")
    if has_flag(v, "loss_agg_mode") or v >= _v(TOKEN_LEVEL_LOSS_SINCE):
        caps.add("loss_aggregation.token_mean")
    if has_flag(v, "loss_agg_mode") or v < _v(TOKEN_LEVEL_LOSS_SINCE):
        caps.add("loss_aggregation.seq_mean_token_mean")
    return frozenset(caps)


def _correction_capabilities(v: Version) -> set[str]:
    """The rollout IS corrections ``v``'s PolicyLoss computes (models/loss.py of each pinned wheel)."""
    if not has_flag(v, "vllm_is_truncated_threshold"):
        return set()
    # 0.8.11: exp(old - rollout).clamp(max=threshold), token level
    caps = {"off_policy_correction.token.truncate"}
    if has_flag(v, "vllm_is_correction_type") or has_flag(v, "is_correction_level"):
        # tis clamps into [low, high]; icepop zeroes tokens outside it; seq-mask-tis drops a sequence by its
        # geometric-mean ratio (0.9.10 to 0.10.2), as level token/seq with mode clip/mask do from 0.11.2
        caps |= {
            "off_policy_correction.truncate_min",
            "off_policy_correction.token.mask",
            "off_policy_correction.sequence_geometric_mean.mask",
        }
    return caps
