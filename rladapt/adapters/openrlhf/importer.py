"""OpenRLHF's native launch -> RLJob spec fields: the inverse of ``rladapt.adapters.openrlhf.translate``.

A launch is ``python3 -m openrlhf.cli.train_ppo_ray <flags>``, alone or after ``ray job submit ... --``. Its
effective configuration is OpenRLHF's namespace after that version's own post-parse rules
(``rladapt.adapters.openrlhf.effective.openrlhf_effective``), keyed by the version's option strings (``--pretrain`` up to
0.10.1.post2, ``--actor.model_name_or_path`` from 0.10.2). ``fields`` reads it defaults included, so a spec field
whose rladapt default differs from OpenRLHF's own gets OpenRLHF's value written out; every flag the spec cannot
hold goes to ``spec.native.openrlhf`` in the residual pass of ``rladapt.importing.importer``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

from packaging.version import Version

from rladapt.compat.schema import Snapshot
from rladapt.compat.schema._values import COMPUTED
from rladapt.plugins.effective import Effective, derived, same
from rladapt.primitives.errors import UsageError, quote
from rladapt.primitives.spec import GRPO_ADVANTAGE_ALGORITHMS

from .args import flag_text
from .effective import item_text, negations, openrlhf_effective
from .translate import ENTRY_MODULE, REWARD_FUNC_NAME
from .versions import ALGORITHMS, DOTTED, READ_DOTTED, critic_only_steps, has_flag, option

FRAMEWORK = "openrlhf"
EXAMPLE = f"python3 -m {ENTRY_MODULE} --flag value ..."
#: OpenRLHF estimator -> rladapt algorithm, the first algorithm rendering it (group_norm is grpo; dapo's dynamic
#: filtering and gspo's loss type are read in ``_algorithm``).
_ALGORITHM: dict[str, str] = {}
for _name, (_est, _extra) in ALGORITHMS.items():
    if not _extra:
        _ALGORITHM.setdefault(_est, _name)
#: spec.reward when the launch names no reward the spec can hold: a remote scorer. A launch in agent mode
#: (--agent_func_path) scores through the agent whatever the URL; any other launch without a reward is one
#: OpenRLHF cannot run either, and the import's final check names the flag.
_STANDIN_URL = "http://localhost:5000/get_reward"


def match(argv: list[str]) -> int | None:
    """Index after ``-m openrlhf.cli.train_ppo_ray`` (the first flag), or None."""
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] == ENTRY_MODULE:
            return i + 2
    return None


def _start(argv: list[str]) -> int:
    start = match(argv)
    if start is None:
        raise UsageError(f"not an OpenRLHF launch: expected `{EXAMPLE}`, found {quote(' '.join(argv[:4]))}")
    return start


def effective(argv: list[str], version: str) -> Effective:
    """The namespace of ``argv`` (the whole command); a key's source is the flag item that set it.

    A flag this version does not have is an error, as it is for OpenRLHF's own parser (``unrecognized
    arguments``), naming the versions that have it."""
    from rladapt.plugins.snapshots import snapshot

    eff = openrlhf_effective(version, argv[_start(argv) :])
    snap = snapshot("openrlhf", version)
    unknown = [k for k in eff.values if k not in snap.keys]
    if unknown:
        raise UsageError(
            f"openrlhf {version} has no flag {'; '.join(_unknown(k, version, snap) for k in unknown[:5])}"
            f"{' ...' if len(unknown) > 5 else ''}: its parser refuses the launch (name the version the launch "
            "was written for: -f openrlhf==VERSION)"
        )
    # the module the launch runs is part of the run (``rladapt diff`` compares it like any key)
    return Effective(eff.framework, eff.version, {"(entrypoint)": ENTRY_MODULE, **eff.values}, eff.sources)


def _unknown(key: str, version: str, snap: Snapshot) -> str:
    """``key`` with its spelling in ``version`` (the 0.10.2 renames) or a close flag, and the versions having it."""
    from rladapt.plugins.snapshots import versions_having

    names = {**DOTTED, **READ_DOTTED}
    flat = {dotted: flat for flat, dotted in names.items()}.get(key[2:], key[2:])
    here = option(version, flat) if flat in names else None
    if here in snap.keys:
        hint = [f"here it is {here}"]
    else:
        close = difflib.get_close_matches(key, list(snap.keys), n=1)
        hint = [f"did you mean {close[0]}?" if close else ""]
    having = versions_having("openrlhf", key, version)
    if having:
        span = having[0] if len(having) == 1 else f"{having[0]} to {having[-1]}"
        hint.append(f"a flag of openrlhf {span}")
    text = "; ".join(h for h in hint if h)
    return f"{key} ({text})" if text else key


def prefix(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Spec fields from the words before the flags (the interpreter, ``ray job submit``'s runtime env), and a
    note for each submit option the spec leaves to the launcher."""
    start = _start(argv)
    out: dict[str, Any] = {}
    python = interpreter(argv, start)
    if python != "python3":
        out["spec.runtime.python"] = python
    notes: list[str] = []
    words = argv[: start - 2]
    if "submit" in words and "--" in words:
        sub = words[words.index("submit") + 1 : words.index("--")]
        i = 0
        while i < len(sub):
            flag, eq, inline = sub[i].partition("=")
            takes = not eq and i + 1 < len(sub) and not sub[i + 1].startswith("-")
            value = inline if eq else (sub[i + 1] if takes else "")
            i += 2 if takes else 1
            if flag == "--runtime-env-json":
                notes.extend(_runtime_env(value, out))
            elif flag == "--working-dir":
                out["spec.runtime.working_dir"] = value
            else:
                notes.append(
                    f"ray job submit {flag}: not part of the spec (the Ray launcher submits the job itself)"
                )
    return out, notes


