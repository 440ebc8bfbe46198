"""RLJob -> NativeLaunch for OpenRLHF: ``python3 -m openrlhf.cli.train_ppo_ray <flags>`` submitted as a Ray job.

Flags are collected by their flat name with the spec field that asked for them, checked against what OpenRLHF
itself asserts only after parsing (``checks.py``), then spelled in the chosen version's flag names.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from rladapt.adapters import common
from rladapt.metrics.names import kept_log_dir, log_dir_setting, with_tensorboard
from rladapt.plugins.native import NativeLaunch
from rladapt.primitives.errors import Problem, SpecError, UnsupportedError
from rladapt.primitives.spec import GRPO_ADVANTAGE_ALGORITHMS

from .args import Args
from .checks import FlagView, check
from .parser import split_native
from .versions import (
    ALGORITHMS,
    TOKEN_LEVEL_LOSS_SINCE,
    capabilities,
    dotted,
    freezing_actor_steps,
    has_flag,
    option,
    spell,
)

if TYPE_CHECKING:
    from rladapt.plugins import FrameworkVersion
    from rladapt.primitives import RLJob
    from rladapt.primitives.spec import Algorithm

ENTRY_MODULE = "openrlhf.cli.train_ppo_ray"
#: OpenRLHF loads this name from a Python file given as the remote reward URL.
REWARD_FUNC_NAME = "reward_func"
REWARD_SHIM = ".rladapt/openrlhf_reward.py"


def translate(job: RLJob, version: FrameworkVersion) -> NativeLaunch:
    args = Args(version=version.parsed)
    files: dict[str, str] = {}
    _placement(job, args)
    _rollout_mode(job, args)
    _models(job, args, files)
    _algorithm(job, args)
    _batches(job, args)
    _overlong_penalty(job, args)
    _off_policy_correction(job, args)
    _data_and_eval(job, args)
    _optimizer(job, args)
    _deepspeed(job, args)
    _data_memory(job, args)
    _checkpoint(job, args)
    _logging(job, args)
    _engine_settings(job, args)
    _agent(job, args)
    if args.unsupported:
        raise UnsupportedError(args.unsupported)
    problems = check(FlagView.from_args(args))
    if problems:
        # The job is valid rladapt-wise: what OpenRLHF would assert on is something this version cannot run.
        raise UnsupportedError(
            problems, f"openrlhf {version.version} would reject this job after parsing its flags"
        )

    generated = args.argv()
    native_tokens, flags = _native_tokens(job)
    notes = [
        *args.notes,
        *common.override_notes("openrlhf", flags, _flag_items(generated)),
    ]
    argv = (job.spec.runtime.python, "-m", ENTRY_MODULE, *generated, *native_tokens)
    env: dict[str, str] = dict(job.spec.env)
    return NativeLaunch.from_job(
        job,
        framework="openrlhf",
        version=version.version,
        argv=argv,
        files=files,
        runtime_env=runtime_env(job, env, own_tensorboard_dir(job, args.version)),
        notes=notes,
        passthrough=job.spec.native.get("openrlhf", []),
        origins={spell(version.version, flat): field for flat, field in args.fields.items()},
        # OpenRLHF writes into <dir>/<run name> (a run name from the clock unless given): the whole directory
        metrics_dir=own_tensorboard_dir(job, args.version),
    )


# --- placement -----------------------------------------------------------------------------------------------


def _rollout_mode(job: RLJob, args: Args) -> None:
    """OpenRLHF has no switch for an asynchronous rollout engine: its vLLM actors generate with the offline
    ``vllm.LLM`` (``LLMRayActor``), and only agent mode (``--agent_func_path``) loads the AsyncLLMEngine actor
    (``openrlhf/cli/train_ppo_ray.py`` and ``trainer/ray/vllm_engine_async.py``, 0.8.11 to 0.11.2). The samples
    are the same either way (the engine differs, not the algorithm), so the job runs, and the note says so."""
    if job.spec.rollout.mode == "async":
        args.notes.append(
            "spec.rollout.mode is async, which OpenRLHF cannot express: its vLLM engines generate synchronously "
            "(the same samples, batch by batch; set spec.rollout.mode: sync to say so)"
        )


def _placement(job: RLJob, args: Args) -> None:
    spec = job.spec
    layout = job.placement
    roles = common.placement(job)
    required = spec.required_roles

    def put(role: str, source: str, like: str | None = None) -> None:
        rp = roles[like or role]
        args.set(f"{role}_num_nodes", rp.nodes, source)
        args.set(f"{role}_num_gpus_per_node", rp.gpus_per_node, source)

    put("actor", "spec.placement")
    colocate_all = layout.colocated("actor", "rollout")
    args.set("colocate_all_models", colocate_all, "spec.placement")

    # vLLM engines: the rollout GPUs cut into tensor-parallel groups.
    rollout = roles["rollout"]
    rollout_gpus = rollout.nodes * rollout.gpus_per_node
    tp = spec.rollout.tensor_parallel
    if spec.rollout.engine != "vllm":
        args.cannot(
            "spec.rollout.engine", f"rollout engine {spec.rollout.engine}", spec.rollout.engine, "vllm"
        )
    if rollout_gpus % tp:
        raise UnsupportedError(
            [
                Problem(
                    "spec.rollout.tensor_parallel",
                    f"does not divide the rollout's {rollout_gpus} GPUs into whole vLLM engines",
                    f"a divisor of {rollout_gpus}",
                    str(tp),
                )
            ]
        )
    args.set("vllm_num_engines", rollout_gpus // tp, "spec.placement")
    args.set("vllm_tensor_parallel_size", tp, "spec.rollout.tensor_parallel")
    args.set(
        "vllm_gpu_memory_utilization",
        spec.rollout.gpu_memory_utilization,
        "spec.rollout.gpu_memory_utilization",
    )

    if "ref" in required:
        put("ref", "spec.placement")
        if not colocate_all:
            args.set("colocate_actor_ref", layout.colocated("actor", "ref"), "spec.placement")
    elif not has_flag(args.version, "use_kl_loss"):
        # Before 0.6 a reference model is always created; give it the actor's GPUs rather than new ones.
        put("ref", "spec.placement", like="actor")
        if not colocate_all:
            args.set("colocate_actor_ref", True, "spec.placement")
        args.notes.append(
            f"openrlhf {args.version} always loads a reference model; it shares the actor's GPUs"
        )

    critic = "critic" in required
    reward = "reward" in required
    if critic:
        put("critic", "spec.placement")
    if reward:
        put("reward", "spec.placement")
    in_actor_group = colocate_all and critic and layout.colocated("actor", "critic")
    if critic and reward and layout.colocated("critic", "reward") and not in_actor_group:
        # Under colocate_all, critic and reward already share the actor's placement group; this flag would give
        # them a second one of their own.
        args.set("colocate_critic_reward", True, "spec.placement")
    elif critic and not reward and colocate_all and not layout.colocated("actor", "critic"):
        # A critic outside the actor's pool gets its own placement group only through this flag, which also
        # asserts that the (absent) reward model has the critic's shape.
        args.set("colocate_critic_reward", True, "spec.placement")
        put("reward", "spec.placement", like="critic")

    if colocate_all:
        for role in ("ref", "critic", "reward"):
            if role not in required or layout.colocated("actor", role):
                continue
            if role in ("critic", "reward") and args.get("colocate_critic_reward"):
                continue
            args.cannot(
                "spec.placement",
                f"{role} outside the actor's pool when actor and rollout share one "
                "(colocate_all puts every model in the actor's placement group)",
                f"{role} elsewhere",
                f"{role} in the actor's pool, or critic and reward together in a pool of their own",
            )
        if job.spec.weight_sync.max_staleness == 0:
            # Hybrid engine: vLLM and DeepSpeed take turns on the same GPUs. DeepSpeed's states go to CPU while
            # vLLM generates unless the spec keeps the actor's parameters on the GPU (offload.actor.params false:
            # upstream's train_ppo_llama_ray_tensor_parallelism.sh, 0.7.5 and 0.8.11, colocates all without it;
            # cli/train_ppo_ray.py requires it nowhere, 0.6.0.post1 to 0.11.2)
            args.set("vllm_enable_sleep", True, "spec.placement")
            if (
                has_flag(args.version, "deepspeed_enable_sleep")
                and spec.training.offload.actor.params is not False
            ):
                args.set("deepspeed_enable_sleep", True, "spec.placement")
    _pool_budget(job, args, roles)

    ws = spec.weight_sync
    if ws.method == "disk":
        args.cannot(
            "spec.weight_sync.method", "weight sync through disk", ws.method, "auto, nccl or cuda_ipc"
        )
    elif ws.method in ("nccl", "cuda_ipc"):
        # CUDA IPC is what OpenRLHF does for nccl when every model is colocated and training is synchronous.
        args.set("vllm_sync_backend", "nccl", "spec.weight_sync.method")
    if ws.every_steps != 1:
        args.cannot(
            "spec.weight_sync.every_steps", "weight sync less often than every step", ws.every_steps, "1"
        )
    if ws.max_staleness > 0:
        if not has_flag(args.version, "async_train"):
            args.cannot(
                "spec.weight_sync.max_staleness", "asynchronous (off-policy) training", ws.max_staleness, "0"
            )
        else:
            args.set("async_train", True, "spec.weight_sync.max_staleness")
            if has_flag(args.version, "async_queue_size"):
                args.set("async_queue_size", ws.max_staleness, "spec.weight_sync.max_staleness")
            elif ws.max_staleness != 1:
                args.cannot(
                    "spec.weight_sync.max_staleness",
                    "a rollout queue deeper than 1 (--async_queue_size arrives in 0.9.1)",
                    ws.max_staleness,
                    "1",
                )
            if ws.partial_rollout and has_flag(args.version, "partial_rollout"):  # before: capability
                args.set("partial_rollout", True, "spec.weight_sync.partial_rollout")


def _off_policy_correction(job: RLJob, args: Args) -> None:
    """PolicyLoss weighs the PPO loss by exp(old - rollout log-probs) (models/loss.py of 0.8.11 to 0.11.2); the
    trainer asks vLLM for the log-probs whenever the correction is on (ppo_utils/samples_generator.py)."""
    corr = job.spec.algorithm.off_policy_correction
    field = "spec.algorithm.off_policy_correction"
    if corr is None or f"off_policy_correction.{corr.level}.{corr.mode}" not in capabilities(
        str(args.version)
    ):
        return  # refused by capability
    if job.spec.algorithm.name == "gspo":
        # PolicyLoss(policy_loss_type="gspo") applies no weight: it swaps old for the rollout log-probs in its
        # sequence ratio (models/loss.py, 0.8.11 to 0.11.2), which is another objective
        args.cannot(
            field,
            "an IS correction for GSPO (its loss takes the rollout's log-probs as the old policy instead of "
            "weighing by the ratio)",
            f"level {corr.level}, mode {corr.mode}",
        )
        return
    low = float(corr.min_ratio or 0.0)  # a clamp or band from 0 is no lower bound: every ratio is positive
    high = float(corr.max_ratio)
    if has_flag(args.version, "is_correction_level"):
        # 0.11.2: level token|seq (seq: the geometric mean), mode clip|mask, gating ratio (the IS weight itself)
        level = "token" if corr.level == "token" else "seq"
        args.set("is_correction_level", level, f"{field}.level")
        args.set("is_correction_mode", "clip" if corr.mode == "truncate" else "mask", f"{field}.mode")
        args.set("is_correction_gating", "ratio", field)
        args.set("vllm_is_truncated_threshold", (low, high), f"{field}.max_ratio")
        return
    args.set("enable_vllm_is_correction", True, field)
    if not has_flag(args.version, "vllm_is_correction_type"):
        args.set("vllm_is_truncated_threshold", high, f"{field}.max_ratio")  # 0.8.11: one upper bound
        return
    kind = {
        ("token", "truncate"): "tis",
        ("token", "mask"): "icepop",
        ("sequence_geometric_mean", "mask"): "seq-mask-tis",
    }
    args.set("vllm_is_correction_type", kind[(corr.level, corr.mode)], f"{field}.mode")
    args.set("vllm_is_truncated_threshold", (low, high), f"{field}.max_ratio")


def _pool_budget(job: RLJob, args: Args, roles: dict[str, Any]) -> None:
    """OpenRLHF gives GPUs to groups of models; groups that share a pool must fit in it side by side."""
    layout = job.placement
    groups: dict[str, list[str]] = {}  # group leader -> members
    colocate_all = bool(args.get("colocate_all_models"))
    for role in job.spec.required_roles:
        if (colocate_all and (role == "rollout" or role == "ref" or layout.colocated("actor", role))) or (
            role == "ref" and args.get("colocate_actor_ref")
        ):
            leader = "actor"
        elif role == "reward" and args.get("colocate_critic_reward") and "critic" in job.spec.required_roles:
            leader = "critic"
        else:
            leader = role
        groups.setdefault(leader, []).append(role)
    for pool in layout.pools:
        used = [(leader, members) for leader, members in groups.items() if layout.pool_of(leader) is pool]
        total = sum(roles[leader].nodes * roles[leader].gpus_per_node for leader, _ in used)
        if total > pool.gpus:
            names = " + ".join("/".join(members) for _, members in used)
            raise UnsupportedError(
                [
                    Problem(
                        f"spec.placement.pools[{layout.pools.index(pool)}]",
                        f"openrlhf runs {names} on separate GPUs, {total} in all, but pool {pool.name!r} has {pool.gpus}; "
                        "it shares GPUs only between actor and ref, critic and reward, or all models with the rollout",
                        "spec.roles.<role>.gpus splitting the pool, or one pool per group",
                        str(total),
                    )
                ]
            )


# --- models, algorithm, batches --------------------------------------------------------------------------------


def _models(job: RLJob, args: Args, files: dict[str, str]) -> None:
    spec = job.spec
    model = spec.model
    args.set("pretrain", model.path, "spec.model.path")
    if model.tokenizer and model.tokenizer != model.path:
        args.cannot("spec.model.tokenizer", "a tokenizer other than the model's", model.tokenizer)
    if spec.algorithm.needs_critic and model.critic_path is not None:
        # Unset: OpenRLHF's own choice, the reward model, else the policy (cli/train_ppo_ray.py, after parsing:
        # 0.5.9.post1 line 392, 0.9.10 line 538).
        args.set("critic_pretrain", model.critic_path, "spec.model.critic_path")
    reward = spec.reward
    sources = [name for name in ("function", "model", "remote") if getattr(reward, name) is not None]
    if len(sources) > 1:
        args.cannot(
            "spec.reward",
            "more than one reward source (a remote URL or function replaces the model)",
            ", ".join(sources),
            "one of function, model, remote",
        )
    if reward.function is not None:
        path = reward.function.path
        if not path.endswith(".py"):
            args.cannot("spec.reward.function.path", "a reward function outside a .py file", path)
        if reward.function.name != REWARD_FUNC_NAME:
            # OpenRLHF imports the name reward_func; a two-line module re-exports the user's function under it.
            files[REWARD_SHIM] = _reward_shim(path, reward.function.name)
            path = REWARD_SHIM
        args.set("remote_rm_url", path, "spec.reward.function")
        args.notes.append(
            f"the reward function is called as OpenRLHF's reward_func: {_reward_signature(args.version)}"
        )
    elif reward.remote is not None:
        args.set("remote_rm_url", reward.remote.url, "spec.reward.remote.url")
    elif reward.model is not None:
        args.set("reward_pretrain", reward.model.path, "spec.reward.model.path")
        if reward.model.micro_batch_per_gpu != spec.training.micro_batch_per_gpu:
            args.notes.append(
                "openrlhf scores with --micro_rollout_batch_size (training.micro_batch_per_gpu="
                f"{spec.training.micro_batch_per_gpu}); reward.model.micro_batch_per_gpu is not used"
            )
    lora = model.lora
    if lora is not None:
        args.set("lora_rank", lora.rank, "spec.model.lora.rank")
        args.set("lora_alpha", lora.alpha, "spec.model.lora.alpha")
        targets = [lora.target_modules] if isinstance(lora.target_modules, str) else list(lora.target_modules)
        args.set("target_modules", targets, "spec.model.lora.target_modules")


def _agent(job: RLJob, args: Args) -> None:
    """``spec.rollout.agent``: ``--agent_func_path`` (``--train.agent_func_path`` from 0.10.2).

    cli/train_ppo_ray.py (0.8.11 to 0.11.2) sets remote_rm_url to "agent" after parsing, so the agent's rewards
    replace any reward source (the spec allows none beside an agent); the vLLM actor loads the file's
    ``AgentExecutor``, a subclass of openrlhf.utils.agent.AgentExecutorBase (trainer/ray/vllm_engine_async.py in
    0.8.11, trainer/ray/vllm_engine.py _load_agent_executor from 0.9.10), and asserts a ``.py`` path.
    """
    agent = job.spec.rollout.agent
    if agent is None:
        return
    args.set("agent_func_path", agent.path, "spec.rollout.agent.path")
    args.notes.append(
        f"the agent file {agent.path} must define AgentExecutor (a subclass of "
        "openrlhf.utils.agent.AgentExecutorBase): OpenRLHF takes each rollout's turns and rewards from it"
    )


def _reward_signature(version: Version) -> str:
    return (
        "reward_func(queries, prompts)"
        if version < Version("0.6.0")
        else "reward_func(queries, prompts, labels)"
    )


def _flag_items(tokens: list[str]) -> list[str]:
    """``--flag value`` pairs of an argv as ``--flag=value`` items (a lone flag stays as it is)."""
    items = []
    for j, token in enumerate(tokens):
        if token.startswith("--"):
            value = tokens[j + 1] if j + 1 < len(tokens) and not tokens[j + 1].startswith("--") else None
            items.append(token if value is None or "=" in token else f"{token}={value}")
    return items


def _native_tokens(job: RLJob) -> tuple[list[str], list[tuple[int, str]]]:
    """``spec.native.openrlhf`` as argv tokens, and (entry index, flag) for every flag in them."""
    tokens: list[str] = []
    flags: list[tuple[int, str]] = []
    problems: list[Problem] = []
    for i, entry in enumerate(job.spec.native.get("openrlhf", [])):
        try:
            split = split_native([entry])
        except ValueError as exc:
            problems.append(
                Problem(
                    f"spec.native.openrlhf[{i}]",
                    f"cannot split into arguments: {exc}",
                    "shell-like words, e.g. --flag value",
                    entry,
                )
            )
            continue
        flags.extend((i, token.split("=", 1)[0]) for token in split if token.startswith("--"))
        tokens.extend(split)
    if problems:
        raise SpecError(problems)
    return tokens, flags


def _native_value(job: RLJob, flag: str) -> str | None:
    """The value ``spec.native.openrlhf`` gives ``flag`` (its last one: argparse keeps the last), else None."""
    found = None
    for entry in job.spec.native.get("openrlhf", []):
        try:
            tokens = split_native([entry])
        except ValueError:
            continue
        for i, token in enumerate(tokens):
            name, eq, inline = token.partition("=")
            if name != flag:
                continue
            if eq:
                found = inline
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                found = tokens[i + 1]
    return found


def own_tensorboard_dir(job: RLJob, version: Version) -> str | None:
    """The TensorBoard directory the launch names (``--use_tensorboard``, ``--logger.tensorboard_dir`` from
    0.10.2): a native item's (it comes last on the command line, and argparse keeps the last), else
    ``spec.logging.dir``; None: rladapt's own."""
    return kept_log_dir(job, _native_tensorboard_dir(job, version))


