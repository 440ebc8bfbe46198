"""RLJob -> NeMo-RL's native launch: ``uv run python examples/run_grpo*.py --config <file> <Hydra overrides>``.

The config file holds every key the spec maps and inherits the rest from the tag's own
``examples/configs/grpo_math_1B.yaml`` through NeMo-RL's ``defaults:`` inheritance (``load_config``, every pinned
tag), so a launch from a NeMo-RL checkout of that tag is complete without rladapt shipping upstream's configs.
``spec.native["nemo-rl"]`` items follow as Hydra overrides, the grammar NeMo-RL's scripts apply to the loaded
config in struct mode (``parse_hydra_overrides``): ``a.b=v`` must name an existing key, ``+a.b=v`` adds one.

What the capability sets cannot see (a field a version lacks, a placement NeMo-RL cannot lay out) raises
``UnsupportedError`` here, naming the field, the version and, where one exists, the first version that can.
"""

from __future__ import annotations

import hashlib
import posixpath
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml
from packaging.version import Version

from rladapt.adapters.common import (
    WEIGHT_EXCLUDES,
    hydra_native_value,
    hydra_passthrough,
    placement,
    working_dir_runtime_env,
)
from rladapt.metrics.names import kept_log_dir, log_dir_setting, with_tensorboard
from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.translation import TranslationBuilder
from rladapt.primitives.errors import UnsupportedError
from rladapt.primitives.spec import GROUP_ALGORITHMS, GRPO_ADVANTAGE_ALGORITHMS

from .run_script import is_grpo_script
from .versions import BASE_CONFIG, V0_4_0, V0_5_0, V0_6_0, V0_7_0, Keys, capabilities, keys

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rladapt.plugins.adapter import FrameworkVersion
    from rladapt.plugins.native import RolePlacement
    from rladapt.primitives import RLJob
    from rladapt.primitives.spec import DataSpec

FRAMEWORK = "nemo-rl"
NATIVE_FIELD = f"spec.native.{FRAMEWORK}"
#: Where the generated config is written, relative to the working directory (a NeMo-RL checkout).
CONFIG_DIR = "rladapt-configs"
#: NeMo-RL counts steps and epochs as plain ints; this stands for "no limit from this side".
UNLIMITED = 2**31 - 1
#: The ground-truth column NeMo-RL's ResponseDataset reads (``output_key`` default); the spec has no such field.
ANSWER_KEY = "output"

#: spec.reward.builtin name -> the math environment's ``math_verify_impl`` (math_environment.py, 0.4.0+).
MATH_VERIFY_IMPL: dict[str, str] = {"math": "hf_math_verify", "math_dapo": "dapo_math_verify"}

#: spec KL estimator -> ``loss_fn.reference_policy_kl_type`` (0.5.0+; before that always k3).
KL_TYPE: dict[str, str] = {"k1": "k1", "k2": "k2", "k3": "k3", "low_var_kl": "k3"}

#: Files Ray must never upload with the working dir (checkpoints, logs, weights, the uv venv).
EXCLUDES: tuple[str, ...] = (
    "/.git/",
    "/.venv/",
    "/logs/",
    "/results/",
    "/wandb/",
    *WEIGHT_EXCLUDES,
)


#: NeMo-RL's settings are keys of one YAML config file (``nested`` writes it).
_Builder = TranslationBuilder[Keys]


def config_path(job: RLJob, text: str, folder: str = CONFIG_DIR) -> str:
    """``rladapt-configs/<job>-<digest of text>.yaml`` (``<folder>/rladapt-<job>-<digest>.yaml`` beside a config
    of the launch's own): two runs of one job from one checkout (another checkpoint dir, another tag) each read
    their own file, which the job writes when it starts; same text, same name, so a render stays deterministic."""
    name = f"{job.metadata.name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"
    if folder == CONFIG_DIR:
        return f"{CONFIG_DIR}/{name}"
    return posixpath.join(folder, f"rladapt-{name}")


def translate(job: RLJob, fv: FrameworkVersion) -> NativeLaunch:
    b = _Builder(framework=FRAMEWORK, job=job, version=fv.parsed, k=keys(fv.version))
    _placement(b)
    _model(b)
    _algorithm(b)
    _batches(b)
    _backend(b)
    _rollout(b)
    _engine_settings(b)
    _data(b)
    _reward(b)
    _checkpoint(b)
    _eval_logging(b)
    _interpreter(b)
    _memory(b)
    native = _native_overrides(b)
    if b.problems:
        raise UnsupportedError(b.problems)

    own = job.spec.runtime.config
    base = own or BASE_CONFIG
    beside = own is not None and not own.startswith("/") and not posixpath.normpath(own).startswith("../")
    folder = posixpath.dirname(posixpath.normpath(own)) if own is not None and beside else CONFIG_DIR
    # Parents resolve against the child's own directory (load_config_with_inheritance). A relative config of the
    # launch's own gets the generated file beside it: before 0.6.0 every parent of the chain resolves against the
    # first file's directory (nemo_rl/utils/config.py at v0.5.0 passes base_dir down), so the recipe's own
    # relative defaults resolve as they do when the launch names it.
    parent = base if base.startswith("/") else posixpath.relpath(posixpath.normpath(base), folder or ".")
    document = {"defaults": parent, **b.nested()}
    header = (
        f"# Generated by rladapt for {FRAMEWORK} {fv.version}: job {job.metadata.name}.\n"
        f"# Every key not set here comes from {base}"
        + (" (spec.runtime.config)" if own else " of that NeMo-RL tag")
        + ".\n"
    )
    text = header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=110)
    path = config_path(job, text, folder)
    if own is not None:
        b.origins["(config)"] = "spec.runtime.config"
    # the launch's own run script when the spec names one (an import keeps it: run_grpo_sliding_puzzle.py builds
    # another environment than run_grpo.py from the same config), else the tag's GRPO script for this reward
    script = job.spec.runtime.entrypoint or b.k.script(reward_model=job.spec.reward.model is not None)
    argv = ("uv", "run", "python", script, "--config", path, *native)
    return NativeLaunch.from_job(
        job,
        framework=FRAMEWORK,
        version=fv.version,
        argv=argv,
        files={path: text},
        runtime_env=runtime_env(job),
        notes=b.notes,
        origins=b.origins,
        metrics_dir=own_log_dir(job),
    )


# --- sections ------------------------------------------------------------------------------------------------


