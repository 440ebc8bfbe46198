"""RLJob -> verl's native launch: ``python3 -m <entrypoint> [--config-name X] <Hydra overrides>``.

The overrides use the key names of the requested verl version (``versions.Keys``). What the capability sets
cannot see (a combination of fields, a field a version lacks) raises ``UnsupportedError`` here, naming the
field, the version and, where one exists, the first version that can.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from rladapt.adapters.common import (
    WEIGHT_EXCLUDES,
    hydra_passthrough,
    hydra_value,
    override_notes,
    placement,
    working_dir_runtime_env,
)
from rladapt.metrics.names import TENSORBOARD, metrics_dir, with_tensorboard
from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.translation import TranslationBuilder
from rladapt.primitives.errors import Problem, UnsupportedError, quote
from rladapt.primitives.spec import CRITIC_ALGORITHMS, GRPO_ADVANTAGE_ALGORITHMS

from .entrypoints import FULLY_ASYNC_MODULE, MAIN_MODULE, MEGATRON_ENGINE, ONE_STEP_OFF_MODULE
from .versions import V0_6_1, V0_7_1, Keys, keys

#: Where verl's TensorBoard logger writes (os.environ.get("TENSORBOARD_DIR", ...), utils/tracking.py, 0.5.0 to 0.9.1)
TENSORBOARD_DIR = "TENSORBOARD_DIR"
#: The first pinned verl whose wheel depends on tensorboard (METADATA Requires-Dist; 0.5.0 has wandb only), which
#: its TensorBoard logger imports (utils/tracking.py: from torch.utils.tensorboard import SummaryWriter).
TENSORBOARD_REQUIRED_SINCE = Version("0.6.1")

if TYPE_CHECKING:
    from rladapt.plugins.adapter import FrameworkVersion
    from rladapt.primitives import RLJob
    from rladapt.primitives.spec import Algorithm

ARR = "actor_rollout_ref"

#: module -> (default config name, Megatron config name); the package-relative config dir is in ``CONFIG_DIRS``.
CONFIG_NAMES: dict[str, tuple[str, str]] = {
    MAIN_MODULE: ("ppo_trainer", "ppo_megatron_trainer"),
    ONE_STEP_OFF_MODULE: ("one_step_off_ppo_trainer", "one_step_off_ppo_megatron_trainer"),
    FULLY_ASYNC_MODULE: ("fully_async_ppo_trainer", "fully_async_ppo_megatron_trainer"),
}
CONFIG_DIRS: dict[str, str] = {
    MAIN_MODULE: "trainer/config",
    ONE_STEP_OFF_MODULE: "experimental/one_step_off_policy/config",
    FULLY_ASYNC_MODULE: "experimental/fully_async_policy/config",
}

ADV_ESTIMATOR: dict[str, str] = {
    "grpo": "grpo",
    "ppo": "gae",
    "rloo": "rloo",
    "reinforce_pp": "reinforce_plus_plus",
    "reinforce_pp_baseline": "reinforce_plus_plus_baseline",
    "remax": "remax",
    "dapo": "grpo",  # DAPO = GRPO + clip-higher + dynamic sampling (algorithm.filter_groups)
    "gspo": "grpo",  # GSPO = GRPO advantages + sequence-level ratio (policy_loss.loss_mode=gspo)
}
#: verl's kl_penalty / kl_loss_type names ("k1".."k3" are aliases in every pinned version's core_algos).
KL_TYPE: dict[str, str] = {"k1": "kl", "k2": "mse", "k3": "k3", "low_var_kl": "low_var_kl"}


@dataclass(kw_only=True)
class _Builder(TranslationBuilder[Keys]):
    """verl's settings are Hydra overrides, written in the order they are set (``values`` stays empty)."""

    overrides: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def set(self, key: str, value: Any, source: str) -> None:
        """Override ``key``; ``source`` is the spec field it comes from (native validation blames it)."""
        self.overrides.append(f"{key}={hydra_value(value)}")
        self.origins[key] = source

    def add(self, key: str, value: Any, source: str) -> None:
        """Add ``key``, which the version's config does not declare (Hydra's ``+key=value``); on a launch's own
        config file (spec.runtime.config), which may declare it, ``++key=value`` (add or override): Hydra refuses
        ``+`` on a key that is there ("Could not append to config")."""
        plus = "++" if self.job.spec.runtime.config is not None else "+"
        self.overrides.append(f"{plus}{key}={hydra_value(value)}")
        self.origins[key] = source


def entrypoint(job: RLJob) -> str:
    """Which verl entrypoint runs this job."""
    if job.placement.colocated("actor", "rollout"):
        return MAIN_MODULE
    ws = job.spec.weight_sync
    return ONE_STEP_OFF_MODULE if ws.max_staleness <= 1 and ws.every_steps == 1 else FULLY_ASYNC_MODULE


def engine_choice(job: RLJob, version: str) -> str | None:
    """The ``model_engine`` override that selects the job's engine, where the version selects it that way."""
    megatron = job.spec.training.backend == "megatron"
    if megatron and entrypoint(job) == MAIN_MODULE and keys(version).megatron_by_engine_choice:
        return MEGATRON_ENGINE
    return None


def config_name(job: RLJob, version: str | None = None) -> str:
    """The Hydra config the job launches with; ``version``: the verl version (the newest way when None)."""
    default, megatron = CONFIG_NAMES[entrypoint(job)]
    if job.spec.training.backend != "megatron":
        return default
    if entrypoint(job) == MAIN_MODULE and (version is None or keys(version).megatron_by_engine_choice):
        return default  # ppo_trainer with model_engine=megatron (engine_choice)
    return megatron


def translate(job: RLJob, fv: FrameworkVersion) -> NativeLaunch:
    b = _Builder(framework="verl", job=job, version=fv.parsed, k=keys(fv.version), nowhere="pinned")
    module = entrypoint(job)
    _placement(b, module)
    _data(b)
    _model(b)
    _algorithm(b)
    _batches(b)
    _backend(b)
    _rollout(b)
    _engine_settings(b)
    _multi_turn(b)
    _reward(b)
    _trainer(b)
    _data_memory(b)
    native = _native_overrides(b)
    own = job.spec.runtime.config
    if own is not None and not own.startswith("/"):
        # Hydra joins a relative --config-path to the entry module's folder inside the installed verl
        # (hydra/_internal/utils.py compute_search_path_dir), never to the working directory
        b.unsupported(
            "spec.runtime.config",
            "a config file given relative to the working directory (Hydra resolves a relative --config-path "
            "inside the installed package)",
            found=own,
            expected="an absolute path",
        )
    if b.problems:
        raise UnsupportedError(b.problems)

    argv: list[str] = [job.spec.runtime.python, "-m", module]
    name = config_name(job, fv.version)
    if own is not None:
        # the launch's own config file (spec.runtime.config, absolute: Hydra joins a relative --config-path to
        # the entry module's folder inside the installed verl, hydra/_internal/utils.py compute_search_path_dir)
        folder, _, file = own.rpartition("/")
        argv += ["--config-path", folder or "/", "--config-name", file.removesuffix(".yaml")]
        b.origins["(config)"] = "spec.runtime.config"
    elif name != CONFIG_NAMES[module][0]:
        argv += ["--config-name", name]
    choice = engine_choice(job, fv.version)
    if choice is not None:
        # first, as upstream's Megatron scripts write it: a config-group choice, applied before the key overrides
        argv.append(choice)
        b.origins["model_engine"] = "spec.training.backend"
    argv += b.overrides + native
    # verl's TensorBoard logger writes into $TENSORBOARD_DIR itself (utils/tracking.py _TensorboardAdapter, 0.5.0
    # to 0.9.1): spec.logging.dir (or the variable in spec.env, the launch's own in specs imported before the
    # field) is kept and read back from there; a launch that chose the tensorboard backend without one writes to
    # verl's own default, kept too; else rladapt names its own
    given = own_tensorboard_dir(job)
    if given is None and TENSORBOARD in job.spec.logging.backends:
        given = implicit_tensorboard_dir(argv, fv.version)
    launch = NativeLaunch.from_job(
        job,
        framework="verl",
        version=fv.version,
        argv=argv,
        files=b.files,
        runtime_env=runtime_env(job, given),
        notes=b.notes,
        passthrough=native,
        origins=b.origins,
        metrics_dir=given,
    )
    if job.spec.logging.dir is not None:
        return launch.with_env({TENSORBOARD_DIR: job.spec.logging.dir})
    return launch if given else launch.with_env({TENSORBOARD_DIR: metrics_dir(job.checkpoint_dir)})


def own_tensorboard_dir(job: RLJob) -> str | None:
    """The directory the launch names for verl's TensorBoard events ($TENSORBOARD_DIR): ``spec.logging.dir``, else
    the variable in ``spec.env``; None: verl's own default or rladapt's (translate)."""
    return job.spec.logging.dir or job.spec.env.get(TENSORBOARD_DIR) or None