def _runtime_env(text: str, out: dict[str, Any]) -> list[str]:
    try:
        env = json.loads(text)
    except json.JSONDecodeError:
        return [f"ray job submit --runtime-env-json {quote(text)}: not JSON, not imported"]
    notes = []
    for key, value in env.items() if isinstance(env, dict) else ():
        if key == "working_dir" and isinstance(value, str):
            out["spec.runtime.working_dir"] = value
        elif key == "env_vars" and isinstance(value, dict):
            out["spec.env"] = {str(k): str(v) for k, v in value.items()}
        else:
            notes.append(f"ray job submit runtime_env {key}: not part of the spec, not imported")
    return notes


def unconsumed(argv: list[str], target: Effective, derived_eff: Effective) -> list[str]:
    """The launch's flag items a rendered spec does not reproduce, verbatim and in order."""
    from rladapt.plugins.snapshots import snapshot

    from .validate import read_flags

    args = argv[_start(argv) :]
    out = []
    for flag in read_flags(args, snapshot("openrlhf", target.version)):
        key = flag.key or flag.flag
        reproduced = (
            flag.key is not None
            and not derived(derived_eff.source(key))
            and key in derived_eff.values
            and same(derived_eff.values[key], target.values.get(key))
        )
        if not reproduced:
            out.append(item_text(flag.tokens))
    return out


def fixups(target: Effective, got: Effective) -> list[str]:
    """Flag items that turn the namespace ``got`` into ``target``; a value no flag can give back (a switch
    rladapt turned on, a flag set to None) has none, and the import's final check names it."""
    from rladapt.plugins.snapshots import snapshot

    snap = snapshot("openrlhf", target.version)
    negation = {flag: off for off, flag in negations(snap).items()}
    out = []
    for key, want in target.values.items():
        if key.startswith("(") or (key in got.values and same(want, got.values[key])):
            continue
        spec = snap.keys.get(key)
        if want is True:
            out.append(key)
        elif want is False and key in negation:
            out.append(negation[key])
        elif want is False or want is None:
            continue
        elif isinstance(want, (list, tuple)) and (spec is None or spec.type == "list"):
            out.append(item_text([key, *(flag_text(v) for v in want)]))
        elif isinstance(want, list):  # a comma-separated flag OpenRLHF splits after parsing
            out.append(item_text([key, ",".join(flag_text(v) for v in want)]))
        else:
            out.append(item_text([key, flag_text(want)]))
    return out


