"""NeMo-RL's native launch -> RLJob spec fields: the inverse of ``rladapt.adapters.nemo_rl.translate`` for one tag.

A NeMo-RL launch is ``uv run python examples/run_grpo*.py [--config FILE] [Hydra overrides]`` run from a checkout
of the tag; its effective configuration is the config file with its ``defaults:`` chain, then the overrides
(``rladapt.adapters.nemo_rl.effective.nemo_rl_effective``). ``fields`` reads that effective config (the tag's
``grpo_math_1B.yaml`` values included), so a spec field whose rladapt default differs from NeMo-RL's gets NeMo-RL's
value written out; everything else is left to the residual pass of ``rladapt.importing.importer`` (it goes to
``spec.native.nemo-rl`` as Hydra overrides on the rendered config).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from rladapt.adapters.common import hydra_item, hydra_value
from rladapt.plugins.effective import CONFIG_FILE, INTERPOLATED, Effective, same
from rladapt.primitives.errors import UsageError, quote
from rladapt.primitives.spec import ALGORITHM_LOSS_AGGREGATION, GRPO_ADVANTAGE_ALGORITHMS

from .effective import NEMO_DEFAULT_CONFIG, nemo_rl_effective
from .run_script import is_grpo_script, run_script
from .translate import MATH_VERIFY_IMPL, UNLIMITED
from .versions import BASE_CONFIG, V0_4_0, V0_5_0, V0_6_0, keys

FRAMEWORK = "nemo-rl"
EXAMPLE = "uv run python examples/run_grpo.py --config FILE KEY=VALUE ..."
#: ``fields`` takes the sources of the effective config (rladapt.importing.importer.launch_fields).
FIELDS_TAKE_SOURCES = True
#: The launch's generated config file is part of its effective configuration (``effective(..., files=)``).
READS_FILES = True
#: ``uv run`` picks the checkout's interpreter: the launch's ``python`` is no spec.runtime.python.
INTERPRETER: str | None = None
#: loss_fn.reference_policy_kl_type -> spec estimator (0.5.0+; translate.KL_TYPE also renders low_var_kl as k3, so
#: an import names it k3)
_KL_NAME = {"k1": "k1", "k2": "k2", "k3": "k3"}
_BUILTIN = {impl: name for name, impl in MATH_VERIFY_IMPL.items()}


def match(argv: list[str]) -> int | None:
    """Index after the ``examples/run_grpo*.py`` script (its first argument), or None."""
    for i, word in enumerate(argv):
        script = is_grpo_script(word)
        if script and any("python" in w or w == "uv" for w in argv[:i]):
            return i + 1
    return None


def parse(argv: list[str]) -> tuple[str, str | None, list[str]]:
    """(script, --config value or None, overrides in order), as the script's ``parse_known_args`` splits them."""
    start = match(argv)
    if start is None:
        raise UsageError(f"not a NeMo-RL launch ({EXAMPLE}): {quote(' '.join(argv)[:80])}")
    script = argv[start - 1]
    config: str | None = None
    rest: list[str] = []
    args = argv[start:]
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--config":
            if i + 1 >= len(args):
                raise UsageError("--config: expected a config file after it")
            config = args[i + 1]
            i += 2
            continue
        if word.startswith("--config="):
            config = word.split("=", 1)[1]
        else:
            rest.append(word)
        i += 1
    return script, config, rest