def _tensorboard_dir(b: _Builder) -> None:
    """``spec.logging.dir`` beside a ``TENSORBOARD_DIR`` of ``spec.env``: one variable, so they must agree."""
    lg, env = b.job.spec.logging, b.job.spec.env
    if lg.dir is not None and env.get(TENSORBOARD_DIR, lg.dir) != lg.dir:
        b.problems.append(
            Problem(
                "spec.logging.dir",
                f"verl reads one folder of TensorBoard events, ${TENSORBOARD_DIR}, which spec.env also sets",
                expected=f"spec.env.{TENSORBOARD_DIR} unset or the same folder",
                found=f"{quote(lg.dir)} and spec.env.{TENSORBOARD_DIR}={quote(env[TENSORBOARD_DIR])}",
            )
        )


#: Where verl's TensorBoard logger writes without $TENSORBOARD_DIR: ``tensorboard_log/{project_name}/
#: {experiment_name}``, relative to the trainer's working directory (utils/tracking.py _TensorboardAdapter:
#: ``os.environ.get("TENSORBOARD_DIR", f"tensorboard_log/{project_name}/{experiment_name}")``, 0.5.0 and 0.6.1).
IMPLICIT_TENSORBOARD_ROOT = "tensorboard_log"
_RUN_NAMES = ("trainer.project_name", "trainer.experiment_name")


def implicit_tensorboard_dir(argv: list[str], version: str) -> str | None:
    """verl's own TensorBoard directory for a launch ``argv`` that sets no $TENSORBOARD_DIR: the project and
    experiment names it gives (the last override wins), else the version's defaults; None where a name is not a
    plain value here (an interpolation resolved only when verl runs)."""
    from rladapt.compat.schema._values import UNKNOWN
    from rladapt.compat.schema._values import hydra_value as parsed
    from rladapt.plugins.snapshots import snapshot

    given: dict[str, str] = {}
    for item in argv:
        lhs, sep, rhs = item.partition("=")
        if sep and lhs.lstrip("+") in _RUN_NAMES:
            given[lhs.lstrip("+")] = rhs
    names: list[str] = []
    for key in _RUN_NAMES:
        value = parsed(given[key]) if key in given else snapshot("verl", version).default(key)
        if value is None or value is UNKNOWN or isinstance(value, (list, dict)) or "${" in str(value):
            return None
        names.append(str(value))
    return posixpath.join(IMPLICIT_TENSORBOARD_ROOT, *names)


# --- sections ------------------------------------------------------------------------------------------------


def _placement(b: _Builder, module: str) -> None:
    job = b.job
    roles = placement(job)
    actor = roles["actor"]
    for role in ("ref", "critic"):
        if role in roles and roles[role].pool != actor.pool:
            b.unsupported(
                "spec.placement.pools",
                f"role {role!r} outside the actor's pool (verl puts actor, "
                "ref and critic in one global resource pool)",
                found=f"{role} in pool {roles[role].pool!r}",
            )
    b.set("trainer.nnodes", actor.nodes, "spec.placement")
    b.set("trainer.n_gpus_per_node", actor.gpus_per_node, "spec.placement")
    if "reward" in roles and roles["reward"].pool != actor.pool:
        rm = roles["reward"]
        if not b.k.has_reward_pool:
            b.unsupported(
                "spec.placement.pools", "a separate reward-model pool", "0.6.1", "reward in its own pool"
            )
        else:
            prefix = "reward.reward_model" if b.k.reward_tree else "reward_model"
            b.set(f"{prefix}.enable_resource_pool", True, "spec.placement")
            b.set(f"{prefix}.nnodes", rm.nodes, "spec.placement")
            b.set(f"{prefix}.n_gpus_per_node", rm.gpus_per_node, "spec.placement")

    ws = job.spec.weight_sync
    if module == MAIN_MODULE:
        if ws.method not in ("auto", "cuda_ipc"):
            b.unsupported(
                "spec.weight_sync.method",
                f"weight sync {ws.method!r} with colocated actor and rollout "
                "(the hybrid engine reshards weights in process)",
                found=ws.method,
            )
        if ws.every_steps != 1:
            b.unsupported(
                "spec.weight_sync.every_steps",
                "syncing weights less often than every step with the hybrid engine",
                found=ws.every_steps,
            )
        return
    if not b.k.has_rollout_pool:  # check_capabilities reports this first; kept for direct translate() callers
        b.unsupported("spec.placement", "rollout on its own GPU pool", "0.8.0", "rollout in its own pool")
        return
    ro = roles["rollout"]
    b.set(f"{ARR}.hybrid_engine", False, "spec.placement")
    b.set("rollout.nnodes", ro.nodes, "spec.placement")
    b.set("rollout.n_gpus_per_node", ro.gpus_per_node, "spec.placement")
    if ws.method == "disk":
        b.unsupported(
            "spec.weight_sync.method",
            "weight sync through disk for a separate rollout pool (checkpoint engines: nccl, nixl)",
            found="disk",
        )
    else:
        b.set(f"{ARR}.rollout.checkpoint_engine.backend", "nccl", "spec.weight_sync.method")
    if ws.max_staleness == 0:
        b.unsupported(
            "spec.weight_sync.max_staleness",
            "on-policy rollout on a separate pool (its one-step-off "
            "and fully-async trainers always generate ahead; set max_staleness >= 1)",
            found=0,
        )
    if module == FULLY_ASYNC_MODULE:
        if ws.every_steps > ws.max_staleness:
            b.problems.append(
                Problem(
                    "spec.weight_sync.every_steps",
                    "syncing weights less often than the staleness bound allows",
                    f"at most max_staleness={ws.max_staleness}",
                    str(ws.every_steps),
                )
            )
        b.set("async_training.trigger_parameter_sync_step", ws.every_steps, "spec.weight_sync.every_steps")
        # verl bounds staleness by the extra fraction of samples the rollouter may run ahead per sync period
        # (fully_async_rollouter.py set_max_required_samples: required x (staleness_threshold + 1) x sync steps).
        if ws.run_ahead_fraction is not None:
            b.set(
                "async_training.staleness_threshold",
                float(ws.run_ahead_fraction),
                "spec.weight_sync.run_ahead_fraction",
            )
        else:
            b.set(
                "async_training.staleness_threshold",
                float(ws.max_staleness - 1),
                "spec.weight_sync.max_staleness",
            )
        tr = job.spec.training
        b.set(
            "rollout.total_rollout_steps",
            tr.steps * tr.global_batch if tr.steps else None,
            "spec.training.steps",
        )
        b.notes.append(
            "fully-async verl trainer: rollout.total_rollout_steps counts prompts, "
            "staleness_threshold = max_staleness - 1, a step is require_batches = global_batch / mini_batch "
            "mini batches (data.train_batch_size=0, as its rollouter requires)"
        )
    _partial_rollout(b, module)
    _run_ahead(b, module)


def _off_policy_correction(b: _Builder) -> None:
    """algorithm.rollout_correction (trainer/ppo/rollout_corr_helper.py, 0.6.1+): the trainer weighs each token
    by pi_old / pi_rollout at ``rollout_is`` (token, or sequence: the product of the token ratios) when the batch
    holds the rollout's log-probs, which only ``rollout.calculate_log_probs`` makes the engine return (default
    false to 0.8.0). A float threshold cuts the weights above it (TIS); the string "lower_upper" zeroes the weights
    outside [lower, upper] and keeps the others (IcePop, 0.8.0+)."""
    corr = b.job.spec.algorithm.off_policy_correction
    if corr is None or corr.level == "sequence_geometric_mean":
        return  # no key to write; check_capabilities refuses the level (and a verl without the section)
    field = "spec.algorithm.off_policy_correction"
    if corr.mode == "truncate" and corr.min_ratio is not None:
        return  # refused by capability (off_policy_correction.truncate_min): verl cuts from above only
    prefix = "algorithm.rollout_correction"
    b.set(f"{prefix}.rollout_is", corr.level, f"{field}.level")
    threshold: float | str = float(corr.max_ratio)
    if corr.mode == "mask":
        # floats on both sides: Hydra reads "0.5_5" as the number 0.55, "0.5_5.0" as the string
        threshold = f"{float(corr.min_ratio or 0.0)}_{float(corr.max_ratio)}"
    b.set(f"{prefix}.rollout_is_threshold", threshold, f"{field}.max_ratio")
    b.set(f"{ARR}.rollout.calculate_log_probs", True, field)


def _run_ahead(b: _Builder, module: str) -> None:
    if b.job.spec.weight_sync.run_ahead_fraction is not None and module == ONE_STEP_OFF_MODULE:
        b.unsupported(
            "spec.weight_sync.run_ahead_fraction",
            "a run-ahead fraction in its one-step-off trainer (it generates exactly the next batch ahead; "
            "rladapt picks the fully-async trainer for max_staleness >= 2 or every_steps >= 2)",
            found=b.job.spec.weight_sync.run_ahead_fraction,
        )


def _partial_rollout(b: _Builder, module: str) -> None:
    """async_training.partial_rollout: a generation aborted at a weight sync is resumed under the new weights
    when it is on, dropped when it is off (experimental/fully_async_policy/fully_async_rollouter.py, 0.8.0;
    workers/rollout/llm_server.py, 0.9.1); only the fully-async config has it, default true."""
    partial = b.job.spec.weight_sync.partial_rollout
    if partial is None:
        return
    if module == FULLY_ASYNC_MODULE:
        b.set("async_training.partial_rollout", partial, "spec.weight_sync.partial_rollout")
    elif partial:
        b.unsupported(
            "spec.weight_sync.partial_rollout",
            "partial rollout in its one-step-off trainer (only the fully-async trainer interrupts and resumes "
            "generation; rladapt picks it for max_staleness >= 2 or every_steps >= 2)",
            found=True,
        )