def _placement(b: _Builder) -> None:
    job = b.job
    roles = placement(job)
    actor = roles["actor"]
    for role in ("ref",):
        if role in roles and roles[role].pool != actor.pool:
            b.unsupported(
                "spec.placement.pools",
                "the reference model outside the actor's pool (the policy workers hold the reference weights)",
                found=f"ref in pool {roles[role].pool!r}",
            )
    shared_node = _reward_on_shared_node(b, roles)
    for name, res in job.spec.roles.items():
        pool = job.placement.pool_of(name)
        if name == "reward" and shared_node:
            continue
        if res.gpus is not None and pool is not None and res.gpus != pool.gpus:
            b.unsupported(
                f"spec.roles.{name}.gpus",
                "a role on part of its pool (NeMo-RL gives each worker group whole pools)",
                found=res.gpus,
            )
    pools = job.placement.pools
    separate = not job.placement.colocated("actor", "rollout")
    reward_pool = "reward" in roles and roles["reward"].pool != actor.pool
    if "reward" in roles and not reward_pool and not shared_node:
        b.unsupported(
            "spec.placement.pools",
            "a reward model sharing the actor's GPUs (env.reward_model always gets dedicated resources)",
            found="reward in the actor's pool",
        )
    per_node = {p.gpus_per_node for p in pools}
    if len(per_node) > 1:
        b.unsupported(
            "spec.placement.pools",
            "pools with different gpus_per_node (cluster.gpus_per_node is one value for every node)",
            found=sorted(per_node),
        )
    b.set("cluster.num_nodes", sum(p.nodes for p in pools), "spec.placement")
    b.set("cluster.gpus_per_node", max(per_node), "spec.placement")
    ws = job.spec.weight_sync
    if ws.every_steps != 1:
        b.unsupported(
            "spec.weight_sync.every_steps",
            "syncing weights less often than every step (NeMo-RL refits the generation engine every step)",
            found=ws.every_steps,
        )
    if not separate:
        if b.version >= V0_4_0:
            b.set("policy.generation.colocated.enabled", True, "spec.placement")
        if ws.method not in ("auto", "cuda_ipc"):
            b.unsupported(
                "spec.weight_sync.method",
                f"weight sync {ws.method!r} with colocated generation (refit goes through CUDA IPC)",
                found=ws.method,
            )
        if ws.max_staleness > 0:
            b.unsupported(
                "spec.weight_sync.max_staleness",
                "off-policy (async) GRPO with colocated generation (grpo.async_grpo needs a separate pool)",
                found=ws.max_staleness,
            )
    elif b.version >= V0_4_0:
        rollout = roles["rollout"]
        b.set("policy.generation.colocated.enabled", False, "spec.placement")
        # Multi-node layout (grpo.setup): generation takes whole nodes of the cluster; gpus_per_node is
        # mandatory there since PR 1273 and must equal cluster.gpus_per_node.
        b.set("policy.generation.colocated.resources.num_nodes", _nodes(rollout, job), "spec.placement")
        b.set("policy.generation.colocated.resources.gpus_per_node", max(per_node), "spec.placement")
        if ws.method not in ("auto", "nccl"):
            b.unsupported(
                "spec.weight_sync.method",
                f"weight sync {ws.method!r} to a separate generation pool (refit goes through NCCL)",
                found=ws.method,
            )
        if ws.max_staleness > 0:
            b.set("grpo.async_grpo.enabled", True, "spec.placement")
            if ws.partial_rollout is not None:
                b.set(
                    "grpo.async_grpo.in_flight_weight_updates",
                    ws.partial_rollout,
                    "spec.weight_sync.partial_rollout",
                )
            b.set(
                "grpo.async_grpo.max_trajectory_age_steps", ws.max_staleness, "spec.weight_sync.max_staleness"
            )
            # Off-policy samples need the importance-sampling correction (upstream's async GRPO guide).
            b.set("loss_fn.use_importance_sampling_correction", True, "spec.placement")
        else:
            b.set("grpo.async_grpo.enabled", False, "spec.placement")
    if reward_pool and b.version >= V0_4_0:
        b.set("env.reward_model.resources.num_nodes", _nodes(roles["reward"], job), "spec.placement")
        b.set("env.reward_model.resources.gpus_per_node", max(per_node), "spec.placement")
    elif shared_node:
        b.set("env.reward_model.resources.num_nodes", 1, "spec.placement")
        b.set(
            "env.reward_model.resources.gpus_per_node",
            job.spec.roles["reward"].gpus,
            "spec.roles.reward.gpus",
        )


def _reward_on_shared_node(b: _Builder, roles: Mapping[str, RolePlacement]) -> bool:
    """A reward model on part of the actor's one-node pool (``spec.roles.reward.gpus`` below the pool's GPUs).

    NeMo-RL's one-node cluster is split: the reward model gets env.reward_model.resources.gpus_per_node GPUs of
    the node and the policy the rest (nemo_rl/algorithms/grpo.py setup, ``total_nodes == 1``: policy_gpus_per_node
    = cluster.gpus_per_node - rm_gpus_per_node; v0.4.0 to v0.7.0), as upstream's grpo_rm_1B.yaml runs."""
    res = b.job.spec.roles.get("reward")
    if b.version < V0_4_0 or "reward" not in roles or res is None or res.gpus is None:
        return False
    pool = b.job.placement.pool_of("reward")
    return (
        pool is not None
        and roles["reward"].pool == roles["actor"].pool
        and pool.nodes == 1
        and len(b.job.placement.pools) == 1
        and res.gpus < pool.gpus_per_node
    )


def _nodes(role: RolePlacement, job: RLJob) -> int:
    pool = next(p for p in job.placement.pools if p.name == role.pool)
    return pool.nodes


def _model(b: _Builder) -> None:
    m = b.job.spec.model
    b.set("policy.model_name", m.path, "spec.model.path")
    b.set("policy.tokenizer.name", m.tokenizer or m.path, "spec.model.tokenizer")
    b.set("policy.precision", m.dtype, "spec.model.dtype")
    if m.lora is not None and b.version >= V0_5_0:
        if b.job.spec.training.backend == "megatron":
            b.unsupported("spec.model.lora", "LoRA with the Megatron backend", found=f"rank {m.lora.rank}")
            return
        lora = "policy.dtensor_cfg.lora_cfg"
        b.set(f"{lora}.enabled", True, "spec.model")
        b.set(f"{lora}.dim", m.lora.rank, "spec.model.lora.rank")
        b.set(f"{lora}.alpha", m.lora.alpha, "spec.model.lora.alpha")
        if m.lora.target_modules == "all-linear":
            b.set(f"{lora}.match_all_linear", True, "spec.model")
            b.set(f"{lora}.target_modules", [], "spec.model")
        else:
            b.set(f"{lora}.match_all_linear", False, "spec.model")
            b.set(f"{lora}.target_modules", list(m.lora.target_modules), "spec.model.lora.target_modules")
    if m.critic_path is not None:
        b.notes.append("spec.model.critic_path is not used: NeMo-RL's GRPO trains no critic")


def _algorithm(b: _Builder) -> None:
    alg = b.job.spec.algorithm
    k = b.k
    if alg.name in GROUP_ALGORITHMS and alg.group_size < 2:
        # one generation per prompt: the prompt's baseline is its own reward, so every advantage is zero
        # (nemo_rl/algorithms/utils.py calculate_baseline_and_std_per_prompt, v0.6.0: "valid_mask ... <= 1:
        # baseline[prompt_idx] = rewards[prompt_idx]") and the run trains nothing
        b.unsupported(
            "spec.algorithm.group_size",
            "GRPO with one generation per prompt (the baseline is the response's own reward: every advantage "
            "is zero)",
            found=alg.group_size,
            expected="2 or more",
        )
    b.set("grpo.num_generations_per_prompt", alg.group_size, "spec.algorithm.group_size")
    if alg.name == "ppo":  # check_capabilities reports this first; kept for direct translate() callers
        b.unsupported("spec.algorithm.name", "PPO with a critic (GAE)", found="ppo")
        return
    if alg.name == "rloo":
        b.set("grpo.use_leave_one_out_baseline", True, "spec.algorithm")
        b.set("grpo.normalize_rewards", False, "spec.algorithm")
    elif alg.name in ("reinforce_pp", "reinforce_pp_baseline"):
        b.set("grpo.use_leave_one_out_baseline", False, "spec.algorithm")
        b.set("grpo.normalize_rewards", False, "spec.algorithm")
    # GRPO (and DAPO / GSPO, which keep its advantage) is NeMo-RL's own: its example config's baseline
    # (leave-one-out) and normalisation apply, as in every upstream grpo_math_* launch.
    if k.has_adv_estimator:
        if alg.name in ("reinforce_pp", "reinforce_pp_baseline"):
            b.set("grpo.adv_estimator.name", "reinforce_plus_plus", "spec.algorithm")
            b.set(
                "grpo.adv_estimator.minus_baseline",
                alg.name == "reinforce_pp_baseline",
                "spec.algorithm.name",
            )
        else:
            b.set("grpo.adv_estimator.name", "grpo", "spec.algorithm")
    if alg.name == "gspo":
        b.set("loss_fn.sequence_level_importance_ratios", True, "spec.algorithm")
    _grpo_variants(b)
    _off_policy_correction(b)
    kl = alg.kl
    in_reward = kl.coef > 0 and kl.in_ == "reward"
    b.set("loss_fn.reference_policy_kl_penalty", kl.coef, "spec.algorithm")
    if k.has_adv_estimator:
        b.set("loss_fn.use_kl_in_reward", in_reward, "spec.algorithm")
    if kl.coef > 0 and kl.estimator is not None:  # unset: NeMo-RL's own, k3
        if k.has_kl_type:
            b.set("loss_fn.reference_policy_kl_type", KL_TYPE[kl.estimator], "spec.algorithm")
        elif KL_TYPE[kl.estimator] != "k3":
            b.unsupported(
                "spec.algorithm.kl.estimator",
                f"KL estimator {kl.estimator!r} (k3 only)",
                "0.5.0",
                kl.estimator,
            )
    b.set("loss_fn.ratio_clip_min", alg.clip.low, "spec.algorithm.clip.low")
    b.set("loss_fn.ratio_clip_max", alg.clip.high, "spec.algorithm.clip.high")
    if alg.clip.dual is not None:
        # ClippedPGLossConfig.ratio_clip_c (nemo_rl/algorithms/loss_functions.py, every pinned tag; the example
        # config's null is off)
        b.set("loss_fn.ratio_clip_c", alg.clip.dual, "spec.algorithm.clip.dual")
    if alg.entropy_coef:
        b.unsupported("spec.algorithm.entropy_coef", "an entropy bonus", found=alg.entropy_coef)
    if alg.ppo_epochs != 1:
        b.unsupported(
            "spec.algorithm.ppo_epochs",
            "more than one pass over each batch (GRPO trains every sample once)",
            found=alg.ppo_epochs,
        )


