"""The framework-neutral job spec: ``RLJob`` and its parts.

Field names carry their unit (``timeout_seconds``, ``max_tokens_per_gpu``). Every model forbids unknown keys so
that a typo is an error with a "did you mean", never a silently ignored setting.
"""

from __future__ import annotations

import keyword
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import quote

API_VERSION = "rladapt/v1alpha1"
ROLE_NAMES: tuple[str, ...] = ("actor", "rollout", "ref", "critic", "reward")
RoleName = Literal["actor", "rollout", "ref", "critic", "reward"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?\Z")

PositiveInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
#: Counts and durations that end up in Kubernetes int32 fields.
Int32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
Fraction = Annotated[float, Field(gt=0.0, le=1.0)]


class _Model(BaseModel):
    # strict: "1024" is not an int and 1 is not a bool (YAML already typed them); no inf/nan in a training config.
    # defer_build: every model's validator is built once, inside RLJob's, when the first spec is validated,
    # instead of one per class at import (pydantic docs, "Model config: defer_build"; measured ~10 ms a start).
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        strict=True,
        allow_inf_nan=False,
        defer_build=True,
    )


# --- metadata -------------------------------------------------------------------------------------------------


class Metadata(_Model):
    name: str = Field(
        description="Job name: a DNS label (lowercase letters, digits, '-'), at most 63 characters."
    )
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _dns_name(cls, value: str) -> str:
        if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
            raise ValueError("a DNS label: lowercase letters, digits and '-', at most 63 characters")
        return value


# --- model / algorithm / data / training ---------------------------------------------------------------------


class Lora(_Model):
    rank: PositiveInt = 32
    alpha: PositiveInt = 32
    target_modules: list[str] | Literal["all-linear"] = "all-linear"


class ModelSpec(_Model):
    path: str = Field(description="HF model id or a local/mounted directory.")
    tokenizer: str | None = Field(None, description="Defaults to the model path.")
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    lora: Lora | None = None
    gradient_checkpointing: bool | None = Field(
        None,
        description="Recompute activations in the backward pass; null: the framework's own default (verl FSDP: "
        "on, Megatron: no recompute, OpenRLHF: off, NeMo-RL: its example config's).",
    )
    critic_path: str | None = Field(
        None,
        description="Critic initialisation; null: the framework's own choice (verl: the policy model, OpenRLHF: "
        "the reward model, else the policy).",
    )


class KL(_Model):
    coef: Annotated[float, Field(ge=0.0)] = 0.0
    in_: Literal["loss", "reward"] = Field("loss", alias="in")
    estimator: Literal["k1", "k2", "k3", "low_var_kl"] | None = Field(
        None,
        description="null: the framework's own estimator (verl: low_var_kl in the loss, k1 in the reward; "
        "OpenRLHF: k1; NeMo-RL: k3).",
    )


class Clip(_Model):
    low: Annotated[float, Field(gt=0.0)] = 0.2
    high: Annotated[float, Field(gt=0.0)] = 0.2
    dual: Annotated[float, Field(gt=1.0)] | None = Field(
        None,
        description="Dual clip (Ye et al. 2020): for a negative advantage A the clipped objective is bounded by "
        "dual * A, so a huge importance ratio cannot blow up the loss; a constant c > 1. null: the framework's "
        "own (verl: always on, c = 3.0; OpenRLHF and NeMo-RL's example config: off).",
    )


AlgorithmName = Literal[
    "grpo", "ppo", "rloo", "reinforce_pp", "reinforce_pp_baseline", "dapo", "remax", "gspo"
]

#: Algorithms whose advantage is computed within a group of samples of the same prompt.
GROUP_ALGORITHMS = frozenset({"grpo", "rloo", "dapo", "gspo", "reinforce_pp_baseline"})
#: Algorithms that train a value model (GAE).
CRITIC_ALGORITHMS = frozenset({"ppo"})
#: Algorithms whose advantage is GRPO's (a group baseline, optionally divided by the group's std).
GRPO_ADVANTAGE_ALGORITHMS = frozenset({"grpo", "dapo", "gspo"})

LossAggregation = Literal[
    "token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "seq_mean_token_sum_norm"
]
#: The loss aggregation an algorithm defines (its paper's); the others leave it to the framework.
ALGORITHM_LOSS_AGGREGATION: dict[str, LossAggregation] = {
    "dapo": "token_mean",  # DAPO's token-level policy gradient loss
    "gspo": "seq_mean_token_mean",  # GSPO's sequence-level objective
}


CorrectionLevel = Literal["token", "sequence", "sequence_geometric_mean"]


class OffPolicyCorrection(_Model):
    """Importance-sampling correction of the gap between the policy that generated a response (the rollout
    engine's log-probs) and the policy being trained: each token's loss is weighted by the ratio
    pi_train / pi_rollout, bounded so that a few extreme ratios cannot dominate the update."""

    level: CorrectionLevel = Field(
        "token",
        description="Where the ratio is taken and bounded: token (each token's ratio), sequence (the product of "
        "a response's token ratios, one weight per response), sequence_geometric_mean (the geometric mean of a "
        "response's token ratios, a length-independent statistic that decides whether the response is kept).",
    )
    mode: Literal["truncate", "mask"] = Field(
        "truncate",
        description="truncate: weights above max_ratio are cut to max_ratio (and below min_ratio raised to it; "
        "TIS); mask: a unit whose ratio lies outside [min_ratio, max_ratio] is dropped from the loss, the others "
        "keep their token weights untruncated (IcePop; at sequence_geometric_mean: a sequence mask).",
    )
    max_ratio: Annotated[float, Field(gt=0.0)] = Field(
        description="Upper bound on the ratio (TIS papers: 2.0; IcePop: 5.0)."
    )
    min_ratio: Annotated[float, Field(gt=0.0)] | None = Field(
        None,
        description="Lower bound on the ratio; required by mask. null with truncate: no lower bound.",
    )

    @model_validator(mode="after")
    def _band(self) -> OffPolicyCorrection:
        if self.mode == "mask" and self.min_ratio is None:
            raise ValueError("mode mask drops units outside [min_ratio, max_ratio]: set min_ratio")
        if self.min_ratio is not None and self.min_ratio > self.max_ratio:
            raise ValueError(f"min_ratio ({self.min_ratio}) above max_ratio ({self.max_ratio})")
        return self