def reward_standin(values: dict[str, Any]) -> dict[str, Any]:
    """spec.reward when ``fields`` found none (see ``_STANDIN_URL``); none beside an agent function, whose rewards
    OpenRLHF takes instead (cli/train_ppo_ray.py sets remote_rm_url to "agent" after parsing, 0.8.11+)."""
    if any(values.get(f"--{name}") for name in ("agent_func_path", "train.agent_func_path")):
        return {}
    return {"remote": {"url": _STANDIN_URL}}


def fields(t: dict[str, Any], version: str) -> dict[str, Any]:
    """Spec field path -> value, from the namespace ``t`` (flags of this version only)."""
    from rladapt.plugins.snapshots import snapshot

    v = Version(version)
    snap = snapshot("openrlhf", version)
    out: dict[str, Any] = {}

    def has(flat: str) -> bool:
        return has_flag(v, flat) and option(v, flat) in t

    def get(flat: str, default: Any = None) -> Any:
        return t.get(option(v, flat), default) if has_flag(v, flat) else default

    def put(path: str, flat: str, convert: Any = None) -> None:
        if has(flat) and get(flat) is not None:
            out[path] = convert(get(flat)) if convert else get(flat)

    def put_unless_own(path: str, flat: str) -> None:
        """A field whose unset value means OpenRLHF's own default: written only where the launch differs."""
        own = snap.default(option(v, flat)) if has(flat) else None
        if has(flat) and get(flat) is not None and not same(get(flat), own):
            out[path] = get(flat)

    _models(t, v, get, put, out)
    _algorithm(get, put, put_unless_own, out, v)
    _grpo_variants(get, put_unless_own, out, v)
    _batches(get, put, out, v)
    _budgets(get, out, v)
    _overlong_penalty(get, has, out, v)
    _off_policy_correction(get, out, v)
    put("spec.data.train", "prompt_data", lambda x: [x])
    put("spec.data.prompt_key", "input_key")
    put_unless_own("spec.data.seed", "seed")
    if get("eval_dataset") and (get("eval_steps") or 0) > 0:
        out["spec.data.val"] = [get("eval_dataset")]
        out["spec.eval.every_steps"] = get("eval_steps")
        put("spec.rollout.val.temperature", "eval_temperature")
        put("spec.rollout.val.n", "eval_n_samples_per_prompt")
    _optimizer(get, put, put_unless_own, out)
    _deepspeed(get, put_unless_own, out)
    _data_memory(get, out, v)
    _checkpoint(get, put, put_unless_own, out)
    _keep_best(get, has, out)
    _logging(get, out)
    _placement(get, out)
    _engine_settings(get, out)
    _sync_backend(get, has, out)
    _chat_template(get, out)
    return out