def _native_tensorboard_dir(job: RLJob, version: Version) -> str | None:
    """The TensorBoard directory the spec's native items give (the launch's own, in a spec imported before
    ``spec.logging.dir``), else None."""
    return _native_value(job, spell(version, "use_tensorboard")) or None


def _native_flag(job: RLJob, flag: str) -> bool:
    """Whether ``spec.native.openrlhf`` passes ``flag`` (an entry that does not split is judged later)."""
    for entry in job.spec.native.get("openrlhf", []):
        try:
            tokens = split_native([entry])
        except ValueError:
            continue
        if any(token.split("=", 1)[0] == flag for token in tokens):
            return True
    return False


def _reward_shim(path: str, name: str) -> str:
    return (
        '"""Written by rladapt: OpenRLHF loads `reward_func` from this file."""\n'
        "import importlib.util\n\n"
        f"_spec = importlib.util.spec_from_file_location('rladapt_user_reward', {path!r})\n"
        "_module = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_module)\n"
        f"reward_func = getattr(_module, {name!r})\n"
    )


def _algorithm(job: RLJob, args: Args) -> None:
    alg = job.spec.algorithm
    mapping = ALGORITHMS.get(alg.name)
    if mapping is None or f"algorithm.{alg.name}" not in capabilities(str(args.version)):
        args.cannot(
            "spec.algorithm.name",
            f"algorithm {alg.name}",
            alg.name,
            ", ".join(a for a in ALGORITHMS if f"algorithm.{a}" in capabilities(str(args.version))),
        )
        return
    estimator, extra = mapping
    estimator, decided_by = _grpo_estimator(alg, estimator)
    args.set("advantage_estimator", estimator, decided_by)
    for flat, value in extra.items():
        args.set(flat, value, "spec.algorithm.name")
    _dynamic_sampling(alg, args)
    args.set("n_samples_per_prompt", alg.group_size, "spec.algorithm.group_size")

    kl = alg.kl
    args.set("init_kl_coef", kl.coef, "spec.algorithm.kl.coef")
    if kl.coef > 0 and kl.in_ == "loss":
        if has_flag(args.version, "use_kl_loss"):
            args.set("use_kl_loss", True, "spec.algorithm.kl.in")
        else:
            args.cannot("spec.algorithm.kl.in", "KL as a loss term", "loss", "reward")
    # verl's low_var_kl is k3 clamped to [-10, 10]; OpenRLHF's k3 is the same estimator without the clamp.
    estimator_name = "k3" if kl.estimator == "low_var_kl" else kl.estimator
    if estimator_name is None:
        pass  # OpenRLHF's own: k1
    elif has_flag(args.version, "kl_estimator"):
        args.set("kl_estimator", estimator_name, "spec.algorithm.kl.estimator")
    elif estimator_name == "k3":
        args.set("use_kl_estimator_k3", True, "spec.algorithm.kl.estimator")
    elif estimator_name != "k1" and kl.coef > 0:
        args.cannot("spec.algorithm.kl.estimator", f"KL estimator {kl.estimator}", kl.estimator, "k1, k3")
    if kl.estimator == "low_var_kl" and kl.coef > 0:
        args.notes.append(
            "kl.estimator low_var_kl is rendered as OpenRLHF's k3 (the same estimator, unclamped)"
        )

    clip = alg.clip
    args.set("eps_clip", clip.low, "spec.algorithm.clip.low")
    if clip.dual is not None and has_flag(args.version, "dual_clip"):  # before: refused by capability
        args.set("dual_clip", clip.dual, "spec.algorithm.clip.dual")
    _loss_aggregation(alg, args)
    if clip.high != clip.low:
        if has_flag(args.version, "eps_clip_low_high"):
            args.set("eps_clip_low_high", (clip.low, clip.high), "spec.algorithm.clip.high")
        else:
            args.cannot("spec.algorithm.clip.high", "an asymmetric clip range", clip.high, f"{clip.low}")
    if alg.entropy_coef is None:
        pass  # OpenRLHF's own: None, the entropy is not even computed
    elif has_flag(args.version, "entropy_loss_coef"):
        args.set("entropy_loss_coef", alg.entropy_coef, "spec.algorithm.entropy_coef")
    elif alg.entropy_coef > 0:
        args.cannot("spec.algorithm.entropy_coef", "an entropy bonus", alg.entropy_coef, "0")
    args.set("gamma", alg.gamma, "spec.algorithm.gamma")
    args.set("lambd", alg.lam, "spec.algorithm.lambda")
    args.set("max_epochs", alg.ppo_epochs, "spec.algorithm.ppo_epochs")