class Algorithm(_Model):
    name: AlgorithmName = "grpo"
    group_size: PositiveInt = Field(
        1, description="Responses sampled per prompt (GRPO's G, verl's rollout.n)."
    )
    kl: KL = Field(default_factory=KL)
    clip: Clip = Field(default_factory=Clip)
    entropy_coef: Annotated[float, Field(ge=0.0)] | None = Field(
        None, description="null: the framework's own (no entropy bonus; OpenRLHF then skips computing it)."
    )
    gamma: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    lam: Annotated[float, Field(ge=0.0, le=1.0)] = Field(1.0, alias="lambda")
    ppo_epochs: PositiveInt = 1
    baseline: Literal["group_mean", "leave_one_out"] | None = Field(
        None,
        description="GRPO's advantage (grpo, dapo, gspo): the baseline subtracted from each reward, the mean of "
        "its group's rewards or the mean of the other responses' (leave_one_out). null: the framework's own "
        "(verl, OpenRLHF: group_mean; NeMo-RL: its example config's, leave_one_out).",
    )
    normalize_by_group_std: bool | None = Field(
        None,
        description="GRPO's advantage (grpo, dapo, gspo): divide it by the standard deviation of its group's "
        "rewards; false is Dr. GRPO's advantage. null: the framework's own (on in verl, OpenRLHF and NeMo-RL's "
        "example config).",
    )
    dynamic_sampling: bool | None = Field(
        None,
        description="DAPO's dynamic sampling: drop every group whose rewards are all equal (its advantages are "
        "zero) and keep generating until the batch is full. null: on for dapo, off for the others.",
    )
    loss_aggregation: LossAggregation | None = Field(
        None,
        description="How the policy loss of a mini batch is reduced over its tokens: token_mean (every token "
        "weighs the same), seq_mean_token_mean (each response's token mean, then the mean over responses), "
        "seq_mean_token_sum (each response's token sum, then the mean), seq_mean_token_sum_norm (Dr. GRPO: token "
        "sums divided by the response length budget). null: the algorithm's own (dapo: token_mean, gspo: "
        "seq_mean_token_mean), else the framework's own (token_mean in verl, OpenRLHF 0.7+ and NeMo-RL's "
        "example config).",
    )
    off_policy_correction: OffPolicyCorrection | None = Field(
        None,
        description="Importance-sampling correction of the rollout engine's log-prob mismatch (and of stale "
        "rollouts under weight_sync.max_staleness). null: none (the framework's own; NeMo-RL's async GRPO "
        "turns on its untruncated token correction by itself).",
    )

    @model_validator(mode="after")
    def _grpo_advantage(self) -> Algorithm:
        given = [k for k in ("baseline", "normalize_by_group_std") if getattr(self, k) is not None]
        if given and self.name not in GRPO_ADVANTAGE_ALGORITHMS:
            raise ValueError(
                f"{' and '.join(given)} shape GRPO's advantage (grpo, dapo, gspo); {self.name} defines its own "
                "(rloo is grpo with baseline: leave_one_out and normalize_by_group_std: false)"
            )
        if self.dynamic_sampling and self.name not in GROUP_ALGORITHMS:
            raise ValueError(
                f"dynamic_sampling drops groups of equal rewards: {self.name} samples no groups "
                f"(one of {', '.join(sorted(GROUP_ALGORITHMS))})"
            )
        return self

    @property
    def dynamic_sampling_on(self) -> bool:
        """Dynamic sampling as the job runs it: the field, or the algorithm's own (DAPO's)."""
        return self.dynamic_sampling if self.dynamic_sampling is not None else self.name == "dapo"

    @property
    def effective_loss_aggregation(self) -> LossAggregation | None:
        """The field, or the algorithm's own; None: the framework's own."""
        return self.loss_aggregation or ALGORITHM_LOSS_AGGREGATION.get(self.name)

    @property
    def needs_critic(self) -> bool:
        return self.name in CRITIC_ALGORITHMS

    @property
    def needs_reference(self) -> bool:
        return self.kl.coef > 0.0


OverlongPrompts = Literal["drop", "truncate_left", "truncate_right", "truncate_middle"]


class BuiltinDataset(_Model):
    name: str = Field(
        min_length=1,
        description="The dataset's name as the framework resolves it (NeMo-RL: data.dataset_name before 0.6.0, "
        "data.train.dataset_name from 0.6.0, looked up in nemo_rl/data/datasets/response_datasets/__init__.py, "
        "e.g. OpenMathInstruct-2, DeepScaler; 0.2.1 knows these two only).",
    )
    options: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict,
        description="The dataset's other settings by the framework's own names (NeMo-RL: the other keys of its "
        "data.train block from 0.6.0, e.g. split_validation_size; data keys of their own before, e.g. split).",
    )


class DataSpec(_Model):
    train: list[str] = Field(
        default_factory=list, description="Training files (parquet/jsonl); empty only with builtin."
    )
    builtin: BuiltinDataset | None = Field(
        None,
        description="A training dataset the framework itself provides, instead of files (train stays empty): "
        "its prompts are formatted as the framework's config says (NeMo-RL: data.default.prompt_file, before 0.6.0 "
        "data.prompt_file, of spec.runtime.config, else of its example config), and it brings its own validation "
        "split, which spec.eval evaluates on. null: the files of train. Only NeMo-RL has it; verl, OpenRLHF and "
        "TRL load files (or Hub ids) only.",
    )
    val: list[str] = Field(default_factory=list)
    prompt_key: str = "prompt"
    max_prompt_length: PositiveInt = 1024
    max_response_length: PositiveInt = 1024
    max_length: PositiveInt | None = Field(
        None,
        description="A cap on prompt + response tokens together, below max_prompt_length + "
        "max_response_length: a response stops at max_response_length or when the sequence reaches max_length, "
        "whichever comes first (NeMo-RL policy.max_total_sequence_length, also vLLM's max_model_len; its "
        "example configs give the prompt and the response the whole length each). null: max_prompt_length + "
        "max_response_length. Only NeMo-RL has a shared budget; verl, OpenRLHF and TRL pad or cut each part "
        "to its own length.",
    )
    shuffle: bool = True
    chat_template: bool = Field(
        True,
        description="Format each prompt with the tokenizer's chat template; false: the prompt text as the data "
        "holds it (an agent function or a dataset formatted beforehand; OpenRLHF without --apply_chat_template).",
    )
    seed: int | None = Field(None, description="Data/shuffle seed; null: the framework's own (verl: none).")
    overlong_prompts: OverlongPrompts | None = Field(
        None,
        description="What happens to a prompt longer than max_prompt_length tokens. drop: removed from the "
        "dataset before training, never sampled; truncate_left: its first tokens are cut (the end is kept); "
        "truncate_right: its last tokens are cut; truncate_middle: its middle is cut (both ends are kept). "
        "null: the framework's own (verl: an error in its synchronous rollout, 0.9.1 truncates left; "
        "OpenRLHF: the tokenizer truncates; NeMo-RL: kept, cut to a stub and masked out of the loss).",
    )

    @property
    def total_length(self) -> int:
        """The longest sequence, prompt and response together."""
        if self.max_length is not None:
            return self.max_length
        return self.max_prompt_length + self.max_response_length

    @model_validator(mode="after")
    def _max_length_caps_both(self) -> DataSpec:
        m = self.max_length
        if m is not None and not max(self.max_prompt_length, self.max_response_length) <= m:
            raise ValueError(
                f"max_length ({m}) is below max_prompt_length ({self.max_prompt_length}) or "
                f"max_response_length ({self.max_response_length}): it caps the two together, each fits in it"
            )
        if m is not None and m > self.max_prompt_length + self.max_response_length:
            raise ValueError(
                f"max_length ({m}) is above max_prompt_length + max_response_length "
                f"({self.max_prompt_length + self.max_response_length}): it would cap nothing (leave it null)"
            )
        return self