def _data(b: _Builder) -> None:
    d = b.job.spec.data
    b.set("data.train_files", list(d.train), "spec.data.train")
    b.set("data.val_files", [*d.val, *b.job.spec.eval.datasets], "spec.data.val")
    b.set("data.prompt_key", d.prompt_key, "spec.data.prompt_key")
    b.set("data.max_prompt_length", d.max_prompt_length, "spec.data.max_prompt_length")
    b.set("data.max_response_length", d.max_response_length, "spec.data.max_response_length")
    b.set("data.shuffle", d.shuffle, "spec.data.shuffle")
    if d.seed is None:
        pass  # verl's own: no seed (each run shuffles differently)
    elif b.k.has_data_seed:
        b.set("data.seed", d.seed, "spec.data.seed")
    else:
        b.notes.append(f"verl {b.version} has no data.seed; spec.data.seed={d.seed} is not applied")


def _model(b: _Builder) -> None:
    spec = b.job.spec
    m = spec.model
    b.set(f"{ARR}.model.path", m.path, "spec.model.path")
    if m.tokenizer:
        if b.k.has_tokenizer_path:
            b.set(f"{ARR}.model.tokenizer_path", m.tokenizer, "spec.model.tokenizer")
        else:
            b.set("data.tokenizer", m.tokenizer, "spec.model.tokenizer")
    megatron = spec.training.backend == "megatron"
    if not megatron and m.gradient_checkpointing is not None:
        b.set(
            f"{ARR}.model.enable_gradient_checkpointing",
            m.gradient_checkpointing,
            "spec.model.gradient_checkpointing",
        )
    b.set(f"{ARR}.rollout.dtype", m.dtype, "spec.model.dtype")
    if m.lora is not None:
        targets: Any = (
            m.lora.target_modules if isinstance(m.lora.target_modules, str) else list(m.lora.target_modules)
        )
        if spec.training.backend == "megatron":
            if not b.k.lora_tree:
                b.unsupported(
                    "spec.model.lora", "LoRA with the Megatron backend", "0.8.0", f"rank {m.lora.rank}"
                )
            else:
                b.set(f"{ARR}.model.lora.rank", m.lora.rank, "spec.model.lora.rank")
                b.set(f"{ARR}.model.lora.alpha", m.lora.alpha, "spec.model.lora.alpha")
                if targets != "all-linear":
                    b.set(f"{ARR}.model.lora.target_modules", targets, "spec.model.lora.target_modules")
        else:
            b.set(f"{ARR}.model.lora_rank", m.lora.rank, "spec.model.lora.rank")
            b.set(f"{ARR}.model.lora_alpha", m.lora.alpha, "spec.model.lora.alpha")
            b.set(f"{ARR}.model.target_modules", targets, "spec.model.lora.target_modules")
    if spec.algorithm.needs_critic:
        b.set("critic.model.path", m.critic_path or m.path, "spec.model.critic_path")
        if m.tokenizer:
            b.set("critic.model.tokenizer_path", m.tokenizer, "spec.model.tokenizer")
        if not megatron and m.gradient_checkpointing is not None:
            b.set(
                "critic.model.enable_gradient_checkpointing",
                m.gradient_checkpointing,
                "spec.model.gradient_checkpointing",
            )


def _estimator(alg: Algorithm) -> tuple[str, str]:
    """verl's ``adv_estimator`` for the algorithm and its advantage variant, and the field that decides it."""
    if alg.name in GRPO_ADVANTAGE_ALGORITHMS and alg.baseline == "leave_one_out":
        # a leave-one-out baseline without the std is verl's rloo (score minus the others' mean:
        # core_algos.compute_rloo_outcome_advantage, 0.5.0 to 0.9.1); with the std no estimator computes it and
        # the capability check refuses it (advantage.leave_one_out_std)
        return "rloo", "spec.algorithm.baseline"
    if alg.name in GRPO_ADVANTAGE_ALGORITHMS and alg.baseline == "group_mean":
        return ADV_ESTIMATOR[alg.name], "spec.algorithm.baseline"  # the grpo estimator's own baseline
    return ADV_ESTIMATOR[alg.name], "spec.algorithm.name"


def _algorithm(b: _Builder) -> None:
    alg = b.job.spec.algorithm
    estimator, decided_by = _estimator(alg)
    b.set("algorithm.adv_estimator", estimator, decided_by)
    b.set("algorithm.gamma", alg.gamma, "spec.algorithm.gamma")
    b.set("algorithm.lam", alg.lam, "spec.algorithm.lam")
    kl_on = alg.kl.coef > 0
    in_loss = kl_on and alg.kl.in_ == "loss"
    in_reward = kl_on and alg.kl.in_ == "reward"
    b.set(f"{ARR}.actor.use_kl_loss", in_loss, "spec.algorithm.kl.in")
    if in_loss:
        b.set(f"{ARR}.actor.kl_loss_coef", alg.kl.coef, "spec.algorithm.kl.coef")
        if alg.kl.estimator is not None:
            b.set(f"{ARR}.actor.kl_loss_type", KL_TYPE[alg.kl.estimator], "spec.algorithm.kl.estimator")
    b.set("algorithm.use_kl_in_reward", in_reward, "spec.algorithm.kl.in")
    if in_reward:
        b.set("algorithm.kl_ctrl.kl_coef", alg.kl.coef, "spec.algorithm.kl.coef")
        if alg.kl.estimator is not None:
            b.set("algorithm.kl_penalty", KL_TYPE[alg.kl.estimator], "spec.algorithm.kl.estimator")
    b.set(f"{ARR}.actor.clip_ratio_low", alg.clip.low, "spec.algorithm.clip.low")
    b.set(f"{ARR}.actor.clip_ratio_high", alg.clip.high, "spec.algorithm.clip.high")
    if alg.clip.dual is not None:
        # the actor's dual-clip bound (dp_actor.py config.get("clip_ratio_c", 3.0), workers/config/actor.py)
        b.set(f"{ARR}.actor.clip_ratio_c", alg.clip.dual, "spec.algorithm.clip.dual")
    if alg.entropy_coef is not None:
        b.set(f"{ARR}.actor.entropy_coeff", alg.entropy_coef, "spec.algorithm.entropy_coef")
    b.set(f"{ARR}.actor.ppo_epochs", alg.ppo_epochs, "spec.algorithm.ppo_epochs")
    if alg.name == "gspo":
        b.set(f"{ARR}.actor.policy_loss.loss_mode", "gspo", "spec.algorithm.name")
    _grpo_variants(b)
    _off_policy_correction(b)
    if alg.needs_critic:
        b.set("critic.ppo_epochs", alg.ppo_epochs, "spec.algorithm.ppo_epochs")


def _grpo_variants(b: _Builder) -> None:
    """The std normalisation, dynamic sampling and the loss aggregation (issue 12, item 7)."""
    alg = b.job.spec.algorithm
    if alg.normalize_by_group_std is not None and _estimator(alg)[0] == "grpo":
        # read by compute_advantage for the grpo estimator only (trainer/ppo/ray_trainer.py, 0.5.0 to 0.9.1)
        b.set(
            "algorithm.norm_adv_by_std_in_grpo",
            alg.normalize_by_group_std,
            "spec.algorithm.normalize_by_group_std",
        )
    # an explicit false on a version without filter_groups is what that version does anyway: nothing to write
    if b.k.has_filter_groups and (alg.dynamic_sampling is not None or alg.dynamic_sampling_on):
        source = (
            "spec.algorithm.dynamic_sampling" if alg.dynamic_sampling is not None else "spec.algorithm.name"
        )
        b.set("algorithm.filter_groups.enable", alg.dynamic_sampling_on, source)
        if alg.dynamic_sampling_on:
            b.set("algorithm.filter_groups.metric", "acc", source)
    agg = alg.effective_loss_aggregation
    if agg is not None:
        # core_algos.agg_loss spells the modes with dashes (token-mean, seq-mean-token-sum-norm, ...)
        source = "spec.algorithm.loss_aggregation" if alg.loss_aggregation else "spec.algorithm.name"
        b.set(f"{ARR}.actor.loss_agg_mode", agg.replace("_", "-"), source)