def _grpo_estimator(alg: Algorithm, estimator: str) -> tuple[str, str]:
    """The estimator of GRPO's advantage variants (trainer/ppo_utils/experience_maker.py, every pinned release):
    group_norm is (r - mean) / std, dr_grpo r - mean, rloo r - the others' mean; no estimator divides a
    leave-one-out advantage by the std (refused by capability: advantage.leave_one_out_std)."""
    if alg.name not in GRPO_ADVANTAGE_ALGORITHMS:
        return estimator, "spec.algorithm.name"
    if alg.baseline == "leave_one_out":
        return "rloo", "spec.algorithm.baseline"
    if alg.normalize_by_group_std is False:
        return "dr_grpo", "spec.algorithm.normalize_by_group_std"
    # group_norm's own baseline and std, asked for explicitly
    if alg.normalize_by_group_std is True:
        return estimator, "spec.algorithm.normalize_by_group_std"
    if alg.baseline == "group_mean":
        return estimator, "spec.algorithm.baseline"
    return estimator, "spec.algorithm.name"


def _dynamic_sampling(alg: Algorithm, args: Args) -> None:
    if not alg.dynamic_sampling_on or not has_flag(args.version, "dynamic_filtering"):
        return  # off is OpenRLHF's own; on where the flag is missing: refused by capability
    source = "spec.algorithm.dynamic_sampling" if alg.dynamic_sampling is not None else "spec.algorithm.name"
    args.set("dynamic_filtering", True, source)
    # keeps the groups whose mean reward lies strictly inside the range (experience_maker.py): with rewards in
    # [0, 1], the groups that are not all 0 or all 1
    args.set("dynamic_filtering_reward_range", (0.0, 1.0), source)


