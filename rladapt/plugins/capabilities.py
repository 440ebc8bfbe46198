"""Capabilities: what a framework version can express, and what a job needs.

Adapters declare a set of capability strings per version; the core derives what a job requires (each requirement
tied to the spec field that asks for it) so that "this version cannot do that" is one uniform error naming the
field, the version and the first version that can.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

#: The vocabulary. Third-party adapters may add their own strings; these are the ones the core asks about.
KNOWN_CAPABILITIES: dict[str, str] = {
    "placement.colocated": "actor and rollout share GPUs (hybrid engine)",
    "placement.separate": "rollout on its own GPU pool",
    "rollout.sync": "synchronous rollout mode",
    "rollout.async": "asynchronous rollout mode",
    "rollout.engine.vllm": "vLLM rollout",
    "rollout.engine.sglang": "SGLang rollout",
    "rollout.engine.hf": "HF transformers rollout",
    "backend.fsdp": "FSDP training backend",
    "backend.fsdp2": "FSDP2 training backend",
    "backend.megatron": "Megatron training backend",
    "backend.deepspeed": "DeepSpeed training backend",
    "algorithm.grpo": "GRPO",
    "algorithm.ppo": "PPO with a critic (GAE)",
    "algorithm.rloo": "RLOO",
    "algorithm.reinforce_pp": "REINFORCE++",
    "algorithm.reinforce_pp_baseline": "REINFORCE++ with baseline",
    "algorithm.dapo": "DAPO (clip-higher, token-mean loss; dynamic sampling: algorithm.dynamic_sampling)",
    "algorithm.dynamic_sampling": "dynamic sampling (drop the groups of equal rewards, sample more)",
    "advantage.leave_one_out_std": "GRPO advantage with a leave-one-out baseline, divided by the group std",
    "advantage.no_std": "GRPO advantage not divided by the group std (Dr. GRPO)",
    "loss_aggregation.token_mean": "policy loss: mean over the tokens of the mini batch",
    "loss_aggregation.seq_mean_token_mean": "policy loss: mean over responses of each response's token mean",
    "loss_aggregation.seq_mean_token_sum": "policy loss: mean over responses of each response's token sum",
    "loss_aggregation.seq_mean_token_sum_norm": "policy loss: token sums divided by the length budget (Dr. GRPO)",
    "clip.dual": "dual-clip PPO (a bound on the loss of negative advantages)",
    "reward.overlong_penalty": "DAPO's soft overlong punishment (reward shaping)",
    "algorithm.remax": "ReMax",
    "algorithm.gspo": "GSPO",
    "kl.loss": "KL as a loss term",
    "kl.reward": "KL penalty in the reward",
    "reward.function": "custom reward function",
    "reward.model": "reward model",
    "reward.remote": "remote reward endpoint",
    "reward.builtin.by_data_source": "built-in scorer chosen by each sample's data_source",
    "reward.builtin.math": "built-in math-verify answer check",
    "reward.builtin.math_dapo": "built-in DAPO math answer check",
    "reward.builtin.gsm8k": "built-in GSM8K answer check",
    "lora": "LoRA",
    "runtime.entrypoint": "a run script chosen by the spec (spec.runtime.entrypoint)",
    "runtime.config": "a config file of the launch's own, composed instead of the packaged one (spec.runtime.config)",
    "data.builtin": "a training dataset the framework itself provides, named instead of files (spec.data.builtin)",
    "data.max_length": "one length budget shared by the prompt and the response (spec.data.max_length)",
    "data.raw_prompts": "prompts given to the model as the data holds them, without the chat template",
    "dynamic_batch": "token-based dynamic batching",
    "optimizer.warmup_ratio": "learning-rate warmup as a ratio of the total steps",
    "data.overlong_prompts.drop": "drop prompts longer than max_prompt_length before training",
    "data.overlong_prompts.truncate_left": "cut the first tokens of a prompt longer than max_prompt_length",
    "data.overlong_prompts.truncate_right": "cut the last tokens of a prompt longer than max_prompt_length",
    "data.overlong_prompts.truncate_middle": "cut the middle of a prompt longer than max_prompt_length",
    "offload.actor.params": "actor parameters in CPU memory",
    "offload.actor.optimizer": "actor optimizer states in CPU memory",
    "offload.ref.params": "reference-policy parameters in CPU memory",
    "offload.critic.params": "critic parameters in CPU memory",
    "offload.critic.optimizer": "critic optimizer states in CPU memory",
    "pack_sequences": "training on packed sequences without padding",
    "weight_sync.off_policy": "bounded staleness (max_staleness > 0)",
    "weight_sync.partial_rollout": "generation goes on across a weight update (partial rollout)",
    "weight_sync.run_ahead_fraction": "generation runs ahead by a fraction of a weight-sync period's samples",
    "off_policy_correction.token.truncate": "rollout IS correction: token ratios truncated (TIS)",
    "off_policy_correction.token.mask": "rollout IS correction: tokens outside a ratio band masked (IcePop)",
    "off_policy_correction.sequence.truncate": "rollout IS correction: per-response ratio products truncated",
    "off_policy_correction.sequence.mask": "rollout IS correction: responses whose ratio product is outside a band masked",
    "off_policy_correction.sequence_geometric_mean.truncate": "rollout IS correction: per-response geometric-mean "
    "ratios truncated",
    "off_policy_correction.sequence_geometric_mean.mask": "rollout IS correction: responses whose geometric-mean "
    "ratio is outside a band masked",
    "off_policy_correction.truncate_min": "rollout IS correction: a lower bound on truncated ratios",
    "checkpoint.never": "never write a checkpoint (checkpoint.enabled: false)",
    "checkpoint.keep_best": "keep the best checkpoints by a validation metric",
    "rollout.enforce_eager": "rollout engine without CUDA graphs (enforce_eager)",
    "rollout.chunked_prefill": "rollout engine chunked prefill switch",
    "rollout.max_batched_tokens": "rollout engine tokens per scheduler step",
    "rollout.free_cache": "rollout engine frees its KV cache between phases",
    "rollout.load_weights_from_disk": "choose whether the rollout engine loads the model from disk at start",
    "rollout.layered_weight_sync": "layer-by-layer weight gathering for the rollout sync",
    "multi_turn": "multi-turn rollouts (rollout.multi_turn), capped by max_assistant_turns",
    "multi_turn.max_user_turns": "a cap on the environment's turns of a multi-turn rollout",
    "multi_turn.tools": "tools from a tool config file (rollout.multi_turn.tool_config)",
    "multi_turn.interaction": "a simulated user from an interaction config file (rollout.multi_turn.interaction_config)",
    "multi_turn.tool_call_format": "the parser of the model's tool calls by name (rollout.multi_turn.tool_call_format)",
    "rollout.agent": "an agent function (a Python file) that drives each rollout and returns its rewards",
    "checkpoint.resume_path": "resume from a given checkpoint path",
    "checkpoint.keep_last": "keep only the last N checkpoints",
    "eval.before_training": "evaluate before the first step",
    "logging.wandb": "Weights & Biases",
    "logging.tensorboard": "TensorBoard",
    "logging.mlflow": "MLflow",
}


def unknown_capabilities(declared: Iterable[str], own: Mapping[str, str] = {}) -> list[str]:
    """A message for each of ``declared`` that is neither in ``KNOWN_CAPABILITIES`` nor in the adapter's ``own``
    vocabulary (``FrameworkAdapter.OWN_CAPABILITIES``), with the closest known name: a typo would otherwise be
    a capability no job ever asks for, and the one meant would refuse every job needing it."""
    vocabulary = [*KNOWN_CAPABILITIES, *own]
    out = []
    for capability in sorted(set(declared)):
        if capability in KNOWN_CAPABILITIES or capability in own:
            continue
        close = difflib.get_close_matches(capability, vocabulary, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        out.append(
            f"unknown capability {capability!r}{hint} (a name of rladapt.plugins.KNOWN_CAPABILITIES, or one the "
            "adapter declares in OWN_CAPABILITIES)"
        )
    return out


@dataclass(frozen=True)
class Requirement:
    capability: str
    field: str
    found: str


def job_requirements(job: RLJob) -> list[Requirement]:
    """Every capability the job needs, each with the spec field that asks for it."""
    spec = job.spec
    req: list[Requirement] = []

    def need(cap: str, field: str, found: object) -> None:
        req.append(Requirement(cap, field, str(found)))

    separate = not job.placement.colocated("actor", "rollout")
    if separate:
        need("placement.separate", "spec.placement", "rollout in its own pool")
    else:
        need("placement.colocated", "spec.placement", "actor and rollout colocated")
    # a null mode or backend is the framework's own, which it always has
    if spec.rollout.mode is not None:
        need(f"rollout.{spec.rollout.mode}", "spec.rollout.mode", spec.rollout.mode)
    need(f"rollout.engine.{spec.rollout.engine}", "spec.rollout.engine", spec.rollout.engine)
    if spec.training.backend is not None:
        need(f"backend.{spec.training.backend}", "spec.training.backend", spec.training.backend)
    need(f"algorithm.{spec.algorithm.name}", "spec.algorithm.name", spec.algorithm.name)
    if spec.algorithm.kl.coef > 0:
        need(f"kl.{spec.algorithm.kl.in_}", "spec.algorithm.kl.in", spec.algorithm.kl.in_)
    _algorithm_variants(job, need)
    if spec.reward.builtin is not None:
        name = spec.reward.builtin.name
        need(f"reward.builtin.{name}", "spec.reward.builtin.name", name)
    if spec.reward.function is not None:
        need("reward.function", "spec.reward.function", spec.reward.function.path)
    if spec.reward.model is not None:
        need("reward.model", "spec.reward.model", spec.reward.model.path)
    if spec.reward.remote is not None:
        need("reward.remote", "spec.reward.remote", spec.reward.remote.url)
    if spec.data.builtin is not None:
        need("data.builtin", "spec.data.builtin.name", spec.data.builtin.name)
    d = spec.data
    if d.max_length is not None and d.max_length != d.max_prompt_length + d.max_response_length:
        need("data.max_length", "spec.data.max_length", d.max_length)
    if not spec.data.chat_template:
        need("data.raw_prompts", "spec.data.chat_template", False)
    if spec.runtime.entrypoint is not None:
        need("runtime.entrypoint", "spec.runtime.entrypoint", spec.runtime.entrypoint)
    if spec.runtime.config is not None:
        need("runtime.config", "spec.runtime.config", spec.runtime.config)
    if spec.model.lora is not None:
        need("lora", "spec.model.lora", f"rank {spec.model.lora.rank}")
    if spec.training.dynamic_batch.enabled:
        need("dynamic_batch", "spec.training.dynamic_batch.enabled", True)
    for role, opt in (
        ("optimizer", spec.training.optimizer),
        ("critic_optimizer", spec.training.critic_optimizer),
    ):
        if opt is not None and opt.warmup_ratio is not None:
            need("optimizer.warmup_ratio", f"spec.training.{role}.warmup_ratio", opt.warmup_ratio)
    if spec.data.overlong_prompts is not None:
        how = spec.data.overlong_prompts
        need(f"data.overlong_prompts.{how}", "spec.data.overlong_prompts", how)
    # offload: only a role kept in CPU memory needs the framework to do it (false is every framework's own)
    for role, parts in (
        ("actor", ("params", "optimizer")),
        ("ref", ("params",)),
        ("critic", ("params", "optimizer")),
    ):
        for part in parts:
            if getattr(getattr(spec.training.offload, role), part) is True:
                need(f"offload.{role}.{part}", f"spec.training.offload.{role}.{part}", True)
    if spec.training.pack_sequences:
        need("pack_sequences", "spec.training.pack_sequences", True)
    if spec.weight_sync.max_staleness > 0:
        need("weight_sync.off_policy", "spec.weight_sync.max_staleness", spec.weight_sync.max_staleness)
    if spec.weight_sync.partial_rollout:
        need("weight_sync.partial_rollout", "spec.weight_sync.partial_rollout", True)
    if spec.weight_sync.run_ahead_fraction is not None:
        need(
            "weight_sync.run_ahead_fraction",
            "spec.weight_sync.run_ahead_fraction",
            spec.weight_sync.run_ahead_fraction,
        )
    if spec.checkpoint.resume == "path":
        need("checkpoint.resume_path", "spec.checkpoint.resume", "path")
    if spec.checkpoint.keep_last is not None:
        need("checkpoint.keep_last", "spec.checkpoint.keep_last", spec.checkpoint.keep_last)
    ck = spec.checkpoint
    if not ck.enabled:
        need("checkpoint.never", "spec.checkpoint.enabled", False)
    if ck.keep_best is not None:
        need("checkpoint.keep_best", "spec.checkpoint.keep_best", ck.keep_best.metric)
    eng = spec.rollout.engine_settings
    for cap, setting in (
        ("rollout.enforce_eager", "enforce_eager"),
        ("rollout.chunked_prefill", "chunked_prefill"),
        ("rollout.max_batched_tokens", "max_batched_tokens"),
        ("rollout.free_cache", "free_cache_between_phases"),
        ("rollout.load_weights_from_disk", "load_weights_from_disk"),
        ("rollout.layered_weight_sync", "layered_weight_sync"),
    ):
        value = getattr(eng, setting)
        if value is not None:
            need(cap, f"spec.rollout.engine_settings.{setting}", value)
    _multi_turn(job, need)
    if spec.eval.before_training:
        need("eval.before_training", "spec.eval.before_training", True)
    for backend in spec.logging.backends:
        if backend != "console":
            need(f"logging.{backend}", "spec.logging.backends", backend)
    return req


def _algorithm_variants(job: RLJob, need: Callable[[str, str, object], None]) -> None:
    """GRPO's advantage variants, DAPO's switches, the loss aggregation and the dual clip (issue 12, item 7)."""
    alg = job.spec.algorithm
    if alg.dynamic_sampling_on:
        # a dapo that leaves the field null asks for it too: the message points at the switch that turns it off
        found = True if alg.dynamic_sampling else f"null (on for {alg.name}; false turns it off)"
        need("algorithm.dynamic_sampling", "spec.algorithm.dynamic_sampling", found)
    if alg.baseline == "leave_one_out" and alg.normalize_by_group_std is not False:
        need(
            "advantage.leave_one_out_std",
            "spec.algorithm.baseline",
            "leave_one_out, divided by the group std",
        )
    elif alg.normalize_by_group_std is False and alg.baseline != "leave_one_out":
        need("advantage.no_std", "spec.algorithm.normalize_by_group_std", False)
    if alg.loss_aggregation is not None:
        need(
            f"loss_aggregation.{alg.loss_aggregation}",
            "spec.algorithm.loss_aggregation",
            alg.loss_aggregation,
        )
    if alg.clip.dual is not None:
        need("clip.dual", "spec.algorithm.clip.dual", alg.clip.dual)
    corr = alg.off_policy_correction
    if corr is not None:
        need(
            f"off_policy_correction.{corr.level}.{corr.mode}",
            "spec.algorithm.off_policy_correction",
            f"level {corr.level}, mode {corr.mode}",
        )
        if corr.mode == "truncate" and corr.min_ratio is not None:
            need(
                "off_policy_correction.truncate_min",
                "spec.algorithm.off_policy_correction.min_ratio",
                corr.min_ratio,
            )
    if job.spec.reward.overlong_penalty is not None:
        need(
            "reward.overlong_penalty",
            "spec.reward.overlong_penalty",
            job.spec.reward.overlong_penalty.buffer_tokens,
        )


def _multi_turn(job: RLJob, need: Callable[[str, str, object], None]) -> None:
    """Multi-turn rollouts and the agent function (issue 12, item 10)."""
    ro = job.spec.rollout
    mt = ro.multi_turn
    if mt is not None:
        need("multi_turn", "spec.rollout.multi_turn", "multi-turn rollouts")
        for cap, name in (
            ("multi_turn.max_user_turns", "max_user_turns"),
            ("multi_turn.tools", "tool_config"),
            ("multi_turn.interaction", "interaction_config"),
            ("multi_turn.tool_call_format", "tool_call_format"),
        ):
            value = getattr(mt, name)
            if value is not None:
                need(cap, f"spec.rollout.multi_turn.{name}", value)
    if ro.agent is not None:
        need("rollout.agent", "spec.rollout.agent.path", ro.agent.path)