def _models(t: dict[str, Any], v: Version, get: Any, put: Any, out: dict[str, Any]) -> None:
    put("spec.model.path", "pretrain")
    put("spec.rollout.agent.path", "agent_func_path")  # from 0.8.0; its remote_rm_url is then "agent"
    remote = get("remote_rm_url")
    urls = remote if isinstance(remote, list) else [remote] if remote else []
    if len(urls) == 1 and str(urls[0]).endswith(".py"):
        out["spec.reward.function"] = {"path": urls[0], "name": REWARD_FUNC_NAME}
    elif len(urls) == 1 and str(urls[0]).startswith(("http://", "https://")):
        out["spec.reward.remote.url"] = urls[0]
    elif not urls and isinstance(get("reward_pretrain"), str) and "," not in get("reward_pretrain"):
        out["spec.reward.model.path"] = get("reward_pretrain")
    if get("advantage_estimator") == "gae":
        critic = get("critic_pretrain")
        own = get("pretrain") if urls else str(get("reward_pretrain") or "").split(",")[0]
        if critic is not None and critic != own:
            out["spec.model.critic_path"] = critic
    rank = get("lora_rank")
    if isinstance(rank, int) and rank > 0:
        out["spec.model.lora.rank"] = rank
        put("spec.model.lora.alpha", "lora_alpha")
        targets = get("target_modules")
        if targets is not None:
            out["spec.model.lora.target_modules"] = targets if isinstance(targets, str) else list(targets)
    if get("gradient_checkpointing") is True:
        out["spec.model.gradient_checkpointing"] = True
    if has_flag(v, "param_dtype"):
        dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(str(get("param_dtype")))
        if dtype:
            out["spec.model.dtype"] = dtype
    else:
        out["spec.model.dtype"] = "bfloat16" if get("bf16") else "float16"


def _algorithm(get: Any, put: Any, put_unless_own: Any, out: dict[str, Any], v: Version) -> None:
    estimator = get("advantage_estimator")
    # dr_grpo is GRPO without the std (translate._grpo_estimator; the field is read in _grpo_variants)
    name = "grpo" if estimator == "dr_grpo" else _ALGORITHM.get(str(estimator))
    if name == "grpo" and get("dynamic_filtering") is True:
        name = "dapo"
    elif name == "grpo" and get("policy_loss_type") == "gspo":
        name = "gspo"
    if name is not None:
        out["spec.algorithm.name"] = name
    put("spec.algorithm.group_size", "n_samples_per_prompt")
    coef = get("init_kl_coef")
    if isinstance(coef, (int, float)):
        out["spec.algorithm.kl.coef"] = coef
        if coef > 0:
            out["spec.algorithm.kl.in"] = "loss" if get("use_kl_loss") is True else "reward"
    if has_flag(v, "kl_estimator"):
        put_unless_own("spec.algorithm.kl.estimator", "kl_estimator")
    elif get("use_kl_estimator_k3") is True:
        out["spec.algorithm.kl.estimator"] = "k3"
    put("spec.algorithm.clip.low", "eps_clip")
    low_high = get("eps_clip_low_high")
    if isinstance(low_high, (list, tuple)) and len(low_high) == 2:
        out["spec.algorithm.clip.low"], out["spec.algorithm.clip.high"] = low_high
    elif "spec.algorithm.clip.low" in out:
        out["spec.algorithm.clip.high"] = out["spec.algorithm.clip.low"]
    put("spec.algorithm.entropy_coef", "entropy_loss_coef")
    put("spec.algorithm.gamma", "gamma")
    put("spec.algorithm.lambda", "lambd")
    put("spec.algorithm.ppo_epochs", "max_epochs")


def _grpo_variants(get: Any, put_unless_own: Any, out: dict[str, Any], v: Version) -> None:
    """The inverse of translate's _grpo_estimator, _dynamic_sampling, _loss_aggregation and the dual clip."""
    name = out.get("spec.algorithm.name")
    if get("advantage_estimator") == "dr_grpo" and name in GRPO_ADVANTAGE_ALGORITHMS:
        out["spec.algorithm.normalize_by_group_std"] = False
    # --advantage_estimator rloo is the rloo algorithm (a leave-one-out GRPO renders the same: not imported as one)
    if name in ("rloo", "reinforce_pp", "reinforce_pp_baseline", "gspo") and get("dynamic_filtering") is True:
        out["spec.algorithm.dynamic_sampling"] = True  # grpo with it is dapo (_algorithm)
    if has_flag(v, "loss_agg_mode") and name != "gspo":  # GSPO's loss is per sequence whatever the mode
        put_unless_own("spec.algorithm.loss_aggregation", "loss_agg_mode")
        mode = out.get("spec.algorithm.loss_aggregation")
        if isinstance(mode, str):
            out["spec.algorithm.loss_aggregation"] = mode.replace("-", "_")
    if has_flag(v, "dual_clip"):
        put_unless_own("spec.algorithm.clip.dual", "dual_clip")