def _off_policy_correction(b: _Builder) -> None:
    """ClippedPGLossConfig's importance-sampling keys: the loss weighs each token by exp(prev - generation
    log-probs) when use_importance_sampling_correction is on, clamps it at truncated_importance_sampling_ratio
    (algorithms/loss_functions.py, 0.4.0 and 0.5.0), and from 0.6.0 treats it by truncated_importance_sampling_type
    (tis, icepop, seq-mask-tis; asserted set whenever the ratio is) with _ratio_min as the band's lower end
    (algorithms/loss/loss_functions.py, 0.6.0 and 0.7.0; the tis lower bound from 0.7.0)."""
    corr = b.job.spec.algorithm.off_policy_correction
    field = "spec.algorithm.off_policy_correction"
    if corr is None or f"off_policy_correction.{corr.level}.{corr.mode}" not in capabilities(str(b.version)):
        return  # refused by capability
    if b.job.spec.algorithm.name == "gspo":
        # sequence_level_importance_ratios turns the same weight into the product over the response
        b.unsupported(
            field,
            "a token-level IS correction for GSPO (its sequence-level ratios make the weight per response)",
            found=f"level {corr.level}, mode {corr.mode}",
        )
        return
    b.set("loss_fn.use_importance_sampling_correction", True, field)
    b.set("loss_fn.truncated_importance_sampling_ratio", float(corr.max_ratio), f"{field}.max_ratio")
    if b.version < V0_6_0:
        return
    kind = {("token", "truncate"): "tis", ("token", "mask"): "icepop"}
    b.set(
        "loss_fn.truncated_importance_sampling_type",
        kind.get((corr.level, corr.mode), "seq-mask-tis"),
        f"{field}.mode",
    )
    if corr.min_ratio is not None:
        b.set("loss_fn.truncated_importance_sampling_ratio_min", float(corr.min_ratio), f"{field}.min_ratio")


def _grpo_variants(b: _Builder) -> None:
    """GRPO's baseline and std, DAPO's dynamic sampling and overlong shaping, the loss aggregation (issue 12,
    item 7). Keys of GRPOConfig / ClippedPGLossConfig / RewardShapingConfig (grpo_MasterConfig key tree of each
    tag); from 0.6.0 grpo.adv_estimator interpolates ${grpo.use_leave_one_out_baseline} and
    ${grpo.normalize_rewards} (examples/configs/grpo_math_1B.yaml), so the grpo.* keys decide for every tag."""
    spec = b.job.spec
    alg = spec.algorithm
    if alg.baseline is not None:
        b.set("grpo.use_leave_one_out_baseline", alg.baseline == "leave_one_out", "spec.algorithm.baseline")
    if alg.normalize_by_group_std is not None:
        b.set("grpo.normalize_rewards", alg.normalize_by_group_std, "spec.algorithm.normalize_by_group_std")
    # grpo.use_dynamic_sampling from 0.4.0 (0.2.1: none; an "on" there is refused by capability)
    if b.version >= V0_4_0 and (alg.name != "gspo" or alg.dynamic_sampling is not None):
        source = "spec.algorithm.dynamic_sampling" if alg.dynamic_sampling is not None else "spec.algorithm"
        b.set("grpo.use_dynamic_sampling", alg.dynamic_sampling_on, source)
    agg = alg.effective_loss_aggregation
    if agg in ("token_mean", "seq_mean_token_mean"):
        # token_level_loss: the mean over the batch's tokens, else each sequence's token mean, then their mean
        source = "spec.algorithm.loss_aggregation" if alg.loss_aggregation else "spec.algorithm"
        b.set("loss_fn.token_level_loss", agg == "token_mean", source)
    penalty = spec.reward.overlong_penalty
    if penalty is not None and b.version >= V0_4_0:  # 0.2.1: refused by capability
        shaping = "grpo.reward_shaping"
        b.set(f"{shaping}.enabled", True, "spec.reward.overlong_penalty")
        b.set(
            f"{shaping}.overlong_buffer_length",
            penalty.buffer_tokens,
            "spec.reward.overlong_penalty.buffer_tokens",
        )
        b.set(
            f"{shaping}.overlong_buffer_penalty",
            penalty.max_penalty,
            "spec.reward.overlong_penalty.max_penalty",
        )
        # the example config's ${policy.max_total_sequence_length} is the prompt PLUS the response: the spec's
        # buffer ends at the response budget (upstream's DAPO configs set the generation limit here)
        budget = spec.rollout.max_tokens or spec.data.max_response_length
        b.set(f"{shaping}.max_response_length", budget, "spec.reward.overlong_penalty")


def _batches(b: _Builder) -> None:
    spec = b.job.spec
    tr = spec.training
    g = spec.algorithm.group_size
    b.set("grpo.num_prompts_per_step", tr.global_batch, "spec.training.global_batch")
    # NeMo-RL counts sequences: one optimizer step per train_global_batch_size responses.
    b.set("policy.train_global_batch_size", tr.mini_batch * g, "spec.training.mini_batch")
    b.set("policy.train_micro_batch_size", tr.micro_batch_per_gpu, "spec.training.micro_batch_per_gpu")
    b.set("policy.logprob_batch_size", tr.micro_batch_per_gpu, "spec.training.micro_batch_per_gpu")
    dyn = tr.dynamic_batch
    b.set("policy.dynamic_batching.enabled", dyn.enabled, "spec.training.dynamic_batch.enabled")
    if dyn.enabled:
        b.set(
            "policy.dynamic_batching.train_mb_tokens",
            dyn.max_tokens_per_gpu,
            "spec.training.dynamic_batch.max_tokens_per_gpu",
        )
        b.set(
            "policy.dynamic_batching.logprob_mb_tokens",
            dyn.max_tokens_per_gpu,
            "spec.training.dynamic_batch.max_tokens_per_gpu",
        )
        if b.version >= V0_4_0:
            b.set(
                "policy.sequence_packing.enabled", False, "spec.training"
            )  # exclusive with dynamic batching
    _logprob_budgets(b)
    if tr.steps is not None and tr.epochs is not None:
        b.set("grpo.max_num_steps", tr.steps, "spec.training.steps")
        if not b.k.has_epochs:
            b.unsupported("spec.training.epochs", "a run length in epochs", "0.4.0", tr.epochs)
        elif b.values.get("grpo.async_grpo.enabled") is True:
            # async_grpo_train loops `while step < max_num_steps` over one pass of the dataloader and never reads
            # max_num_epochs (nemo_rl/algorithms/grpo.py and async_utils.py _collection_loop, 0.4.0 to 0.7.0)
            b.unsupported(
                "spec.training.epochs",
                "spec.training.steps and spec.training.epochs together with off-policy (async) GRPO (its "
                "loop reads grpo.max_num_steps only; set one of the two)",
                found=tr.epochs,
            )
        else:
            # grpo_train loops `while current_epoch < max_num_epochs and total_steps < max_num_steps`
            # (nemo_rl/algorithms/grpo.py, 0.4.0 to 0.7.0): whichever limit comes first ends the run
            b.set("grpo.max_num_epochs", tr.epochs, "spec.training.epochs")
    elif tr.steps is not None:
        b.set("grpo.max_num_steps", tr.steps, "spec.training.steps")
        if b.k.has_epochs:
            # NeMo-RL stops at whichever limit comes first; every epoch is at least one step.
            b.set("grpo.max_num_epochs", tr.steps, "spec.training.steps")
    else:
        epochs = tr.epochs or 1
        if not b.k.has_epochs:
            if epochs != 1 or tr.epochs is not None:
                b.unsupported("spec.training.epochs", "a run length in epochs", "0.4.0", epochs)
        else:
            b.set("grpo.max_num_epochs", epochs, "spec.training")
            b.set("grpo.max_num_steps", UNLIMITED, "spec.training")
    if spec.data.seed is None:
        pass  # NeMo-RL's own grpo.seed
    elif b.k.has_seed:
        b.set("grpo.seed", spec.data.seed, "spec.data.seed")
    else:
        b.unsupported("spec.data.seed", "a data seed", "0.4.0", spec.data.seed)