def _loss_aggregation(alg: Algorithm, args: Args) -> None:
    agg = alg.effective_loss_aggregation
    if agg is None:
        return
    source = "spec.algorithm.loss_aggregation" if alg.loss_aggregation else "spec.algorithm.name"
    if alg.name == "gspo":
        # PolicyLoss reduces GSPO's loss per sequence whatever else is asked (models/loss.py, 0.8.11 to 0.11.2)
        if agg != "seq_mean_token_mean":
            args.cannot(
                source,
                f"loss aggregation {agg} with GSPO (its loss is per sequence)",
                agg,
                "seq_mean_token_mean",
            )
        return
    if has_flag(args.version, "loss_agg_mode"):
        if alg.loss_aggregation is not None and agg in ("token_mean", "seq_mean_token_mean"):
            args.set("loss_agg_mode", agg.replace("_", "-"), source)
        return
    fixed = "token_mean" if args.version >= Version(TOKEN_LEVEL_LOSS_SINCE) else "seq_mean_token_mean"
    if agg != fixed:  # an explicit mode is refused by capability first; this is an algorithm's own mode
        args.cannot(source, f"loss aggregation {agg} (this version's policy loss is {fixed})", agg, fixed)


def _overlong_penalty(job: RLJob, args: Args) -> None:
    penalty = job.spec.reward.overlong_penalty
    if penalty is None or not has_flag(args.version, "overlong_buffer_len"):
        return  # where the flags are missing: refused by capability
    args.set("overlong_buffer_len", penalty.buffer_tokens, "spec.reward.overlong_penalty.buffer_tokens")
    args.set("overlong_penalty_factor", penalty.max_penalty, "spec.reward.overlong_penalty.max_penalty")
    spec = job.spec
    if has_flag(args.version, "max_new_tokens") and spec.rollout.max_tokens is None:
        # the penalty counts from max_new_tokens, else from max_len, the prompt PLUS the response
        # (length_penalty.py, 0.9.10 to 0.11.2): the spec's buffer ends at the response budget
        budget = spec.data.max_response_length
        args.set("max_new_tokens", budget, "spec.reward.overlong_penalty")
        args.notes.append(
            f"--max_new_tokens {budget} (data.max_response_length): OpenRLHF's overlong penalty counts from it, "
            "else from the prompt plus response length"
        )