def _off_policy_correction(get: Any, out: dict[str, Any], v: Version) -> None:
    """The inverse of translate._off_policy_correction: PolicyLoss's IS correction (models/loss.py, 0.8.11+) as
    the spec names it; a gated divergence (0.11.2 binary_kl / tv) or GSPO's swap of log-probs stays native."""
    if get("policy_loss_type") == "gspo":
        return
    bounds = get("vllm_is_truncated_threshold")
    if has_flag(v, "is_correction_level"):
        level, mode = get("is_correction_level"), get("is_correction_mode")
        if level not in ("token", "seq") or get("is_correction_gating") != "ratio":
            return
        corr = {"level": "token" if level == "token" else "sequence_geometric_mean"}
        corr["mode"] = "truncate" if mode == "clip" else "mask"
    elif get("enable_vllm_is_correction") is True:
        kind = get("vllm_is_correction_type", "tis")
        corr = {
            "tis": {"level": "token", "mode": "truncate"},
            "icepop": {"level": "token", "mode": "mask"},
            "seq-mask-tis": {"level": "sequence_geometric_mean", "mode": "mask"},
        }.get(str(kind), {})
        if not corr:
            return
    else:
        return
    if isinstance(bounds, (int, float)) and not isinstance(bounds, bool):  # 0.8.11: one upper bound
        low, high = 0.0, float(bounds)
    elif isinstance(bounds, (list, tuple)) and len(bounds) == 2:
        low, high = float(bounds[0]), float(bounds[1])
    else:
        return
    if low <= 0.0 and corr["mode"] == "mask":
        return  # a band from 0 masks from above only, which the spec's mask does not name
    values: dict[str, Any] = {**corr, "max_ratio": high}
    if low > 0.0:
        values["min_ratio"] = low
    for key, value in values.items():
        out[f"spec.algorithm.off_policy_correction.{key}"] = value


def _overlong_penalty(get: Any, has: Any, out: dict[str, Any], v: Version) -> None:
    """``--overlong_buffer_len`` and ``--overlong_penalty_factor``. Where --max_new_tokens exists the render adds
    it with the penalty (at data.max_response_length); a launch without it stays native."""
    length, factor = get("overlong_buffer_len"), get("overlong_penalty_factor")  # a float flag before 0.11
    whole = isinstance(length, int) or (isinstance(length, float) and length.is_integer())
    if not has("overlong_buffer_len") or isinstance(length, bool) or not whole or length <= 0:
        return
    if has_flag(v, "max_new_tokens") and get("max_new_tokens") is None:
        return
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0:
        out["spec.reward.overlong_penalty"] = {"buffer_tokens": int(length), "max_penalty": factor}


def _batches(get: Any, put: Any, out: dict[str, Any], v: Version) -> None:
    put("spec.training.global_batch", "rollout_batch_size")
    train, n = get("train_batch_size"), get("n_samples_per_prompt") or 1
    if isinstance(train, int) and train % n == 0:
        out["spec.training.mini_batch"] = train // n
    put("spec.training.micro_batch_per_gpu", "micro_train_batch_size")
    put("spec.training.epochs", "num_episodes")
    freeze = get("freezing_actor_steps")
    gae = get("advantage_estimator") == "gae"
    # -1, OpenRLHF's own (no warm-up), stays unset
    if gae and isinstance(freeze, int) and not isinstance(freeze, bool) and freeze >= 0:
        out["spec.training.critic_warmup_steps"] = critic_only_steps(v, freeze)
    if get("use_dynamic_batch") is True:
        out["spec.training.dynamic_batch.enabled"] = True
        put("spec.training.dynamic_batch.max_tokens_per_gpu", "train_max_tokens_per_gpu")
    if has_flag(v, "max_new_tokens"):
        # one --max_len holds prompt and response: the response is --max_new_tokens where given, and the split
        # of the rest is rladapt's choice (only the sum reaches OpenRLHF)
        total, new = get("max_len"), get("max_new_tokens")
        if isinstance(total, int):
            response = new if isinstance(new, int) and 0 < new < total else total // 2
            out["spec.data.max_prompt_length"] = total - response
            out["spec.data.max_response_length"] = response
        put("spec.rollout.max_tokens", "max_new_tokens")
    else:
        put("spec.data.max_prompt_length", "prompt_max_len")
        put("spec.data.max_response_length", "generate_max_len")
    put("spec.rollout.temperature", "temperature")
    put("spec.rollout.top_p", "top_p")