def _logprob_budgets(b: _Builder) -> None:
    """``spec.training.budgets`` on the policy's log-prob settings.

    One policy worker computes the old and the reference log-probs (get_logprobs and
    get_reference_policy_logprobs), both in micro batches of ``policy.logprob_batch_size`` or, with dynamic
    batching, of ``policy.dynamic_batching.logprob_mb_tokens`` (nemo_rl/models/policy/dtensor_policy_worker.py in
    0.2.1, lm_policy.py from 0.4.0): the reference cannot have a budget of its own.
    """
    tr = b.job.spec.training
    bud = tr.budgets
    old, ref = bud.old_log_prob, bud.ref_log_prob
    micro = old.micro_batch_per_gpu or tr.micro_batch_per_gpu
    tokens = old.max_tokens_per_gpu or tr.dynamic_batch.max_tokens_per_gpu
    if old.micro_batch_per_gpu is not None:
        b.set("policy.logprob_batch_size", micro, "spec.training.budgets.old_log_prob.micro_batch_per_gpu")
    if old.max_tokens_per_gpu is not None:
        b.set(
            "policy.dynamic_batching.logprob_mb_tokens",
            tokens,
            "spec.training.budgets.old_log_prob.max_tokens_per_gpu",
        )
    for attr, value in (("micro_batch_per_gpu", micro), ("max_tokens_per_gpu", tokens)):
        own = getattr(ref, attr)
        if own is not None and own != value:
            b.unsupported(
                f"spec.training.budgets.ref_log_prob.{attr}",
                "a reference budget different from old_log_prob's (one policy worker computes both with "
                "policy.logprob_batch_size / dynamic_batching.logprob_mb_tokens)",
                found=own,
            )
    tp = tr.parallel.tp
    if micro != tr.micro_batch_per_gpu and tp >= 4 and b.version >= V0_6_0:
        # lm_policy.py (0.6.0, 0.7.0) asserts train_micro_batch_size == logprob_batch_size for tp >= 4
        b.unsupported(
            "spec.training.budgets.old_log_prob.micro_batch_per_gpu",
            f"a log-prob micro batch different from the update's with tp {tp} (NeMo-RL's TP>=4 accuracy "
            "check requires them equal)",
            found=micro,
        )


def _backend(b: _Builder) -> None:
    spec = b.job.spec
    tr = spec.training
    par = tr.parallel
    opt = tr.optimizer
    ckpt = spec.model.gradient_checkpointing
    # PolicyConfig.max_grad_norm (nemo_rl/models/policy/__init__.py, every pinned tag); the Megatron optimizer's
    # clip_grad interpolates it (examples/configs/grpo_math_1B.yaml: clip_grad: ${policy.max_grad_norm}, 0.4.0+)
    if opt.max_grad_norm is not None:
        b.set("policy.max_grad_norm", opt.max_grad_norm, "spec.training.optimizer.max_grad_norm")
    if par.sp > 1:
        b.unsupported(
            "spec.training.parallel.sp", "Ulysses sequence parallelism (use tp or cp)", found=par.sp
        )
    if par.cp > 1 and not b.k.has_context_parallel:
        b.unsupported("spec.training.parallel.cp", "context parallelism", "0.4.0", par.cp)
    if tr.critic_optimizer is not None:
        b.notes.append("spec.training.critic_optimizer is not used: NeMo-RL's GRPO trains no critic")
    if tr.critic_warmup_steps:
        b.unsupported(
            "spec.training.critic_warmup_steps",
            # NeMo-RL 0.7.0 has one for its PPO (ppo.policy_training_start_step, nemo_rl/algorithms/ppo.py), a
            # trainer this adapter does not run yet (spec.algorithm.name ppo is refused)
            "a critic warm-up (the NeMo-RL algorithms rladapt runs train no critic)",
            found=tr.critic_warmup_steps,
        )
    if tr.backend == "megatron":
        if b.version < V0_4_0:
            return  # check_capabilities reports it
        b.set("policy.dtensor_cfg.enabled", False, "spec.training")
        b.set(
            "policy.optimizer", None, "spec.training"
        )  # the torch optimizer block belongs to the DTensor policy
        mc = "policy.megatron_cfg"
        b.set(f"{mc}.enabled", True, "spec.training")
        b.set(f"{mc}.tensor_model_parallel_size", par.tp, "spec.training.parallel.tp")
        b.set(f"{mc}.pipeline_model_parallel_size", par.pp, "spec.training.parallel.pp")
        b.set(f"{mc}.context_parallel_size", par.cp, "spec.training.parallel.cp")
        if ckpt is not None:
            b.set(f"{mc}.activation_checkpointing", ckpt, "spec.model.gradient_checkpointing")
        b.set(f"{mc}.optimizer.lr", opt.lr, "spec.training.optimizer.lr")
        # NeMo-RL's example config (grpo_math_1B.yaml, 0.4.0 to 0.7.0) starts the warmup at, and floors the
        # schedule at, a tenth of its lr (lr 5.0e-6, min_lr and lr_warmup_init 5.0e-7): the render keeps that shape
        # for the spec's lr, so a null warmup_steps is the example's own schedule (its lr_warmup_iters from a
        # tenth), and both stay at most lr as Megatron's OptimizerParamScheduler asserts
        b.set(f"{mc}.optimizer.min_lr", _tenth(opt.lr), "spec.training.optimizer.lr")
        if opt.weight_decay is not None:
            b.set(f"{mc}.optimizer.weight_decay", opt.weight_decay, "spec.training.optimizer.weight_decay")
        if opt.warmup_steps is not None:
            b.set(f"{mc}.scheduler.lr_warmup_iters", opt.warmup_steps, "spec.training.optimizer.warmup_steps")
        b.set(f"{mc}.scheduler.lr_warmup_init", _tenth(opt.lr), "spec.training.optimizer.lr")
        b.set(f"{mc}.scheduler.lr_decay_style", "constant", "spec.training")
        b.set("policy.make_sequence_length_divisible_by", par.tp, "spec.training.parallel.tp")
        return
    if par.pp > 1:
        b.unsupported(
            "spec.training.parallel.pp",
            f"pipeline parallelism with {tr.backend} (use megatron)",
            found=par.pp,
        )
    if tr.backend == "fsdp":
        # 0.2.1's HF policy (FSDP1); check_capabilities rejects it for later versions.
        b.set("policy.dtensor_cfg.enabled", False, "spec.training")
        if ckpt is not None:
            b.set("policy.activation_checkpointing_enabled", ckpt, "spec.model.gradient_checkpointing")
        if par.tp > 1:
            b.unsupported(
                "spec.training.parallel.tp", "tensor parallelism with fsdp (use fsdp2)", found=par.tp
            )
    else:
        dt = "policy.dtensor_cfg"
        b.set(f"{dt}.enabled", True, "spec.training")
        b.set(f"{dt}.tensor_parallel_size", par.tp, "spec.training.parallel.tp")
        if b.k.has_context_parallel:
            b.set(f"{dt}.context_parallel_size", par.cp, "spec.training.parallel.cp")
        if ckpt is not None:
            b.set(f"{dt}.activation_checkpointing", ckpt, "spec.model.gradient_checkpointing")
        if b.version >= V0_4_0:
            b.set("policy.megatron_cfg.enabled", False, "spec.training")
    b.set("policy.optimizer.kwargs.lr", opt.lr, "spec.training.optimizer.lr")
    if opt.weight_decay is not None:
        b.set(
            "policy.optimizer.kwargs.weight_decay", opt.weight_decay, "spec.training.optimizer.weight_decay"
        )
    constant = {"name": "torch.optim.lr_scheduler.ConstantLR", "kwargs": {"factor": 1.0, "total_iters": 1}}
    if opt.warmup_steps is None:
        pass  # NeMo-RL's own: its example config's scheduler (a linear warmup)
    elif opt.warmup_steps:
        warmup = {
            "name": "torch.optim.lr_scheduler.LinearLR",
            "kwargs": {
                "start_factor": 1.0 / (opt.warmup_steps + 1),
                "end_factor": 1.0,
                "total_iters": opt.warmup_steps,
            },
        }
        b.set(
            "policy.scheduler",
            [warmup, constant, {"milestones": [opt.warmup_steps]}],
            "spec.training.optimizer.warmup_steps",
        )
    else:
        # A list, never null: the policy worker iterates whatever "scheduler" holds.
        b.set("policy.scheduler", [constant, {"milestones": []}], "spec.training.optimizer.warmup_steps")