class Optimizer(_Model):
    lr: Annotated[float, Field(gt=0.0)] = 1.0e-6
    warmup_steps: NonNegInt | None = Field(
        None,
        description="Linear warmup steps; null: the framework's own schedule (verl: none, or its "
        "lr_warmup_steps_ratio; OpenRLHF: 3% of the steps; NeMo-RL: its example config's).",
    )
    warmup_ratio: Annotated[float, Field(ge=0.0, lt=1.0)] | None = Field(
        None,
        description="Linear warmup as a fraction of the total steps, exclusive with warmup_steps; each "
        "framework rounds the step count its own way (verl down, OpenRLHF up). null: the framework's own. "
        "NeMo-RL has no ratio (its warmup is a number of iterations): use warmup_steps.",
    )
    weight_decay: Annotated[float, Field(ge=0.0)] | None = Field(
        None, description="null: the framework's own (verl 0.01, OpenRLHF 0, NeMo-RL its example config's)."
    )
    max_grad_norm: Annotated[float, Field(gt=0.0)] | None = Field(
        None,
        description="Clip the gradients' global L2 norm to this before each optimizer step; null: the "
        "framework's own (1.0 in verl, OpenRLHF and NeMo-RL's example configs).",
    )

    @model_validator(mode="after")
    def _one_warmup(self) -> Optimizer:
        if self.warmup_steps is not None and self.warmup_ratio is not None:
            raise ValueError("set either warmup_steps or warmup_ratio, not both")
        return self


class DynamicBatch(_Model):
    enabled: bool = False
    max_tokens_per_gpu: PositiveInt = 16384


class TrainedOffload(_Model):
    """CPU offload of a role that trains (actor, critic)."""

    params: bool | None = Field(
        None,
        description="Keep the role's parameters in CPU memory, moved to the GPU only while it computes; null: "
        "the framework's own (on the GPU).",
    )
    optimizer: bool | None = Field(
        None,
        description="Keep the role's optimizer states in CPU memory; null: the framework's own (on the GPU).",
    )


class FrozenOffload(_Model):
    """CPU offload of a role that only runs forward passes (the reference policy)."""

    params: bool | None = Field(
        None,
        description="Keep the role's parameters in CPU memory, moved to the GPU only while it computes; null: "
        "the framework's own (verl and OpenRLHF: on the GPU; NeMo-RL: always in CPU memory).",
    )


class Offload(_Model):
    """What each role keeps in CPU memory instead of GPU memory (no field: the framework's own)."""

    actor: TrainedOffload = Field(default_factory=TrainedOffload)
    ref: FrozenOffload = Field(default_factory=FrozenOffload)
    critic: TrainedOffload = Field(default_factory=TrainedOffload)


class PassBudget(_Model):
    """The batch of one pass of one role: sequences per forward, and the token cap with dynamic batching."""

    micro_batch_per_gpu: PositiveInt | None = Field(
        None, description="Sequences per forward pass per GPU; null: see the pass."
    )
    max_tokens_per_gpu: PositiveInt | None = Field(
        None,
        description="Tokens per forward pass per GPU with training.dynamic_batch.enabled; null: see the pass.",
    )


class Budgets(_Model):
    """Per-role batches, separate from the actor's update (``training.micro_batch_per_gpu``, ``dynamic_batch``).

    Forward-only passes hold no gradients or optimizer state, so real jobs give them larger batches.
    """

    old_log_prob: PassBudget = Field(
        default_factory=PassBudget,
        description="The actor's forward pass recomputing the rollout's log-probs; null: the actor update's "
        "(training.micro_batch_per_gpu, dynamic_batch.max_tokens_per_gpu).",
    )
    ref_log_prob: PassBudget = Field(
        default_factory=PassBudget,
        description="The reference model's log-probs; null: old_log_prob's.",
    )
    critic_update: PassBudget = Field(
        default_factory=PassBudget,
        description="The critic's training pass (PPO); null: the actor update's micro batch, and its token "
        "cap as the framework pairs them (verl: twice the actor's; OpenRLHF: one flag for both).",
    )
    critic_values: PassBudget = Field(
        default_factory=PassBudget,
        description="The critic's forward pass computing values (PPO); null: critic_update's.",
    )


class Parallelism(_Model):
    tp: PositiveInt = 1
    pp: PositiveInt = 1
    cp: PositiveInt = 1
    sp: PositiveInt = Field(1, description="Ulysses sequence parallel size (FSDP backends).")
    zero_stage: Literal[0, 1, 2, 3] | None = Field(None, description="DeepSpeed ZeRO stage.")


