"""verl's native launch -> RLJob spec fields: the inverse of ``rladapt.adapters.verl.translate`` for one version.

``fields`` reads the *effective* config (defaults included), so a spec field whose rladapt default differs from
verl's own default gets verl's value written out. Anything the spec cannot hold is left to the residual pass of
``rladapt.importing.importer`` (it goes to ``spec.native.verl``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rladapt.adapters.common import hydra_item
from rladapt.plugins.effective import DEFAULT, INTERPOLATED, Effective, same
from rladapt.plugins.snapshots import snapshot
from rladapt.primitives.errors import UsageError, quote
from rladapt.primitives.spec import ALGORITHM_LOSS_AGGREGATION, CRITIC_ALGORITHMS, GRPO_ADVANTAGE_ALGORITHMS

from .effective import verl_effective
from .entrypoints import FULLY_ASYNC_MODULE, ONE_STEP_OFF_MODULE
from .ownconfig import config_file, read_own_config
from .patches import TRAINER_SEARCHPATH as PATCHED_SEARCHPATH
from .translate import (
    ADV_ESTIMATOR,
    ARR,
    CONFIG_DIRS,
    CONFIG_NAMES,
    KL_TYPE,
    TENSORBOARD_DIR,
    TRUNCATION,
    critic_warmup_steps,
    hydra_value,
)
from .validate import Invocation, engine_form, parse_argv
from .versions import keys

FRAMEWORK = "verl"
EXAMPLE = "python3 -m verl.trainer.main_ppo KEY=VALUE ..."
#: ``fields`` takes the sources: a key the launch sets to verl's own value is still a setting of the launch
FIELDS_TAKE_SOURCES = True
#: Variables of the launch's environment a spec field expresses: the folder verl's TensorBoard logger writes to
#: (utils/tracking.py _TensorboardAdapter, 0.5.0 to 0.9.1), which translate sets from spec.logging.dir
ENV_FIELDS = {TENSORBOARD_DIR: "spec.logging.dir"}
_ESTIMATOR_NAME = {v: k for k, v in ADV_ESTIMATOR.items() if k not in ("dapo", "gspo")}
_KL_NAME = {v: k for k, v in KL_TYPE.items()}


def match(argv: list[str]) -> int | None:
    """Index after ``-m <verl entry module>`` (the first override), or None."""
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] in CONFIG_NAMES:
            return i + 2
    return None


def effective(argv: list[str], version: str) -> Effective:
    """The effective config of ``argv`` (the whole command, from the interpreter on); a key's source is the
    override that set it. A launch's own config file (``--config-path``) is read and composed (``ownconfig``):
    the packaged config it builds on, its own values, then the overrides."""
    given = parse_argv(argv)
    _refuse_config_path(given)
    snap = snapshot(FRAMEWORK, version)
    mine = None
    if given.config_path is not None:
        mine = read_own_config(
            config_file(given.config_path, given.config_name), packaged_configs(given.module, snap)
        )
        # the file's packaged config decides the scope, as naming that config on the command line would
        given = Invocation(given.module, mine.base, given.overrides)
    elif given.module in CONFIG_NAMES and given.config_name not in snap.scopes:
        folder = "verl/" + CONFIG_DIRS[given.module]
        raise UsageError(
            f"--config-name {quote(given.config_name)}: verl {version} has no config {given.config_name!r} in "
            f"its own folder ({folder}, which a relative --config-path such as 'config' names: Hydra joins it to "
            f"the entry module's folder); expected one of {', '.join(packaged_configs(given.module, snap))}, or a "
            "folder of the launch's own given as an absolute --config-path"
        )
    inv = engine_form(given, version)
    _refuse_empty_numbers(inv, snap, version)
    overrides, sources = list(inv.overrides), list(inv.overrides)
    if (
        inv is not given
    ):  # the deprecated ppo_megatron_trainer (0.8.0+): its own override names it as the source
        sources[0] = f"{DEFAULT} ({given.config_name}.yaml)"
    if inv.module in (ONE_STEP_OFF_MODULE, FULLY_ASYNC_MODULE):
        own = _EXPERIMENTAL_DEFAULTS.get((version, inv.config_name), {})
        # The experimental configs find ppo_trainer through their hydra.searchpath, some at file://verl/trainer/
        # config (relative to the working directory: a verl checkout; experimental/*/config/*.yaml, 0.8.0 and
        # 0.9.1), which rladapt's patch points at the installed package instead. Either finds the same version's
        # ppo_trainer.yaml, so the run is the same: a launch that names no searchpath gets the patch's.
        first = [PATCHED_SEARCHPATH, *(f"{key}={hydra_value(value)}" for key, value in own.items())]
        overrides = [*first, *overrides]
        sources = [*(f"{DEFAULT} ({inv.config_name}.yaml)" for _ in first), *sources]
    eff = verl_effective(
        version,
        inv.scope(snap.scopes),
        overrides,
        sources,
        snap,
        own=mine.values if mine else None,
        own_source=mine.file if mine else "",
    )
    values = {"(entrypoint)": inv.module, "(config-name)": inv.config_name, **eff.values}
    origin = dict(eff.sources)
    if mine is not None:
        values["(config)"] = mine.file
        origin["(config)"] = "--config-path/--config-name"
        origin["(config-name)"] = f"defaults of {mine.file}"
    return Effective(eff.framework, eff.version, values, origin)


def packaged_configs(module: str, snap: Any) -> tuple[str, ...]:
    """The config names of the entry module's packaged folder that a launch's own config may build on."""
    names = CONFIG_NAMES.get(module, ())
    return tuple(n for n in names if n in snap.scopes)


def _refuse_empty_numbers(inv: Invocation, snap: Any, version: str) -> None:
    """A launch that leaves a number empty (``trainer.n_gpus_per_node=$ARNOLD_WORKER_GPU`` with the variable unset):
    Hydra composes ``''`` (its grammar's empty value) and verl's loading takes it, but verl then computes with it
    (verl 0.6.1 trainer/main_ppo.py ``[config.trainer.n_gpus_per_node] * config.trainer.nnodes``; ``range``,
    ``>``, ``%`` elsewhere), so the run fails in verl itself: an error naming the item (exit 2), never a spec that
    holds a run which cannot start. An empty bool is a run (``validate.loader_takes``)."""
    scope = inv.scope(snap.scopes)
    for item in inv.overrides:
        lhs, sep, rhs = item.partition("=")
        key = lhs.strip().lstrip("+~")
        if not sep or rhs.strip() or lhs.startswith("~"):
            continue
        found = snap.lookup(key, inv.key_scope(key, snap.scopes, scope))
        names = set(found[1].type.split("|")) if found is not None and found[0] == key else set()
        if names & {"int", "float"} and not names & {"bool", "str", "any"}:
            raise UsageError(
                f"{item}: the launch leaves {key} empty (a variable its caller did not set?); verl {version} "
                "composes it as '' and computes with it as a number, so the run fails in verl itself: give the "
                "value (--set VAR=N for the variable that feeds it)"
            )


def _refuse_config_path(given: Invocation) -> None:
    """A launch composing a config folder of its own (``--config-path DIR`` other than the entry module's own,
    Hydra's ``--config-dir``): an error naming the item (exit 2), never a spec that drops the folder or holds the
    flag as a native item."""
    for i, item in enumerate(given.overrides):
        flag, sep, value = item.partition("=")
        if flag in ("--config-dir", "-cd"):
            added = value if sep else (given.overrides[i + 1] if i + 1 < len(given.overrides) else "")
            raise UsageError(
                f"{flag} {quote(added)}: the launch adds a config folder to Hydra's search path; rladapt "
                "composes verl's packaged configs or one folder of the launch's own (--config-path), so it "
                "cannot import or compare this launch: keep running it natively, or use --config-path"
            )
    folder = given.config_path
    if folder is not None and not folder.startswith("/"):
        raise UsageError(
            f"--config-path {quote(folder)}: Hydra resolves a relative config path against the entry module's "
            f"folder inside the installed verl ({given.module.rpartition('.')[0].replace('.', '/')}/), where "
            "this folder is not verl's own (hydra/_internal/utils.py compute_search_path_dir): give the launch's "
            "config folder as an absolute path"
        )


#: (version, config name) -> the values an experimental config gives keys of ppo_trainer that it includes (its
#: ``_self_`` after ``defaults: [ppo_trainer]``), which the schema snapshot keeps at ppo_trainer's defaults.
#: From verl/experimental/one_step_off_policy/config/one_step_off_ppo_trainer.yaml and
#: verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml, 0.8.0 and 0.9.1 (the test composes
#: each with verl's own Hydra and compares).
_ONE_STEP_OFF_OWN: dict[str, Any] = {
    f"{ARR}.rollout.free_cache_engine": False,
    f"{ARR}.rollout.calculate_log_probs": True,
    f"{ARR}.rollout.checkpoint_engine.backend": "nccl",
    "algorithm.rollout_correction.bypass_mode": True,
}
_FULLY_ASYNC_OWN: dict[str, Any] = {
    f"{ARR}.rollout.calculate_log_probs": True,
    f"{ARR}.rollout.checkpoint_engine.backend": "nccl",
    "algorithm.rollout_correction.bypass_mode": True,
}
#: the Megatron variants (``*_megatron_trainer.yaml``, on ppo_megatron_trainer) set the same values
_EXPERIMENTAL_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    (version, f"{trainer}{backend}_trainer"): own
    for version in ("0.8.0", "0.9.1")
    for backend in ("", "_megatron")
    for trainer, own in (
        ("one_step_off_ppo", _ONE_STEP_OFF_OWN),
        # data.gen_batch_size: 0.9.1's snapshot has ppo_trainer's null (0.8.0's has the fully-async config's 1)
        (
            "fully_async_ppo",
            {**_FULLY_ASYNC_OWN, **({"data.gen_batch_size": 1} if version == "0.9.1" else {})},
        ),
    )
}


def unconsumed(argv: list[str], target: Effective, derived: Effective) -> list[str]:
    """The launch's overrides a rendered spec does not reproduce, verbatim and in order."""
    out = []
    for item in parse_argv(argv).overrides:
        parsed = hydra_item(item, "launch")
        reproduced = (
            parsed.op in ("set", "force", "add")
            and not derived.source(parsed.key).startswith((DEFAULT, INTERPOLATED))
            and parsed.key in derived.values
            and same(derived.values[parsed.key], target.values.get(parsed.key))
        )
        if not reproduced:
            # ``+key`` adds a key the launch's config lacks; where the render already writes that key (a spec
            # field that verl's config does not declare, e.g. the overlong buffer's ``log``), Hydra refuses a
            # second ``+`` ("Could not append to config"): ``++`` is the same add-or-set of the same value
            if parsed.op == "add" and parsed.key in derived.values and not item.startswith("++"):
                item = "+" + item
            out.append(item)
    return out


def fixups(target: Effective, got: Effective) -> list[str]:
    """Overrides that turn the effective config ``got`` into ``target`` (defaults rladapt changed, keys it adds)."""
    out = []
    for key in dict.fromkeys([*target.values, *got.values]):
        if key.startswith("("):
            continue
        if key not in target.values:
            out.append(f"~{key}")
        elif key not in got.values or not same(target.values[key], got.values[key]):
            out.append(f"{'' if key in got.values else '+'}{key}={hydra_value(target.values[key])}")
    return out


def reward_standin(values: dict[str, Any]) -> dict[str, Any]:
    """spec.reward when the launch names none: verl then scores with its built-in rule-based
    ``default_compute_score``, chosen by each sample's data_source (verl/workers/reward_manager/naive.py and
    verl/utils/reward_score/__init__.py, 0.5.0 to 0.9.1): the spec's ``builtin: by_data_source``, which renders
    no custom_reward_function."""
    return {"builtin": {"name": "by_data_source"}}


def _grad_clip(t: dict[str, Any], version: str, role: str, megatron: bool) -> float | None:
    """The role's gradient clip when every key this version reads agrees and it is not verl's default."""
    names = [f"{role}.{key}" for key in keys(version).grad_clip_keys(megatron)]
    values = {float(t[n]) for n in names if isinstance(t.get(n), (int, float)) and not isinstance(t[n], bool)}
    if len(values) != 1:
        return None
    value = values.pop()
    return None if same(value, snapshot("verl", version).default(names[0])) else value


def _set_by_launch(sources: Mapping[str, str], key: str) -> bool:
    """Whether the launch itself sets ``key`` (an override or its own config file), not a default."""
    return key in sources and not sources[key].startswith((DEFAULT, INTERPOLATED))


def _data_memory(
    t: dict[str, Any], version: str, megatron: bool, out: dict[str, Any], sources: Mapping[str, str]
) -> None:
    """Overlong prompts, CPU offload and packed sequences: the keys ``translate._data_memory`` writes. A value
    the launch sets explicitly becomes the field even where it is verl's own (``param_offload=False``): the
    render then writes it from the field, and nothing of it is left to spec.native."""
    k = keys(version)
    if t.get("data.filter_overlong_prompts") is True:
        out["spec.data.overlong_prompts"] = "drop"
    elif k.reads_truncation and t.get(f"{ARR}.rollout.mode") != "async":
        side = t.get("data.truncation")
        how = {v: name for name, v in TRUNCATION.items()}.get(str(side))
        if how is not None:
            out["spec.data.overlong_prompts"] = how
    engine = "megatron" if megatron else "fsdp_config"
    roles = [("actor", f"{ARR}.actor.{engine}"), ("ref", f"{ARR}.ref.{engine}")]
    if t.get("algorithm.adv_estimator") == "gae":
        roles.append(("critic", "critic.megatron" if megatron else k.critic_fsdp))
    for role, prefix in roles:
        parts = [("params", "param_offload")] + (
            [] if role == "ref" else [("optimizer", "optimizer_offload")]
        )
        for part, key in parts:
            # verl's own is false everywhere: a role kept in CPU memory, or one the launch keeps on the GPU
            # explicitly, becomes a field
            value = t.get(f"{prefix}.{key}")
            if value is True or (value is False and _set_by_launch(sources, f"{prefix}.{key}")):
                out[f"spec.training.offload.{role}.{part}"] = value
    if megatron and k.megatron_remove_padding != "model":
        return  # packed by the Megatron workers themselves, or by the actor's own key (left to native)
    key = f"{ARR}.model.use_remove_padding"
    pack = t.get(key)
    if isinstance(pack, bool) and (
        _set_by_launch(sources, key) or not same(pack, snapshot("verl", version).default(key))
    ):
        out["spec.training.pack_sequences"] = pack


def fields(t: dict[str, Any], version: str, sources: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Spec field path -> value, from the effective config ``t`` (only keys it has; None values are skipped);
    ``sources`` (key -> where its value came from) tells the launch's own settings from verl's defaults."""
    k = keys(version)
    out: dict[str, Any] = {}

    def put(path: str, key: str, convert: Any = None) -> None:
        if key in t and t[key] is not None:
            out[path] = convert(t[key]) if convert else t[key]

    def as_list(value: Any) -> list[Any]:
        return list(value) if isinstance(value, (list, tuple)) else [value]

    # the Megatron config (before 0.8.0), or ppo_trainer with model_engine=megatron (0.8.0+, translate.engine_choice)
    megatron = t.get("(config-name)") == CONFIG_NAMES.get(str(t.get("(entrypoint)")), ("", ""))[1]
    megatron = megatron or t.get("model_engine") == "megatron"
    put("spec.runtime.config", "(config)")
    put("spec.data.train", "data.train_files", as_list)
    put("spec.data.val", "data.val_files", as_list)
    put("spec.data.prompt_key", "data.prompt_key")
    put("spec.data.max_prompt_length", "data.max_prompt_length")
    put("spec.data.max_response_length", "data.max_response_length")
    put("spec.data.shuffle", "data.shuffle")
    if k.has_data_seed:
        put("spec.data.seed", "data.seed")
    put("spec.model.path", f"{ARR}.model.path")
    put("spec.model.tokenizer", f"{ARR}.model.tokenizer_path" if k.has_tokenizer_path else "data.tokenizer")
    if not megatron:
        put("spec.model.gradient_checkpointing", f"{ARR}.model.enable_gradient_checkpointing")
    put("spec.model.dtype", f"{ARR}.rollout.dtype")
    rank = t.get(f"{ARR}.model.lora_rank")
    if isinstance(rank, int) and rank > 0:
        out["spec.model.lora.rank"] = rank
        put("spec.model.lora.alpha", f"{ARR}.model.lora_alpha")
        put("spec.model.lora.target_modules", f"{ARR}.model.target_modules")

    est = t.get("algorithm.adv_estimator")
    name = _ESTIMATOR_NAME.get(str(est))
    if name == "grpo" and t.get(f"{ARR}.actor.policy_loss.loss_mode") == "gspo":
        name = "gspo"
    elif name == "grpo" and t.get("algorithm.filter_groups.enable") is True:
        name = "dapo"
    if name is not None:
        out["spec.algorithm.name"] = name
    put("spec.algorithm.gamma", "algorithm.gamma")
    put("spec.algorithm.lambda", "algorithm.lam")
    if t.get(f"{ARR}.actor.use_kl_loss") is True:
        out["spec.algorithm.kl.in"] = "loss"
        put("spec.algorithm.kl.coef", f"{ARR}.actor.kl_loss_coef")
        put("spec.algorithm.kl.estimator", f"{ARR}.actor.kl_loss_type", lambda v: _KL_NAME.get(v, v))
    elif t.get("algorithm.use_kl_in_reward") is True:
        out["spec.algorithm.kl.in"] = "reward"
        put("spec.algorithm.kl.coef", "algorithm.kl_ctrl.kl_coef")
        put("spec.algorithm.kl.estimator", "algorithm.kl_penalty", lambda v: _KL_NAME.get(v, v))
    put("spec.algorithm.clip.low", f"{ARR}.actor.clip_ratio_low")
    put("spec.algorithm.clip.high", f"{ARR}.actor.clip_ratio_high")
    _algorithm_variants(t, name, out, sources)
    _off_policy_correction(t, out)
    put("spec.algorithm.entropy_coef", f"{ARR}.actor.entropy_coeff")
    put("spec.algorithm.ppo_epochs", f"{ARR}.actor.ppo_epochs")
    put("spec.algorithm.group_size", f"{ARR}.rollout.n")

    put("spec.training.global_batch", "data.train_batch_size")
    put("spec.training.mini_batch", f"{ARR}.actor.ppo_mini_batch_size")
    put("spec.training.micro_batch_per_gpu", f"{ARR}.actor.ppo_micro_batch_size_per_gpu")
    put("spec.training.dynamic_batch.enabled", f"{ARR}.actor.use_dynamic_bsz")
    put("spec.training.dynamic_batch.max_tokens_per_gpu", f"{ARR}.actor.ppo_max_token_len_per_gpu")
    put("spec.training.optimizer.lr", f"{ARR}.actor.optim.lr")
    warmup = t.get(f"{ARR}.actor.optim.lr_warmup_steps")
    if isinstance(warmup, int) and warmup >= 0:
        out["spec.training.optimizer.warmup_steps"] = warmup
    put("spec.training.optimizer.weight_decay", f"{ARR}.actor.optim.weight_decay")
    ratio = t.get(f"{ARR}.actor.optim.lr_warmup_steps_ratio")
    # verl reads the ratio only while lr_warmup_steps < 0; a zero ratio is verl's own (no warmup)
    if "spec.training.optimizer.warmup_steps" not in out and isinstance(ratio, (int, float)) and ratio > 0:
        out["spec.training.optimizer.warmup_ratio"] = float(ratio)
    clip = _grad_clip(t, version, f"{ARR}.actor", megatron)
    if clip is not None:
        out["spec.training.optimizer.max_grad_norm"] = clip
    _data_memory(t, version, megatron, out, sources or {})
    if megatron:
        out["spec.training.backend"] = "megatron"
        put("spec.training.parallel.tp", f"{ARR}.actor.megatron.tensor_model_parallel_size")
        put("spec.training.parallel.pp", f"{ARR}.actor.megatron.pipeline_model_parallel_size")
        put("spec.training.parallel.cp", f"{ARR}.actor.megatron.context_parallel_size")
        granularity = t.get(f"{ARR}.actor.megatron.override_transformer_config.recompute_granularity")
        out["spec.model.gradient_checkpointing"] = granularity == "full"
    else:
        put("spec.training.backend", f"{ARR}.actor.strategy")
        put("spec.training.parallel.sp", f"{ARR}.actor.ulysses_sequence_parallel_size")

    r = f"{ARR}.rollout"
    put("spec.rollout.engine", f"{r}.name")
    put("spec.rollout.mode", f"{r}.mode")
    put("spec.rollout.tensor_parallel", f"{r}.tensor_model_parallel_size")
    put("spec.rollout.gpu_memory_utilization", f"{r}.gpu_memory_utilization")
    put("spec.rollout.temperature", f"{r}.temperature")
    put("spec.rollout.top_p", f"{r}.top_p")
    put("spec.rollout.top_k", f"{r}.top_k")
    if t.get(f"{r}.response_length") != t.get("data.max_response_length"):
        put("spec.rollout.max_tokens", f"{r}.response_length")
    put("spec.rollout.val.n", f"{r}.val_kwargs.n")
    put("spec.rollout.val.temperature", f"{r}.val_kwargs.temperature")
    put("spec.rollout.val.top_p", f"{r}.val_kwargs.top_p")

    crf = k.custom_reward_function
    put("spec.reward.function.path", f"{crf}.path")
    if "spec.reward.function.path" in out:
        put("spec.reward.function.name", f"{crf}.name")
    rm = "reward.reward_model" if k.reward_tree else "reward_model"
    if t.get(f"{rm}.enable") is True:
        put("spec.reward.model.path", f"{rm}.model_path" if k.reward_tree else f"{rm}.model.path")
        if not k.reward_tree:
            put("spec.reward.model.micro_batch_per_gpu", f"{rm}.micro_batch_size_per_gpu")

    if "spec.algorithm.name" in out and out["spec.algorithm.name"] == "ppo":
        critic = t.get("critic.model.path")
        if critic is not None and critic != t.get(f"{ARR}.model.path"):
            out["spec.model.critic_path"] = critic

    _critic_warmup(t, name, out, sources)
    steps = t.get("trainer.total_training_steps")
    if isinstance(steps, int) and steps > 0:
        out["spec.training.steps"] = steps
        # the fit loop ends at whichever of total_epochs / total_training_steps comes first (trainer/ppo/
        # ray_trainer.py RayPPOTrainer.fit, 0.5.0 to 0.9.1), the spec's rule for steps + epochs: both are fields,
        # verl's own total_epochs too when the launch leaves it (it still caps the run; as a field it stays a cap
        # on another framework, where a native item would be dropped). The fully-async trainer counts prompts
        # (below).
        epochs = _count(t.get("trainer.total_epochs"))
        if epochs is not None and t.get("(entrypoint)") != FULLY_ASYNC_MODULE:
            out["spec.training.epochs"] = epochs
    else:
        put("spec.training.epochs", "trainer.total_epochs")
    save = t.get("trainer.save_freq")
    if isinstance(save, int) and save > 0:
        out["spec.checkpoint.every_steps"] = save
    put("spec.checkpoint.dir", "trainer.default_local_dir")
    resume = {"auto": "auto", "disable": "never", "resume_path": "path"}.get(
        str(t.get("trainer.resume_mode"))
    )
    if resume:
        out["spec.checkpoint.resume"] = resume
        if resume == "path":
            put("spec.checkpoint.resume_path", "trainer.resume_from_path")
    put("spec.checkpoint.keep_last", "trainer.max_actor_ckpt_to_keep")
    contents = t.get(f"{ARR}.actor.checkpoint.save_contents")
    if isinstance(contents, list):
        out["spec.checkpoint.save_hf"] = "hf_model" in contents
    if isinstance(save, int) and save <= 0:
        # verl saves only while save_freq > 0 (its default is -1): retention and contents then do nothing
        out["spec.checkpoint.enabled"] = False
        for path in ("spec.checkpoint.keep_last", "spec.checkpoint.save_hf"):
            out.pop(path, None)
    _budgets(t, version, out, sources)
    _engine_settings(t, version, out, sources)
    _multi_turn(t, version, out)
    _overlong_penalty(t, version, out)
    test = t.get("trainer.test_freq")
    if isinstance(test, int) and test > 0:
        out["spec.eval.every_steps"] = test
    put("spec.eval.before_training", "trainer.val_before_train")
    put("spec.logging.backends", "trainer.logger", as_list)
    put("spec.logging.project", "trainer.project_name")
    if sources is None or _set_by_launch(sources, "trainer.log_val_generations"):
        put("spec.logging.val_generations", "trainer.log_val_generations", _count_or_zero)
    put("spec.logging.experiment", "trainer.experiment_name")
    nodes, gpus = t.get("trainer.nnodes"), t.get("trainer.n_gpus_per_node")
    if isinstance(nodes, int) and isinstance(gpus, int):
        out["(placement)"] = (nodes, gpus)
    _async_trainer(t, version, out)
    return out


def _critic_warmup(
    t: dict[str, Any], name: str | None, out: dict[str, Any], sources: Mapping[str, str] | None
) -> None:
    """``trainer.critic_warmup`` as the critic-only steps, where the field says the same (translate.critic_warmup):
    1 (no critic-only step, rendered as 0) and a hold-back of an algorithm without a critic (the actor idles while
    nothing trains) stay native items."""
    value = t.get("trainer.critic_warmup")
    if sources is not None and not _set_by_launch(sources, "trainer.critic_warmup"):
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value == 1:
        return
    if value > 1 and (name not in CRITIC_ALGORITHMS or t.get("(entrypoint)") == FULLY_ASYNC_MODULE):
        # the fully-async trainer counts its own steps (recipe/fully_async_policy/ray_trainer.py, 0.6.1)
        return
    out["spec.training.critic_warmup_steps"] = critic_warmup_steps(value)


def _count_or_zero(value: Any) -> int | None:
    """``value`` when it is an int >= 0 (not a bool), else None (left to a native item)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _count(value: Any) -> int | None:
    """``value`` when it is a positive int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _async_trainer(t: dict[str, Any], version: str, out: dict[str, Any]) -> None:
    """The one-step-off and fully-async trainers (the inverse of ``translate._placement`` and ``_batches`` for
    them): the rollout's own pool, the weight-sync settings, and the fully-async batch of require_batches mini
    batches. Anything else about them (another checkpoint engine, dynamic resource scheduling) stays native."""
    module = t.get("(entrypoint)")
    if module not in (ONE_STEP_OFF_MODULE, FULLY_ASYNC_MODULE) or not keys(version).has_rollout_pool:
        return
    # both entry modules copy rollout.nnodes / n_gpus_per_node into the rollout worker group's
    # (experimental/one_step_off_policy/main_ppo.py, experimental/fully_async_policy/fully_async_main.py,
    # 0.8.0 and 0.9.1); 0.9.1's rollout.nnodes=0 (rollout on the trainer's GPUs only) has no separate pool
    nodes, gpus = _count(t.get("rollout.nnodes")), _count(t.get("rollout.n_gpus_per_node"))
    if nodes is None or gpus is None:
        return
    out["(placement.separate)"] = {"rollout": (nodes, gpus)}
    if module == ONE_STEP_OFF_MODULE:
        # translate picks this trainer for max_staleness 1 and a sync every step: it generates the next batch
        # while the current one trains
        out["spec.weight_sync.max_staleness"] = 1
        return
    a = "async_training"
    # read by fully_async_trainer.py (trigger_parameter_sync_step, require_batches) and fully_async_rollouter.py
    # (staleness_threshold, require_batches; max_required_samples = required x (threshold + 1) x sync steps),
    # experimental/fully_async_policy, 0.8.0 and 0.9.1
    every = _count(t.get(f"{a}.trigger_parameter_sync_step"))
    threshold = t.get(f"{a}.staleness_threshold")
    if (
        every is None
        or not isinstance(threshold, (int, float))
        or isinstance(threshold, bool)
        or threshold < 0
    ):
        return  # verl's rollouter asserts both (>= 1, >= 0): such a launch does not run
    # the fully-async trainer is translate's choice for max_staleness >= 2 or every_steps >= 2, and
    # every_steps <= max_staleness; the threshold is max_staleness - 1 unless run_ahead_fraction says otherwise
    staleness = max(every, math.ceil(threshold) + 1, 2)
    out["spec.weight_sync.every_steps"] = every
    out["spec.weight_sync.max_staleness"] = staleness
    if not same(float(threshold), float(staleness - 1)):
        out["spec.weight_sync.run_ahead_fraction"] = float(threshold)
    partial = t.get(f"{a}.partial_rollout")
    # verl's own is true (fully_async_ppo_trainer.yaml, 0.8.0 and 0.9.1): only an explicit false is a field
    if partial is False:
        out["spec.weight_sync.partial_rollout"] = False
    # the rollouter asserts data.train_batch_size == 0; a step trains ppo_mini_batch_size x require_batches
    # prompts (fully_async_rollouter.py / fully_async_trainer.py required_samples, 0.8.0 and 0.9.1)
    mini, batches = _count(t.get(f"{ARR}.actor.ppo_mini_batch_size")), _count(t.get(f"{a}.require_batches"))
    if t.get("data.train_batch_size") != 0 or mini is None or batches is None:
        out.pop("spec.training.global_batch", None)
        return
    out["spec.training.global_batch"] = mini * batches
    # The fully-async trainer reads no trainer.total_training_steps: the run ends when the rollouter has
    # generated rollout.total_rollout_steps prompts, capped by trainer.total_epochs passes over the data, and
    # each step trains on global_batch of them (fully_async_rollouter.py total_rollout_steps, 0.8.0 and 0.9.1):
    # whichever limit comes first, the spec's steps + epochs. translate writes steps x global_batch there, so a
    # whole number of steps is the launch's spec.training.steps, and total_epochs its spec.training.epochs;
    # trainer.total_training_steps stays as written (a native item).
    prompts = _count(t.get("rollout.total_rollout_steps"))
    if prompts is not None and prompts % (mini * batches) == 0:
        out["spec.training.steps"] = prompts // (mini * batches)
        epochs = _count(t.get("trainer.total_epochs"))
        if epochs is not None:
            out["spec.training.epochs"] = epochs
        else:
            out.pop("spec.training.epochs", None)


def _differs(t: dict[str, Any], version: str, key: str) -> bool:
    """Whether the effective value of ``key`` is set and not verl's own default of this version."""
    return key in t and t[key] is not None and not same(t[key], snapshot("verl", version).default(key))


def _budgets(
    t: dict[str, Any], version: str, out: dict[str, Any], sources: Mapping[str, str] | None = None
) -> None:
    """``spec.training.budgets``: a pass's micro batch or token cap where it is not what rladapt would render
    for it unset (the actor's, old_log_prob's for the reference, the update's for the critic's values, twice
    the actor's cap for the critic update)."""
    r, ref = f"{ARR}.rollout", f"{ARR}.ref"
    dynamic = t.get(f"{ARR}.actor.use_dynamic_bsz") is True
    micro = t.get(f"{ARR}.actor.ppo_micro_batch_size_per_gpu")
    tokens = t.get(f"{ARR}.actor.ppo_max_token_len_per_gpu")

    def own(path: str, key: str, follows: Any) -> Any:
        value = t.get(key)
        # a pass's own value the launch writes out, even where it is what the pass follows anyway: the field
        # renders it back, nothing is left to spec.native
        given = _set_by_launch(sources or {}, key)
        if isinstance(value, int) and not isinstance(value, bool) and (value != follows or given):
            out[f"spec.training.budgets.{path}"] = value
        return value if isinstance(value, int) else follows

    old_micro = own("old_log_prob.micro_batch_per_gpu", f"{r}.log_prob_micro_batch_size_per_gpu", micro)
    own("ref_log_prob.micro_batch_per_gpu", f"{ref}.log_prob_micro_batch_size_per_gpu", old_micro)
    if dynamic:
        old_tokens = own("old_log_prob.max_tokens_per_gpu", f"{r}.log_prob_max_token_len_per_gpu", tokens)
        own("ref_log_prob.max_tokens_per_gpu", f"{ref}.log_prob_max_token_len_per_gpu", old_tokens)
    if out.get("spec.algorithm.name") == "ppo":
        update = own("critic_update.micro_batch_per_gpu", "critic.ppo_micro_batch_size_per_gpu", micro)
        own("critic_values.micro_batch_per_gpu", "critic.forward_micro_batch_size_per_gpu", update)
        if dynamic and isinstance(tokens, int):
            cap = own("critic_update.max_tokens_per_gpu", "critic.ppo_max_token_len_per_gpu", 2 * tokens)
            own("critic_values.max_tokens_per_gpu", "critic.forward_max_token_len_per_gpu", cap)


#: ``actor_rollout_ref.rollout`` key -> ``spec.rollout.engine_settings`` field (the inverse of translate's).
_ENGINE_KEYS = {
    "enforce_eager": "enforce_eager",
    "enable_chunked_prefill": "chunked_prefill",
    "max_num_batched_tokens": "max_batched_tokens",
    "free_cache_engine": "free_cache_between_phases",
    "layered_summon": "layered_weight_sync",
}


def _engine_settings(
    t: dict[str, Any], version: str, out: dict[str, Any], sources: Mapping[str, str] | None = None
) -> None:
    """Engine settings where they differ from verl's own, or where the launch sets them itself (verl's own
    ``enable_chunked_prefill=True`` written out: the field renders it back, nothing is left to spec.native);
    never for the HF rollout, which has no engine (``translate._engine_settings`` refuses them there)."""
    r = f"{ARR}.rollout"
    for key, name in _ENGINE_KEYS.items():
        own = t.get(f"{r}.name") != "hf" and _set_by_launch(sources or {}, f"{r}.{key}")
        if _differs(t, version, f"{r}.{key}") or (own and t.get(f"{r}.{key}") is not None):
            out[f"spec.rollout.engine_settings.{name}"] = t[f"{r}.{key}"]
    # only the format rladapt renders for true; any other loader stays a native override
    if t.get(f"{r}.load_format") == "safetensors":
        out["spec.rollout.engine_settings.load_weights_from_disk"] = True


#: ``actor_rollout_ref.rollout.multi_turn`` key -> ``spec.rollout.multi_turn`` field (the inverse of translate's).
_MULTI_TURN_KEYS = {
    "max_assistant_turns": "max_assistant_turns",
    "max_user_turns": "max_user_turns",
    "tool_config_path": "tool_config",
    "interaction_config_path": "interaction_config",
}


def _multi_turn(t: dict[str, Any], version: str, out: dict[str, Any]) -> None:
    """``multi_turn.enable`` and the keys the multi-turn rollouts read; a sample's agent loop other than
    translate's ``tool_agent`` default stays a native override (the importer's fix-ups)."""
    mt = f"{ARR}.rollout.multi_turn"
    if t.get(f"{mt}.enable") is not True:
        return
    out["spec.rollout.multi_turn"] = {}  # before its fields: the importer nests them into this mapping
    for key, name in _MULTI_TURN_KEYS.items():
        if t.get(f"{mt}.{key}") is not None:
            out[f"spec.rollout.multi_turn.{name}"] = t[f"{mt}.{key}"]
    if _differs(t, version, f"{mt}.format"):
        out["spec.rollout.multi_turn.tool_call_format"] = t[f"{mt}.format"]


def _overlong_penalty(t: dict[str, Any], version: str, out: dict[str, Any]) -> None:
    """The dapo reward manager with its overlong buffer enabled (the keys ``translate._overlong_penalty`` writes),
    where its max_resp_len is the response budget the spec measures the buffer from; any other combination
    (another max_resp_len, the buffer disabled, the dapo manager alone) stays native."""
    k = keys(version)
    kw = f"{k.reward_kwargs}.overlong_buffer_cfg"
    if t.get(k.reward_manager) != "dapo" or t.get(f"{kw}.enable") is not True:
        return
    length, factor = t.get(f"{kw}.len"), t.get(f"{kw}.penalty_factor")
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        return
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 0:
        return
    if t.get(f"{k.reward_kwargs}.max_resp_len") != t.get(f"{ARR}.rollout.response_length"):
        return
    out["spec.reward.overlong_penalty"] = {"buffer_tokens": length, "max_penalty": float(factor)}


#: verl's own values of the keys below (trainer/config: clip_ratio_c 3.0, loss_agg_mode token-mean,
#: norm_adv_by_std_in_grpo true, every pinned version): a launch that keeps them imports no field.
_DUAL_CLIP_DEFAULT = 3.0
_LOSS_AGG = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")


def _algorithm_variants(
    t: dict[str, Any], name: str | None, out: dict[str, Any], sources: Mapping[str, str] | None = None
) -> None:
    """The dual clip, the std normalisation and the loss aggregation where they differ from verl's own (and,
    for the aggregation, from the algorithm's own, or where the launch sets it itself: ``loss_agg_mode=
    token-mean`` written out renders back from the field); a mode the spec has no name for stays native."""
    dual = t.get(f"{ARR}.actor.clip_ratio_c")
    if isinstance(dual, (int, float)) and not isinstance(dual, bool) and dual != _DUAL_CLIP_DEFAULT:
        out["spec.algorithm.clip.dual"] = float(dual)
    if name in GRPO_ADVANTAGE_ALGORITHMS and t.get("algorithm.norm_adv_by_std_in_grpo") is False:
        out["spec.algorithm.normalize_by_group_std"] = False
    if name in ("rloo", "gspo", "reinforce_pp_baseline") and t.get("algorithm.filter_groups.enable") is True:
        out["spec.algorithm.dynamic_sampling"] = True  # grpo with it imports as dapo (above)
    mode = t.get(f"{ARR}.actor.loss_agg_mode")
    own = ALGORITHM_LOSS_AGGREGATION.get(name or "", "token_mean")
    given = _set_by_launch(sources or {}, f"{ARR}.actor.loss_agg_mode")
    if mode in _LOSS_AGG and (str(mode).replace("-", "_") != own or given):
        out["spec.algorithm.loss_aggregation"] = str(mode).replace("-", "_")


def _off_policy_correction(t: dict[str, Any], out: dict[str, Any]) -> None:
    """algorithm.rollout_correction as rladapt renders it: IS weights at rollout_is, cut at a float threshold
    (TIS) or zeroed outside a "lower_upper" band (IcePop), in the trainer's decoupled mode with the engine's
    log-probs on (trainer/ppo/rollout_corr_helper.py, 0.6.1+). Rejection sampling, bypass mode or batch
    normalisation have no spec field: such a section stays a native override."""
    prefix = "algorithm.rollout_correction"
    level = t.get(f"{prefix}.rollout_is")
    if level not in ("token", "sequence") or t.get(f"{ARR}.rollout.calculate_log_probs") is not True:
        return
    if any(t.get(f"{prefix}.{key}") for key in ("rollout_rs", "bypass_mode", "rollout_is_batch_normalize")):
        return
    threshold = t.get(f"{prefix}.rollout_is_threshold")
    corr: dict[str, Any] = {"level": level}
    try:
        if isinstance(threshold, str) and "_" in threshold:
            low, high = (float(part) for part in threshold.split("_", 1))
            corr.update(mode="mask", min_ratio=low, max_ratio=high)
        elif isinstance(threshold, (int, float, str)) and not isinstance(threshold, bool):
            corr.update(mode="truncate", max_ratio=float(threshold))
        else:
            return
    except ValueError:
        return  # verl would reject it too
    for key, value in corr.items():
        out[f"spec.algorithm.off_policy_correction.{key}"] = value