def _rollout(b: _Builder) -> None:
    spec = b.job.spec
    ro = spec.rollout
    d = spec.data
    gen = "policy.generation"
    b.set(f"{gen}.backend", ro.engine, "spec.rollout.engine")
    engine_cfg = f"{gen}.vllm_cfg" if ro.engine == "vllm" else f"{gen}.sglang_cfg"
    if ro.engine == "vllm":
        b.set(f"{engine_cfg}.tensor_parallel_size", ro.tensor_parallel, "spec.rollout.tensor_parallel")
        b.set(
            f"{engine_cfg}.gpu_memory_utilization",
            ro.gpu_memory_utilization,
            "spec.rollout.gpu_memory_utilization",
        )
        b.set(
            f"{engine_cfg}.max_model_len",
            d.total_length,
            _length_source(d),
        )
        staleness = b.job.spec.weight_sync.max_staleness
        if b.version >= V0_4_0 and (ro.mode is not None or staleness > 0):
            # unset: NeMo-RL's own engine, unless off-policy GRPO needs the async one (grpo.async_grpo)
            b.set(
                f"{engine_cfg}.async_engine",
                ro.mode == "async" or (ro.mode is None and staleness > 0),
                "spec.rollout.mode",
            )
    elif ro.engine == "sglang" and b.version >= V0_6_0:
        _sglang(b, engine_cfg)
    b.set(f"{gen}.temperature", ro.temperature, "spec.rollout.temperature")
    b.set(f"{gen}.top_p", ro.top_p, "spec.rollout.top_p")
    b.set(f"{gen}.top_k", None if ro.top_k == -1 else ro.top_k, "spec.rollout.top_k")
    b.set(f"{gen}.max_new_tokens", ro.max_tokens or d.max_response_length, "spec.rollout.max_tokens")
    b.set(
        "policy.max_total_sequence_length",
        d.total_length,
        _length_source(d),
    )
    _multi_turn(b)
    if b.job.spec.weight_sync.max_staleness > 0 and ro.mode == "sync":
        b.unsupported(
            "spec.rollout.mode",
            "off-policy GRPO with a synchronous engine (grpo.async_grpo needs vllm_cfg.async_engine)",
            found=ro.mode,
        )
    if ro.val.model_fields_set:
        b.unsupported(
            "spec.rollout.val",
            "separate validation sampling (validation samples with the training settings)",
            found=", ".join(sorted(ro.val.model_fields_set)),
        )


def _multi_turn(b: _Builder) -> None:
    """``spec.rollout.multi_turn``: ``grpo.max_rollout_turns``, the turn cap of every rollout.

    nemo_rl/algorithms/grpo.py passes it to run_multi_turn_rollout (nemo_rl/experience/rollouts.py, every pinned
    tag), which generates a reply, lets the sample's environment answer, and stops when the environment ends the
    episode or the cap is reached; grpo_math_1B.yaml sets 1 ("Math Environments just have 1 turn").
    """
    mt = b.job.spec.rollout.multi_turn
    if mt is None:
        return
    if mt.max_assistant_turns is None:
        b.unsupported(
            "spec.rollout.multi_turn.max_assistant_turns",
            "multi-turn rollouts without a turn cap: grpo.max_rollout_turns caps every rollout and is 1 (one "
            "turn) in the configs NeMo-RL ships",
            found="null",
        )
        return
    b.set("grpo.max_rollout_turns", mt.max_assistant_turns, "spec.rollout.multi_turn.max_assistant_turns")
    b.notes.append(
        "NeMo-RL ends a rollout when its environment ends the episode: the math environment does after one reply"
    )


def _interpreter(b: _Builder) -> None:
    """NeMo-RL runs from its checkout through ``uv run`` (README.md of every tag), which resolves the interpreter
    from the checkout's ``pyproject.toml``/``uv.lock``: a chosen ``spec.runtime.python`` would be ignored."""
    if "python" in b.job.spec.runtime.model_fields_set:
        b.unsupported(
            "spec.runtime.python",
            "a chosen interpreter (it runs through `uv run`, which picks the checkout's own)",
            found=b.job.spec.runtime.python,
        )
    script = b.job.spec.runtime.entrypoint
    name = PurePosixPath(script).name if script is not None else ""
    if script is not None and not is_grpo_script(name):
        # the GRPO scripts of every tag (examples/run_grpo*.py, run_vlm_grpo.py) are what the spec maps; another
        # program reads another config (run_sft.py, run_dpo.py) or none
        b.unsupported(
            "spec.runtime.entrypoint",
            "a run script other than a GRPO one (examples/run_grpo*.py)",
            found=script,
        )


def _sglang(b: _Builder, cfg: str) -> None:
    """The whole ``sglang_cfg`` block (the base config has none), as upstream's grpo_math_1B_sglang.yaml."""
    spec = b.job.spec
    ro = spec.rollout
    d = spec.data
    if ro.mode == "async":
        b.unsupported("spec.rollout.mode", "async rollout with SGLang (vLLM only)", found="async")
    roles = placement(b.job)
    rollout_gpus = roles["rollout"].nodes * roles["rollout"].gpus_per_node
    b.set(f"{cfg}.model_path", spec.model.path, "spec.model.path")
    b.set(f"{cfg}.dtype", spec.model.dtype, "spec.model.dtype")
    b.set(f"{cfg}.context_length", d.total_length, _length_source(d))
    b.set(f"{cfg}.allow_auto_truncate", True, "spec.rollout")
    b.set(f"{cfg}.dp_size", 1, "spec.rollout")
    b.set(f"{cfg}.pp_size", 1, "spec.rollout")
    b.set(f"{cfg}.ep_size", 1, "spec.rollout")
    b.set(f"{cfg}.max_running_requests", None, "spec.rollout")
    b.set(f"{cfg}.mem_fraction_static", ro.gpu_memory_utilization, "spec.rollout")
    b.set(f"{cfg}.skip_server_warmup", True, "spec.rollout")
    b.set(f"{cfg}.disable_piecewise_cuda_graph", True, "spec.rollout")
    if b.version >= V0_7_0:
        b.set(f"{cfg}.tp_size", ro.tensor_parallel, "spec.rollout")
        if d.seed is not None:
            b.set(f"{cfg}.random_seed", d.seed, "spec.data.seed")
        b.set(f"{cfg}.disable_cuda_graph", False, "spec.rollout")
        server = f"{cfg}.sglang_server_config"
        b.set(f"{server}.needs_offload", b.job.placement.colocated("actor", "rollout"), "spec.rollout")
        b.set(f"{server}.cpu_weight_backup", True, "spec.rollout")
        b.set(f"{server}.sglang_server_concurrency", 1024, "spec.rollout")
        b.set(f"{server}.pause_generation_mode", "retract", "spec.rollout")
        b.set(f"{server}.num_gpus", rollout_gpus, "spec.rollout")
        b.set(f"{server}.num_gpus_per_engine", ro.tensor_parallel, "spec.rollout")
        b.set(f"{cfg}.sglang_router_config.use_external_router", False, "spec.rollout")
    else:
        b.set(f"{cfg}.gpus_per_server", ro.tensor_parallel, "spec.rollout")
        b.set(f"{cfg}.enable_memory_saver", b.job.placement.colocated("actor", "rollout"), "spec.rollout")