class Training(_Model):
    steps: PositiveInt | None = Field(
        None,
        description="Total optimizer steps. With epochs too, training stops at whichever limit comes first "
        "(verl total_training_steps + total_epochs, NeMo-RL max_num_steps + max_num_epochs); null: epochs "
        "alone decide.",
    )
    epochs: PositiveInt | None = Field(
        None,
        description="Passes over the training data; with steps too, training stops at whichever limit comes "
        "first. null: steps alone decide, or one pass when steps is null too.",
    )
    global_batch: PositiveInt = Field(256, description="Prompts per training step.")
    mini_batch: PositiveInt = Field(64, description="Prompts per policy update (PPO mini batch).")
    micro_batch_per_gpu: PositiveInt = Field(2, description="Sequences per forward pass per GPU.")
    dynamic_batch: DynamicBatch = Field(default_factory=DynamicBatch)
    budgets: Budgets = Field(
        default_factory=Budgets, description="Batches of the other passes and roles, when not the actor's."
    )
    optimizer: Optimizer = Field(default_factory=Optimizer)
    critic_optimizer: Optimizer | None = None
    critic_warmup_steps: NonNegInt | None = Field(
        None,
        description="The first training steps in which only the critic trains (PPO): the actor's first update "
        "is at step critic_warmup_steps + 1, so a fresh critic's values settle before they steer the policy "
        "(verl trainer.critic_warmup, OpenRLHF --freezing_actor_steps). null: the framework's own, none.",
    )
    backend: Literal["fsdp", "fsdp2", "megatron", "deepspeed"] | None = Field(
        None,
        description="null: the framework's own (verl: fsdp, OpenRLHF: DeepSpeed, NeMo-RL: its example "
        "config's DTensor policy).",
    )
    parallel: Parallelism = Field(default_factory=Parallelism)
    offload: Offload = Field(default_factory=Offload)
    pack_sequences: bool | None = Field(
        None,
        description="Train without pad tokens: the sequences of a micro batch are packed into one row with "
        "variable-length attention (verl use_remove_padding, OpenRLHF --packing_samples, NeMo-RL "
        "policy.sequence_packing). null: the framework's own (verl: off to 0.6.1, on from 0.7.1, always on "
        "with Megatron; OpenRLHF: off unless dynamic batching or ring attention turn it on; NeMo-RL: its "
        "example config's, on).",
    )

    @model_validator(mode="after")
    def _token_caps_need_dynamic_batch(self) -> Training:
        if not self.dynamic_batch.enabled:
            capped = [
                f"budgets.{name}.max_tokens_per_gpu"
                for name in Budgets.model_fields
                if getattr(self.budgets, name).max_tokens_per_gpu is not None
            ]
            if capped:
                raise ValueError(f"{', '.join(capped)} needs dynamic_batch.enabled: true")
        return self


# --- rollout / reward / weight sync --------------------------------------------------------------------------


class ValSampling(_Model):
    n: PositiveInt = 1
    temperature: Annotated[float, Field(ge=0.0)] = 0.0
    top_p: Fraction = 1.0


class EngineSettings(_Model):
    """Settings of the rollout's inference engine (vLLM, SGLang) that real jobs set; null: the framework's own."""

    enforce_eager: bool | None = Field(
        None, description="Run the model eagerly, without CUDA graphs (less memory, slower decoding)."
    )
    chunked_prefill: bool | None = Field(
        None, description="Split long prompts' prefill into chunks scheduled beside decoding."
    )
    max_batched_tokens: PositiveInt | None = Field(
        None, description="Tokens the engine schedules in one step (vLLM max_num_batched_tokens)."
    )
    free_cache_between_phases: bool | None = Field(
        None,
        description="Release the engine's KV cache (and sleep it) while the trainer runs, so training gets "
        "the memory back on shared GPUs.",
    )
    load_weights_from_disk: bool | None = Field(
        None,
        description="true: the engine loads model.path from disk at start; false: it starts with placeholder "
        "weights the first weight sync fills. LoRA jobs whose sync carries only the adapter need true.",
    )
    layered_weight_sync: bool | None = Field(
        None,
        description="Gather the trainer's sharded (LoRA-merged) weights one layer at a time for the sync: "
        "lower peak memory, slower.",
    )


class MultiTurn(_Model):
    """Rollouts of several turns: the model calls tools or talks with a simulated user between its replies.

    Each field null: the framework's own. Files are read by the framework where the job runs (relative to the
    working directory, like reward.function.path).
    """

    max_assistant_turns: PositiveInt | None = Field(
        None, description="Most replies the model generates in one rollout (each may call tools)."
    )
    max_user_turns: PositiveInt | None = Field(
        None,
        description="Most turns the environment answers in one rollout (tool results, a simulated user).",
    )
    tool_config: str | None = Field(
        None,
        min_length=1,
        description="A YAML file listing the tools (verl's tool config: each tool's class_name, config and "
        "OpenAI function schema).",
    )
    interaction_config: str | None = Field(
        None,
        min_length=1,
        description="A YAML file listing the interactions (verl: a simulated user that answers the model and "
        "scores the conversation).",
    )
    tool_call_format: str | None = Field(
        None,
        min_length=1,
        description="How tool calls are written in the model's replies, by the parser's name (hermes, "
        "llama3_json, ...).",
    )


class AgentFunction(_Model):
    """A Python file whose agent drives each rollout: it takes the model's reply, steps its environment and
    returns the next observation, the reward and whether the episode is done (OpenRLHF's agent function)."""

    path: str = Field(min_length=1, description="The agent's Python file (*.py).")

    @field_validator("path")
    @classmethod
    def _python_file(cls, value: str) -> str:
        # OpenRLHF imports it as a module file and asserts the suffix (trainer/ray/vllm_engine.py, 0.9.10+)
        if not value.endswith(".py"):
            raise ValueError("a Python file (*.py)")
        return value


class Rollout(_Model):
    engine: Literal["vllm", "sglang", "hf"] = "vllm"
    tensor_parallel: PositiveInt = 1
    gpu_memory_utilization: Fraction = 0.5
    temperature: Annotated[float, Field(ge=0.0)] = 1.0
    top_p: Fraction = 1.0
    top_k: int = Field(-1, ge=-1, description="-1 disables top-k.")
    max_tokens: PositiveInt | None = Field(None, description="Defaults to data.max_response_length.")
    mode: Literal["sync", "async"] | None = Field(
        None, description="null: the framework version's own (verl: sync before 0.7, async from 0.7.1)."
    )
    val: ValSampling = Field(default_factory=ValSampling)
    engine_settings: EngineSettings = Field(
        default_factory=EngineSettings,
        description="The inference engine's own knobs; each null: the framework's own.",
    )
    multi_turn: MultiTurn | None = Field(
        None, description="Multi-turn rollouts with tools or interactions; null: one reply per prompt."
    )
    agent: AgentFunction | None = Field(
        None,
        description="An agent function that drives each rollout and returns its rewards (then no reward "
        "source); null: none.",
    )