def _batches(job: RLJob, args: Args) -> None:
    spec = job.spec
    tr = spec.training
    group = spec.algorithm.group_size
    args.set("rollout_batch_size", tr.global_batch, "spec.training.global_batch")
    args.set("train_batch_size", tr.mini_batch * group, "spec.training.mini_batch")
    # Always explicit: both micro batch defaults changed at 0.10.0 (4 and 8, then 1 and 1).
    args.set("micro_train_batch_size", tr.micro_batch_per_gpu, "spec.training.micro_batch_per_gpu")
    args.set("micro_rollout_batch_size", tr.micro_batch_per_gpu, "spec.training.micro_batch_per_gpu")
    if tr.steps is not None and (tr.epochs or 1) > 1:
        # max_samples cuts the prompt set itself (`select(range(min(max_samples, len(...))))`) and every episode
        # runs the cut set again (`for episode in range(num_episodes)`): trainer/ray/ppo_actor.py and
        # trainer/ppo_trainer.py in 0.5.9.post1, trainer/ppo_trainer.py in 0.8.11 and 0.10.2 to 0.11.0. So
        # epochs x steps would run, not whichever limit comes first.
        args.cannot(
            "spec.training.epochs",
            "spec.training.steps and spec.training.epochs > 1 together (it has no step limit: --max_samples "
            "cuts the prompts, and each of the --num_episodes passes repeats them)",
            tr.epochs,
            "1, null, or spec.training.steps: null",
        )
    elif tr.steps is not None:
        # OpenRLHF has no step limit: one step consumes rollout_batch_size prompts, so capping the prompts of a
        # single pass gives exactly `steps` steps (fewer if the data holds fewer prompts): with epochs: 1 too,
        # the same run (whichever of the two limits comes first).
        args.set("num_episodes", 1, "spec.training.epochs" if tr.epochs else "spec.training.steps")
        args.set("max_samples", tr.steps * tr.global_batch, "spec.training.steps")
    else:
        args.set("num_episodes", tr.epochs or 1, "spec.training.epochs")
    if tr.critic_warmup_steps is not None and spec.algorithm.needs_critic:
        freeze = freezing_actor_steps(args.version, tr.critic_warmup_steps)
        args.set("freezing_actor_steps", freeze, "spec.training.critic_warmup_steps")
    if tr.dynamic_batch.enabled:
        if has_flag(args.version, "use_dynamic_batch"):
            args.set("use_dynamic_batch", True, "spec.training.dynamic_batch.enabled")
            args.set(
                "train_max_tokens_per_gpu",
                tr.dynamic_batch.max_tokens_per_gpu,
                "spec.training.dynamic_batch.max_tokens_per_gpu",
            )
            args.set(
                "rollout_max_tokens_per_gpu",
                tr.dynamic_batch.max_tokens_per_gpu,
                "spec.training.dynamic_batch.max_tokens_per_gpu",
            )
        else:
            args.cannot("spec.training.dynamic_batch.enabled", "token-based dynamic batching", True, "false")
    _role_budgets(job, args)

    data = spec.data
    ro = spec.rollout
    response = ro.max_tokens or data.max_response_length
    if has_flag(args.version, "max_new_tokens"):
        args.set(
            "max_len", data.max_prompt_length + data.max_response_length, "spec.data.max_response_length"
        )
        if ro.max_tokens is not None:
            args.set("max_new_tokens", ro.max_tokens, "spec.rollout.max_tokens")
        # Unset: OpenRLHF's own, "max_len - prompt_len per sample" (--max_new_tokens, default None, in
        # cli/train_ppo_ray.py of 0.9.10): a short prompt leaves room for a longer response, as upstream runs.
    else:
        args.set("prompt_max_len", data.max_prompt_length, "spec.data.max_prompt_length")
        args.set("generate_max_len", response, "spec.data.max_response_length")
    args.set("temperature", ro.temperature, "spec.rollout.temperature")
    args.set("top_p", ro.top_p, "spec.rollout.top_p")
    if ro.top_k != -1:
        args.cannot("spec.rollout.top_k", "top-k sampling", ro.top_k, "-1")
    if ro.val.top_p != 1.0:
        args.cannot("spec.rollout.val.top_p", "top-p sampling for evaluation", ro.val.top_p, "1.0")


def _role_budgets(job: RLJob, args: Args) -> None:
    """``spec.training.budgets`` on OpenRLHF's two shared settings.

    Every forward pass of experience making (the actor's old log-probs, the reference's, the critic's values,
    the reward model) runs in micro batches of ``--micro_rollout_batch_size`` and under
    ``--rollout_max_tokens_per_gpu`` (trainer/ppo_utils/experience_maker.py, 0.5.9.post1 to 0.11.2; the token cap
    from 0.8.6); the actor's and the critic's updates share ``--micro_train_batch_size`` and
    ``--train_max_tokens_per_gpu`` (trainer/ray/ppo_actor.py, ppo_critic.py, ppo_utils/replay_buffer.py). So the
    forward budgets have to agree with each other, and the critic update with the actor's.
    """
    tr = job.spec.training
    bud = tr.budgets
    old = bud.old_log_prob
    micro = old.micro_batch_per_gpu or tr.micro_batch_per_gpu
    if old.micro_batch_per_gpu is not None:
        args.set("micro_rollout_batch_size", micro, "spec.training.budgets.old_log_prob.micro_batch_per_gpu")
    tokens = old.max_tokens_per_gpu
    if tokens is not None and has_flag(args.version, "rollout_max_tokens_per_gpu"):
        args.set(
            "rollout_max_tokens_per_gpu", tokens, "spec.training.budgets.old_log_prob.max_tokens_per_gpu"
        )
    shared = "one --micro_rollout_batch_size and --rollout_max_tokens_per_gpu serve every forward pass"
    for name in ("ref_log_prob", "critic_values"):
        given = getattr(bud, name)
        for attr, value in (("micro_batch_per_gpu", micro), ("max_tokens_per_gpu", tokens)):
            own = getattr(given, attr)
            if own is not None and own != (value or tr.dynamic_batch.max_tokens_per_gpu):
                args.cannot(
                    f"spec.training.budgets.{name}.{attr}",
                    f"a {name} budget different from old_log_prob's ({shared})",
                    own,
                    str(value or tr.dynamic_batch.max_tokens_per_gpu),
                )
    values_follow_old = bud.critic_values.micro_batch_per_gpu is None and old.micro_batch_per_gpu is not None
    if job.spec.algorithm.needs_critic and values_follow_old:
        args.notes.append(
            "training.budgets.critic_values: OpenRLHF computes the critic's values in old_log_prob's micro "
            f"batches (--micro_rollout_batch_size {micro}), not the critic update's"
        )
    upd = bud.critic_update
    train = (
        ("micro_batch_per_gpu", tr.micro_batch_per_gpu),
        ("max_tokens_per_gpu", tr.dynamic_batch.max_tokens_per_gpu),
    )
    for attr, actor in train:
        own = getattr(upd, attr)
        if own is not None and own != actor:
            args.cannot(
                f"spec.training.budgets.critic_update.{attr}",
                "a critic update budget different from the actor's (one --micro_train_batch_size and "
                "--train_max_tokens_per_gpu serve both)",
                own,
                str(actor),
            )