def _tenth(lr: float) -> float:
    """A tenth of ``lr`` as written (5e-6 -> 5e-7, not 5.000000000000001e-07)."""
    return float(f"{lr / 10:.12g}")


def _length_source(d: DataSpec) -> str:
    """The field a whole-sequence length comes from, for ``render --explain``."""
    return "spec.data.max_length" if d.max_length is not None else "spec.data.max_prompt_length"


def _data(b: _Builder) -> None:
    spec = b.job.spec
    d = spec.data
    k = b.k
    val = [*d.val, *spec.eval.datasets]
    if "max_prompt_length" in d.model_fields_set:
        b.set("data.max_input_seq_length", d.max_prompt_length, "spec.data.max_prompt_length")
    # unset: NeMo-RL's own, ${policy.max_total_sequence_length} (its example config): prompts are filtered at
    # the whole sequence length, not at rladapt's default prompt share of it
    # Prompts are used as written: no math chain-of-thought template from the example config.
    prompt = "data.default" if k.dataset_blocks else "data"
    if k.custom_files and d.builtin is None:
        b.set(f"{prompt}.prompt_file", None, "spec.data")
        b.set(f"{prompt}.system_prompt_file", None, "spec.data")
    if b.version >= V0_4_0:
        b.set("data.shuffle", d.shuffle, "spec.data.shuffle")
    elif not d.shuffle:
        b.unsupported("spec.data.shuffle", "an unshuffled dataloader", "0.4.0", False)
    if d.builtin is not None:
        if k.dataset_blocks:
            _builtin(b, val)
        else:
            _builtin_flat(b, val)
        return
    if not k.custom_files:
        b.unsupported(
            "spec.data.train",
            "training on your own files (only the built-in OpenMathInstruct-2 and DeepScaler datasets)",
            "0.4.0",
            ", ".join(d.train),
        )
        return
    for i, path in enumerate([*d.train, *val]):
        suffix = PurePosixPath(path).suffix
        if suffix and suffix not in k.file_suffixes:
            field_ = f"spec.data.train[{i}]" if i < len(d.train) else "spec.data.val"
            first = "0.6.0" if b.version < V0_6_0 else None
            b.unsupported(field_, f"{suffix} data files (loads {', '.join(k.file_suffixes)})", first, path)
    if not k.dataset_blocks:
        if len(d.train) > 1:
            b.unsupported("spec.data.train", "more than one training file", "0.6.0", len(d.train))
        if len(val) > 1:
            b.unsupported(
                "spec.data.val",
                "more than one validation file (data.val and eval.datasets)",
                "0.6.0",
                len(val),
            )
        b.set("data.dataset_name", "ResponseDataset", "spec.data")
        b.set("data.train_data_path", d.train[0], "spec.data.train")
        # Read by load_response_dataset although DataConfig never declares it.
        b.set("data.val_data_path", val[0] if val else None, "spec.data")
        b.set("data.input_key", d.prompt_key, "spec.data.prompt_key")
        b.set("data.output_key", ANSWER_KEY, "spec.data")
    else:

        def block(path: str) -> dict[str, Any]:
            return {
                "dataset_name": "ResponseDataset",
                "data_path": path,
                "input_key": d.prompt_key,
                "output_key": ANSWER_KEY,
                "split_validation_size": 0,
            }

        # One file is a mapping over upstream's data.train (keeps its other keys). Several are a list, which
        # OmegaConf cannot merge over that mapping: the section then replaces upstream's (``_override_``).
        if len(d.train) == 1:
            for key, value in block(d.train[0]).items():
                b.set(f"data.train.{key}", value, "spec.data")
        else:
            b.set("data._override_", True, "spec.data")
            b.set("data.num_workers", 1, "spec.data")
            b.set("data.use_multiple_dataloader", False, "spec.data")
            b.set("data.train", [block(p) for p in d.train], "spec.data.train")
        if len(val) == 1:
            b.set("data.validation", block(val[0]), "spec.data")
        else:
            b.set("data.validation", [block(p) for p in val] if val else None, "spec.data")
    b.notes.append(
        f"NeMo-RL's ResponseDataset reads prompts from {d.prompt_key!r} and the reference answer for the "
        f"environment from {ANSWER_KEY!r}: every data file needs both columns"
    )


def _builtin(b: _Builder, val: list[str]) -> None:
    """A dataset NeMo-RL provides (spec.data.builtin, 0.6.0+): data.train names it (load_response_dataset looks
    dataset_name up in DATASET_REGISTRY, nemo_rl/data/datasets/response_datasets/__init__.py at 0.6.0 and
    0.7.0) with its options; the block's file keys (data_path, input_key, output_key) and the prompt files of
    data.default are left to the config the render inherits from (the dataset's own formatting), as are
    its validation data unless the spec names files."""
    d = b.job.spec.data
    assert d.builtin is not None
    b.set("data.train.dataset_name", d.builtin.name, "spec.data.builtin.name")
    for key, value in d.builtin.options.items():
        b.set(f"data.train.{key}", value, f"spec.data.builtin.options.{key}")
    if val:
        blocks = [
            {
                "dataset_name": "ResponseDataset",
                "data_path": path,
                "input_key": d.prompt_key,
                "output_key": ANSWER_KEY,
                "split_validation_size": 0,
            }
            for path in val
        ]
        b.set("data.validation", blocks[0] if len(blocks) == 1 else blocks, "spec.data.val")


#: data.* keys another spec field renders (or a dataset-file layout owns): not a built-in dataset's option.
_FLAT_DATA_KEYS = frozenset(
    {
        "dataset_name",
        "max_input_seq_length",
        "shuffle",
        "train_data_path",
        "val_data_path",
        "input_key",
        "output_key",
    }
)


def _builtin_flat(b: _Builder, val: list[str]) -> None:
    """A dataset NeMo-RL provides, before 0.6.0: ``data.dataset_name`` beside the other data keys (0.2.1's
    examples/run_grpo_math.py; load_response_dataset in nemo_rl/data/datasets/response_datasets/__init__.py at
    0.4.0 and 0.5.0), its options as data keys of their own (``split``, ``download_dir``, read by the dataset's
    branch there). The dataset brings its validation split; data.val_data_path is read for ResponseDataset only,
    so validation files cannot be added beside it. The prompt files stay the inherited config's."""
    d = b.job.spec.data
    assert d.builtin is not None
    b.set("data.dataset_name", d.builtin.name, "spec.data.builtin.name")
    for key, value in d.builtin.options.items():
        if key in _FLAT_DATA_KEYS:
            b.unsupported(
                f"spec.data.builtin.options.{key}",
                f"a built-in dataset option named {key!r} (before 0.6.0 data.{key} is another setting's)",
                "0.6.0",
                value,
            )
            continue
        b.set(f"data.{key}", value, f"spec.data.builtin.options.{key}")
    if val:
        field_ = "spec.data.val" if d.val else "spec.eval.datasets"
        b.unsupported(
            field_,
            "validation files beside a built-in dataset (it brings its own validation split; "
            "data.val_data_path is read for ResponseDataset only)",
            "0.6.0",
            ", ".join(val),
        )