class RewardFunction(_Model):
    path: str = Field(min_length=1)
    name: str = "compute_score"

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        # the name ends up in generated Python (a reward shim) and in framework configs
        if not value.isidentifier() or keyword.iskeyword(value):
            raise ValueError("a Python function name (an identifier)")
        return value


class RewardModel(_Model):
    path: str
    micro_batch_per_gpu: PositiveInt = 4


class RemoteReward(_Model):
    url: str

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("an http:// or https:// URL")
        return value


#: The built-in, rule-based scorers by name: what each computes (the adapters map them to each framework's own).
BUILTIN_REWARDS: dict[str, str] = {
    "by_data_source": "the framework's default scorer, chosen for each sample by its data_source column "
    "(verl's default_compute_score: GSM8K, MATH, DAPO/AIME, Numina, code, geometry3k, search-R1 sources)",
    "math": "1.0 when the response's final answer equals the sample's ground truth under Hugging Face "
    "math-verify (the ground truth read as \\boxed{...}; LaTeX or plain expressions in the response), else 0.0",
    "math_dapo": "DAPO's math check (verl's math_dapo, which NeMo-RL copies): the answer after 'Answer:' "
    "normalised as in Minerva and compared with the ground truth, 1.0 when equal, else -1.0 (verl 0.9.1 also "
    "falls back to the last \\boxed{})",
    "gsm8k": "GSM8K's strict format: the number after '#### ' in the response equals the ground truth, "
    "1.0 when equal, else 0.0",
}
BuiltinRewardName = Literal["by_data_source", "math", "math_dapo", "gsm8k"]


class BuiltinReward(_Model):
    """A rule-based scorer that ships with the framework: no Python file of the user's."""

    name: BuiltinRewardName = Field(
        description="; ".join(f"{name}: {what}" for name, what in BUILTIN_REWARDS.items()) + "."
    )


class OverlongPenalty(_Model):
    """DAPO's soft overlong punishment, added to the reward of each response."""

    buffer_tokens: PositiveInt = Field(
        description="The last buffer_tokens of the response length budget: a response reaching into them loses "
        "reward linearly with the tokens it uses there."
    )
    max_penalty: Annotated[float, Field(gt=0.0)] = Field(
        1.0, description="The reward lost by a response of the full length budget (DAPO: 1.0)."
    )


class Reward(_Model):
    overlong_penalty: OverlongPenalty | None = Field(
        None,
        description="DAPO's overlong reward shaping (a length penalty on top of any reward source), relative to "
        "the response length budget (rollout.max_tokens, else data.max_response_length). null: none.",
    )
    builtin: BuiltinReward | None = Field(
        None,
        description="A built-in rule-based scorer, the whole reward: not combined with function, model or "
        "remote (no framework adds it to another source: verl returns a reward model's scores without calling "
        "its scorer, NeMo-RL scores each dataset with one environment, OpenRLHF takes one reward source).",
    )
    function: RewardFunction | None = None
    model: RewardModel | None = None
    remote: RemoteReward | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Reward:
        # no source at all is checked with rollout.agent (validation._reward_source): the agent gives rewards
        others = [name for name in ("function", "model", "remote") if getattr(self, name) is not None]
        if self.builtin is not None and others:
            raise ValueError(
                f"builtin is the whole reward and cannot be combined with {', '.join(others)} "
                "(no framework adds a built-in scorer to another reward source)"
            )
        return self


class WeightSync(_Model):
    method: Literal["auto", "nccl", "cuda_ipc", "disk"] = "auto"
    every_steps: PositiveInt = 1
    max_staleness: NonNegInt = Field(
        0, description="Policy versions a rollout may lag behind (0 = on-policy)."
    )
    run_ahead_fraction: Annotated[float, Field(ge=0.0)] | None = Field(
        None,
        description="How far generation may run ahead of training, as a fraction of the samples one weight-sync "
        "period trains on: after a sync the rollout generates at most (1 + run_ahead_fraction) periods' worth "
        "before it pauses (verl's fully-async staleness_threshold; its examples use 0 to 0.5). At most "
        "max_staleness - 1. null: max_staleness - 1.",
    )
    partial_rollout: bool | None = Field(
        None,
        description="true: a weight update does not wait for the responses being generated; they go on under "
        "the new weights (one response may mix two policy versions). false: no response mixes versions (the "
        "framework waits for them; verl's fully-async trainer drops the interrupted ones). Needs max_staleness "
        ">= 1. null: the framework's own (verl's fully-async trainer: on; OpenRLHF, NeMo-RL: off).",
    )


# --- roles and placement -------------------------------------------------------------------------------------


class Role(_Model):
    """Per-role resources inside its pool. GPUs default to the whole pool (colocated roles share it)."""

    gpus: PositiveInt | None = Field(
        None, description="GPUs of its pool this role uses; default: all of them."
    )
    cpus_per_gpu: PositiveInt | None = None
    memory: str | None = Field(None, description="Kubernetes quantity per node, e.g. 200Gi.")


class Pool(_Model):
    name: str
    nodes: PositiveInt = 1
    gpus_per_node: PositiveInt = 8
    roles: list[RoleName] = Field(min_length=1)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


class Placement(_Model):
    pools: list[Pool] = Field(min_length=1)

    def pool_of(self, role: str) -> Pool | None:
        return next((pool for pool in self.pools if role in pool.roles), None)

    def colocated(self, a: str, b: str) -> bool:
        pa, pb = self.pool_of(a), self.pool_of(b)
        return pa is not None and pa is pb


# --- checkpoint / eval / logging / lifecycle -----------------------------------------------------------------


class KeepBest(_Model):
    metric: str = Field(
        min_length=1,
        description="A validation metric in the framework's own naming (NeMo-RL: val:accuracy; OpenRLHF: "
        "eval_<dataset>_pass1).",
    )
    higher_is_better: bool = Field(
        True,
        description="true: the highest values of the metric are the best (an accuracy); false: the "
        "lowest (a loss).",
    )
    count: PositiveInt = Field(1, description="How many of the best checkpoints to keep.")