def _data_and_eval(job: RLJob, args: Args) -> None:
    spec = job.spec
    data = spec.data
    if len(data.train) > 1:
        args.cannot(
            "spec.data.train",
            "several training files (it blends datasets by probability)",
            len(data.train),
            "one file",
        )
    args.set("prompt_data", data.train[0], "spec.data.train")
    args.set("input_key", data.prompt_key, "spec.data.prompt_key")
    if _native_flag(job, option(args.version, "input_template")):
        # OpenRLHF formats a prompt with --input_template only without --apply_chat_template, and ignores the
        # template silently otherwise (openrlhf/datasets/prompts_dataset.py, preprocess_data, 0.5.9.post1 on)
        args.notes.append(
            "spec.native.openrlhf gives an input template: prompts are formatted with it, not with the "
            "tokenizer's chat template (no --apply_chat_template)"
        )
    elif data.chat_template:
        args.set("apply_chat_template", True, "spec.data.chat_template")
    if data.seed is not None:
        args.set("seed", data.seed, "spec.data.seed")
    if not data.shuffle:
        args.cannot("spec.data.shuffle", "unshuffled prompts", False, "true")

    ev = spec.eval
    if ev.before_training:
        args.cannot("spec.eval.before_training", "an evaluation before the first step", True, "false")
    if ev.every_steps == 0:
        return
    if not has_flag(args.version, "eval_dataset"):
        args.cannot("spec.eval.every_steps", "evaluation on a held-out dataset", ev.every_steps, "0")
        return
    files = [*data.val, *ev.datasets]
    args.set("eval_dataset", ",".join(files), "spec.data.val" if data.val else "spec.eval.datasets")
    args.set("eval_steps", ev.every_steps, "spec.eval.every_steps")
    args.set("eval_temperature", spec.rollout.val.temperature, "spec.rollout.val.temperature")
    args.set("eval_n_samples_per_prompt", spec.rollout.val.n, "spec.rollout.val.n")


def _optimizer(job: RLJob, args: Args) -> None:
    tr = job.spec.training
    opt = tr.optimizer
    args.set("actor_learning_rate", opt.lr, "spec.training.optimizer.lr")
    if opt.weight_decay is not None:  # unset: OpenRLHF's own --l2, 0
        args.set("l2", opt.weight_decay, "spec.training.optimizer.weight_decay")
    if opt.warmup_steps is None:
        pass  # OpenRLHF's own --lr_warmup_ratio, 0.03
    elif tr.steps is not None:
        args.set("lr_warmup_ratio", opt.warmup_steps / tr.steps, "spec.training.optimizer.warmup_steps")
    elif opt.warmup_steps:
        args.cannot(
            "spec.training.optimizer.warmup_steps",
            "warmup in steps without a step count (its warmup is a ratio of the total steps)",
            opt.warmup_steps,
            "0, or training.steps",
        )
    else:
        args.set("lr_warmup_ratio", 0.0, "spec.training.optimizer.warmup_steps")
    # trainer/ray/ppo_actor.py: num_warmup_steps=math.ceil(max_steps * lr_warmup_ratio) (0.5.9.post1 to 0.11.2)
    if opt.warmup_ratio is not None:
        args.set("lr_warmup_ratio", opt.warmup_ratio, "spec.training.optimizer.warmup_ratio")
    if opt.max_grad_norm is not None:
        args.set("max_norm", opt.max_grad_norm, "spec.training.optimizer.max_grad_norm")
    if not job.spec.algorithm.needs_critic:
        return
    given = tr.critic_optimizer.model_fields_set if tr.critic_optimizer is not None else set()
    critic = tr.critic_optimizer or opt
    args.set("critic_learning_rate", critic.lr, "spec.training.critic_optimizer.lr")
    # A critic setting the user left out follows the actor's, in every version (before 0.10.2 it has to).
    decay = critic.weight_decay if "weight_decay" in given else opt.weight_decay
    # warmup is one setting in two units: a critic that gives either does not inherit the actor's other one
    own_warmup = bool(given & {"warmup_steps", "warmup_ratio"})
    warmup = critic.warmup_steps if own_warmup else opt.warmup_steps
    ratio = critic.warmup_ratio if own_warmup else opt.warmup_ratio
    clip = critic.max_grad_norm if "max_grad_norm" in given else opt.max_grad_norm
    if has_flag(args.version, "critic_l2"):
        if decay is not None:
            args.set("critic_l2", decay, "spec.training.critic_optimizer.weight_decay")
        if ratio is not None:
            args.set("critic_lr_warmup_ratio", ratio, "spec.training.critic_optimizer.warmup_ratio")
        if clip is not None:
            args.set("critic_max_norm", clip, "spec.training.critic_optimizer.max_grad_norm")
        if warmup is None:
            pass
        elif tr.steps is not None:
            args.set(
                "critic_lr_warmup_ratio", warmup / tr.steps, "spec.training.critic_optimizer.warmup_steps"
            )
        elif warmup:
            args.cannot(
                "spec.training.critic_optimizer.warmup_steps",
                "warmup in steps without a step count",
                warmup,
                "0, or training.steps",
            )
    elif (decay, warmup, ratio, clip) != (
        opt.weight_decay,
        opt.warmup_steps,
        opt.warmup_ratio,
        opt.max_grad_norm,
    ):
        args.cannot(
            "spec.training.critic_optimizer",
            "a critic weight decay, warmup or gradient clip different from the actor's "
            "(one --l2, --lr_warmup_ratio and --max_norm serve both before 0.10.2)",
            f"weight_decay={decay}, warmup_steps={warmup}, warmup_ratio={ratio}, max_grad_norm={clip}",
            f"weight_decay={opt.weight_decay}, warmup_steps={opt.warmup_steps}, "
            f"warmup_ratio={opt.warmup_ratio}, max_grad_norm={opt.max_grad_norm}",
        )