def _batches(b: _Builder) -> None:
    spec = b.job.spec
    tr = spec.training
    if entrypoint(b.job) == FULLY_ASYNC_MODULE:
        # The fully-async rollouter asserts data.train_batch_size == 0 and its trainer takes each step's
        # ppo_mini_batch_size x require_batches prompts from the queue (experimental/fully_async_policy/
        # fully_async_rollouter.py and fully_async_trainer.py required_samples, 0.8.0 and 0.9.1)
        b.set("data.train_batch_size", 0, "spec.training.global_batch")
        b.set(
            "async_training.require_batches", tr.global_batch // tr.mini_batch, "spec.training.global_batch"
        )
    else:
        b.set("data.train_batch_size", tr.global_batch, "spec.training.global_batch")
    b.set(f"{ARR}.actor.ppo_mini_batch_size", tr.mini_batch, "spec.training.mini_batch")
    # verl requires these per-GPU micro batches whenever dynamic batching is off ("Please set at least one of").
    micro = actor_micro_batch(b.job)
    if micro is not None:
        b.set(f"{ARR}.actor.ppo_micro_batch_size_per_gpu", micro, "spec.training.micro_batch_per_gpu")
    _forward_budgets(b)
    dyn = tr.dynamic_batch
    b.set(f"{ARR}.actor.use_dynamic_bsz", dyn.enabled, "spec.training.dynamic_batch.enabled")
    if dyn.enabled:
        b.set(
            f"{ARR}.actor.ppo_max_token_len_per_gpu",
            dyn.max_tokens_per_gpu,
            "spec.training.dynamic_batch.max_tokens_per_gpu",
        )
        # the log-prob passes follow the actor's use_dynamic_bsz (their ${oc.select:...} default, rollout.yaml and
        # ref.yaml of every pinned wheel); written out, as upstream's seq-balance scripts write them
        for role in ("rollout", "ref"):
            b.set(f"{ARR}.{role}.log_prob_use_dynamic_bsz", True, "spec.training.dynamic_batch.enabled")
    opt = tr.optimizer
    b.set(f"{ARR}.actor.optim.lr", opt.lr, "spec.training.optimizer.lr")
    # verl reads lr_warmup_steps_ratio only while lr_warmup_steps < 0 (its default -1): an unset warmup emits
    # nothing, so the ratio of a native override still applies
    if opt.warmup_steps is not None:
        b.set(f"{ARR}.actor.optim.lr_warmup_steps", opt.warmup_steps, "spec.training.optimizer.warmup_steps")
    if opt.warmup_ratio is not None:
        b.set(
            f"{ARR}.actor.optim.lr_warmup_steps_ratio",
            opt.warmup_ratio,
            "spec.training.optimizer.warmup_ratio",
        )
    if opt.weight_decay is not None:
        b.set(f"{ARR}.actor.optim.weight_decay", opt.weight_decay, "spec.training.optimizer.weight_decay")
    megatron = tr.backend == "megatron"
    if opt.max_grad_norm is not None:
        for key in b.k.grad_clip_keys(megatron):
            b.set(f"{ARR}.actor.{key}", opt.max_grad_norm, "spec.training.optimizer.max_grad_norm")
    if spec.algorithm.needs_critic:
        _critic_budgets(b)
        copt = tr.critic_optimizer or opt
        b.set("critic.optim.lr", copt.lr, "spec.training.critic_optimizer.lr")
        if copt.warmup_steps is None:
            pass  # verl's own critic schedule
        elif b.k.fsdp_critic_warmup_steps or tr.backend == "megatron":
            b.set(
                "critic.optim.lr_warmup_steps",
                copt.warmup_steps,
                "spec.training.critic_optimizer.warmup_steps",
            )
        elif copt.warmup_steps and tr.steps:
            # 0.5.0's FSDP critic optimizer only knows a warmup ratio of the total steps.
            b.set(
                "critic.optim.lr_warmup_steps_ratio",
                copt.warmup_steps / tr.steps,
                "spec.training.critic_optimizer.warmup_steps",
            )
        elif copt.warmup_steps:
            b.unsupported(
                "spec.training.critic_optimizer.warmup_steps",
                "critic warmup in steps when the run is given in epochs",
                "0.6.1",
                copt.warmup_steps,
            )
        if copt.warmup_ratio is not None:
            b.set(
                "critic.optim.lr_warmup_steps_ratio",
                copt.warmup_ratio,
                "spec.training.critic_optimizer.warmup_ratio",
            )
        if copt.weight_decay is not None:
            b.set(
                "critic.optim.weight_decay", copt.weight_decay, "spec.training.critic_optimizer.weight_decay"
            )
        if copt.max_grad_norm is not None:
            for key in b.k.grad_clip_keys(megatron):
                b.set(f"critic.{key}", copt.max_grad_norm, "spec.training.critic_optimizer.max_grad_norm")


def actor_micro_batch(job: RLJob) -> int | None:
    """The actor's micro batch per GPU rladapt renders; None (verl's own null) with dynamic batching on and no
    micro batch in the spec: verl then splits by tokens and asks for no micro batch (utils/config.py
    validate_config and workers/config/actor.py ActorConfig check them only ``if not use_dynamic_bsz``, 0.6.1;
    0.5.0's ray_trainer.py _validate_config likewise), so a launch that leaves them null keeps them null."""
    tr = job.spec.training
    if tr.dynamic_batch.enabled and "micro_batch_per_gpu" not in tr.model_fields_set:
        return None
    return tr.micro_batch_per_gpu


def _budget(
    b: _Builder, key: str, value: int | None, field: str, fallback: int | None, fallback_field: str
) -> None:
    """Set ``key`` to the pass's own value, else to the fallback rladapt chose (None: verl's own default)."""
    if value is not None:
        b.set(key, value, field)
    elif fallback is not None:
        b.set(key, fallback, fallback_field)


def _forward_budgets(b: _Builder) -> None:
    """The actor's and the reference's log-prob passes: their own micro batch and token cap.

    Every pinned wheel declares them per role (trainer/config/rollout/rollout.yaml and ref/ref.yaml, 0.5.0's
    generated ppo_trainer.yaml): ``log_prob_micro_batch_size_per_gpu`` (null, required when dynamic batching is
    off) and ``log_prob_max_token_len_per_gpu`` (interpolating the actor's ``ppo_max_token_len_per_gpu``), read by
    workers/fsdp_workers.py and megatron_workers.py compute_log_prob / compute_ref_log_prob.
    """
    tr = b.job.spec.training
    bud = tr.budgets
    old, ref = bud.old_log_prob, bud.ref_log_prob
    actor = actor_micro_batch(b.job)
    micro = old.micro_batch_per_gpu or actor
    old_field = "spec.training.budgets.old_log_prob.micro_batch_per_gpu"
    _budget(
        b,
        f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu",
        old.micro_batch_per_gpu,
        old_field,
        actor,
        "spec.training.micro_batch_per_gpu",
    )
    # null: old_log_prob's (its own value when given, else the actor update's)
    _budget(
        b,
        f"{ARR}.ref.log_prob_micro_batch_size_per_gpu",
        ref.micro_batch_per_gpu,
        "spec.training.budgets.ref_log_prob.micro_batch_per_gpu",
        micro,
        old_field if old.micro_batch_per_gpu else "spec.training.micro_batch_per_gpu",
    )
    # token caps: unset, verl's own interpolation follows the actor's ppo_max_token_len_per_gpu
    tokens_field = "spec.training.budgets.old_log_prob.max_tokens_per_gpu"
    _budget(
        b, f"{ARR}.rollout.log_prob_max_token_len_per_gpu", old.max_tokens_per_gpu, tokens_field, None, ""
    )
    _budget(
        b,
        f"{ARR}.ref.log_prob_max_token_len_per_gpu",
        ref.max_tokens_per_gpu,
        "spec.training.budgets.ref_log_prob.max_tokens_per_gpu",
        old.max_tokens_per_gpu,
        tokens_field,
    )


def _critic_budgets(b: _Builder) -> None:
    """The critic's update and value passes (trainer/config/critic/critic.yaml, 0.5.0's generated config):
    ``ppo_micro_batch_size_per_gpu`` / ``ppo_max_token_len_per_gpu`` for the update, ``forward_*`` for the values
    (which verl interpolates from the update's), read by workers/critic/dp_critic.py and megatron_critic.py."""
    tr = b.job.spec.training
    upd, val = tr.budgets.critic_update, tr.budgets.critic_values
    dyn = tr.dynamic_batch
    _budget(
        b,
        "critic.ppo_micro_batch_size_per_gpu",
        upd.micro_batch_per_gpu,
        "spec.training.budgets.critic_update.micro_batch_per_gpu",
        # the critic's use_dynamic_bsz follows the actor's (trainer/config/critic/critic.yaml oc.select, 0.6.1+)
        actor_micro_batch(b.job),
        "spec.training.micro_batch_per_gpu",
    )
    if dyn.enabled:
        _budget(
            b,
            "critic.ppo_max_token_len_per_gpu",
            upd.max_tokens_per_gpu,
            "spec.training.budgets.critic_update.max_tokens_per_gpu",
            2 * dyn.max_tokens_per_gpu,
            "spec.training.dynamic_batch.max_tokens_per_gpu",
        )
    # unset: verl's own forward_* = ${.ppo_*} (the update's)
    _budget(
        b,
        "critic.forward_micro_batch_size_per_gpu",
        val.micro_batch_per_gpu,
        "spec.training.budgets.critic_values.micro_batch_per_gpu",
        None,
        "",
    )
    _budget(
        b,
        "critic.forward_max_token_len_per_gpu",
        val.max_tokens_per_gpu,
        "spec.training.budgets.critic_values.max_tokens_per_gpu",
        None,
        "",
    )


