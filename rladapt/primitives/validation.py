"""Cross-field rules of an RLJob: what no single field can check on its own.

Each rule appends Problems; ``check_job`` returns all of them so a user fixes a spec in one pass.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .errors import Problem, quote

if TYPE_CHECKING:
    from .spec import Pool, RLJob


def check_job(job: RLJob) -> list[Problem]:
    problems: list[Problem] = []
    for rule in (
        _placement,
        _parallelism,
        _batches,
        _algorithm,
        _offload,
        _rollout,
        _reward_source,
        _weight_sync,
        _platform,
        _eval,
        _data,
    ):
        problems.extend(rule(job))
    return problems


def _why(job: RLJob, role: str) -> str:
    spec = job.spec
    return {
        "actor": "every job trains an actor",
        "rollout": "every job generates rollouts",
        "ref": f"KL regularisation (spec.algorithm.kl.coef={spec.algorithm.kl.coef}) needs a reference policy",
        "critic": f"algorithm {spec.algorithm.name} estimates advantages with GAE and needs a critic",
        "reward": "spec.reward.model needs a reward-model role",
    }[role]


def _placement(job: RLJob) -> list[Problem]:
    role: str
    pool: Pool | None
    out: list[Problem] = []
    spec = job.spec
    required = spec.required_roles
    if spec.placement is not None:
        pools = spec.placement.pools
        for name, count in Counter(p.name for p in pools).items():
            if count > 1:
                out.append(
                    Problem(
                        "spec.placement.pools",
                        f"pool name {quote(name)} is used {count} times",
                        "unique pool names",
                    )
                )
        where: dict[str, list[int]] = {}
        for i, pool in enumerate(pools):
            for role, count in Counter(pool.roles).items():
                if count > 1:
                    out.append(
                        Problem(
                            f"spec.placement.pools[{i}].roles", f"role {quote(role)} listed {count} times"
                        )
                    )
                where.setdefault(role, []).append(i)
        for role, idx in where.items():
            if len(idx) > 1:
                out.append(
                    Problem(
                        "spec.placement.pools",
                        f"role {quote(role)} is placed in pools {quote([pools[i].name for i in idx], 200)}",
                        "every role in exactly one pool",
                    )
                )
        for role in required:
            if role not in where:
                out.append(
                    Problem(
                        "spec.placement.pools",
                        f"role {quote(role)} is in no pool ({_why(job, role)})",
                        f"roles {required} each placed in one pool",
                    )
                )
        for role, idx in where.items():
            if role not in required:
                out.append(
                    Problem(
                        f"spec.placement.pools[{idx[0]}].roles",
                        f"role {quote(role)} is placed but this job does not use it",
                        f"only roles {required}",
                    )
                )
    for role, res in spec.roles.items():
        if role not in required:
            out.append(
                Problem(
                    f"spec.roles.{role}",
                    "resources given for a role this job does not use",
                    f"only roles {required}",
                )
            )
            continue
        pool = job.placement.pool_of(role)
        if pool is None or res.gpus is None:
            continue
        if res.gpus > pool.gpus:
            out.append(
                Problem(
                    f"spec.roles.{role}.gpus",
                    f"more GPUs than its pool {quote(pool.name)} has",
                    f"at most {pool.gpus}",
                    str(res.gpus),
                )
            )
        elif res.gpus % pool.gpus_per_node and pool.gpus_per_node % res.gpus:
            out.append(
                Problem(
                    f"spec.roles.{role}.gpus",
                    f"does not tile pool {quote(pool.name)} ({pool.gpus_per_node} GPUs per node)",
                    "a divisor or multiple of gpus_per_node",
                    str(res.gpus),
                )
            )
    return out


def actor_gpus(job: RLJob) -> int:
    pool = job.placement.pool_of("actor")
    assert pool is not None  # _placement reports it otherwise
    res = job.spec.roles.get("actor")
    return res.gpus if res is not None and res.gpus is not None else pool.gpus


def _parallelism(job: RLJob) -> list[Problem]:
    out: list[Problem] = []
    tr = job.spec.training
    par = tr.parallel
    if job.placement.pool_of("actor") is None:
        return out
    gpus = actor_gpus(job)
    model_parallel = par.tp * par.pp * par.cp
    if (par.tp > 1 or par.pp > 1) and tr.backend != "megatron":
        out.append(
            Problem(
                "spec.training.parallel",
                f"tp={par.tp}, pp={par.pp} need tensor/pipeline parallelism",
                "backend: megatron (or tp=pp=1)",
                f"backend: {tr.backend}",
            )
        )
    if par.zero_stage is not None and tr.backend != "deepspeed":
        out.append(
            Problem(
                "spec.training.parallel.zero_stage",
                "ZeRO stages belong to DeepSpeed",
                "backend: deepspeed",
                f"backend: {tr.backend}",
            )
        )
    if gpus % model_parallel:
        out.append(
            Problem(
                "spec.training.parallel",
                f"tp×pp×cp = {model_parallel} does not divide the actor's {gpus} GPUs",
                f"a divisor of {gpus}",
                str(model_parallel),
            )
        )
    if par.sp > 1 and gpus % par.sp:
        out.append(
            Problem(
                "spec.training.parallel.sp",
                f"does not divide the actor's {gpus} GPUs",
                f"a divisor of {gpus}",
                str(par.sp),
            )
        )
    return out


def _batches(job: RLJob) -> list[Problem]:
    out: list[Problem] = []
    tr = job.spec.training
    group = job.spec.algorithm.group_size
    if tr.mini_batch > tr.global_batch:
        out.append(
            Problem(
                "spec.training.mini_batch",
                "larger than the global batch",
                f"at most global_batch={tr.global_batch}",
                str(tr.mini_batch),
            )
        )
    elif tr.global_batch % tr.mini_batch:
        out.append(
            Problem(
                "spec.training.global_batch",
                f"not divisible by mini_batch={tr.mini_batch}",
                f"a multiple of {tr.mini_batch}",
                str(tr.global_batch),
            )
        )
    if job.placement.pool_of("actor") is None:
        return out
    par = tr.parallel
    dp = actor_gpus(job) // (par.tp * par.pp * par.cp) or 1
    dp = dp // par.sp if par.sp > 1 and dp % par.sp == 0 else dp
    samples = tr.mini_batch * group
    if samples % dp:
        out.append(
            Problem(
                "spec.training.mini_batch",
                f"mini_batch × group_size = {tr.mini_batch}×{group} = "
                f"{samples} sequences cannot be split over the actor's data-parallel size {dp}",
                f"mini_batch × group_size divisible by {dp}",
                str(samples),
            )
        )
    elif not tr.dynamic_batch.enabled and (samples // dp) % tr.micro_batch_per_gpu:
        out.append(
            Problem(
                "spec.training.micro_batch_per_gpu",
                f"does not divide the {samples // dp} sequences each GPU gets per mini batch",
                f"a divisor of {samples // dp}",
                str(tr.micro_batch_per_gpu),
            )
        )
    return out


def _algorithm(job: RLJob) -> list[Problem]:
    from .spec import GROUP_ALGORITHMS

    out: list[Problem] = []
    alg = job.spec.algorithm
    # A group algorithm with one response per prompt is what each framework decides, not a spec error: verl runs
    # it (a group of one gets mean 0 and std 1, so the advantage is the raw score: verl 0.6.1
    # trainer/ppo/core_algos.py compute_grpo_outcome_advantage and compute_rloo_outcome_advantage; verl's own
    # examples/tuning and examples/rollout_correction launch grpo/rloo with rollout.n=1), while OpenRLHF, TRL and
    # NeMo-RL give it a zero advantage or refuse it, and their adapters say so. Dynamic sampling with groups of one
    # is a mistake everywhere: a group of one has one reward, so every group is dropped as "all equal"; and a
    # group algorithm whose group_size is left at its default 1 is a forgotten setting, not a choice.
    if alg.name in GROUP_ALGORITHMS and alg.group_size < 2 and "group_size" not in alg.model_fields_set:
        out.append(
            Problem(
                "spec.algorithm.group_size",
                f"{alg.name} compares responses within a group, and the spec gives no group size (the default "
                "1 is a group of one, which only some frameworks run: give 1 explicitly for that)",
                "at least 2",
                "not given (1)",
            )
        )
    elif alg.name in GROUP_ALGORITHMS and alg.group_size < 2 and alg.dynamic_sampling_on:
        out.append(
            Problem(
                "spec.algorithm.group_size",
                f"{alg.name} with dynamic_sampling keeps only groups whose rewards differ; a group of one has "
                "one reward, so every group is dropped",
                "at least 2",
                str(alg.group_size),
            )
        )
    if alg.kl.in_ == "reward" and alg.kl.coef == 0.0:
        out.append(
            Problem(
                "spec.algorithm.kl.coef",
                "KL in reward with coefficient 0 does nothing",
                "a positive coefficient, or leave kl.in at loss",
                "0.0",
            )
        )
    if job.spec.model.critic_path and not alg.needs_critic:
        out.append(
            Problem(
                "spec.model.critic_path",
                f"algorithm {alg.name} has no critic",
                "no critic_path (or algorithm: ppo)",
                job.spec.model.critic_path,
            )
        )
    budgets = job.spec.training.budgets
    for name in ("critic_update", "critic_values"):
        budget = getattr(budgets, name)
        # by value, not model_fields_set: a job re-validated from a full dump names every field (as null)
        given = [field for field in type(budget).model_fields if getattr(budget, field) is not None]
        if given and not alg.needs_critic:
            out.append(
                Problem(
                    f"spec.training.budgets.{name}",
                    f"algorithm {alg.name} has no critic",
                    f"no budgets.{name} (or algorithm: ppo)",
                    ", ".join(sorted(given)),
                )
            )
    penalty = job.spec.reward.overlong_penalty
    budget = job.spec.rollout.max_tokens or job.spec.data.max_response_length
    if penalty is not None and penalty.buffer_tokens >= budget:
        # every framework asserts this at start-up (verl dapo.py, OpenRLHF length_penalty.py / experience_maker.py)
        out.append(
            Problem(
                "spec.reward.overlong_penalty.buffer_tokens",
                "the buffer is the end of the response length budget (rollout.max_tokens, else "
                "data.max_response_length) and must be shorter than it",
                f"less than {budget}",
                str(penalty.buffer_tokens),
            )
        )
    warmup = job.spec.training.critic_warmup_steps
    if warmup and not alg.needs_critic:
        # verl would still hold the actor back for those steps with nothing training: a run of idle steps
        out.append(
            Problem(
                "spec.training.critic_warmup_steps",
                f"algorithm {alg.name} has no critic to warm up",
                "0 or no critic_warmup_steps (or algorithm: ppo)",
                str(warmup),
            )
        )
    if job.spec.training.critic_optimizer and not alg.needs_critic:
        out.append(
            Problem(
                "spec.training.critic_optimizer",
                f"algorithm {alg.name} has no critic",
                "no critic_optimizer (or algorithm: ppo)",
                "a critic optimizer",
            )
        )
    return out


def _offload(job: RLJob) -> list[Problem]:
    """An offload setting for a role the job does not run would reach nothing."""
    out: list[Problem] = []
    off = job.spec.training.offload
    roles = job.spec.required_roles
    for role in ("ref", "critic"):
        # a value, not a key written: a spec dumped and reloaded (a modify hook) holds every field, null or not
        given = sorted(k for k, v in getattr(off, role) if v is not None)
        if given and role not in roles:
            out.append(
                Problem(
                    f"spec.training.offload.{role}",
                    "the job has no reference policy (spec.algorithm.kl.coef is 0)"
                    if role == "ref"
                    else f"algorithm {job.spec.algorithm.name} has no critic",
                    f"no offload.{role} (or a job with a {role})",
                    ", ".join(given),
                )
            )
    return out


def _reward_source(job: RLJob) -> list[Problem]:
    """One reward source, or an agent function, which returns the rewards itself."""
    rw = job.spec.reward
    sources = [name for name in ("builtin", "function", "model", "remote") if getattr(rw, name) is not None]
    agent = job.spec.rollout.agent
    if agent is None and not sources:
        return [
            Problem(
                "spec.reward",
                "no reward source",
                "at least one of builtin, function, model or remote (or rollout.agent, whose agent returns the "
                "rewards)",
            )
        ]
    if agent is not None and sources:
        # OpenRLHF replaces the reward source by the agent's (cli/train_ppo_ray.py: remote_rm_url = "agent")
        return [
            Problem(
                "spec.reward",
                f"rollout.agent ({quote(agent.path)}) returns the rewards, so a reward source would not be used",
                "no reward source beside rollout.agent",
                ", ".join(sources),
            )
        ]
    return []


def _rollout(job: RLJob) -> list[Problem]:
    out: list[Problem] = []
    ro = job.spec.rollout
    pool = job.placement.pool_of("rollout")
    if ro.max_tokens is not None and ro.max_tokens > job.spec.data.max_response_length:
        out.append(
            Problem(
                "spec.rollout.max_tokens",
                "longer than data.max_response_length",
                f"at most {job.spec.data.max_response_length}",
                str(ro.max_tokens),
            )
        )
    if pool is None:
        return out
    tp = ro.tensor_parallel
    if tp > pool.gpus_per_node:
        out.append(
            Problem(
                "spec.rollout.tensor_parallel",
                f"larger than a node of pool {quote(pool.name)}",
                f"at most {pool.gpus_per_node}",
                str(tp),
            )
        )
    elif pool.gpus_per_node % tp:
        out.append(
            Problem(
                "spec.rollout.tensor_parallel",
                f"does not divide the {pool.gpus_per_node} GPUs per node of pool {quote(pool.name)}",
                f"a divisor of {pool.gpus_per_node}",
                str(tp),
            )
        )
    return out


def _weight_sync(job: RLJob) -> list[Problem]:
    out: list[Problem] = []
    ws = job.spec.weight_sync
    colocated = job.placement.colocated("actor", "rollout")
    if ws.max_staleness > 0:
        if job.spec.rollout.mode == "sync":  # null: the adapter picks the framework's asynchronous trainer
            out.append(
                Problem(
                    "spec.weight_sync.max_staleness",
                    "off-policy staleness needs asynchronous rollout",
                    "spec.rollout.mode: async",
                    f"mode: {job.spec.rollout.mode}",
                )
            )
        if colocated:
            out.append(
                Problem(
                    "spec.weight_sync.max_staleness",
                    "rollouts can only run ahead of training on their own GPUs",
                    "rollout in a pool separate from actor",
                    "actor and rollout colocated",
                )
            )
    if ws.run_ahead_fraction is not None and ws.run_ahead_fraction > max(ws.max_staleness - 1, 0):
        out.append(
            Problem(
                "spec.weight_sync.run_ahead_fraction",
                "samples generated that far ahead would lag more policy versions than max_staleness allows",
                f"at most max_staleness - 1 = {max(ws.max_staleness - 1, 0)}",
                str(ws.run_ahead_fraction),
            )
        )
    if ws.run_ahead_fraction is not None and ws.max_staleness == 0:
        out.append(
            Problem(
                "spec.weight_sync.run_ahead_fraction",
                "an on-policy rollout never generates ahead of training",
                "spec.weight_sync.max_staleness >= 1",
                "max_staleness: 0",
            )
        )
    if ws.partial_rollout and ws.max_staleness == 0:
        out.append(
            Problem(
                "spec.weight_sync.partial_rollout",
                "partial rollout lets generation run on across a weight update, which an on-policy rollout "
                "never does",
                "spec.weight_sync.max_staleness >= 1",
                "max_staleness: 0",
            )
        )
    if ws.method == "cuda_ipc" and not colocated:
        out.append(
            Problem(
                "spec.weight_sync.method",
                "CUDA IPC shares memory between processes on the same GPUs",
                "nccl or disk for separate pools",
                "cuda_ipc",
            )
        )
    return out


def _platform(job: RLJob) -> list[Problem]:
    values: list[Any]
    out: list[Problem] = []
    spec = job.spec
    for what, values in (
        ("name", [v.name for v in spec.volumes]),
        ("mount", [v.mount for v in spec.volumes]),
    ):
        for value, count in Counter(values).items():
            if count > 1:
                out.append(
                    Problem(
                        "spec.volumes",
                        f"volume {what} {quote(value)} is used {count} times",
                        f"unique volume {what}s",
                    )
                )
    port_keys: tuple[tuple[str, list[Any]], ...] = (
        ("name", [p.name for p in spec.ports]),
        ("port", [p.port for p in spec.ports]),
    )
    for what, values in port_keys:
        for value, count in Counter(values).items():
            if count > 1:
                out.append(
                    Problem(
                        "spec.ports",
                        f"port {what} {quote(value)} is used {count} times",
                        f"unique port {what}s",
                    )
                )
    for i, secret in enumerate(spec.secrets):
        if secret.env in spec.env:
            out.append(
                Problem(
                    f"spec.secrets[{i}].env",
                    f"{secret.env} is also set in spec.env",
                    "a secret and a plain variable never share a name",
                )
            )
    for name, count in Counter(s.env for s in spec.secrets).items():
        if count > 1:
            out.append(Problem("spec.secrets", f"secret env {quote(name)} is defined {count} times"))
    return out


def _data(job: RLJob) -> list[Problem]:
    d = job.spec.data
    if not d.train and d.builtin is None:
        return [Problem("spec.data.train", "no training data", "training files or spec.data.builtin", "none")]
    if d.train and d.builtin is not None:
        return [
            Problem(
                "spec.data.builtin",
                "a built-in dataset replaces the training files",
                "spec.data.train empty",
                f"{len(d.train)} file(s)",
            )
        ]
    return []


def _eval(job: RLJob) -> list[Problem]:
    ev = job.spec.eval
    # a built-in dataset (spec.data.builtin) brings its own validation split
    if (ev.every_steps or ev.before_training) and not (
        job.spec.data.val or ev.datasets or job.spec.data.builtin
    ):
        return [
            Problem(
                "spec.eval",
                "evaluation is requested but there is nothing to evaluate on",
                "spec.data.val, spec.eval.datasets or spec.data.builtin",
                "none",
            )
        ]
    return _continuous(job)


def _continuous(job: RLJob) -> list[Problem]:
    from .spec import EVAL_BUILTINS

    ce = job.spec.eval.continuous
    if ce is None:
        return []
    out: list[Problem] = []
    where = "spec.eval.continuous"
    if ce.follow == "pool" and job.spec.pool is None:
        out.append(Problem(f"{where}.follow", "pool: the job publishes no versions", "spec.pool", "none"))
    if ce.follow == "checkpoints" and not job.spec.checkpoint.enabled:
        out.append(
            Problem(f"{where}.follow", "checkpoints: the job writes none", "spec.checkpoint.enabled: true")
        )
    for name, count in Counter(s.name for s in ce.suites).items():
        if count > 1:
            out.append(
                Problem(f"{where}.suites", f"suite name {quote(name)} is used {count} times", "unique")
            )
    for i, suite in enumerate(ce.suites):
        builtin = suite.scorer.builtin
        if builtin is not None and builtin.name not in EVAL_BUILTINS:
            out.append(
                Problem(
                    f"{where}.suites[{i}].scorer.builtin.name",
                    "the evaluator has no such scorer of its own (by_data_source and math_dapo are the "
                    "frameworks' scorers)",
                    f"one of {', '.join(EVAL_BUILTINS)}, or a function",
                    builtin.name,
                )
            )
    gate = ce.gate
    if gate is not None:
        names = [s.name for s in ce.suites]
        if gate.suite not in names:
            out.append(
                Problem(f"{where}.gate.suite", "no such suite", f"one of {', '.join(names)}", gate.suite)
            )
        if ce.follow != "pool":
            out.append(
                Problem(
                    f"{where}.gate", "a gate moves a pool alias", "follow: pool (with spec.pool)", ce.follow
                )
            )
        pool = job.spec.pool
        if pool is not None and pool.alias == gate.promote:
            # the publisher moves spec.pool.alias to every version: the gate would only ever race it
            out.append(
                Problem(
                    f"{where}.gate.promote",
                    "the job's publisher moves this alias to every new version (spec.pool.alias)",
                    "another alias than spec.pool.alias",
                    gate.promote,
                )
            )
    return out