class Checkpoint(_Model):
    dir: str | None = Field(None, description="Defaults to checkpoints/<metadata.name>.")
    every_steps: NonNegInt = Field(0, description="0 = only at the end.")
    keep_last: PositiveInt | None = None
    resume: Literal["auto", "never", "path"] = "auto"
    resume_path: str | None = Field(None, description="A global_step_N directory; required for resume: path.")
    save_hf: bool = False
    enabled: bool = Field(
        True, description="false: never write a checkpoint, not even at the end (a smoke test, a sweep)."
    )
    keep_best: KeepBest | None = Field(
        None, description="Keep the best checkpoints by a validation metric; null: by keep_last or all."
    )

    @model_validator(mode="after")
    def _resume_path(self) -> Checkpoint:
        if self.resume == "path" and not self.resume_path:
            raise ValueError("resume: path needs resume_path")
        if self.resume != "path" and self.resume_path:
            raise ValueError("resume_path is only used with resume: path")
        return self

    @model_validator(mode="after")
    def _nothing_kept_when_never_saved(self) -> Checkpoint:
        if not self.enabled:
            given = [
                name
                for name, on in (
                    ("every_steps", self.every_steps > 0),
                    ("keep_last", self.keep_last is not None),
                    ("keep_best", self.keep_best is not None),
                    ("save_hf", self.save_hf),
                )
                if on
            ]
            if given:
                raise ValueError(f"enabled: false never saves, so {', '.join(given)} would do nothing")
        return self


#: The engines a pool serving group can run (``rladapt.pool.ENGINES``; a test keeps the two equal).
PoolEngine = Literal["reference", "vllm", "sglang"]


class PoolServe(_Model):
    """A serving group beside the training: ``rladapt pool serve`` following an alias of the pool, rendered by the
    launcher as its own unit (``NativeLaunch.services``), so rollout and eval consumers can pin a version."""

    alias: str = Field(
        "serving",
        pattern=r"^[A-Za-z][A-Za-z0-9._-]{0,63}$",
        description="The alias the replicas follow; `rladapt pool alias` / `rollback` switch them two-phase.",
    )
    replicas: PositiveInt = Field(1, description="How many replicas (one GPU each for vllm and sglang).")
    engine: PoolEngine = Field(
        "reference",
        description="reference (rladapt's own, CPU), vllm or sglang (their own servers, a GPU each).",
    )
    port: int = Field(8000, ge=1, le=65535, description="The first replica's port; the others follow it.")

    @model_validator(mode="after")
    def _ports_fit(self) -> PoolServe:
        if self.port + self.replicas - 1 > 65535:
            raise ValueError(
                f"{self.replicas} replicas from port {self.port} would need ports up to "
                f"{self.port + self.replicas - 1}; the last port is 65535"
            )
        return self


class PoolPublish(_Model):
    """Publish the run's weights to a model pool (``rladapt pool``) as its checkpoints complete."""

    store: str = Field(min_length=1, description="The pool's directory, as the job sees it (shared storage).")
    every_steps: PositiveInt | None = Field(
        None, description="Publish only steps that are a multiple of this; null: every complete checkpoint."
    )
    alias: str | None = Field(
        None,
        pattern=r"^[A-Za-z][A-Za-z0-9._-]{0,63}$",
        description="Point this alias (e.g. candidate) at each new version; a serving group that follows it "
        "switches in two phases.",
    )
    serve: PoolServe | None = Field(
        None, description="Run a serving group following an alias of this pool beside the training job."
    )


#: The built-in scorers the evaluator itself computes (``rladapt.evaluate.scorers``): rule-based, no framework.
EVAL_BUILTINS: tuple[str, ...] = ("gsm8k", "math")
_SUITE_NAME = r"^[A-Za-z][A-Za-z0-9._-]{0,63}$"


class SuiteGeneration(_Model):
    """How the evaluator generates each answer of a suite (through a serving engine or with transformers)."""

    max_new_tokens: PositiveInt = Field(256, description="Tokens generated per answer at most.")
    temperature: Annotated[float, Field(ge=0.0)] = Field(0.0, description="0: greedy.")
    samples: PositiveInt = Field(1, description="Answers per prompt; the suite's score is the mean of all.")


class SuiteScorer(_Model):
    """A suite's scorer: a reward function (as spec.reward.function) or a built-in rule-based scorer."""

    function: RewardFunction | None = Field(
        None,
        description="Called as f(prompts=, completions=, **columns) -> one float per answer, like a TRL reward.",
    )
    builtin: BuiltinReward | None = Field(
        None, description=f"A built-in scorer; the evaluator computes {', '.join(EVAL_BUILTINS)}."
    )

    @model_validator(mode="after")
    def _one(self) -> SuiteScorer:
        given = [name for name in ("function", "builtin") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"exactly one of function or builtin (given: {', '.join(given) or 'none'})")
        return self


class EvalSuite(_Model):
    name: str = Field(pattern=_SUITE_NAME, description="Names its metrics: eval/<name>/<metric>.")
    data: list[str] = Field(
        min_length=1, description="Held-out prompt files (.jsonl, .json or .parquet with a prompt column)."
    )
    scorer: SuiteScorer
    generation: SuiteGeneration = Field(default_factory=SuiteGeneration)


class EvalGate(_Model):
    """Promote a version that passes: the alias moves by compare-and-swap, never over a newer promotion."""

    suite: str = Field(description="The suite whose result decides.")
    metric: Literal["score", "min", "max"] = Field(
        "score", description="Its metric: score (the mean over answers), min or max."
    )
    min: float = Field(description="A version passes when the metric is at least this.")
    promote: str = Field(
        pattern=r"^[A-Za-z][A-Za-z0-9._-]{0,63}$", description="The pool alias a passing version gets."
    )


class ContinuousEval(_Model):
    """An evaluator beside the training: each new version measured on the suites, training never waits."""

    follow: Literal["pool", "checkpoints"] = Field(
        description="pool: each version the job publishes (spec.pool); checkpoints: each complete checkpoint."
    )
    suites: list[EvalSuite] = Field(min_length=1)
    gate: EvalGate | None = Field(None, description="null: no version is promoted.")


class Eval(_Model):
    every_steps: NonNegInt = Field(0, description="0 = never during training.")
    before_training: bool | None = Field(
        None,
        description="null: the framework's own (verl: yes, NeMo-RL: its example config's, OpenRLHF: no).",
    )
    datasets: list[str] = Field(default_factory=list, description="Extra eval files besides data.val.")
    continuous: ContinuousEval | None = Field(
        None,
        description="An evaluator role of its own (rladapt.evaluate) beside the training job; null: none.",
    )


LoggingBackend = Literal["console", "wandb", "tensorboard", "mlflow"]


def _console() -> list[LoggingBackend]:
    return ["console"]