def _backend(b: _Builder) -> None:
    spec = b.job.spec
    tr = spec.training
    critic = spec.algorithm.needs_critic
    if tr.backend in ("fsdp", "fsdp2", None):
        if tr.backend is not None:  # null: verl's own strategy (fsdp in every pinned version)
            b.set(f"{ARR}.actor.strategy", tr.backend, "spec.training.backend")
            if critic:
                b.set("critic.strategy", tr.backend, "spec.training.backend")
        b.set(f"{ARR}.actor.ulysses_sequence_parallel_size", tr.parallel.sp, "spec.training.parallel.sp")
        if critic:
            b.set("critic.ulysses_sequence_parallel_size", tr.parallel.sp, "spec.training.parallel.sp")
    elif tr.backend == "megatron":
        par = tr.parallel
        for role in (f"{ARR}.actor", f"{ARR}.ref", *(["critic"] if critic else [])):
            b.set(f"{role}.megatron.tensor_model_parallel_size", par.tp, "spec.training.parallel.tp")
            b.set(f"{role}.megatron.pipeline_model_parallel_size", par.pp, "spec.training.parallel.pp")
            b.set(f"{role}.megatron.context_parallel_size", par.cp, "spec.training.parallel.cp")
        if spec.model.gradient_checkpointing:
            # Megatron recomputes activations through its transformer config (the same in every pinned version).
            roles = [
                f"{ARR}.actor",
                *(["critic"] if critic and b.k.megatron_critic_transformer_config else []),
            ]
            for role in roles:
                otc = f"{role}.megatron.override_transformer_config"
                b.set(f"{otc}.recompute_granularity", "full", "spec.model.gradient_checkpointing")
                b.set(f"{otc}.recompute_method", "uniform", "spec.model.gradient_checkpointing")
                b.set(f"{otc}.recompute_num_layers", 1, "spec.model.gradient_checkpointing")
        if par.sp > 1:
            b.unsupported(
                "spec.training.parallel.sp",
                "Ulysses sequence parallelism with Megatron (use cp)",
                found=par.sp,
            )


def _rollout(b: _Builder) -> None:
    ro = b.job.spec.rollout
    alg = b.job.spec.algorithm
    r = f"{ARR}.rollout"
    b.set(f"{r}.name", ro.engine, "spec.rollout.engine")  # mandatory (no default) from 0.6.1
    if ro.mode is not None:
        b.set(f"{r}.mode", ro.mode, "spec.rollout.mode")
    if ro.mode == "async" and not b.k.raw_chat_default:
        # The agent loop reads the batch's raw_prompt (verl 0.5.0 wheel: experimental/agent_loop/agent_loop.py
        # line 276; 0.6.1: experimental/agent_loop/single_turn_agent_loop.py line 38), which RLHFDataset adds
        # only with return_raw_chat (utils/dataset/rl_dataset.py: 0.5.0 line 311, 0.6.1 line 434); its default
        # is false there (trainer/config/data/legacy_data.yaml) and true from 0.7.1.
        b.set("data.return_raw_chat", True, "spec.rollout.mode")
    b.set(f"{r}.tensor_model_parallel_size", ro.tensor_parallel, "spec.rollout.tensor_parallel")
    b.set(f"{r}.gpu_memory_utilization", ro.gpu_memory_utilization, "spec.rollout.gpu_memory_utilization")
    b.set(f"{r}.n", alg.group_size, "spec.algorithm.group_size")
    b.set(f"{r}.temperature", ro.temperature, "spec.rollout.temperature")
    b.set(f"{r}.top_p", ro.top_p, "spec.rollout.top_p")
    b.set(f"{r}.top_k", ro.top_k, "spec.rollout.top_k")
    if ro.max_tokens is not None:
        b.set(f"{r}.response_length", ro.max_tokens, "spec.rollout.max_tokens")
    b.set(f"{r}.val_kwargs.n", ro.val.n, "spec.rollout.val.n")
    b.set(f"{r}.val_kwargs.temperature", ro.val.temperature, "spec.rollout.val.temperature")
    b.set(f"{r}.val_kwargs.top_p", ro.val.top_p, "spec.rollout.val.top_p")
    b.set(f"{r}.val_kwargs.do_sample", ro.val.temperature > 0 or ro.val.n > 1, "spec.rollout.val.temperature")


#: The load_format with which verl's rollout starts from placeholder weights that the first sync fills: its own
#: default per version and backend (0.5.0: trainer/config/ppo_trainer.yaml dummy_dtensor and
#: ppo_megatron_trainer.yaml dummy_megatron; 0.6.1+: rollout/rollout.yaml dummy).
def _placeholder_format(b: _Builder) -> str:
    if b.version < Version("0.6.1"):
        return "dummy_megatron" if b.job.spec.training.backend == "megatron" else "dummy_dtensor"
    return "dummy"


def _engine_settings(b: _Builder) -> None:
    """``spec.rollout.engine_settings``: keys of ``actor_rollout_ref.rollout`` in every pinned wheel.

    Read by the vLLM rollout (workers/rollout/vllm_rollout/vllm_rollout_spmd.py in 0.5.0 and 0.6.1,
    vllm_async_server.py from 0.7.1: enforce_eager, enable_chunked_prefill, max_num_batched_tokens, load_format;
    free_cache_engine by the sharding managers, then by vllm_rollout.py / vllm_async_server.py sleep) and by the
    SGLang one (enforce_eager as disable_cuda_graph, 0.7.1+); layered_summon by fsdp_workers.py (0.5.0 to 0.7.1)
    and engine_workers.py / vllm_rollout.py (0.7.1+) when it gathers LoRA weights.
    """
    eng = b.job.spec.rollout.engine_settings
    given = sorted(name for name in type(eng).model_fields if getattr(eng, name) is not None)
    if not given:
        return
    if b.job.spec.rollout.engine == "hf":
        for name in given:
            b.unsupported(
                f"spec.rollout.engine_settings.{name}",
                "inference engine settings with the HF rollout (no vLLM or SGLang engine)",
                found=getattr(eng, name),
            )
        return
    r = f"{ARR}.rollout"
    src = "spec.rollout.engine_settings"
    if eng.enforce_eager is not None:
        b.set(f"{r}.enforce_eager", eng.enforce_eager, f"{src}.enforce_eager")
    if eng.chunked_prefill is not None:
        b.set(f"{r}.enable_chunked_prefill", eng.chunked_prefill, f"{src}.chunked_prefill")
    if eng.max_batched_tokens is not None:
        b.set(f"{r}.max_num_batched_tokens", eng.max_batched_tokens, f"{src}.max_batched_tokens")
    if eng.free_cache_between_phases is not None:
        b.set(f"{r}.free_cache_engine", eng.free_cache_between_phases, f"{src}.free_cache_between_phases")
    if eng.load_weights_from_disk is not None:
        # safetensors: the model's own files, as verl's LoRA examples load them (examples/grpo_trainer/
        # run_qwen2_5-3b_gsm8k_grpo_lora.sh of v0.5.0: rollout.load_format=safetensors)
        fmt = "safetensors" if eng.load_weights_from_disk else _placeholder_format(b)
        b.set(f"{r}.load_format", fmt, f"{src}.load_weights_from_disk")
    if eng.layered_weight_sync is not None:
        b.set(f"{r}.layered_summon", eng.layered_weight_sync, f"{src}.layered_weight_sync")


def _multi_turn(b: _Builder) -> None:
    """``spec.rollout.multi_turn``: ``actor_rollout_ref.rollout.multi_turn.*`` and the path that reads it.

    Two rollouts of verl run turns. The synchronous SGLang rollout (0.5.0 and 0.6.1: workers/rollout/
    sglang_rollout/sglang_rollout.py generate_sequences takes _req_level_generate_sequences when
    multi_turn.enable) reads enable, max_assistant_turns, max_user_turns, tool_config_path and
    interaction_config_path, takes the tool-call parser from the tokenizer (get_tool_call_parser_type) and asserts
    the batch's raw_prompt ("need data.return_raw_chat=True"). The agent loop (async; the only rollout from 0.7.1)
    runs turns in experimental/agent_loop/tool_agent_loop.py ("tool_agent"), which reads max_assistant_turns,
    max_user_turns, tool_config_path (from 0.8.0 agent_loop.py reads it for the loop), format and, in 0.6.1 and
    0.7.1, interaction_config_path; a sample runs it when its agent_name, else rollout.agent.default_agent_loop
    (0.6.1+), names it. ``multi_turn.enable`` is also read by trainer/ppo/ray_trainer.py (batch meta_info).
    """
    ro = b.job.spec.rollout
    mt = ro.multi_turn
    if mt is None:
        return
    src = "spec.rollout.multi_turn"
    agent_loop = ro.mode == "async" or b.version >= V0_7_1  # null before 0.7.1: verl's own sync
    if not agent_loop:
        if ro.engine != "sglang":
            b.unsupported(
                src,
                f"multi-turn rollouts with the synchronous {ro.engine} rollout (verl's synchronous rollout runs "
                "turns with SGLang only): set rollout.engine: sglang or rollout.mode: async",
                found=f"rollout.engine {ro.engine}, rollout.mode {ro.mode or 'null (sync)'}",
            )
        if mt.tool_call_format is not None:
            b.unsupported(
                f"{src}.tool_call_format",
                "a tool-call format with the synchronous SGLang rollout, which takes the parser from the "
                "tokenizer (sglang_rollout.py get_tool_call_parser_type): leave it null or set rollout.mode: async",
                found=mt.tool_call_format,
            )
        b.set("data.return_raw_chat", True, src)
    elif not b.k.has_default_agent_loop:
        b.unsupported(
            src,
            "multi-turn rollouts with the async rollout: 0.5.0's agent loop is chosen by each sample's "
            "agent_name column, not by a config key (use rollout.mode: sync with rollout.engine: sglang)",
            first="0.6.1",
            found="rollout.mode async",
        )
    else:
        b.set(f"{ARR}.rollout.agent.default_agent_loop", "tool_agent", src)
    r = f"{ARR}.rollout.multi_turn"
    b.set(f"{r}.enable", True, src)
    for field_name, key in (
        ("max_assistant_turns", "max_assistant_turns"),
        ("max_user_turns", "max_user_turns"),
        ("tool_config", "tool_config_path"),
        ("interaction_config", "interaction_config_path"),
        ("tool_call_format", "format"),
    ):
        value = getattr(mt, field_name)
        if value is not None:
            b.set(f"{r}.{key}", value, f"{src}.{field_name}")
    if mt.tool_config is not None:
        # utils/dataset/rl_dataset.py (every pinned wheel) passes extra_info.tools_kwargs to the rollout, which
        # calls each tool's create / execute / calc_reward with that tool's entry
        b.notes.append(
            f"verl calls the tools of {mt.tool_config} with each sample's extra_info.tools_kwargs.<tool name> "
            "(create_kwargs, execute_kwargs, ...): the data carries them"
        )