def is_config(text: str) -> bool:
    """A YAML mapping that is no RLJob spec: a NeMo-RL config (a launch script never parses as a mapping)."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and data.get("kind") != "RLJob"


def config_launch(path: str, version: str, overrides: list[str]) -> list[str]:
    """The launch that runs config ``path`` with ``overrides``: the script upstream runs it with
    (``run_script.run_script``: the script whose default config it is, the one its test suite runs, or those of
    the config it extends), else the GRPO script of that tag (run_grpo_rm.py for a 0.4.0 reward-model config), as
    translate picks it (versions.Keys.script)."""
    k = keys(version)
    own, _ = run_script(path, version, k.script(reward_model=False))
    argv = ["uv", "run", "python", own or k.script(reward_model=False), "--config", path, *overrides]
    if own is not None:
        return argv
    if k.reward_model_enabled_key:
        values = effective(argv, version).values
        if values.get("env.reward_model.enabled") is True:
            argv[3] = k.script(reward_model=True)
    return argv


def default_config(script: str) -> str:
    """The config the script loads without ``--config``: beside it, ``configs/...`` (examples/run_grpo*.py)."""
    name = posixpath.basename(script)
    return posixpath.normpath(
        posixpath.join(posixpath.dirname(script), NEMO_DEFAULT_CONFIG.get(name, "configs/grpo_math_1B.yaml"))
    )


def effective(argv: list[str], version: str, files: Mapping[str, str] | None = None) -> Effective:
    """The effective config of ``argv`` (the whole command); ``files`` are generated configs (a render's)."""
    script, config, overrides = parse(argv)
    eff = nemo_rl_effective(version, config or default_config(script), overrides, overrides, files)
    values = {
        "(entrypoint)": posixpath.basename(script),
        "(config)": own_config(config or default_config(script), files),
        **eff.values,
    }
    return Effective(eff.framework, eff.version, values, eff.sources)


def own_config(config: str, files: Mapping[str, str] | None = None) -> str:
    """The config file the run composes on: the launch's ``--config`` (or its script's default), or for a
    rendered config (one of ``files``) the file its ``defaults:`` names (translate: spec.runtime.config, else
    the tag's grpo_math_1B.yaml), as a path from the checkout."""
    import yaml

    if files is not None and config in files:
        try:
            document = yaml.safe_load(files[config])
        except yaml.YAMLError:
            document = None
        parent = document.get("defaults") if isinstance(document, dict) else None
        if isinstance(parent, str):
            return (
                parent
                if parent.startswith("/")
                else posixpath.normpath(posixpath.join(posixpath.dirname(config), parent))
            )
    return config if config.startswith("/") else posixpath.normpath(config)


def value_text(value: Any) -> str:
    """A value in Hydra's override grammar, mappings included (``{k:v}``)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    return hydra_value(value)


def _setting(key: str, value: Any, derived: Effective) -> str:
    # '+' adds a key the rendered config lacks; Hydra refuses a plain k=v there in struct mode (and '+' where the
    # key holds a value): hydra 1.3.8 _internal/config_loader_impl.py _apply_overrides_to_config
    return f"{'' if key in derived.values else '+'}{key}={value_text(value)}"


def _settings(key: str, value: Any, derived: Effective) -> list[str]:
    """``_setting``, and where the rendered config holds a mapping at ``key`` (the base config's ``data.train``
    block) and the launch another value (grpo_multiple_datasets.yaml's list of blocks, 0.6.0+), its deletion
    first: Hydra merges a value into a mapping, and refuses a list there ("Error merging override")."""
    if key not in derived.values and any(k.startswith(key + ".") for k in derived.values):
        return [f"~{key}", f"+{key}={value_text(value)}"]
    return [_setting(key, value, derived)]


def unconsumed(argv: list[str], target: Effective, derived: Effective) -> list[str]:
    """What the launch sets that a rendered spec does not reproduce, in order: the keys its config files set
    (as overrides on the rendered config), then its own overrides verbatim."""
    out: list[str] = []

    def reproduced(key: str) -> bool:
        # a value the rendered config holds already, the tag's own default included: a config restating the base
        # config (upstream's standalone grpo_math_1B_megatron.yaml restates most of it) adds no native item for
        # it. An interpolated value is no reproduction: it follows other keys, the launch's literal does not
        return (
            key in derived.values
            and not derived.source(key).startswith(INTERPOLATED)
            and same(derived.values[key], target.values.get(key))
        )

    for key, where in target.sources.items():
        if where.startswith(CONFIG_FILE) and key in target.values and not reproduced(key):
            out.extend(_settings(key, target.values[key], derived))
    _, _, overrides = parse(argv)
    for item in overrides:
        parsed = hydra_item(item, "launch")
        if parsed.op != "delete" and reproduced(parsed.key):
            continue
        if parsed.op == "add" and derived.values.get(parsed.key) is not None:
            item = item[1:]  # the rendered config has the key: '+' would be refused
        out.append(item)
    return out


def fixups(target: Effective, got: Effective) -> list[str]:
    """Overrides that turn the effective config ``got`` into ``target``: deletions, then values."""
    t = {k: v for k, v in target.values.items() if not k.startswith("(")}
    g = {k: v for k, v in got.values.items() if not k.startswith("(")}
    deletes: dict[str, None] = {}
    replaced: dict[str, None] = {}
    for key in g:
        if key in t or any(k.startswith(key + ".") for k in t):
            continue
        node = _highest_absent(key, t)
        if g.get(node, ...) is not None:
            deletes[f"~{node}"] = None
        else:
            # Hydra deletes no null key ("Could not delete from config ... does not exist": hydra 1.3
            # _apply_overrides_to_config treats None as missing), e.g. the base config's
            # policy.tokenizer.chat_template_kwargs under a standalone vlm_grpo_3B.yaml (0.4.0, 0.5.0): the section
            # holding it is deleted and added back as the launch has it
            section = node.rpartition(".")[0]
            if section and any(k.startswith(section + ".") for k in t):
                replaced[section] = None
            elif not section:
                # a top-level null key (grpo_math_1B.yaml's on_policy_distillation, 0.7.0) has no section to
                # replace: an empty mapping first, which Hydra then deletes (the items apply in order,
                # parse_hydra_overrides in nemo_rl/utils/config.py; MasterConfig's top-level keys are sections)
                deletes[f"{node}={{}}"] = None
                deletes[f"~{node}"] = None
    sets: dict[str, None] = {}
    for section in replaced:
        if any(section.startswith(r + ".") for r in replaced):
            continue  # inside a section replaced whole
        sub = {k[len(section) + 1 :]: v for k, v in t.items() if k.startswith(section + ".")}
        deletes[f"~{section}"] = None
        sets[f"+{section}={value_text(_nest(sub))}"] = None
    for key, value in t.items():
        if any(key.startswith(r + ".") for r in replaced):
            continue
        if key in g and same(value, g[key]):
            continue
        leaf = _leaf_ancestor(key, g)
        if leaf is not None:  # the rendered config holds a value where the target has a mapping: replace it
            sub = {k[len(leaf) + 1 :]: v for k, v in t.items() if k.startswith(leaf + ".")}
            sets[f"{leaf}={value_text(_nest(sub))}"] = None
            continue
        for item in _settings(key, value, got):
            (deletes if item.startswith("~") else sets)[item] = None
    return [*deletes, *sets]


def _highest_absent(key: str, present: Mapping[str, Any]) -> str:
    parts = key.split(".")
    for i in range(1, len(parts) + 1):
        node = ".".join(parts[:i])
        if not any(k == node or k.startswith(node + ".") for k in present):
            return node
    return key


def _leaf_ancestor(key: str, values: Mapping[str, Any]) -> str | None:
    parts = key.split(".")
    for i in range(1, len(parts)):
        node = ".".join(parts[:i])
        if node in values:
            return node
    return None


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def reward_standin(values: dict[str, Any]) -> dict[str, Any]:
    """spec.reward when the launch names no reward model: the math environment (MathEnvironment of
    nemo_rl/environments/math_environment.py, every pinned tag) is the built-in ``math`` scorer."""
    return {"builtin": {"name": "math"}}


def fields(t: dict[str, Any], version: str, sources: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Spec field path -> value, from the effective config ``t`` (only keys it has; None values are skipped);
    ``sources`` tell an interpolated value (a built-in dataset's ``seed: ${grpo.seed}``) from a literal one."""
    v = Version(version)
    k = keys(version)
    out: dict[str, Any] = {}

    def put(path: str, key: str, convert: Any = None) -> None:
        if key in t and t[key] is not None:
            out[path] = convert(t[key]) if convert else t[key]

    put("spec.model.path", "policy.model_name")
    if t.get("policy.tokenizer.name") not in (None, t.get("policy.model_name")):
        put("spec.model.tokenizer", "policy.tokenizer.name")
    put("spec.model.dtype", "policy.precision")
    lora = "policy.dtensor_cfg.lora_cfg"
    if v >= V0_5_0 and t.get(f"{lora}.enabled") is True:
        put("spec.model.lora.rank", f"{lora}.dim")
        put("spec.model.lora.alpha", f"{lora}.alpha")
        if t.get(f"{lora}.match_all_linear") is True:
            out["spec.model.lora.target_modules"] = "all-linear"
        else:
            put("spec.model.lora.target_modules", f"{lora}.target_modules", list)

    group = t.get("grpo.num_generations_per_prompt")
    put("spec.algorithm.group_size", "grpo.num_generations_per_prompt")
    out["spec.algorithm.name"] = _algorithm(t, v)
    coef = t.get("loss_fn.reference_policy_kl_penalty")
    if isinstance(coef, (int, float)) and not isinstance(coef, bool):
        out["spec.algorithm.kl.coef"] = coef
        if coef > 0:
            out["spec.algorithm.kl.in"] = "reward" if t.get("loss_fn.use_kl_in_reward") is True else "loss"
            if k.has_kl_type:
                put(
                    "spec.algorithm.kl.estimator",
                    "loss_fn.reference_policy_kl_type",
                    lambda x: _KL_NAME.get(x, x),
                )
    put("spec.algorithm.clip.low", "loss_fn.ratio_clip_min")
    put("spec.algorithm.clip.high", "loss_fn.ratio_clip_max")
    _algorithm_variants(t, out, version)
    _off_policy_correction(t, out, version)

    put("spec.training.global_batch", "grpo.num_prompts_per_step")
    total = t.get("policy.train_global_batch_size")
    if isinstance(group, int) and group > 0 and isinstance(total, int) and total % group == 0:
        out["spec.training.mini_batch"] = total // group  # NeMo-RL counts responses, the spec prompts
    put("spec.training.micro_batch_per_gpu", "policy.train_micro_batch_size")
    put("spec.training.dynamic_batch.enabled", "policy.dynamic_batching.enabled")
    if t.get("policy.dynamic_batching.enabled") is True:
        put("spec.training.dynamic_batch.max_tokens_per_gpu", "policy.dynamic_batching.train_mb_tokens")
    steps = t.get("grpo.max_num_steps")
    epochs = t.get("grpo.max_num_epochs")
    if isinstance(steps, int) and steps != UNLIMITED:
        out["spec.training.steps"] = steps
        # grpo_train stops at whichever of the two limits comes first, the spec's rule for steps + epochs; the
        # async loop and the multiple-dataloader iterator read max_num_steps only (nemo_rl/algorithms/grpo.py,
        # 0.4.0 to 0.7.0), so there max_num_epochs is not the spec's epochs and stays a native item
        if (
            k.has_epochs
            and isinstance(epochs, int)
            and not isinstance(epochs, bool)
            and epochs > 0
            and t.get("grpo.async_grpo.enabled") is not True
            and t.get("data.use_multiple_dataloader") is not True
        ):
            out["spec.training.epochs"] = epochs
    elif k.has_epochs:
        put("spec.training.epochs", "grpo.max_num_epochs")
    if k.has_seed and _written(t, "grpo.seed", version):
        put("spec.data.seed", "grpo.seed")

    if v >= V0_4_0 and t.get("policy.megatron_cfg.enabled") is True:
        mc = "policy.megatron_cfg"
        out["spec.training.backend"] = "megatron"
        put("spec.training.parallel.tp", f"{mc}.tensor_model_parallel_size")
        put("spec.training.parallel.pp", f"{mc}.pipeline_model_parallel_size")
        put("spec.training.parallel.cp", f"{mc}.context_parallel_size")
        put("spec.model.gradient_checkpointing", f"{mc}.activation_checkpointing")
        put("spec.training.optimizer.lr", f"{mc}.optimizer.lr")
        put("spec.training.optimizer.weight_decay", f"{mc}.optimizer.weight_decay")
    elif t.get("policy.dtensor_cfg.enabled") is False:
        out["spec.training.backend"] = "fsdp"  # 0.2.1's HF policy; later tags refuse it in the render
        put("spec.model.gradient_checkpointing", "policy.activation_checkpointing_enabled")
        put("spec.training.optimizer.lr", "policy.optimizer.kwargs.lr")
        put("spec.training.optimizer.weight_decay", "policy.optimizer.kwargs.weight_decay")
    else:
        dt = "policy.dtensor_cfg"
        out["spec.training.backend"] = "fsdp2"
        put("spec.training.parallel.tp", f"{dt}.tensor_parallel_size")
        if k.has_context_parallel:
            put("spec.training.parallel.cp", f"{dt}.context_parallel_size")
        put("spec.model.gradient_checkpointing", f"{dt}.activation_checkpointing")
        put("spec.training.optimizer.lr", "policy.optimizer.kwargs.lr")
        put("spec.training.optimizer.weight_decay", "policy.optimizer.kwargs.weight_decay")

    clip = t.get("policy.max_grad_norm")
    # null is no clipping, which the spec cannot say (max_grad_norm > 0): it stays a native item
    if (
        _written(t, "policy.max_grad_norm", version)
        and isinstance(clip, (int, float))
        and not isinstance(clip, bool)
    ):
        out["spec.training.optimizer.max_grad_norm"] = float(clip)

    gen = "policy.generation"
    put("spec.rollout.engine", f"{gen}.backend")
    put("spec.rollout.tensor_parallel", f"{gen}.vllm_cfg.tensor_parallel_size")
    put("spec.rollout.gpu_memory_utilization", f"{gen}.vllm_cfg.gpu_memory_utilization")
    if v >= V0_4_0 and _written(t, f"{gen}.vllm_cfg.async_engine", version):
        out["spec.rollout.mode"] = "async" if t.get(f"{gen}.vllm_cfg.async_engine") is True else "sync"
    put("spec.rollout.temperature", f"{gen}.temperature")
    put("spec.rollout.top_p", f"{gen}.top_p")
    turns = t.get("grpo.max_rollout_turns")
    if isinstance(turns, int) and not isinstance(turns, bool) and turns > 1:
        # the shipped configs' 1 is one reply per prompt; more is translate's multi_turn.max_assistant_turns
        out["spec.rollout.multi_turn.max_assistant_turns"] = turns
    top_k = t.get(f"{gen}.top_k", ...)
    if top_k is None or isinstance(top_k, int):
        out["spec.rollout.top_k"] = -1 if top_k is None else top_k
    _lengths(t, out)

    if v >= V0_4_0:
        put("spec.data.shuffle", "data.shuffle")
    _files(t, out, k.dataset_blocks, sources or {})
    _reward(t, out, version)

    c = "checkpointing"
    put("spec.checkpoint.dir", f"{c}.checkpoint_dir")
    save = t.get(f"{c}.save_period")
    if isinstance(save, int) and 0 < save < UNLIMITED:
        out["spec.checkpoint.every_steps"] = save
    if t.get(f"{c}.metric_name", ...) is None and isinstance(t.get(f"{c}.keep_top_k"), int):
        out["spec.checkpoint.keep_last"] = t[f"{c}.keep_top_k"]  # keep_last means the newest (translate.py)
    if k.has_save_consolidated:
        put("spec.checkpoint.save_hf", f"{c}.save_consolidated")
    _budget_ckpt_engine(t, out, version)
    put("spec.eval.every_steps", "grpo.val_period")
    if _written(t, "grpo.val_at_start", version):
        put("spec.eval.before_training", "grpo.val_at_start")
    backends = ["console"]
    for name in ("wandb", "tensorboard", "mlflow"):
        if t.get(f"logger.{name}_enabled") is True:
            backends.append(name)
    out["spec.logging.backends"] = backends
    log_dir = t.get("logger.log_dir")
    if isinstance(log_dir, str) and log_dir and "${" not in log_dir:
        # the launch's own folder of logs, kept (every shipped config names one: "logs"); translate renders it as
        # logger.log_dir and reads the metrics back from there. An interpolation resolves only in NeMo-RL's
        # config: left to a native item
        out["spec.logging.dir"] = log_dir
    if "wandb" in backends:
        put("spec.logging.project", "logger.wandb.project")
        put("spec.logging.experiment", "logger.wandb.name")
    elif "mlflow" in backends:
        put("spec.logging.project", "logger.mlflow.experiment_name")
        put("spec.logging.experiment", "logger.mlflow.run_name")
    _placement(t, out, version)
    _memory(t, out, version)
    own = t.get("(config)")
    if isinstance(own, str) and own != BASE_CONFIG:
        # the launch's own config file, composed on as the launch does: what the recipe sets without a spec field
        # stays in it rather than in spec.native (translate writes the generated config's defaults: to it)
        out["spec.runtime.config"] = own
    script = t.get("(entrypoint)")
    rendered = posixpath.basename(k.script(reward_model="spec.reward.model.path" in out))
    if isinstance(script, str) and script != rendered:
        # the launch's own script, kept: every GRPO script of a tag is in its examples/ folder
        out["spec.runtime.entrypoint"] = f"examples/{script}"
    return out


def _memory(t: Mapping[str, Any], out: dict[str, Any], version: str) -> None:
    """CPU offload and packed sequences: the keys ``translate._memory`` writes, when they differ from the tag's."""
    if out.get("spec.training.backend") == "megatron":
        mo = "policy.megatron_cfg.optimizer"
        # the render writes the offload with fraction 1.0 (NeMo-RL's only supported value with the offload on)
        on = t.get(f"{mo}.optimizer_cpu_offload")
        fraction = t.get(f"{mo}.optimizer_offload_fraction")
        if _written(t, f"{mo}.optimizer_cpu_offload", version) and fraction == (1.0 if on is True else 0.0):
            out["spec.training.offload.actor.optimizer"] = on is True
    elif _written(t, "policy.dtensor_cfg.cpu_offload", version):
        # dtensor_cfg.cpu_offload moves parameters and optimizer states together
        value = t["policy.dtensor_cfg.cpu_offload"] is True
        out["spec.training.offload.actor.params"] = value
        out["spec.training.offload.actor.optimizer"] = value
    # with dynamic batching the render turns packing off itself (the two exclude each other)
    packing = "policy.sequence_packing.enabled"
    if t.get("policy.dynamic_batching.enabled") is not True and _written(t, packing, version):
        out["spec.training.pack_sequences"] = t[packing] is True


def _placement(t: Mapping[str, Any], out: dict[str, Any], version: str) -> None:
    """The cluster, with generation on nodes of its own when not colocated and a reward model's own nodes
    (translate._placement: whole nodes, cluster.gpus_per_node each; async GRPO needs the separate pool)."""
    nodes, gpus = t.get("cluster.num_nodes"), t.get("cluster.gpus_per_node")
    if not isinstance(nodes, int) or not isinstance(gpus, int):
        return
    out["(placement)"] = (nodes, gpus)
    apart: dict[str, int] = {}
    res = "policy.generation.colocated.resources"
    if t.get("policy.generation.colocated.enabled") is False and isinstance(t.get(f"{res}.num_nodes"), int):
        apart["rollout"] = t[f"{res}.num_nodes"]
        if t.get("grpo.async_grpo.enabled") is True:
            age = t.get("grpo.async_grpo.max_trajectory_age_steps")
            if isinstance(age, int) and age > 0:
                out["spec.weight_sync.max_staleness"] = age
                if _written(t, "grpo.async_grpo.in_flight_weight_updates", version):
                    out["spec.weight_sync.partial_rollout"] = (
                        t["grpo.async_grpo.in_flight_weight_updates"] is True
                    )
    rm_nodes, rm_gpus = (
        t.get("env.reward_model.resources.num_nodes"),
        t.get("env.reward_model.resources.gpus_per_node"),
    )
    if "spec.reward.model.path" in out and nodes == 1 and not apart and rm_nodes == 1:
        # one node split between the policy and the reward model (grpo.py setup, total_nodes == 1: the policy
        # gets cluster.gpus_per_node - rm_gpus_per_node; upstream's grpo_rm_1B.yaml): the reward's share of it
        if isinstance(rm_gpus, int) and 0 < rm_gpus < gpus:
            out["spec.roles.reward.gpus"] = rm_gpus
    elif "spec.reward.model.path" in out and isinstance(rm_nodes, int):
        apart["reward"] = rm_nodes
    if apart:
        out["(placement.apart)"] = apart


def _budget_ckpt_engine(t: Mapping[str, Any], out: dict[str, Any], version: str) -> None:
    """The log-prob budget, checkpoint switches and vLLM settings (the inverse of translate's _logprob_budgets,
    _checkpoint/_keep_best and _engine_settings)."""
    micro, logprob = t.get("policy.train_micro_batch_size"), t.get("policy.logprob_batch_size")
    if isinstance(logprob, int) and logprob != micro:
        out["spec.training.budgets.old_log_prob.micro_batch_per_gpu"] = logprob
    dyn = "policy.dynamic_batching"
    if t.get(f"{dyn}.enabled") is True:
        tokens = t.get(f"{dyn}.logprob_mb_tokens")
        if isinstance(tokens, int) and tokens != t.get(f"{dyn}.train_mb_tokens"):
            out["spec.training.budgets.old_log_prob.max_tokens_per_gpu"] = tokens
    c = "checkpointing"
    if t.get(f"{c}.enabled") is False:
        # grpo.py saves nothing: the period, retention and format do nothing
        out["spec.checkpoint.enabled"] = False
        for path in ("spec.checkpoint.every_steps", "spec.checkpoint.keep_last", "spec.checkpoint.save_hf"):
            out.pop(path, None)
    else:
        metric = t.get(f"{c}.metric_name")
        written = any(
            _written(t, f"{c}.{key}", version) for key in ("metric_name", "higher_is_better", "keep_top_k")
        )
        top_k = t.get(f"{c}.keep_top_k")
        if isinstance(metric, str) and written and isinstance(top_k, int):
            out["spec.checkpoint.keep_best"] = {
                "metric": metric,
                "higher_is_better": t.get(f"{c}.higher_is_better") is not False,
                "count": top_k,
            }
    gen = "policy.generation"
    if t.get(f"{gen}.backend") != "vllm" or Version(version) < V0_4_0:
        return
    if _written(t, f"{gen}.vllm_cfg.enforce_eager", version):
        out["spec.rollout.engine_settings.enforce_eager"] = t[f"{gen}.vllm_cfg.enforce_eager"]
    for key, name in (
        ("enable_chunked_prefill", "chunked_prefill"),
        ("max_num_batched_tokens", "max_batched_tokens"),
    ):
        value = t.get(f"{gen}.vllm_kwargs.{key}")
        if value is not None:
            out[f"spec.rollout.engine_settings.{name}"] = value


def _written(t: Mapping[str, Any], key: str, version: str) -> bool:
    """Whether the launch's value of ``key`` differs from the tag's own (its snapshot's ``grpo_math_1B.yaml``
    default): a null-default spec field ("what NeMo-RL does by itself") is written only then."""
    from rladapt.plugins.snapshots import snapshot

    spec = snapshot(FRAMEWORK, version).get(key)
    return key in t and (spec is None or not same(spec.default, t[key]))


def _algorithm(t: Mapping[str, Any], v: Version) -> str:
    # the inverse of translate._algorithm: REINFORCE++ by its estimator (0.6.0), DAPO by dynamic sampling, GSPO by
    # sequence-level ratios, RLOO by a leave-one-out baseline without std normalisation; the rest is GRPO
    if v >= V0_6_0 and t.get("grpo.adv_estimator.name") == "reinforce_plus_plus":
        return (
            "reinforce_pp_baseline" if t.get("grpo.adv_estimator.minus_baseline") is True else "reinforce_pp"
        )
    if t.get("grpo.use_dynamic_sampling") is True:
        return "dapo"
    if t.get("loss_fn.sequence_level_importance_ratios") is True:
        return "gspo"
    if t.get("grpo.use_leave_one_out_baseline") is True and t.get("grpo.normalize_rewards") is False:
        return "rloo"
    return "grpo"


def _lengths(t: Mapping[str, Any], out: dict[str, Any]) -> None:
    """max_total_sequence_length = prompt + response, or spec.data.max_length when the launch gives the prompt and
    the response more than the whole length together (the example configs give each the whole length:
    data.max_input_seq_length and generation.max_new_tokens are ${policy.max_total_sequence_length});
    max_new_tokens = the response cap (translate._rollout)."""
    total = t.get("policy.max_total_sequence_length")
    new = t.get("policy.generation.max_new_tokens")
    prompt = t.get("data.max_input_seq_length")
    if not isinstance(total, int) or isinstance(total, bool):
        return
    if (
        isinstance(new, int)
        and not isinstance(new, bool)
        and 0 < new <= total
        and (
            prompt is None
            or (isinstance(prompt, int) and not isinstance(prompt, bool) and 0 < prompt <= total)
        )
        and (prompt if prompt is not None else total) + new > total
    ):
        out["spec.data.max_length"] = total
        out["spec.data.max_prompt_length"] = prompt if prompt is not None else total
        out["spec.data.max_response_length"] = new
        return
    if isinstance(prompt, int) and 0 < prompt < total:
        out["spec.data.max_prompt_length"] = prompt
        out["spec.data.max_response_length"] = total - prompt
    elif isinstance(new, int) and 0 < new < total:
        out["spec.data.max_prompt_length"] = total - new
        out["spec.data.max_response_length"] = new
        return
    elif total > 1:
        half = total // 2
        out["spec.data.max_prompt_length"] = total - half
        out["spec.data.max_response_length"] = half
    response = out.get("spec.data.max_response_length")
    if isinstance(new, int) and response is not None and new < response:
        out["spec.rollout.max_tokens"] = new


def _files(t: Mapping[str, Any], out: dict[str, Any], blocks: bool, sources: Mapping[str, str]) -> None:
    """ResponseDataset files, or the dataset NeMo-RL provides by name (spec.data.builtin: upstream's
    OpenMathInstruct-2). A list of built-in blocks (0.6.0+) gets their names as stand-in files, and the residual
    pass restores their keys."""
    if not blocks:
        name = t.get("data.dataset_name")
        if name == "ResponseDataset":
            if isinstance(t.get("data.train_data_path"), str):
                out["spec.data.train"] = [t["data.train_data_path"]]
            if isinstance(t.get("data.val_data_path"), str):
                out["spec.data.val"] = [t["data.val_data_path"]]
            if isinstance(t.get("data.input_key"), str):
                out["spec.data.prompt_key"] = t["data.input_key"]
        elif isinstance(name, str) and name:
            # a dataset NeMo-RL provides, named beside the other data keys (translate._builtin_flat); its other
            # keys stay the inherited config's, and what differs is left to the residual pass
            out["spec.data.builtin"] = {"name": name}
        if "spec.data.train" not in out and "spec.data.builtin" not in out:
            out["spec.data.train"] = [str(name or "dataset")]
        return
    train = _blocks(t, "data.train")
    if train:
        out["spec.data.train"] = [b["data_path"] for b in train]
        keys_ = {b.get("input_key") for b in train}
        if len(keys_) == 1 and isinstance(next(iter(keys_)), str):
            out["spec.data.prompt_key"] = next(iter(keys_))
    elif isinstance(t.get("data.train"), list) and len(t["data.train"]) > 1:
        # a list of built-in dataset blocks (grpo_multiple_datasets.yaml, 0.6.0+): a stand-in per block, which the
        # render writes as a list too (translate._data); one block would be a mapping that OmegaConf cannot merge
        # onto the list of a launch's own config (spec.runtime.config)
        names = [b.get("dataset_name") if isinstance(b, dict) else None for b in t["data.train"]]
        out["spec.data.train"] = [str(name or "dataset") for name in names]
    elif isinstance(t.get("data.train.dataset_name"), str):
        # one block naming a dataset NeMo-RL provides (upstream's OpenMathInstruct-2): spec.data.builtin, with
        # the block's literal settings as its options (an interpolated one, ``seed: ${grpo.seed}``, stays the
        # inherited config's: translate._builtin writes only the name and the options)
        options = {
            key[len("data.train.") :]: value
            for key, value in t.items()
            if key.startswith("data.train.")
            and key != "data.train.dataset_name"
            and key.count(".") == 2
            and not sources.get(key, "").startswith(INTERPOLATED)
            and (value is None or isinstance(value, (str, int, float, bool)))
        }
        out["spec.data.builtin"] = {"name": t["data.train.dataset_name"], "options": options}
    else:
        out["spec.data.train"] = [str(t.get("data.train.dataset_name") or "dataset")]
    val = _blocks(t, "data.validation")
    if val:
        out["spec.data.val"] = [b["data_path"] for b in val]


def _blocks(t: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """The ResponseDataset blocks at ``key`` (a mapping or a list of them), [] when any is something else."""
    if key in t and isinstance(t[key], list):
        blocks = [b for b in t[key] if isinstance(b, dict)]
        if len(blocks) != len(t[key]):
            return []
    else:
        sub = {k[len(key) + 1 :]: v for k, v in t.items() if k.startswith(key + ".")}
        blocks = [sub] if sub else []
    if all(
        b.get("dataset_name") == "ResponseDataset" and isinstance(b.get("data_path"), str) for b in blocks
    ):
        return blocks
    return []


def _reward(t: Mapping[str, Any], out: dict[str, Any], version: str) -> None:
    k = keys(version)
    rm = "env.reward_model"
    env_name = t.get(k.env_name_key) if k.env_name_key else None
    enabled = t.get(f"{rm}.enabled") is True if k.reward_model_enabled_key else env_name == "reward_model"
    if enabled and isinstance(t.get(f"{rm}.model_name"), str):
        out["spec.reward.model.path"] = t[f"{rm}.model_name"]
        if isinstance(t.get(f"{rm}.batch_size"), int):
            out["spec.reward.model.micro_batch_per_gpu"] = t[f"{rm}.batch_size"]
        return
    impl = t.get("env.math.math_verify_impl") if k.has_math_verify_impl else "hf_math_verify"
    out["spec.reward.builtin.name"] = _BUILTIN.get(str(impl), "math")


def _algorithm_variants(t: Mapping[str, Any], out: dict[str, Any], version: str) -> None:
    """The inverse of translate._grpo_variants: GRPO's baseline and std, the loss aggregation, the dual clip and
    DAPO's overlong shaping, each written only where the launch differs from the tag's own (a null field is the
    framework's own) or from the algorithm's own."""
    name = out["spec.algorithm.name"]
    if name in GRPO_ADVANTAGE_ALGORITHMS:
        if _written(t, "grpo.use_leave_one_out_baseline", version):
            loo = t.get("grpo.use_leave_one_out_baseline")
            if isinstance(loo, bool):
                out["spec.algorithm.baseline"] = "leave_one_out" if loo else "group_mean"
        if _written(t, "grpo.normalize_rewards", version):
            put_bool = t.get("grpo.normalize_rewards")
            if isinstance(put_bool, bool):
                out["spec.algorithm.normalize_by_group_std"] = put_bool
    token = t.get("loss_fn.token_level_loss")
    if isinstance(token, bool):
        mode = "token_mean" if token else "seq_mean_token_mean"
        own = ALGORITHM_LOSS_AGGREGATION.get(name)
        if (own is not None and mode != own) or (
            own is None and _written(t, "loss_fn.token_level_loss", version)
        ):
            out["spec.algorithm.loss_aggregation"] = mode
    dual = t.get("loss_fn.ratio_clip_c")
    if isinstance(dual, (int, float)) and not isinstance(dual, bool):
        out["spec.algorithm.clip.dual"] = float(dual)
    if t.get("grpo.reward_shaping.enabled") is True:
        buffer, penalty = (
            t.get("grpo.reward_shaping.overlong_buffer_length"),
            t.get("grpo.reward_shaping.overlong_buffer_penalty"),
        )
        if isinstance(buffer, int) and isinstance(penalty, (int, float)) and not isinstance(penalty, bool):
            # its max_response_length is rendered as the response budget: another value stays native
            out["spec.reward.overlong_penalty"] = {"buffer_tokens": buffer, "max_penalty": float(penalty)}


def _off_policy_correction(t: Mapping[str, Any], out: dict[str, Any], version: str) -> None:
    """The inverse of translate._off_policy_correction: ClippedPGLossConfig's truncated IS keys (0.4.0+) as the
    spec names them. The untruncated correction (no ratio) has no spec field (it is async GRPO's own), nor has
    GSPO's sequence-level weight: both stay as the launch wrote them."""
    loss = "loss_fn.truncated_importance_sampling"
    high = t.get(f"{loss}_ratio")
    if (
        t.get("loss_fn.use_importance_sampling_correction") is not True
        or out["spec.algorithm.name"] == "gspo"
    ):
        return
    if not isinstance(high, (int, float)) or isinstance(high, bool):
        return
    kind = t.get(f"{loss}_type") if Version(version) >= V0_6_0 else "tis"
    corr = {
        "tis": {"level": "token", "mode": "truncate"},
        "icepop": {"level": "token", "mode": "mask"},
        "seq-mask-tis": {"level": "sequence_geometric_mean", "mode": "mask"},
    }.get(str(kind))
    if corr is None:
        return
    low = t.get(f"{loss}_ratio_min")
    values: dict[str, Any] = {**corr, "max_ratio": float(high)}
    if isinstance(low, (int, float)) and not isinstance(low, bool):
        values["min_ratio"] = float(low)
    elif corr["mode"] == "mask":
        return  # NeMo-RL compares with None: it would fail, and the spec's mask needs the band
    for key, value in values.items():
        out[f"spec.algorithm.off_policy_correction.{key}"] = value