class Logging(_Model):
    project: str = "rladapt"
    experiment: str | None = Field(None, description="Defaults to metadata.name.")
    backends: list[LoggingBackend] = Field(default_factory=_console)
    val_generations: NonNegInt | None = Field(
        None,
        description="At each evaluation, log this many of its generations (prompt, response, score; a fixed "
        "random sample) as a table to the tracking backends (verl trainer.log_val_generations). null: the "
        "framework's own, none.",
    )
    dir: str | None = Field(
        None,
        min_length=1,
        description="The folder the framework writes its local logs and TensorBoard events to, relative to the "
        "working directory or absolute (dashboards and log shippers point there); `rladapt metrics` reads the "
        "run's events back from it. verl: $TENSORBOARD_DIR (the events themselves); OpenRLHF: "
        "--use_tensorboard (--logger.tensorboard_dir from 0.10.2; the events in <dir>/<run name>); NeMo-RL: "
        "logger.log_dir (each run in its exp_<n> folder, the events in its tensorboard/); TRL: logging_dir. "
        "null: rladapt's choice, <checkpoint.dir>/rladapt-metrics (verl with the tensorboard backend: its own "
        "tensorboard_log/<project>/<experiment>); `render --explain` shows it.",
    )


class Lifecycle(_Model):
    max_restarts: Int32 = 0
    timeout_seconds: Annotated[int, Field(gt=0, le=2**31 - 1)] | None = None
    shutdown_after_finish: bool = True
    ttl_seconds_after_finish: Int32 = 600


class Health(_Model):
    """Thresholds of the health warnings ``rladapt status`` and ``watch`` give from a run's metrics
    (``rladapt.health``). Read by rladapt only, from the run record; no framework sees them. null turns a rule off."""

    window_steps: PositiveInt = Field(
        5,
        description="Logged steps averaged by the reward, KL, entropy and length rules (noise of one step).",
    )
    reward_drop_fraction: Fraction | None = Field(
        0.5,
        description="Reward collapse: the last window's mean reward is below its best window mean by more than "
        "this fraction of the best's magnitude.",
    )
    kl_max_nats: Annotated[float, Field(gt=0)] | None = Field(
        1.0, description="KL blow-up: the last window's mean KL is above this bound (nats)."
    )
    kl_growth_factor: Annotated[float, Field(gt=1)] | None = Field(
        10.0,
        description="KL blow-up: the last window's mean KL is this many times the window before it (and above "
        "kl_growth_min_nats).",
    )
    kl_growth_min_nats: Annotated[float, Field(ge=0)] = Field(
        0.01, description="Below this KL (nats) growth is not a blow-up: KL starts at 0 and grows at first."
    )
    entropy_min_fraction: Fraction | None = Field(
        0.1,
        description="Entropy collapse: the last window's mean entropy is below this fraction of the first's.",
    )
    response_clip_ratio_max: Fraction | None = Field(
        0.2,
        description="Length limit: the last window's mean share of responses cut at max_response_length is "
        "above this fraction.",
    )
    throughput_min_fraction: Fraction | None = Field(
        0.5,
        description="Throughput falling: the last logged tokens/s/GPU is below this fraction of the median of "
        "the steps before it.",
    )
    stall_factor: Annotated[float, Field(gt=0)] | None = Field(
        5.0,
        description="No new step: a running run's last step is older than this many median step times "
        "(and stall_min_seconds).",
    )
    stall_min_seconds: NonNegInt = Field(
        600, description="No new step: never before this many seconds (evaluations and saves take time)."
    )
    first_step_max_seconds: PositiveInt | None = Field(
        3600,
        description="No first step: a running start has logged no step this many seconds after it began "
        "(model loading, engine start-up and the first rollout included; a hang in a collective shows here).",
    )


# --- platform: volumes, ports, env, secrets ------------------------------------------------------------------


class NFS(_Model):
    server: str
    path: str