def _reward(b: _Builder) -> None:
    rw = b.job.spec.reward
    env_key = b.k.env_name_key
    if env_key is not None and b.k.dataset_blocks:
        b.set("data.default.processor", "math_hf_data_processor", "spec.reward")
    if rw.model is None:
        if env_key is not None:
            b.set(env_key, "math", "spec.reward")
        if rw.builtin is not None:
            # math and math_dapo are both the math environment (ENV_REGISTRY "math", MathEnvironment); the
            # verifier is its math_verify_impl (nemo_rl/environments/math_environment.py from 0.4.0). Set even
            # where it is grpo_math_1B.yaml's own value, so a different base config cannot change the scorer.
            name = rw.builtin.name
            impl = MATH_VERIFY_IMPL.get(name)
            if impl is None or (name != "math" and not b.k.has_math_verify_impl):
                # check_capabilities reports it first; kept for direct translate() callers
                b.unsupported("spec.reward.builtin.name", f"reward.builtin.{name}", found=name)
            elif b.k.has_math_verify_impl:
                b.set("env.math.math_verify_impl", impl, "spec.reward.builtin.name")
        return
    if b.version < V0_4_0:
        return  # check_capabilities reports it
    rm = "env.reward_model"
    if env_key is not None:
        b.set(env_key, "reward_model", "spec.reward")
    if b.k.reward_model_enabled_key:
        b.set(f"{rm}.enabled", True, "spec.reward")
    else:
        b.set(f"{rm}.processor", "math_hf_data_processor", "spec.reward")
        b.set(f"{rm}.offload_optimizer_for_logprob", False, "spec.reward")
    b.set(f"{rm}.model_name", rw.model.path, "spec.reward.model.path")
    b.set(f"{rm}.tokenizer.name", rw.model.path, "spec.reward.model.path")
    b.set(f"{rm}.precision", b.job.spec.model.dtype, "spec.model.dtype")
    b.set(f"{rm}.batch_size", rw.model.micro_batch_per_gpu, "spec.reward.model.micro_batch_per_gpu")
    b.set(f"{rm}.checkpoint_path", None, "spec.reward")
    d = b.job.spec.data
    b.set(f"{rm}.max_model_len", d.total_length, _length_source(d))
    b.set(f"{rm}.dtensor_cfg.enabled", True, "spec.reward")
    b.set(f"{rm}.dtensor_cfg._v2", True, "spec.reward")
    b.set(f"{rm}.dtensor_cfg.sequence_parallel", False, "spec.reward")
    b.set(f"{rm}.dtensor_cfg.tensor_parallel_size", 1, "spec.reward")
    b.set(f"{rm}.dtensor_cfg.context_parallel_size", 1, "spec.reward")
    b.set(f"{rm}.dtensor_cfg.custom_parallel_plan", None, "spec.reward")
    b.set(f"{rm}.dtensor_cfg.cpu_offload", False, "spec.reward")
    b.set(f"{rm}.dtensor_cfg.activation_checkpointing", False, "spec.reward")
    b.set(f"{rm}.reward_model_cfg.enabled", True, "spec.reward")
    b.set(f"{rm}.reward_model_cfg.reward_model_type", "bradley_terry", "spec.reward")
    b.set(f"{rm}.dynamic_batching.enabled", False, "spec.reward")
    b.set(f"{rm}.sequence_packing.enabled", False, "spec.reward")
    b.set(f"{rm}.max_grad_norm", None, "spec.reward")


def _checkpoint(b: _Builder) -> None:
    job = b.job
    ck = job.spec.checkpoint
    tr = job.spec.training
    c = "checkpointing"
    # grpo.py saves only `if master_config["checkpointing"]["enabled"]` (every pinned tag)
    b.set(f"{c}.enabled", ck.enabled, "spec.checkpoint.enabled")
    b.set(f"{c}.checkpoint_dir", job.checkpoint_dir, "spec.checkpoint")
    # 0 = only at the end: NeMo-RL also saves on the last step whatever the period.
    b.set(f"{c}.save_period", ck.every_steps or tr.steps or UNLIMITED, "spec.checkpoint.every_steps")
    if ck.keep_last is not None:
        # keep_last means the most recent: a null metric makes NeMo-RL's pruning keep the newest keep_top_k.
        b.set(f"{c}.keep_top_k", ck.keep_last, "spec.checkpoint.keep_last")
        b.set(f"{c}.metric_name", None, "spec.checkpoint.keep_last")
    # unset: NeMo-RL's own, the best keep_top_k by its example config's metric_name
    if ck.keep_best is not None:
        _keep_best(b)
    if ck.save_hf:
        if b.k.has_save_consolidated:
            b.set(f"{c}.save_consolidated", True, "spec.checkpoint")
        else:
            b.unsupported("spec.checkpoint.save_hf", "saving Hugging Face weights", "0.4.0", True)
    if ck.resume == "never":
        b.unsupported(
            "spec.checkpoint.resume",
            "never resuming: every version resumes from the newest step_N in checkpoint_dir "
            "(NVIDIA-NeMo/RL issue 345); use a new checkpoint.dir for a fresh run",
            found="never",
        )


def _keep_best(b: _Builder) -> None:
    """CheckpointManager (nemo_rl/utils/checkpoint.py, every pinned tag) keeps the keep_top_k checkpoints best
    by metric_name ("val:<name>" or "train:<name>" from 0.4.0, a validation metric's bare name in 0.2.1) in the
    direction of higher_is_better: the same mechanism keep_last uses with a null metric, so not both."""
    ck = b.job.spec.checkpoint
    best = ck.keep_best
    assert best is not None
    c = "checkpointing"
    if ck.keep_last is not None:
        b.unsupported(
            "spec.checkpoint.keep_best",
            "keeping the best and the last checkpoints together (one checkpointing.keep_top_k)",
            found=f"keep_last={ck.keep_last}",
        )
        return
    if b.version >= V0_4_0 and not best.metric.startswith(("val:", "train:")):
        # CheckpointManager reads the prefix to pick the val or train metrics (PR 1291, 0.4.0+)
        b.unsupported(
            "spec.checkpoint.keep_best.metric",
            "a metric name without its 'val:' or 'train:' prefix (e.g. val:accuracy)",
            found=best.metric,
        )
    b.set(f"{c}.metric_name", best.metric, "spec.checkpoint.keep_best.metric")
    b.set(f"{c}.higher_is_better", best.higher_is_better, "spec.checkpoint.keep_best.higher_is_better")
    b.set(f"{c}.keep_top_k", best.count, "spec.checkpoint.keep_best.count")


def _engine_settings(b: _Builder) -> None:
    """``spec.rollout.engine_settings`` on vLLM: ``vllm_cfg.enforce_eager`` and ``vllm_kwargs``, which
    vllm_worker.py passes on to ``vllm.LLM(..., enforce_eager=vllm_cfg["enforce_eager"], **vllm_kwargs)``
    (nemo_rl/models/generation/vllm/vllm_worker.py, 0.4.0 to 0.7.0; 0.2.1 fixes enforce_eager=True)."""
    eng = b.job.spec.rollout.engine_settings
    src = "spec.rollout.engine_settings"
    vllm_only = {
        "enforce_eager": eng.enforce_eager,
        "chunked_prefill": eng.chunked_prefill,
        "max_batched_tokens": eng.max_batched_tokens,
    }
    if b.job.spec.rollout.engine != "vllm":
        for name, value in vllm_only.items():
            if value is not None:
                b.unsupported(f"{src}.{name}", f"{name} with the SGLang rollout (vLLM only)", found=value)
        return
    gen = "policy.generation"
    if eng.enforce_eager is not None:
        b.set(f"{gen}.vllm_cfg.enforce_eager", eng.enforce_eager, f"{src}.enforce_eager")
    if eng.chunked_prefill is not None:
        b.set(f"{gen}.vllm_kwargs.enable_chunked_prefill", eng.chunked_prefill, f"{src}.chunked_prefill")
    if eng.max_batched_tokens is not None:
        b.set(
            f"{gen}.vllm_kwargs.max_num_batched_tokens", eng.max_batched_tokens, f"{src}.max_batched_tokens"
        )