def _deepspeed(job: RLJob, args: Args) -> None:
    spec = job.spec
    tr = spec.training
    par = tr.parallel
    if tr.backend == "megatron":
        args.cannot(
            "spec.training.backend",
            "the Megatron backend (it trains with DeepSpeed)",
            tr.backend,
            "deepspeed, fsdp or fsdp2",
        )
    elif tr.backend is None:
        pass  # OpenRLHF's own: DeepSpeed at its default --zero_stage (2)
    elif tr.backend == "deepspeed":
        args.set(
            "zero_stage",
            par.zero_stage if par.zero_stage is not None else 2,
            "spec.training.parallel.zero_stage",
        )
    else:
        args.set("zero_stage", 3, "spec.training.backend")
        args.notes.append(
            f"training.backend {tr.backend} is rendered as DeepSpeed ZeRO-3 "
            "(the same full sharding; OpenRLHF trains with DeepSpeed only)"
        )
    if par.sp > 1:
        args.cannot(
            "spec.training.parallel.sp",
            "Ulysses sequence parallelism (it has ring attention: training.parallel.cp)",
            par.sp,
            "1",
        )
    if par.cp > 1:
        if has_flag(args.version, "ring_attn_size"):
            args.set("ring_attn_size", par.cp, "spec.training.parallel.cp")
        else:
            args.cannot("spec.training.parallel.cp", "context parallelism (ring attention)", par.cp, "1")

    dtype = spec.model.dtype
    if dtype == "float32":
        args.cannot("spec.model.dtype", "float32 training", dtype, "bfloat16 or float16")
    elif has_flag(args.version, "param_dtype"):
        args.set("param_dtype", "bf16" if dtype == "bfloat16" else "fp16", "spec.model.dtype")
    else:
        args.set("bf16", dtype == "bfloat16", "spec.model.dtype")
    if has_flag(args.version, "flash_attn"):
        args.set("flash_attn", True, "spec.model")  # default off before 0.8.10; every upstream script sets it
    if spec.model.gradient_checkpointing is not None:  # unset: OpenRLHF's own, off
        args.set(
            "gradient_checkpointing", spec.model.gradient_checkpointing, "spec.model.gradient_checkpointing"
        )


def _data_memory(job: RLJob, args: Args) -> None:
    """Overlong prompts, CPU offload per role and packed sequences (check_capabilities refuses what no flag
    can express first)."""
    spec = job.spec
    tr = spec.training
    how = spec.data.overlong_prompts
    if how == "truncate_right":
        args.notes.append(
            "openrlhf cuts a prompt longer than --prompt_max_len with the tokenizer (truncation=True): from the "
            "right, unless the tokenizer's own config sets truncation_side left"
        )
    elif how == "truncate_left":
        # utils/agent.py: the prompt keeps its last max_len - max_new_tokens tokens, which is max_prompt_length
        # only when the response budget is max_response_length (unset, it grows into any room a prompt leaves)
        max_tokens = spec.rollout.max_tokens
        if max_tokens is not None and max_tokens != spec.data.max_response_length:
            args.cannot(
                "spec.data.overlong_prompts",
                "cutting prompts at data.max_prompt_length while rollout.max_tokens differs from "
                "data.max_response_length (it keeps the last --max_len - --max_new_tokens tokens of a prompt)",
                how,
                "rollout.max_tokens unset or equal to data.max_response_length",
            )
        else:
            args.set("max_new_tokens", spec.data.max_response_length, "spec.data.overlong_prompts")

    off = tr.offload
    critic = spec.algorithm.needs_critic
    actor_opt = off.actor.optimizer
    critic_opt = off.critic.optimizer if off.critic.optimizer is not None else actor_opt
    if critic and (critic_opt or False) != (actor_opt or False):
        args.cannot(
            "spec.training.offload.critic.optimizer",
            "a critic optimizer offload different from the actor's (one --adam_offload serves both)",
            critic_opt,
            f"{actor_opt} (the actor's)",
        )
    elif actor_opt or (critic and critic_opt):
        args.set("adam_offload", True, "spec.training.offload.actor.optimizer")
    if off.ref.params:
        args.set("ref_reward_offload", True, "spec.training.offload.ref.params")
        if not dotted(args.version) and spec.reward.model is not None:
            args.notes.append(
                f"openrlhf {args.version} offloads the reward model with the reference model "
                "(one --ref_reward_offload)"
            )

    pack = tr.pack_sequences
    if pack:
        args.set("packing_samples", True, "spec.training.pack_sequences")
    elif pack is False and (args.get("use_dynamic_batch") or (args.get("ring_attn_size") or 1) > 1):
        # cli/train_ppo_ray.py after parsing: ring attention and dynamic batching set packing_samples (0.8.x+)
        args.cannot(
            "spec.training.pack_sequences",
            "unpacked sequences with dynamic batching or ring attention (it packs them for both)",
            False,
            "null or true",
        )


def _checkpoint(job: RLJob, args: Args) -> None:
    ck = job.spec.checkpoint
    root = job.checkpoint_dir
    args.set("ckpt_path", root, "spec.checkpoint.dir")
    if not posixpath.isabs(root):
        args.notes.append(
            f"checkpoint.dir {root!r} is relative: under `ray job submit` it lands in the job's "
            "unpacked copy of the working dir; use an absolute path on shared storage to keep it"
        )
    args.set("save_path", posixpath.join(root, "final"), "spec.checkpoint.dir")
    args.set("save_steps", ck.every_steps if ck.every_steps > 0 else -1, "spec.checkpoint.every_steps")
    if ck.keep_last is not None:
        args.set("max_ckpt_num", ck.keep_last, "spec.checkpoint.keep_last")
    args.set("save_hf_ckpt", ck.save_hf, "spec.checkpoint.save_hf")
    if ck.keep_best is not None:
        _keep_best(job, args)
    if ck.resume == "auto":
        # OpenRLHF resumes only when <ckpt_path>/_actor exists, so a first run starts fresh.
        args.set("load_checkpoint", True, "spec.checkpoint.resume")
    elif ck.resume == "path":
        args.cannot(
            "spec.checkpoint.resume",
            "resuming from a chosen step (it resumes from the latest tag under <ckpt_path>/_actor)",
            "path",
            "auto or never",
        )


def _keep_best(job: RLJob, args: Args) -> None:
    """``--best_metric_key`` (0.9.10+): PPOTrainer.save_best_checkpoint keeps one ``best_global_step<N>``
    checkpoint, replaced whenever the eval metric is strictly greater (trainer/ppo_trainer.py,
    utils/deepspeed/deepspeed.py save_ckpt), beside the ``--max_ckpt_num`` regular ones."""
    best = job.spec.checkpoint.keep_best
    assert best is not None
    if not best.higher_is_better:
        args.cannot(
            "spec.checkpoint.keep_best.higher_is_better",
            "keeping the checkpoint with the lowest metric (a new best must be greater)",
            False,
            "true",
        )
    if best.count != 1:
        args.cannot(
            "spec.checkpoint.keep_best.count",
            "more than one best checkpoint (it keeps one, replacing it on each new best)",
            best.count,
            "1",
        )
    args.set("best_metric_key", best.metric, "spec.checkpoint.keep_best.metric")
    args.notes.append(
        "spec.checkpoint.keep_best: OpenRLHF keeps the best checkpoint beside the regular ones "
        f"(--max_ckpt_num {job.spec.checkpoint.keep_last or 3}), and saves it only when an eval metric "
        f"{best.metric!r} exists (eval_steps and an eval dataset)"
    )