class VolumeSource(_Model):
    host_path: str | None = None
    pvc: str | None = Field(
        None,
        description="Name of a PersistentVolumeClaim in the run's namespace: an existing one, or, with size, "
        "one the launch creates when absent (and never deletes).",
    )
    size: str | None = Field(
        None,
        description="With pvc: the storage the claim requests, e.g. 100Gi; the kubernetes launcher creates the "
        "claim when none of that name exists.",
    )
    storage_class: str | None = Field(
        None,
        description="With pvc and size: the claim's storageClassName (else the cluster's default class).",
    )
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"] | None = Field(
        None,
        description="With pvc and size: the claim's access mode (else ReadWriteMany when several pods mount "
        "it, ReadWriteOnce when one does).",
    )
    nfs: NFS | None = None
    memory: str | None = Field(
        None, description="Size of a memory-backed emptyDir, e.g. 64Gi (for /dev/shm)."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> VolumeSource:
        chosen = [k for k in ("host_path", "pvc", "nfs", "memory") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(f"exactly one of host_path, pvc, nfs, memory (found {chosen or 'none'})")
        if self.memory is not None and not _QUANTITY.fullmatch(self.memory):
            raise ValueError("memory is a size such as 64Gi")
        claim = [k for k in ("size", "storage_class", "access_mode") if getattr(self, k) is not None]
        if claim and self.pvc is None:
            # they describe a claim to create: on any other source they would reach nothing
            raise ValueError(f"{', '.join(claim)} describe a claim the launch creates: they go with pvc only")
        if claim and self.size is None:
            # without a size the claim is an existing one, used as it is: these would change nothing
            raise ValueError(
                f"{', '.join(claim)} describe a claim the launch creates, which needs size (e.g. size: 100Gi); "
                "an existing claim is used as it is"
            )
        if self.size is not None and not _QUANTITY.fullmatch(self.size):
            raise ValueError(f"size is a storage size such as 100Gi (found {self.size!r})")
        if self.pvc is not None and self.size is not None and not _DNS_SUBDOMAIN.fullmatch(self.pvc):
            raise ValueError(
                f"pvc names the claim the launch creates: a DNS subdomain (lowercase letters, digits, '-', '.'), "
                f"found {self.pvc!r}"
            )
        return self


class Volume(_Model):
    name: str
    mount: str
    source: VolumeSource
    read_only: bool = False

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not _DNS_LABEL.fullmatch(value):
            raise ValueError("a DNS label: lowercase letters, digits and '-'")
        return value

    @field_validator("mount")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("an absolute path")
        return value


class Port(_Model):
    name: str
    port: Annotated[int, Field(ge=1, le=65535)]
    protocol: Literal["TCP", "UDP"] = "TCP"
    purpose: Literal["ray", "dashboard", "rollout", "metrics", "other"] = "other"

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if len(value) > 15 or not _DNS_LABEL.fullmatch(value):
            raise ValueError("a port name: lowercase letters, digits and '-', at most 15 characters")
        return value


class K8sSecretRef(_Model):
    name: str
    key: str

    @field_validator("name")
    @classmethod
    def _subdomain(cls, value: str) -> str:
        if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(value):
            raise ValueError("a Kubernetes secret name (lowercase DNS subdomain)")
        return value

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if len(value) > 253 or not _SECRET_KEY.fullmatch(value):
            raise ValueError("a Kubernetes secret key (letters, digits, '-', '_', '.')")
        return value


class SecretSource(_Model):
    """One place a secret's value can come from; which launcher can read which is in ``Secret.from_``."""

    k8s_secret: K8sSecretRef | None = Field(None, description="A key of a Kubernetes Secret (kubernetes).")
    env: str | None = Field(
        None, description="An environment variable of the submitting shell (local, slurm, ray)."
    )
    file: str | None = Field(
        None,
        min_length=1,
        description="A file where the job runs (local, slurm; ray: on each node, so only its path is sent).",
    )

    @field_validator("env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError("an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretSource:
        chosen = [k for k in ("k8s_secret", "env", "file") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(f"exactly one of k8s_secret, env, file (found {chosen or 'none'})")
        return self


class Secret(_Model):
    env: str = Field(description="Environment variable the job sees.")
    from_: list[SecretSource] = Field(
        alias="from",
        description="One source, or several in order: each launcher takes the first one it can read, so one "
        "spec runs on every launcher (e.g. a Kubernetes secret, then a variable of the submitting shell).",
    )

    @field_validator("from_", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        # `from: {env: X}` (one source) stays valid: it is the list of that one source.
        if isinstance(value, dict):
            return [value]
        if isinstance(value, list) and not value:
            raise ValueError("a source, or a list of one or more sources tried in order")
        return value

    @field_validator("env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.fullmatch(value):
            raise ValueError("an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
        return value


class Runtime(_Model):
    image: str | None = Field(None, description="Container image (Kubernetes, Slurm with pyxis).")
    working_dir: str = Field(".", min_length=1, description="Directory shipped to Ray / used as cwd.")
    python: str = Field(
        "python3", min_length=1, description="The interpreter of the framework's environment."
    )
    entrypoint: str | None = Field(
        None,
        min_length=1,
        description="The framework's program the launch runs, where the spec does not decide it: NeMo-RL's run "
        "script (examples/run_grpo_sliding_puzzle.py runs the sliding-puzzle environment, run_grpo.py the "
        "data config's). null: the one rladapt picks from the spec; a framework with no choice refuses it.",
    )
    config: str | None = Field(
        None,
        min_length=1,
        description="A config file of the launch's own that the framework composes instead of its packaged one "
        "(verl: the render passes its folder as --config-path and its name as --config-name; the file builds "
        "on verl's packaged config through its defaults list. NeMo-RL: the generated config inherits from it "
        "through its defaults: instead of the tag's examples/configs/grpo_math_1B.yaml, so a recipe's settings "
        "the spec has no field for stay in the recipe). verl needs an absolute path on the machine where the "
        "job runs (Hydra resolves a relative --config-path against verl's entry module inside the installed "
        "package); NeMo-RL also takes one relative to spec.runtime.working_dir (its checkout). null: the "
        "framework's packaged config.",
    )

    @field_validator("config")
    @classmethod
    def _config_file(cls, value: str | None) -> str | None:
        if value is not None and not value.endswith(".yaml"):
            raise ValueError("a path of a .yaml file")
        return value


# --- the job -------------------------------------------------------------------------------------------------


class Spec(_Model):
    model: ModelSpec
    algorithm: Algorithm = Field(default_factory=Algorithm)
    data: DataSpec
    training: Training = Field(default_factory=Training)
    rollout: Rollout = Field(default_factory=Rollout)
    reward: Reward
    roles: dict[RoleName, Role] = Field(default_factory=dict)
    placement: Placement | None = Field(None, description="Default: one 1x8 pool with every role colocated.")
    weight_sync: WeightSync = Field(default_factory=WeightSync)
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    pool: PoolPublish | None = Field(
        None, description="Publish each complete checkpoint's weights to a model pool, from inside the job."
    )
    eval: Eval = Field(default_factory=Eval)
    logging: Logging = Field(default_factory=Logging)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    health: Health = Field(default_factory=Health)
    runtime: Runtime = Field(default_factory=Runtime)
    volumes: list[Volume] = Field(default_factory=list)
    ports: list[Port] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    secrets: list[Secret] = Field(default_factory=list)
    launcher: dict[str, dict[str, str | int | float | bool]] = Field(
        default_factory=dict, description="Per-launcher options, e.g. slurm: {partition: gpu, account: rl}."
    )
    native: dict[str, list[str]] = Field(
        default_factory=dict, description="Per-framework escape hatch, validated by that framework's schema."
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [k for k in value if not _ENV_NAME.fullmatch(k)]
        if bad:
            raise ValueError(f"environment variable names ([A-Za-z_][A-Za-z0-9_]*), found {quote(bad, 200)}")
        return value

    @model_validator(mode="after")
    def _pool_needs_checkpoints(self) -> Spec:
        if self.pool is not None and not self.checkpoint.enabled:
            raise ValueError("pool publishes checkpoints, and checkpoint.enabled: false writes none")
        return self

    @property
    def required_roles(self) -> list[str]:
        """The roles this algorithm and reward setup need, in canonical order."""
        needed = {"actor", "rollout"}
        if self.algorithm.needs_reference:
            needed.add("ref")
        if self.algorithm.needs_critic:
            needed.add("critic")
        if self.reward.model is not None:
            needed.add("reward")
        return [r for r in ROLE_NAMES if r in needed]


class RLJob(_Model):
    api_version: Literal["rladapt/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["RLJob"]
    metadata: Metadata
    spec: Spec

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def placement(self) -> Placement:
        """The placement, with the default (one colocated 1x8 pool) made explicit."""
        if self.spec.placement is not None:
            return self.spec.placement
        return Placement.model_validate({"pools": [{"name": "default", "roles": self.spec.required_roles}]})

    @property
    def total_gpus(self) -> int:
        return sum(pool.gpus for pool in self.placement.pools)

    @property
    def checkpoint_dir(self) -> str:
        return self.spec.checkpoint.dir or f"checkpoints/{self.metadata.name}"

    @property
    def experiment(self) -> str:
        return self.spec.logging.experiment or self.metadata.name