#: Where rladapt writes the reward function of a fixed built-in scorer (relative to the working directory).
BUILTIN_REWARD_FILE = ".rladapt/verl_builtin_reward.py"
#: Built-in name -> (module of verl.utils.reward_score, the call on its compute_score). verl calls a custom reward
#: function with keywords (data_source, solution_str, ground_truth, extra_info, ...: workers/reward_manager/
#: naive.py of every pinned wheel), which these scorers do not take, so a generated function adapts the call.
#: Read in verl/utils/reward_score/ of 0.5.0 to 0.9.1: gsm8k.compute_score(solution_str, ground_truth) (strict
#: "#### " format), math_verify.compute_score(model_output, ground_truth) (math-verify, ground truth boxed; needs
#: verl's `math` extra), math_dapo.compute_score(solution_str, ground_truth) -> {"score", "acc", "pred"}.
BUILTIN_SCORERS: dict[str, str] = {
    "math": "math_verify",
    "math_dapo": "math_dapo",
    "gsm8k": "gsm8k",
}


def builtin_reward_source(name: str, version: str) -> str:
    """The generated custom reward function that calls verl's own scorer ``name`` from the installed wheel."""
    module = BUILTIN_SCORERS[name]
    return (
        f'"""Written by rladapt for verl {version}: spec.reward.builtin {name} is verl\'s own '
        f'verl.utils.reward_score.{module}."""\n\n'
        f"from verl.utils.reward_score import {module}\n\n\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
        f"    return {module}.compute_score(solution_str, ground_truth)\n"
    )


def _reward(b: _Builder) -> None:
    rw = b.job.spec.reward
    if rw.builtin is not None and rw.builtin.name != "by_data_source":
        # by_data_source is verl's own default: with no custom_reward_function the reward manager scores with
        # default_compute_score(data_source, ...) (workers/reward_manager/naive.py, utils/reward_score/__init__.py
        # of every pinned wheel), so nothing is emitted for it.
        name = rw.builtin.name
        b.files[BUILTIN_REWARD_FILE] = builtin_reward_source(name, str(b.version))
        b.set(f"{b.k.custom_reward_function}.path", BUILTIN_REWARD_FILE, "spec.reward.builtin.name")
        b.set(f"{b.k.custom_reward_function}.name", "compute_score", "spec.reward.builtin.name")
        if name == "math":
            b.notes.append(
                "spec.reward.builtin math calls verl.utils.reward_score.math_verify: install verl's `math` "
                "extra (math-verify) where the reward runs"
            )
    if rw.function is not None:
        b.set(f"{b.k.custom_reward_function}.path", rw.function.path, "spec.reward.function.path")
        b.set(f"{b.k.custom_reward_function}.name", rw.function.name, "spec.reward.function.name")
    if rw.model is not None:
        if b.k.reward_tree:
            b.set("reward.reward_model.enable", True, "spec.reward.model")
            b.set("reward.reward_model.model_path", rw.model.path, "spec.reward.model.path")
            # From 0.7.1 the reward model is served by a rollout engine of its own (no default engine).
            b.set("reward.reward_model.rollout.name", b.job.spec.rollout.engine, "spec.rollout.engine")
            b.set(
                "reward.reward_model.rollout.tensor_model_parallel_size",
                b.job.spec.rollout.tensor_parallel,
                "spec.rollout.tensor_parallel",
            )
            if "micro_batch_per_gpu" in rw.model.model_fields_set:
                b.notes.append(
                    f"verl {b.version} serves the reward model with a rollout engine; "
                    "spec.reward.model.micro_batch_per_gpu does not apply"
                )
        else:
            b.set("reward_model.enable", True, "spec.reward.model")
            b.set("reward_model.model.path", rw.model.path, "spec.reward.model.path")
            b.set(
                "reward_model.micro_batch_size_per_gpu",
                rw.model.micro_batch_per_gpu,
                "spec.reward.model.micro_batch_per_gpu",
            )
    _overlong_penalty(b)


#: What the dapo manager leaves out of the ``extra_info`` it passes to the reward function, against the naive
#: manager that scores the same job without the penalty, by the path that scores it. Read line by line in each
#: wheel (diff of naive.py and dapo.py): workers/reward_manager/ (0.5.0 and 0.6.1's synchronous rollout),
#: experimental/reward/reward_loop/ (0.6.1's async rollout), experimental/reward_loop/reward_manager/ (0.7.1 to
#: 0.9.1). Everything else is the same code: compute_score(data_source, solution_str, ground_truth, extra_info),
#: a dict's "score" as the reward and its keys as extra info, the reward on the last valid response token. Two
#: more lines differ in the legacy manager only, neither changing the reward: it records a float score as extra
#: info "acc" too (a metric; the reward loop's naive manager does the same), and it cuts a trailing eos text from
#: the response, which decode(skip_special_tokens=True) has already removed.
_LEGACY_MISSING = "extra_info['num_turns']"
_LOOP_0_6_MISSING = (
    "the rollout's tool fields (tool_extra_fields), merged into extra_info by the naive manager"
)
_LOOP_MISSING = (
    "extra_info['num_turns'], extra_info['rollout_reward_scores'] (the tools' rewards) and the agent loop's "
    "extra fields (tool_extra_fields: raw_prompt, agent_loop.py, and any tool's)"
)


def _dapo_missing(b: _Builder) -> str:
    if b.k.reward_loop:
        return _LOOP_MISSING
    if b.version >= V0_6_1 and b.job.spec.rollout.mode == "async":
        return _LOOP_0_6_MISSING
    return _LEGACY_MISSING


def _overlong_penalty(b: _Builder) -> None:
    """``spec.reward.overlong_penalty``: verl's dapo reward manager with its overlong buffer.

    The penalty, in every pinned wheel's dapo manager: ``min(-(L - (max_resp_len - len)) / len * penalty_factor,
    0)`` added to the score, L the response's valid tokens (its attention mask): 0 up to max_resp_len - len, then
    linear to -penalty_factor at max_resp_len, the spec's definition when max_resp_len is the response budget
    (rollout.response_length can hold no more). The same manager scores validation (main_ppo.py passes the same
    reward_kwargs to val_reward_fn before 0.7.1; the reward loop scores both from 0.7.1).
    """
    penalty = b.job.spec.reward.overlong_penalty
    if penalty is None:
        return
    rw = b.job.spec.reward
    src = "spec.reward.overlong_penalty"
    if rw.model is not None and (not b.k.reward_loop or rw.function is None):
        # 0.5.0 / 0.6.1: the manager returns the batch's rm_scores as they are ("If there is rm score, we
        # directly return rm score", workers/reward_manager/dapo.py); 0.7.1+: without a custom function the
        # reward loop scores with the model alone (experimental/reward_loop/reward_loop.py compute_score_disrm)
        b.unsupported(
            src,
            "an overlong penalty on a reward model's scores: verl's dapo manager returns the model's scores "
            "without adding it"
            + ("" if not b.k.reward_loop else " unless a reward function scores (reward.function beside it)"),
            found="reward.model",
        )
        return
    if b.job.spec.rollout.multi_turn is not None:
        b.unsupported(
            src,
            "an overlong penalty on multi-turn rollouts: verl's dapo manager does not pass the reward function "
            f"what the naive one passes from the turns ({_dapo_missing(b)})",
            found="rollout.multi_turn",
        )
        return
    budget = b.job.spec.rollout.max_tokens or b.job.spec.data.max_response_length
    kw = b.k.reward_kwargs
    b.set(b.k.reward_manager, "dapo", src)
    b.add(f"{kw}.max_resp_len", budget, src)
    b.add(f"{kw}.overlong_buffer_cfg.enable", True, src)
    b.add(f"{kw}.overlong_buffer_cfg.len", penalty.buffer_tokens, f"{src}.buffer_tokens")
    b.add(f"{kw}.overlong_buffer_cfg.penalty_factor", penalty.max_penalty, f"{src}.max_penalty")
    # read unconditionally once enabled (no default): false keeps the extra info of the naive manager
    b.add(f"{kw}.overlong_buffer_cfg.log", False, src)
    b.notes.append(
        f"spec.reward.overlong_penalty runs verl's dapo reward manager (max_resp_len {budget}, the response "
        "length budget); it also scores validation, whose reward then includes the penalty"
    )
    if b.k.has_filter_groups and b.job.spec.algorithm.dynamic_sampling_on:
        # filter_groups.metric acc: the reward_extra_info field both managers fill with the score (trainer/
        # config/ppo_trainer.yaml "acc select[s] a reward_extra_info field", 0.9.1)
        b.notes.append(
            "dynamic sampling compares each group's acc (filter_groups.metric), which the penalty does not change"
        )
    if rw.function is not None:
        b.notes.append(
            f"verl {b.version}'s dapo manager calls {rw.function.path}:{rw.function.name} as the naive one does, "
            f"but passes extra_info without {_dapo_missing(b)}"
            + (
                " (and with extra_info=None where the data has no extra_info column)"
                if b.version < V0_6_1
                else ""
            )
        )