def _engine_settings(job: RLJob, args: Args) -> None:
    """``spec.rollout.engine_settings`` on the flags OpenRLHF passes to ``vllm.LLM`` (trainer/ray/vllm_engine.py,
    0.5.9.post1 to 0.11.2: enforce_eager, enable_sleep_mode=vllm_enable_sleep; no load_format, so vLLM's own
    "auto" loads the model from disk)."""
    eng = job.spec.rollout.engine_settings
    src = "spec.rollout.engine_settings"
    if eng.enforce_eager is not None:
        args.set("enforce_eager", eng.enforce_eager, f"{src}.enforce_eager")
    if eng.free_cache_between_phases is not None:
        # overrides the hybrid engine's default (set with colocate_all in _placement)
        args.set("vllm_enable_sleep", eng.free_cache_between_phases, f"{src}.free_cache_between_phases")
    if eng.load_weights_from_disk is False:
        args.cannot(
            f"{src}.load_weights_from_disk",
            "rollout engines starting with placeholder weights (its vLLM engines always load the model)",
            False,
            "true or null",
        )
    elif eng.load_weights_from_disk:
        args.notes.append(
            f"{src.removeprefix('spec.')}.load_weights_from_disk: OpenRLHF's vLLM engines always load the "
            "model from disk"
        )


#: The first pinned version whose TensorBoard logger runs beside wandb (trainer/ppo_trainer.py: TensorboardLogger
#: when use_tensorboard; before, ``elif self._tensorboard``: only without wandb).
TENSORBOARD_BESIDE_WANDB = Version("0.9.10")


def _logging(job: RLJob, args: Args) -> None:
    lg = job.spec.logging
    if lg.val_generations:
        # trainer/ppo_trainer.py (0.5.9.post1 to 0.11.2): evaluate() logs metrics only; the one sample it logs
        # is a training one (generated_samples, 0.8.x+)
        args.cannot("spec.logging.val_generations", "logging evaluation generations", lg.val_generations, "0")
    for backend in lg.backends:
        if backend == "wandb":
            # The value is only a switch: OpenRLHF logs in with it only when WANDB_API_KEY is unset, and the key
            # itself must never be rendered.
            args.set("use_wandb", "env:WANDB_API_KEY", "spec.logging.backends")
            args.set("wandb_project", lg.project, "spec.logging.project")
            args.set("wandb_run_name", job.experiment, "spec.logging.experiment")
            if (
                not any(s.env == "WANDB_API_KEY" for s in job.spec.secrets)
                and "WANDB_API_KEY" not in job.spec.env
            ):
                args.notes.append("wandb logging needs WANDB_API_KEY in the job's environment (spec.secrets)")
        elif backend == "mlflow":
            args.cannot("spec.logging.backends", "MLflow logging", backend, "console, wandb, tensorboard")
    # TensorBoard always, beside the user's backends: its events are what `rladapt metrics` reads back. One
    # directory (--use_tensorboard, logger.tensorboard_dir from 0.10.2) serves a user's tensorboard backend too;
    # OpenRLHF writes into <dir>/<wandb_run_name> (ppo_trainer.py 0.5.9.post1 to 0.8.11, utils/logging_utils.py
    # TensorboardLogger from 0.9.10).
    # spec.logging.dir is that directory, read back from there (translate records it); a native item naming it
    # (the launch's own, in specs imported before the field) likewise, and the render leaves the flag to it; else
    # rladapt names its own.
    _, origin = with_tensorboard(list(lg.backends))
    log_dir = log_dir_setting(job, _native_tensorboard_dir(job, args.version), origin)
    if log_dir is not None:
        args.set("use_tensorboard", *log_dir)
    if "wandb" in lg.backends and args.version < TENSORBOARD_BESIDE_WANDB:
        args.notes.append(
            f"openrlhf {args.version} writes no TensorBoard events when wandb is on (ppo_trainer.py: "
            "use_tensorboard and self._wandb is None): `rladapt metrics`, status and runs have no metrics of "
            f"this run (first openrlhf that logs both: {TENSORBOARD_BESIDE_WANDB})"
        )


# --- Ray submission ------------------------------------------------------------------------------------------


def _relative(path: str) -> str | None:
    """``path`` relative to the job's working directory, or None when it lies outside it."""
    if posixpath.isabs(path):
        return None
    norm = posixpath.normpath(path)
    return None if norm == ".." or norm.startswith("../") else norm


def framework_default_keys(job: RLJob, version: str) -> dict[str, tuple[str, ...]]:
    """Spec field -> the flags it leaves to OpenRLHF when unset (null default): ``render --explain`` lists them."""
    v = Version(version)
    out: dict[str, tuple[str, ...]] = {
        "spec.data.seed": ("seed",),
        "spec.algorithm.kl.estimator": (
            "kl_estimator" if has_flag(v, "kl_estimator") else "use_kl_estimator_k3",
        ),
        "spec.training.optimizer.warmup_steps": ("lr_warmup_ratio",),
        "spec.training.optimizer.weight_decay": ("l2",),
        "spec.training.optimizer.max_grad_norm": ("max_norm",),
        "spec.model.gradient_checkpointing": ("gradient_checkpointing",),
        "spec.training.backend": ("zero_stage",),
        "spec.training.pack_sequences": ("packing_samples",),
        "spec.training.offload.actor.optimizer": ("adam_offload",),
        "spec.training.offload.ref.params": ("ref_reward_offload",),
    }
    if has_flag(v, "entropy_loss_coef"):
        out["spec.algorithm.entropy_coef"] = ("entropy_loss_coef",)
    if has_flag(v, "max_new_tokens"):
        out["spec.rollout.max_tokens"] = ("max_new_tokens",)
    if has_flag(v, "dual_clip"):
        out["spec.algorithm.clip.dual"] = ("dual_clip",)
    if has_flag(v, "loss_agg_mode") and job.spec.algorithm.effective_loss_aggregation is None:
        out["spec.algorithm.loss_aggregation"] = ("loss_agg_mode",)
    if job.spec.algorithm.needs_critic:
        out["spec.model.critic_path"] = ("critic_pretrain",)
    out["spec.rollout.engine_settings.enforce_eager"] = ("enforce_eager",)
    if not job.placement.colocated("actor", "rollout"):
        out["spec.rollout.engine_settings.free_cache_between_phases"] = ("vllm_enable_sleep",)
    if has_flag(v, "best_metric_key"):
        # unset, OpenRLHF's own "" keeps a best checkpoint by the first eval_*_pass1 metric it finds
        out["spec.checkpoint.keep_best"] = ("best_metric_key",)
    return {field: tuple(spell(version, flat) for flat in flats) for field, flats in out.items()}


def runtime_env(job: RLJob, env: dict[str, str], tensorboard: str | None = None) -> dict[str, Any]:
    """The ``--runtime-env-json`` of ``ray job submit``: ship the code, never checkpoints, the launch's own
    TensorBoard directory (``tensorboard``) or the git history."""
    working_dir = job.spec.runtime.working_dir
    excludes = [".git", ".cache", "__pycache__"]
    inside = _relative(job.checkpoint_dir)
    if inside is not None:
        excludes.append(inside)
    own = common.inside_working_dir(tensorboard)
    if own is not None:
        excludes.append(own)
    out: dict[str, Any] = {"working_dir": working_dir, "excludes": excludes}
    if env:
        out["env_vars"] = dict(env)
    return out