def _budgets(get: Any, out: dict[str, Any], v: Version) -> None:
    """``spec.training.budgets.old_log_prob``: experience making's micro batch and token cap where they are not
    what rladapt renders unset (the training micro batch; the training token cap with dynamic batching).
    translate._role_budgets serves every forward pass with them; the other passes stay unset."""
    micro = get("micro_rollout_batch_size")
    if isinstance(micro, int) and micro != get("micro_train_batch_size"):
        out["spec.training.budgets.old_log_prob.micro_batch_per_gpu"] = micro
    if not has_flag(v, "rollout_max_tokens_per_gpu"):
        return
    # a token cap without dynamic batching is one the spec refuses (it is inert then): it stays native
    tokens = get("rollout_max_tokens_per_gpu")
    if (
        get("use_dynamic_batch") is True
        and isinstance(tokens, int)
        and tokens != get("train_max_tokens_per_gpu")
    ):
        out["spec.training.budgets.old_log_prob.max_tokens_per_gpu"] = tokens


def _optimizer(get: Any, put: Any, put_unless_own: Any, out: dict[str, Any]) -> None:
    put("spec.training.optimizer.lr", "actor_learning_rate")
    put_unless_own("spec.training.optimizer.weight_decay", "l2")
    if get("lr_warmup_ratio") == 0:
        out["spec.training.optimizer.warmup_steps"] = 0
    else:
        put_unless_own("spec.training.optimizer.warmup_ratio", "lr_warmup_ratio")
    put_unless_own("spec.training.optimizer.max_grad_norm", "max_norm")
    if get("advantage_estimator") == "gae":
        put("spec.training.critic_optimizer.lr", "critic_learning_rate")


def _deepspeed(get: Any, put_unless_own: Any, out: dict[str, Any]) -> None:
    put_unless_own("spec.training.parallel.zero_stage", "zero_stage")
    if "spec.training.parallel.zero_stage" in out:
        out["spec.training.backend"] = "deepspeed"
    ring = get("ring_attn_size")
    if isinstance(ring, int) and ring > 1:
        out["spec.training.parallel.cp"] = ring


def _data_memory(get: Any, out: dict[str, Any], v: Version) -> None:
    """The inverse of translate._data_memory: CPU offload and packed sequences, each only where on (off is
    OpenRLHF's own). spec.data.overlong_prompts renders nothing but a note (truncate_right) or --max_new_tokens
    (truncate_left), which is spec.rollout.max_tokens already: it is not imported."""
    if get("adam_offload") is True:  # the critic's optimizer follows the actor's
        out["spec.training.offload.actor.optimizer"] = True
    if get("ref_reward_offload") is True:
        out["spec.training.offload.ref.params"] = True
    # every model on shared GPUs, DeepSpeed's states kept on the GPU while vLLM generates: translate._placement
    # turns --deepspeed_enable_sleep on there unless the spec says so (an async launch on shared GPUs renders
    # this way too, its --async_train a native item: _engine_settings)
    shared = get("colocate_all_models") is True
    if shared and has_flag(v, "deepspeed_enable_sleep") and get("deepspeed_enable_sleep") is False:
        out["spec.training.offload.actor.params"] = False
    # dynamic batching and ring attention turn packing on after parsing: there it stays OpenRLHF's own
    ring = get("ring_attn_size")
    derived_on = get("use_dynamic_batch") is True or (isinstance(ring, int) and ring > 1)
    if get("packing_samples") is True and not derived_on:
        out["spec.training.pack_sequences"] = True


