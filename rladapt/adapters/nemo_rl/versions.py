"""What each NeMo-RL release can express, and the names it uses for it.

Read from the tagged sources of NVIDIA-NeMo/RL (``examples/run_grpo*.py``, the typed ``MasterConfig`` and the
example GRPO configs); the conformance suite re-checks the emitted keys against the key tree and the example
config of every pinned tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from packaging.version import Version

V0_4_0 = Version("0.4.0")
V0_5_0 = Version("0.5.0")
V0_6_0 = Version("0.6.0")
V0_7_0 = Version("0.7.0")

#: Capabilities of every pinned NeMo-RL version.
_BASE = frozenset(
    {
        # the run script is the launch's own choice: examples/run_grpo*.py of each tag build different
        # environments (run_grpo_sliding_puzzle.py the sliding puzzle, run_grpo.py the data config's)
        "runtime.entrypoint",
        # the launch's own config file: the generated config inherits from it (``defaults:``, resolved by
        # load_config_with_inheritance in nemo_rl/utils/config.py, every pinned tag) instead of grpo_math_1B.yaml
        "runtime.config",
        "placement.colocated",
        "rollout.sync",
        "rollout.engine.vllm",
        "backend.fsdp2",  # the DTensor policy (FSDP2 + TP)
        "algorithm.grpo",
        "algorithm.rloo",  # GRPO with a leave-one-out baseline and no std normalisation
        # GRPO + clip-higher + loss_fn.token_level_loss; its dynamic sampling (0.4.0+) is a capability of its own
        "algorithm.dapo",
        # grpo.use_leave_one_out_baseline and grpo.normalize_rewards, each on its own (GRPOConfig, every tag)
        "advantage.leave_one_out_std",
        "advantage.no_std",
        # loss_fn.token_level_loss true / false (ClippedPGLossConfig, every tag)
        "loss_aggregation.token_mean",
        "loss_aggregation.seq_mean_token_mean",
        "clip.dual",  # loss_fn.ratio_clip_c
        "kl.loss",
        "dynamic_batch",
        "checkpoint.keep_last",
        "checkpoint.never",  # checkpointing.enabled: grpo.py saves only while it is true
        "checkpoint.keep_best",  # checkpointing.metric_name / higher_is_better / keep_top_k (CheckpointManager)
        # grpo.max_rollout_turns (GRPOConfig, every tag), read by algorithms/grpo.py into run_multi_turn_rollout
        "multi_turn",
        "eval.before_training",
        "logging.wandb",
        "logging.tensorboard",
        # MathEnvironment (nemo_rl/environments/math_environment.py, every tag): math-verify on the boxed
        # ground truth; the environment of run_grpo_math.py and of grpo_math_1B.yaml's data config
        "reward.builtin.math",
        # A dataset NeMo-RL provides, by name: data.dataset_name beside the other data keys, read by
        # examples/run_grpo_math.py (0.2.1: OpenMathInstruct-2, DeepScaler) and by load_response_dataset
        # (nemo_rl/data/datasets/response_datasets/__init__.py, 0.4.0 and 0.5.0); from 0.6.0 the data.train block's
        # dataset_name, looked up in the same module's DATASET_REGISTRY (0.6.0 and 0.7.0)
        "data.builtin",
        # policy.max_total_sequence_length: one budget for prompt and response (every tag's grpo_math_1B.yaml;
        # generation stops at vllm_cfg.max_model_len, which the example configs interpolate from it)
        "data.max_length",
        # dtensor_cfg.cpu_offload (FSDP2's CPUOffloadPolicy: parameters, gradients and optimizer states)
        "offload.actor.params",
        "offload.actor.optimizer",
        # the policy workers keep the reference weights as a CPU state dict (0.4.0 dtensor_policy_worker*.py
        # get_cpu_state_dict; 0.7.0 models/automodel/setup.py and models/megatron/setup.py
        # setup_reference_model_state, "a CPU copy of the model's state dict"), so a reference in CPU memory is
        # NeMo-RL's own
        "offload.ref.params",
    }
)

#: The example config every generated config inherits from (``defaults:``), present at every pinned tag.
BASE_CONFIG = "examples/configs/grpo_math_1B.yaml"


@cache
def capabilities(version: str) -> frozenset[str]:
    """The capability set of one NeMo-RL version (see ``rladapt.plugins.capabilities.KNOWN_CAPABILITIES``).

    Never in any version, so never listed: PPO with a critic (``run_ppo.py`` of 0.7.0 is not mapped yet), ReMax,
    reward functions and remote rewards (NeMo-RL scores rollouts with environments registered in code), the built-in
    ``by_data_source`` and ``gsm8k`` scorers (no environment of any tag chooses a scorer per sample or checks GSM8K's
    ``####`` format; ENV_REGISTRY in nemo_rl/environments/utils.py), DeepSpeed,
    HF rollout, and resuming from a chosen path (NeMo-RL always resumes from the newest ``step_N``).
    """
    v = Version(version)
    caps = set(_BASE)
    if v < V0_4_0:
        caps.add("backend.fsdp")  # dtensor_cfg.enabled=false selected the HF/FSDP1 policy (dropped by 0.4.0)
    if v >= V0_4_0:
        caps |= {
            "placement.separate",  # policy.generation.colocated (0.3.0)
            "rollout.async",  # vllm_cfg.async_engine
            "backend.megatron",
            "algorithm.dynamic_sampling",  # grpo.use_dynamic_sampling
            "reward.overlong_penalty",  # grpo.reward_shaping (RewardShapingConfig)
            "algorithm.gspo",  # loss_fn.sequence_level_importance_ratios
            "weight_sync.off_policy",  # grpo.async_grpo
            "reward.model",  # env.reward_model (RewardModelEnvironment)
            # env.math.math_verify_impl: dapo_math_verify (math_environment.py, dapo_math_verifier.py from 0.4.0)
            "reward.builtin.math_dapo",
            "logging.mlflow",
            "pack_sequences",  # policy.sequence_packing (grpo_math_1B.yaml, 0.4.0+)
            # vllm_cfg.enforce_eager and the vllm_kwargs passed to vllm.LLM (generation/vllm/vllm_worker.py);
            # 0.2.1 fixes enforce_eager=True and declares no vllm_kwargs
            "rollout.enforce_eager",
            "rollout.chunked_prefill",
            "rollout.max_batched_tokens",
            # grpo.async_grpo.in_flight_weight_updates: the refit does not wait for pending generations, which go
            # on under the new weights (algorithms/async_utils.py prepare_for_refit, 0.4.0; async_utils/
            # trajectory_collector.py, 0.7.0)
            "weight_sync.partial_rollout",
            # loss_fn.truncated_importance_sampling_ratio: the token weights exp(prev - generation log-probs)
            # clamped from above (algorithms/loss_functions.py, 0.4.0; 0.2.1 has the untruncated weights only)
            "off_policy_correction.token.truncate",
        }
    if v >= V0_6_0:
        # loss_fn.truncated_importance_sampling_type icepop | seq-mask-tis with _ratio_min
        # (algorithms/loss/loss_functions.py, 0.6.0+)
        caps |= {"off_policy_correction.token.mask", "off_policy_correction.sequence_geometric_mean.mask"}
    if v >= V0_7_0:
        caps.add("off_policy_correction.truncate_min")  # tis clamps into [min, max] (min defaults to 0)
    if v >= V0_5_0:
        caps.add("lora")  # policy.dtensor_cfg.lora_cfg
    if v >= V0_6_0:
        caps |= {
            "rollout.engine.sglang",
            "algorithm.reinforce_pp",  # grpo.adv_estimator.name=reinforce_plus_plus
            "algorithm.reinforce_pp_baseline",
            "kl.reward",  # loss_fn.use_kl_in_reward
        }
    return frozenset(caps)


@dataclass(frozen=True)
class Keys:
    """The layout facts of one NeMo-RL version that moved between releases."""

    version: Version

    def script(self, reward_model: bool) -> str:
        if self.version >= V0_5_0:
            return "examples/run_grpo.py"  # selects the environment from the data config
        if reward_model:
            return "examples/run_grpo_rm.py"
        return "examples/run_grpo_math.py"

    @property
    def custom_files(self) -> bool:
        """``ResponseDataset`` over local files (0.4.0); 0.2.1 only knows its built-in HF datasets."""
        return self.version >= V0_4_0

    @property
    def dataset_blocks(self) -> bool:
        """``data.train`` / ``data.validation`` / ``data.default`` (0.6.0) instead of flat ``data.*`` keys."""
        return self.version >= V0_6_0

    @property
    def file_suffixes(self) -> tuple[str, ...]:
        if self.version >= V0_6_0:
            return (".json", ".jsonl", ".parquet", ".csv", ".arrow", ".txt")
        return (".json", ".jsonl")  # anything else goes to datasets.load_dataset(path) as a Hub id

    @property
    def has_epochs(self) -> bool:
        return self.version >= V0_4_0

    @property
    def has_seed(self) -> bool:
        return self.version >= V0_4_0

    @property
    def has_kl_type(self) -> bool:
        return self.version >= V0_5_0

    @property
    def has_adv_estimator(self) -> bool:
        return self.version >= V0_6_0

    @property
    def has_save_consolidated(self) -> bool:
        return self.version >= V0_4_0

    @property
    def has_context_parallel(self) -> bool:
        return self.version >= V0_4_0

    @property
    def env_name_key(self) -> str | None:
        """Where the data config names its environment (None: hard-wired by the script)."""
        if self.version >= V0_6_0:
            return "data.default.env_name"
        if self.version >= V0_5_0:
            return "data.env_name"
        return None

    @property
    def has_math_verify_impl(self) -> bool:
        """``env.math.math_verify_impl`` (hf_math_verify | dapo_math_verify) from 0.4.0."""
        return self.version >= V0_4_0

    @property
    def reward_model_enabled_key(self) -> bool:
        """0.4.0's ``env.reward_model.enabled`` (later versions select it by environment name)."""
        return self.version < V0_5_0


def keys(version: str) -> Keys:
    return Keys(Version(version))