def critic_warmup(steps: int) -> int:
    """verl's ``trainer.critic_warmup`` for ``steps`` critic-only steps: the fit loop updates the actor once
    ``critic_warmup <= global_steps``, and global_steps counts from 1 (trainer/ppo/ray_trainer.py ``fit``, 0.5.0
    and 0.6.1), so N gives N - 1 critic-only steps; 0 (verl's default) and 1 give none, 0 is written."""
    return steps + 1 if steps else 0


def critic_warmup_steps(value: int) -> int:
    """The critic-only steps of verl's ``trainer.critic_warmup`` (the inverse of ``critic_warmup`` but for 1)."""
    return max(value - 1, 0)


def _trainer(b: _Builder) -> None:
    job = b.job
    spec = job.spec
    tr = spec.training
    if tr.steps is not None and tr.epochs is not None:
        # the fit loop runs `for epoch in range(trainer.total_epochs)` and returns once global_steps reaches
        # trainer.total_training_steps (trainer/ppo/ray_trainer.py RayPPOTrainer.fit, 0.5.0 to 0.9.1; the
        # one-step-off trainer's loop is the same, experimental/one_step_off_policy/ray_trainer.py 0.8.0 and
        # 0.9.1): whichever limit comes first ends the run, the spec's rule. The fully-async rollouter stops
        # at min(rollout.total_rollout_steps, total_epochs passes) prompts, one prompt per batch
        # (fully_async_rollouter.py, 0.8.0 and 0.9.1): the same rule, counted in prompts.
        b.set("trainer.total_training_steps", tr.steps, "spec.training.steps")
        b.set("trainer.total_epochs", tr.epochs, "spec.training.epochs")
        if entrypoint(job) != FULLY_ASYNC_MODULE:
            # fit's is_last_step compares global_steps with total_training_steps only: a run whose epochs end
            # first leaves the loop without its last-step checkpoint and validation
            b.notes.append(
                f"verl ends the run after {tr.epochs} epoch(s) or {tr.steps} steps, whichever comes first; if "
                "the epochs end first, verl skips its last-step checkpoint and validation (is_last_step counts "
                "trainer.total_training_steps only)"
            )
    elif tr.steps is not None:
        b.set("trainer.total_training_steps", tr.steps, "spec.training.steps")
        # verl stops at whichever of total_epochs / total_training_steps comes first; every epoch is >= 1 step.
        b.set("trainer.total_epochs", tr.steps, "spec.training.steps")
    else:
        b.set("trainer.total_epochs", tr.epochs or 1, "spec.training.epochs")
    if tr.critic_warmup_steps is not None:
        b.set(
            "trainer.critic_warmup",
            critic_warmup(tr.critic_warmup_steps),
            "spec.training.critic_warmup_steps",
        )
    ck = spec.checkpoint
    if not ck.enabled:
        # save_freq > 0 is the only condition under which verl's fit loop saves (trainer/ppo/ray_trainer.py)
        b.set("trainer.save_freq", -1, "spec.checkpoint.enabled")
    elif ck.every_steps:
        b.set("trainer.save_freq", ck.every_steps, "spec.checkpoint.every_steps")
    else:
        # verl saves on `save_freq > 0 and (last step or step % save_freq == 0)`: -1 would never save at all.
        b.set("trainer.save_freq", tr.steps if tr.steps else 2**31 - 1, "spec.training.steps")
    b.set("trainer.default_local_dir", job.checkpoint_dir, "spec.checkpoint.dir")
    b.set(
        "trainer.resume_mode",
        {"auto": "auto", "never": "disable", "path": "resume_path"}[ck.resume],
        "spec.checkpoint.resume",
    )
    if ck.resume == "path":
        b.set("trainer.resume_from_path", ck.resume_path, "spec.checkpoint.resume_path")
    if ck.keep_last is not None:
        b.set("trainer.max_actor_ckpt_to_keep", ck.keep_last, "spec.checkpoint.keep_last")
        if spec.algorithm.needs_critic:
            b.set("trainer.max_critic_ckpt_to_keep", ck.keep_last, "spec.checkpoint.keep_last")
    contents = ["model", "optimizer", "extra", *(["hf_model"] if ck.save_hf else [])]
    b.set(f"{ARR}.actor.checkpoint.save_contents", contents, "spec.checkpoint.save_hf")
    ev = spec.eval
    b.set("trainer.test_freq", ev.every_steps or -1, "spec.eval.every_steps")
    if ev.before_training is not None:
        b.set("trainer.val_before_train", ev.before_training, "spec.eval.before_training")
    lg = spec.logging
    # tensorboard beside the user's backends: its events are what `rladapt metrics` reads back; where they go is
    # TENSORBOARD_DIR (utils/tracking.py _TensorboardAdapter, 0.5.0 to 0.9.1), set in translate
    b.set("trainer.logger", *with_tensorboard(list(lg.backends), kept=own_tensorboard_dir(job)))
    _tensorboard_dir(b)
    if b.version < TENSORBOARD_REQUIRED_SINCE:
        b.notes.append(
            f"verl {b.version} does not install tensorboard (its wheel's Requires-Dist has it from "
            f"{TENSORBOARD_REQUIRED_SINCE}): the job's environment needs it for the TensorBoard logger rladapt adds"
        )
    b.set("trainer.project_name", lg.project, "spec.logging.project")
    if lg.val_generations is not None:
        # _maybe_log_val_generations (trainer/ppo/ray_trainer.py, 0.5.0 to 0.9.1): 0 logs none
        b.set("trainer.log_val_generations", lg.val_generations, "spec.logging.val_generations")
    b.set("trainer.experiment_name", job.experiment, "spec.logging.experiment")
    if tr.backend != "megatron" and tr.parallel.sp > 1 and spec.algorithm.name in CRITIC_ALGORITHMS:
        b.notes.append("Ulysses sequence parallelism also applies to the critic")


#: spec.data.overlong_prompts truncate_* -> data.truncation (utils/dataset/rl_dataset.py, 0.5.0 and 0.6.1:
#: raw_prompt_ids[-max:] for left, [:max] for right, both halves for middle).
TRUNCATION: dict[str, str] = {"truncate_left": "left", "truncate_right": "right", "truncate_middle": "middle"}


def _data_memory(b: _Builder) -> None:
    """Overlong prompts, CPU offload per role and packed sequences."""
    spec = b.job.spec
    tr = spec.training
    how = spec.data.overlong_prompts
    if how == "drop":
        # RLHFDataset.maybe_filter_out_long_prompts: rows whose chat-templated prompt is longer than
        # max_prompt_length tokens are filtered out when the files load (rl_dataset.py, every pinned wheel)
        b.set("data.filter_overlong_prompts", True, "spec.data.overlong_prompts")
        # no kept prompt is over the length, so verl's own 'error' (every pinned config) never fires: written out
        # as upstream's scripts write it beside the filter, so a launch's truncation='error' is this field's
        b.set("data.truncation", "error", "spec.data.overlong_prompts")
    elif how is not None and b.k.reads_truncation:
        if spec.rollout.mode == "async":
            # the agent loop tokenizes the raw chat again, uncut (experimental/agent_loop/single_turn_agent_loop.py)
            b.unsupported(
                "spec.data.overlong_prompts",
                f"{how} with the async rollout (its agent loop re-tokenizes the raw chat without data.truncation; "
                "use rollout.mode sync, or drop)",
                found=how,
            )
        else:
            b.set("data.truncation", TRUNCATION[how], "spec.data.overlong_prompts")
    elif how == "truncate_left" and b.k.agent_loop_truncates_left:
        b.notes.append(
            f"verl {b.version}'s agent loop cuts every prompt longer than rollout.prompt_length "
            "(data.max_prompt_length) from the left itself: spec.data.overlong_prompts truncate_left needs no key"
        )
    # check_capabilities refuses any other value for this version first

    off = tr.offload
    critic = spec.algorithm.needs_critic
    megatron = tr.backend == "megatron"
    # FSDP: fsdp_workers.py (to 0.7.1) and the FSDP engine (workers/config/engine.py FSDPEngineConfig) read
    # fsdp_config.param_offload / optimizer_offload; Megatron: megatron.param_offload / optimizer_offload
    # (megatron_workers.py, McoreEngineConfig) - the same names in every pinned version
    actor = f"{ARR}.actor.megatron" if megatron else f"{ARR}.actor.fsdp_config"
    ref = f"{ARR}.ref.megatron" if megatron else f"{ARR}.ref.fsdp_config"
    crit = "critic.megatron" if megatron else b.k.critic_fsdp
    settings = [
        (actor, "param_offload", off.actor.params, "actor.params"),
        (actor, "optimizer_offload", off.actor.optimizer, "actor.optimizer"),
        (ref, "param_offload", off.ref.params, "ref.params"),
    ]
    if critic:
        settings += [
            (crit, "param_offload", off.critic.params, "critic.params"),
            (crit, "optimizer_offload", off.critic.optimizer, "critic.optimizer"),
        ]
    for prefix, key, value, field_ in settings:
        if value is not None:
            b.set(f"{prefix}.{key}", value, f"spec.training.offload.{field_}")

    pack = tr.pack_sequences
    if pack is None:
        return
    decides = b.k.megatron_remove_padding if megatron else "model"
    if decides != "model":
        if decides == "actor":
            b.set(f"{ARR}.actor.megatron.use_remove_padding", pack, "spec.training.pack_sequences")
        if not pack and (decides == "always" or critic):
            b.unsupported(
                "spec.training.pack_sequences",
                "unpacked sequences with Megatron (its "
                + ("critic's forward" if decides == "actor" else "forward")
                + " always packs them before 0.8.0)",
                "0.8.0",
                found=False,
            )
        return
    if not pack and tr.parallel.sp > 1 and not megatron:
        # workers/config/actor.py: "When using sequence parallelism ... you must enable use_remove_padding"
        b.unsupported(
            "spec.training.pack_sequences",
            "Ulysses sequence parallelism without packed sequences",
            found=False,
        )
    # fsdp_workers.py / engine_workers.py read model.use_remove_padding for the actor, ref and critic
    b.set(f"{ARR}.model.use_remove_padding", pack, "spec.training.pack_sequences")
    if critic:
        b.set("critic.model.use_remove_padding", pack, "spec.training.pack_sequences")