def _checkpoint(get: Any, put: Any, put_unless_own: Any, out: dict[str, Any]) -> None:
    put("spec.checkpoint.dir", "ckpt_path")
    steps = get("save_steps")
    if isinstance(steps, int) and steps > 0:
        out["spec.checkpoint.every_steps"] = steps
    put_unless_own("spec.checkpoint.keep_last", "max_ckpt_num")
    put("spec.checkpoint.save_hf", "save_hf_ckpt")
    out["spec.checkpoint.resume"] = "auto" if get("load_checkpoint") is True else "never"


def _keep_best(get: Any, has: Any, out: dict[str, Any]) -> None:
    """``--best_metric_key`` (0.9.10+): one best checkpoint by a greater metric (translate._keep_best)."""
    metric = get("best_metric_key")
    if has("best_metric_key") and isinstance(metric, str) and metric:
        out["spec.checkpoint.keep_best"] = {"metric": metric, "higher_is_better": True, "count": 1}


def _chat_template(get: Any, out: dict[str, Any]) -> None:
    """``spec.data.chat_template: false`` for a launch that neither applies the chat template nor gives an input
    template (translate._data_and_eval renders neither then; with an input template it leaves the chat template
    off by itself, and the template stays a native item)."""
    if get("apply_chat_template") is not True and not get("input_template"):
        out["spec.data.chat_template"] = False


def _engine_settings(get: Any, out: dict[str, Any]) -> None:
    """``--enforce_eager`` where on, and ``--vllm_enable_sleep`` where it is not what the render gives by itself:
    on whenever every model shares the GPUs (translate._placement, with spec.weight_sync.max_staleness 0, the
    only staleness a spec allows on shared GPUs). An async launch on shared GPUs (``--async_train
    --colocate_all_models``, upstream's train_reinforce_baseline_ray_agent_async.sh of 0.10.2 and 0.11.0) keeps
    its sleep off this way, its --async_train staying a native item. Without --colocate_all_models OpenRLHF turns
    the sleep off after parsing, so there it is never imported on."""
    if get("enforce_eager") is True:
        out["spec.rollout.engine_settings.enforce_eager"] = True
    hybrid = get("colocate_all_models") is True
    sleep = get("vllm_enable_sleep")
    if isinstance(sleep, bool) and sleep != hybrid:
        out["spec.rollout.engine_settings.free_cache_between_phases"] = sleep


def _sync_backend(get: Any, has: Any, out: dict[str, Any]) -> None:
    """A launch's own ``--vllm_sync_backend nccl`` (``--vllm.sync_backend`` from 0.10) as spec.weight_sync.method,
    which translate._placement renders as that flag. OpenRLHF's actor reads the flag and, with nccl, shares the
    weights by CUDA IPC when every model shares the GPUs and training is synchronous, else broadcasts them over
    NCCL (trainer/ray/ppo_actor.py ``use_cuda_ipc``: ``backend == "nccl" and colocate_all_models`` at 0.5.9.post1
    and 0.7.5, ``and not async_train`` from 0.8.11, ``args.vllm.sync_backend``/``args.train.colocate_all`` at
    0.10.2). Another backend (gloo) stays a native item: the spec names no such method."""
    if not has("vllm_sync_backend") or get("vllm_sync_backend") != "nccl":
        return
    ipc = get("colocate_all_models") is True and get("async_train") is not True
    out["spec.weight_sync.method"] = "cuda_ipc" if ipc else "nccl"