def _eval_logging(b: _Builder) -> None:
    job = b.job
    spec = job.spec
    ev = spec.eval
    b.set("grpo.val_period", ev.every_steps, "spec.eval.every_steps")
    if ev.before_training is not None:
        b.set("grpo.val_at_start", ev.before_training, "spec.eval.before_training")
    lg = spec.logging
    backends = set(lg.backends)
    if lg.val_generations:
        # logger.num_val_samples_to_print only prints them to stdout (print_message_log_samples,
        # nemo_rl/utils/logger.py, v0.7.0): nothing reaches the tracking backends
        b.unsupported(
            "spec.logging.val_generations",
            "evaluation generations logged to the tracking backends (NeMo-RL prints them to stdout only: "
            "logger.num_val_samples_to_print, a native item)",
            found=lg.val_generations,
        )
    # TensorBoard always, beside the user's backends: its events are what `rladapt metrics` reads back. NeMo-RL
    # writes them to <log_dir>/exp_<nnn>/tensorboard: every GRPO run script replaces log_dir by
    # get_next_experiment_dir(log_dir) (examples/run_grpo*.py, nemo_rl/utils/logger.py, v0.2.1 to v0.7.0), and
    # Logger puts tensorboard/ under it; the other backends' local files go under log_dir too. spec.logging.dir
    # is that log_dir, read back from there (translate records it); a log_dir item of spec.native (the launch's
    # own in specs imported before the field) likewise, and the render then leaves the key to it; else rladapt's.
    _, origin = with_tensorboard(list(lg.backends), "spec.logging", own_log_dir(job))
    log_dir = log_dir_setting(job, _native_log_dir(job))
    if log_dir is not None:
        b.set("logger.log_dir", *log_dir)
    b.set("logger.wandb_enabled", "wandb" in backends, "spec.logging")
    b.set("logger.tensorboard_enabled", True, origin)
    if "wandb" in backends:
        b.set("logger.wandb.project", lg.project, "spec.logging.project")
        b.set("logger.wandb.name", job.experiment, "spec.logging")
    if b.version >= V0_4_0:
        b.set("logger.mlflow_enabled", "mlflow" in backends, "spec.logging")
        if "mlflow" in backends:
            b.set("logger.mlflow.experiment_name", lg.project, "spec.logging.project")
            b.set("logger.mlflow.run_name", job.experiment, "spec.logging")


def _memory(b: _Builder) -> None:
    """CPU offload and packed sequences (the overlong-prompt policy is refused by capability: see WHY_NOT)."""
    tr = b.job.spec.training
    off = tr.offload
    actor = (off.actor.params, off.actor.optimizer)
    if tr.backend == "megatron":
        # megatron_cfg.optimizer.optimizer_cpu_offload, with optimizer_offload_fraction 1.0 ("currently if
        # optimizer_cpu_offload is true, this knob must be 1.0": nemo_rl/models/policy/__init__.py, 0.4.0+)
        if off.actor.params:
            b.unsupported(
                "spec.training.offload.actor.params",
                "actor parameters in CPU memory with Megatron (only its optimizer offloads)",
                found=True,
            )
        if off.actor.optimizer is not None:
            mc = "policy.megatron_cfg.optimizer"
            b.set(f"{mc}.optimizer_cpu_offload", off.actor.optimizer, "spec.training.offload.actor.optimizer")
            b.set(
                f"{mc}.optimizer_offload_fraction",
                1.0 if off.actor.optimizer else 0.0,
                "spec.training.offload.actor.optimizer",
            )
    elif actor != (None, None):
        # dtensor_cfg.cpu_offload is FSDP2's CPUOffloadPolicy: parameters, gradients and optimizer states move
        # together (dtensor_policy_worker*.py), so the two fields must agree
        if len({bool(v) for v in actor}) > 1:
            b.unsupported(
                "spec.training.offload.actor",
                "actor parameters and optimizer states offloaded apart (dtensor_cfg.cpu_offload moves both)",
                found=f"params={actor[0]}, optimizer={actor[1]}",
            )
        else:
            b.set(
                "policy.dtensor_cfg.cpu_offload",
                bool(actor[0] or actor[1]),
                "spec.training.offload.actor",
            )
    if off.ref.params is False:
        b.unsupported(
            "spec.training.offload.ref.params",
            "reference weights on the GPU (the policy workers keep them as a CPU state dict)",
            found=False,
        )
    elif off.ref.params:
        b.notes.append(
            "NeMo-RL keeps the reference weights in CPU memory by itself: offload.ref.params needs no key"
        )

    pack = tr.pack_sequences
    if pack is None:
        return  # NeMo-RL's own: its example config's (on), or off where rladapt turns dynamic batching on
    if b.version < V0_4_0:
        if pack:  # check_capabilities reports it first
            b.unsupported("spec.training.pack_sequences", "packed sequences", "0.4.0", True)
        return
    if pack and tr.dynamic_batch.enabled:
        b.unsupported(
            "spec.training.pack_sequences",
            "packed sequences with dynamic batching (policy.sequence_packing and policy.dynamic_batching "
            "exclude each other)",
            found=True,
        )
    b.set("policy.sequence_packing.enabled", pack, "spec.training.pack_sequences")


def _native_overrides(b: _Builder) -> list[str]:
    return hydra_passthrough(b.job, FRAMEWORK)


def own_log_dir(job: RLJob) -> str | None:
    """The ``logger.log_dir`` the launch names, where NeMo-RL writes its logs: a native item's (it comes last on
    the command line, so it wins), else ``spec.logging.dir``; None: rladapt's own."""
    return kept_log_dir(job, _native_log_dir(job))


def _native_log_dir(job: RLJob) -> str | None:
    """The ``logger.log_dir`` the spec's native items name (the launch's own, in a spec imported before
    ``spec.logging.dir``), else None."""
    return hydra_native_value(job, FRAMEWORK, "logger.log_dir")


def framework_default_keys(job: RLJob, version: str) -> dict[str, tuple[str, ...]]:
    """Spec field -> the config keys it leaves to NeMo-RL when unset (null default): ``render --explain``."""
    k = keys(version)
    out: dict[str, tuple[str, ...]] = {
        "spec.data.seed": ("grpo.seed",) if k.has_seed else (),
        "spec.data.max_prompt_length": ("data.max_input_seq_length",),
        "spec.training.optimizer.warmup_steps": ("policy.scheduler",),
        "spec.training.optimizer.weight_decay": ("policy.optimizer.kwargs.weight_decay",),
        "spec.training.optimizer.max_grad_norm": ("policy.max_grad_norm",),
        "spec.model.gradient_checkpointing": ("policy.dtensor_cfg.activation_checkpointing",),
        "spec.eval.before_training": ("grpo.val_at_start",),
        "spec.checkpoint.keep_last": ("checkpointing.keep_top_k", "checkpointing.metric_name"),
        "spec.rollout.mode": ("policy.generation.vllm_cfg.async_engine",),
        "spec.training.pack_sequences": ("policy.sequence_packing.enabled",) if k.custom_files else (),
        "spec.training.offload.actor.params": ("policy.dtensor_cfg.cpu_offload",),
        "spec.checkpoint.keep_best": (
            "checkpointing.metric_name",
            "checkpointing.higher_is_better",
            "checkpointing.keep_top_k",
        ),
    }
    if job.spec.rollout.engine == "vllm" and Version(version) >= V0_4_0:
        out["spec.rollout.engine_settings.enforce_eager"] = ("policy.generation.vllm_cfg.enforce_eager",)
    if k.has_kl_type:
        out["spec.algorithm.kl.estimator"] = ("loss_fn.reference_policy_kl_type",)
    alg = job.spec.algorithm
    out["spec.algorithm.clip.dual"] = ("loss_fn.ratio_clip_c",)
    if alg.effective_loss_aggregation is None:
        out["spec.algorithm.loss_aggregation"] = ("loss_fn.token_level_loss",)
    if alg.name in GRPO_ADVANTAGE_ALGORITHMS:
        # GRPO's advantage as NeMo-RL's example config defines it (leave-one-out, divided by the std)
        out["spec.algorithm.baseline"] = ("grpo.use_leave_one_out_baseline",)
        out["spec.algorithm.normalize_by_group_std"] = ("grpo.normalize_rewards",)
    return out


def runtime_env(job: RLJob) -> dict[str, Any]:
    """Ray runtime_env for submitting the driver: the checkout without weights, logs, checkpoints or venv."""
    return working_dir_runtime_env(job, EXCLUDES, [own_log_dir(job)])