#: key -> (the key that decides whether verl reads it, the values of that key under which it is read, why).
#: verl derives the warmup from the ratio only ``if num_warmup_steps < 0`` (workers/fsdp_workers.py, actor and
#: critic optimizers: verl 0.5.0 wheel lines 430 and 1152, 0.6.1 550 and 1426, 0.7.1 657 and 1585): a ratio
#: beside lr_warmup_steps >= 0 is dead. A key nobody sets keeps verl's default, -1 (the ratio is read).
READ_ONLY_WHEN: dict[str, tuple[str, Any, str]] = {
    f"{ARR}.actor.optim.lr_warmup_steps_ratio": (
        f"{ARR}.actor.optim.lr_warmup_steps",
        lambda steps: isinstance(steps, (int, float)) and steps < 0,
        "verl reads lr_warmup_steps_ratio only while lr_warmup_steps < 0",
    ),
    "critic.optim.lr_warmup_steps_ratio": (
        "critic.optim.lr_warmup_steps",
        lambda steps: isinstance(steps, (int, float)) and steps < 0,
        "verl reads lr_warmup_steps_ratio only while lr_warmup_steps < 0",
    ),
}


def _native_overrides(b: _Builder) -> list[str]:
    from rladapt.compat.schema._values import hydra_value

    items = hydra_passthrough(b.job, "verl")
    keys = [(i, item.split("=", 1)[0].lstrip("+~")) for i, item in enumerate(items)]
    b.notes.extend(override_notes("verl", keys, b.overrides))
    # the value each key ends with (Hydra applies overrides in order) and the spec field or item that set it
    final: dict[str, tuple[Any, str]] = {}
    for item in b.overrides:
        key, _, rhs = item.partition("=")
        final[key] = (hydra_value(rhs), b.origins.get(key, key))
    for i, item in enumerate(items):
        lhs, sep, rhs = item.partition("=")
        final[lhs.lstrip("+~")] = (hydra_value(rhs) if sep else None, f"spec.native.verl[{i}]")
    for i, (_, key) in enumerate(keys):
        rule = READ_ONLY_WHEN.get(key)
        if rule is None or items[i].startswith("~"):
            continue
        decider, read, why = rule
        if decider not in final:
            continue
        value, source = final[decider]
        if not read(value):
            b.problems.append(
                Problem(
                    f"spec.native.verl[{i}]",
                    f"would be silently ignored: {why}, and {source} sets {decider}={value!r}",
                    f"{key} without {source}, or {decider} < 0",
                    items[i],
                )
            )
    return items


def framework_default_keys(job: RLJob, version: str) -> dict[str, tuple[str, ...]]:
    """Spec field -> the verl keys it leaves to verl when unset (null default): ``render --explain`` lists them."""
    kl = job.spec.algorithm.kl
    megatron = job.spec.training.backend == "megatron"
    otc = f"{ARR}.actor.megatron.override_transformer_config"
    engine = f"{ARR}.actor.megatron" if megatron else f"{ARR}.actor.fsdp_config"
    return {
        "spec.data.seed": ("data.seed",),
        "spec.model.gradient_checkpointing": (
            (f"{otc}.recompute_granularity",) if megatron else (f"{ARR}.model.enable_gradient_checkpointing",)
        ),
        "spec.algorithm.kl.estimator": (
            (f"{ARR}.actor.kl_loss_type",) if kl.in_ == "loss" else ("algorithm.kl_penalty",)
        ),
        "spec.algorithm.entropy_coef": (f"{ARR}.actor.entropy_coeff",),
        "spec.algorithm.clip.dual": (f"{ARR}.actor.clip_ratio_c",),
        "spec.algorithm.normalize_by_group_std": (
            ("algorithm.norm_adv_by_std_in_grpo",)
            if job.spec.algorithm.name in GRPO_ADVANTAGE_ALGORITHMS
            else ()
        ),
        "spec.algorithm.loss_aggregation": (
            () if job.spec.algorithm.effective_loss_aggregation else (f"{ARR}.actor.loss_agg_mode",)
        ),
        "spec.training.optimizer.warmup_steps": (
            f"{ARR}.actor.optim.lr_warmup_steps",
            f"{ARR}.actor.optim.lr_warmup_steps_ratio",
        ),
        "spec.training.optimizer.weight_decay": (f"{ARR}.actor.optim.weight_decay",),
        "spec.training.optimizer.max_grad_norm": tuple(
            f"{ARR}.actor.{key}" for key in keys(version).grad_clip_keys(megatron)
        ),
        "spec.training.backend": (f"{ARR}.actor.strategy",),
        "spec.rollout.mode": (f"{ARR}.rollout.mode",),
        "spec.eval.before_training": ("trainer.val_before_train",),
        "spec.data.overlong_prompts": (
            ("data.filter_overlong_prompts", "data.truncation")
            if keys(version).reads_truncation
            else ("data.filter_overlong_prompts",)
        ),
        "spec.training.pack_sequences": (f"{ARR}.model.use_remove_padding",),
        "spec.training.offload.actor.params": (f"{engine}.param_offload",),
        "spec.training.offload.actor.optimizer": (f"{engine}.optimizer_offload",),
        **_budget_and_engine_defaults(job),
    }


def _budget_and_engine_defaults(job: RLJob) -> dict[str, tuple[str, ...]]:
    """The budget and engine-setting fields whose null leaves verl's own key (interpolated or its default)."""
    r = f"{ARR}.rollout"
    out: dict[str, tuple[str, ...]] = {
        "spec.rollout.engine_settings.enforce_eager": (f"{r}.enforce_eager",),
        "spec.rollout.engine_settings.chunked_prefill": (f"{r}.enable_chunked_prefill",),
        "spec.rollout.engine_settings.max_batched_tokens": (f"{r}.max_num_batched_tokens",),
        "spec.rollout.engine_settings.free_cache_between_phases": (f"{r}.free_cache_engine",),
        "spec.rollout.engine_settings.load_weights_from_disk": (f"{r}.load_format",),
        "spec.rollout.engine_settings.layered_weight_sync": (f"{r}.layered_summon",),
    }
    if job.spec.training.dynamic_batch.enabled:
        out["spec.training.budgets.old_log_prob.max_tokens_per_gpu"] = (
            f"{r}.log_prob_max_token_len_per_gpu",
        )
    if job.spec.algorithm.needs_critic:
        out["spec.training.budgets.critic_values.micro_batch_per_gpu"] = (
            "critic.forward_micro_batch_size_per_gpu",
        )
        if job.spec.training.dynamic_batch.enabled:
            out["spec.training.budgets.critic_values.max_tokens_per_gpu"] = (
                "critic.forward_max_token_len_per_gpu",
            )
    return out


def runtime_env(job: RLJob, events: str | None = None) -> dict[str, Any]:
    """Ray runtime_env: ship the working dir, never checkpoints, data, .git or weights (verl issue 696), nor the
    launch's own TensorBoard directory ``events``."""
    excludes: list[str] = ["/.git/", "/outputs/", "/wandb/", "/.cache/", "/.venv/", *WEIGHT_EXCLUDES]
    for path in [*job.spec.data.train, *job.spec.data.val, *job.spec.eval.datasets]:
        if not path.startswith(("/", "hdfs://", "s3://", "gs://")):
            excludes.append("/" + path.removeprefix("./"))
    # the launch's own TensorBoard directory is the job's output, like its checkpoints
    return working_dir_runtime_env(job, excludes, [events or own_tensorboard_dir(job)])