def _logging(get: Any, out: dict[str, Any]) -> None:
    backends = ["console"]
    if get("use_wandb"):
        backends.append("wandb")
        project = get("wandb_project")
        if project is not None:
            out["spec.logging.project"] = project
        run = get("wandb_run_name")
        if isinstance(run, str) and not run.startswith(COMPUTED):
            out["spec.logging.experiment"] = run
    tensorboard = get("use_tensorboard")
    if tensorboard:
        backends.append("tensorboard")
    if isinstance(tensorboard, str) and tensorboard:
        # the launch's own directory (the flag is one: --use_tensorboard DIR, --logger.tensorboard_dir DIR from
        # 0.10.2), kept: translate renders spec.logging.dir as the flag and reads the events back from there
        out["spec.logging.dir"] = tensorboard
    out["spec.logging.backends"] = backends


def _placement(get: Any, out: dict[str, Any]) -> None:
    """Pools and weight sync that render the launch's GPU flags: one pool per OpenRLHF placement group."""
    if get("async_train") is True:
        out["spec.weight_sync.max_staleness"] = get("async_queue_size", 1) or 1
        if get("partial_rollout") is True:
            out["spec.weight_sync.partial_rollout"] = True
    nodes, gpus = int(get("actor_num_nodes") or 1), int(get("actor_num_gpus_per_node") or 8)
    colocate_all = get("colocate_all_models") is True
    estimator = get("advantage_estimator")
    kl = get("init_kl_coef") or 0.0
    # the spec has a reference model with a KL term; before 0.6, without one, rladapt gives OpenRLHF's
    # always-loaded reference model the actor's GPUs itself (--colocate_actor_ref)
    ref = kl > 0
    critic = estimator == "gae"
    reward = "spec.reward.model.path" in out
    actor_pool = ["actor"]
    pools: list[dict[str, Any]] = []
    if colocate_all:
        actor_pool.append("rollout")
    else:
        engines, tp = int(get("vllm_num_engines") or 0), int(get("vllm_tensor_parallel_size") or 1)
        if engines:
            pools.append(_pool("rollout", engines * tp, gpus, ["rollout"]))
    if ref and (colocate_all or get("colocate_actor_ref") is True):
        actor_pool.append("ref")
    elif ref:
        pools.append(_role_pool(get, "ref", ["ref"]))
    together = get("colocate_critic_reward") is True
    side = [r for r, on in (("critic", critic), ("reward", reward)) if on]
    if colocate_all and not together:
        actor_pool.extend(side)
    elif together and side:
        pools.append(_role_pool(get, side[0], side))
    else:
        pools.extend(_role_pool(get, role, [role]) for role in side)
    pools.insert(0, {"name": "actor", "nodes": nodes, "gpus_per_node": gpus, "roles": actor_pool})
    out["spec.placement"] = {"pools": pools}
    out["spec.rollout.tensor_parallel"] = int(get("vllm_tensor_parallel_size") or 1)
    gpu_memory = get("vllm_gpu_memory_utilization")
    if gpu_memory is not None:
        out["spec.rollout.gpu_memory_utilization"] = gpu_memory


def _role_pool(get: Any, role: str, roles: list[str]) -> dict[str, Any]:
    nodes, gpus = int(get(f"{role}_num_nodes") or 1), int(get(f"{role}_num_gpus_per_node") or 8)
    return {"name": role, "nodes": nodes, "gpus_per_node": gpus, "roles": roles}


def _pool(name: str, total: int, per_node: int, roles: list[str]) -> dict[str, Any]:
    """A pool of ``total`` GPUs, ``per_node`` a node where that divides it, else all on one node."""
    if total % per_node == 0 and total >= per_node:
        return {"name": name, "nodes": total // per_node, "gpus_per_node": per_node, "roles": roles}
    return {"name": name, "nodes": 1, "gpus_per_node": total, "roles": roles}


def interpreter(argv: Sequence[str], start: int) -> str:
    """The interpreter of a ``<python> [options] -m <module> ...`` command whose module arguments start at
    ``start`` (the word before ``-m``, past the interpreter's own options)."""
    i = start - 3
    while i > 0 and argv[i].startswith("-"):
        i -= 1
    return argv[max(i, 0)]
