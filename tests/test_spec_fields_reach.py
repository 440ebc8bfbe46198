"""The spec's own rule, checked for every leaf field: it reaches what runs, or it is refused with a message.

For each leaf of the ``RLJob`` model (found by walking the pydantic model, so a new field is checked without
touching this file) the test sets a distinctive valid value on an example spec, renders it for every framework
and then every launcher, and asks, per framework and launcher, for one of:

- the value in the NativeLaunch JSON, or in the launcher's artifacts (scripts, manifests, the request);
- a refusal: a SpecError (capabilities, native validation, preflight) with a problem whose path names the
  field, or a launcher's typed error whose message names the field or quotes the value.

Values that cannot appear literally (a flag, a choice among names, a number rendered in another unit) are in
``NON_LITERAL`` below, each with the reason; for those the output must differ from the render without the change.
A framework or launcher that refuses the context a probe needs (the base spec, before the probe's value is set)
is not asked about that field; at least one framework must render every context.
"""

from __future__ import annotations

import copy
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import RladaptError, RLJob, SpecError, validate_data
from rladapt.primitives.loading import parse_yaml
from rladapt.primitives.spec import ROLE_NAMES, Health
from tests.conftest import REPO

REGISTRY = load_registry(use_entry_points=False)
FRAMEWORKS = sorted(REGISTRY.frameworks)
LAUNCHERS = sorted(REGISTRY.launchers)
#: What a launcher needs to render at all.
LAUNCHER_OPTIONS: dict[str, dict[str, Any]] = {"kubernetes": {"image": "registry.example/rl:1"}}

TEXT = "rlprobe7777"
INT = 7777
FLOAT = 0.7777


def _example(name: str) -> dict[str, Any]:
    path = REPO / "examples" / f"{name}.yaml"
    data = parse_yaml(path.read_text(), str(path))
    assert isinstance(data, dict)
    return data


#: The context each framework renders the probes in: an example spec, as that framework can express it.
BASES: dict[str, dict[str, dict[str, Any]]] = {
    "grpo": {f: _example("grpo-gsm8k") for f in FRAMEWORKS},
    "ppo": {f: _example("ppo-critic-rm") for f in FRAMEWORKS},
}
# The PPO example's secret comes from Kubernetes, which only that launcher reads: drop it, so all launchers run it.
for _ppo in BASES["ppo"].values():
    _ppo["spec"].pop("secrets")
# NeMo-RL has no reward function and reads JSON lines: the GRPO example with a reward model on its own node.
_NEMO = BASES["grpo"]["nemo-rl"] = _example("grpo-gsm8k")
_NEMO["spec"]["reward"] = {
    "model": {"path": "Skywork/Skywork-Reward-V2-Qwen3-0.6B", "micro_batch_per_gpu": 2}
}
_NEMO["spec"]["data"].update(train=["data/gsm8k/train.jsonl"], val=["data/gsm8k/test.jsonl"])
_NEMO["spec"]["placement"]["pools"].append(
    {"name": "rm", "nodes": 1, "gpus_per_node": 8, "roles": ["reward"]}
)


# TRL runs one process with HF generation on one GPU (or the CPU): the GSM8K example as TRL can express it.
_TRL = BASES["grpo"]["trl"] = _example("grpo-gsm8k")
_TRL["spec"]["rollout"] = {"engine": "hf", "temperature": 1.0}
_TRL["spec"]["training"].pop("backend")
_TRL["spec"]["training"]["micro_batch_per_gpu"] = 1
_TRL["spec"]["algorithm"]["kl"].pop("estimator")
_TRL["spec"]["placement"]["pools"][0]["gpus_per_node"] = 1


@dataclass(frozen=True)
class Probe:
    """How to set one field: the value, the context it needs (other fields set first), and what to look for."""

    value: Any
    needs: dict[str, Any] = field(default_factory=dict)
    base: str = "grpo"
    #: Any of these in the output counts (numbers match whole, not inside a longer number).
    literals: tuple[str, ...] = ()
    #: Instead of setting ``value`` at the field: change the spec this way (``value`` then only describes it).
    edit: Callable[[dict[str, Any]], None] | None = None


# `from` in its list form: the rule enumerates a secret's sources as `from.0.<kind>`.
_SECRET_ENV = {"env": "PROBE_SECRET", "from": [{"env": "PROBE_SOURCE"}]}
_SECRET_K8S = {"env": "PROBE_SECRET", "from": [{"k8s_secret": {"name": "probe-secret", "key": "probe-key"}}]}
_PORT = {"name": "probe", "port": 7001}
_SEPARATE = [
    {"name": "train", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "ref"]},
    {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
]


def _rollout_apart(data: dict[str, Any]) -> None:
    """Move the rollout out of the first pool into its own (rollouts on their own GPUs run ahead: staleness 1)."""
    data["spec"].setdefault("weight_sync", {})["max_staleness"] = 1
    pools = data["spec"]["placement"]["pools"]
    pools[0]["roles"].remove("rollout")
    pools.append({"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]})


# continuous evaluation: a suite to probe in, and a gate (which moves a pool alias: the job publishes to a pool; its
# suite must be one of the suites, so another name is refused naming the field)
_SUITE = {"name": "held-out", "data": ["data/val.jsonl"], "scorer": {"function": {"path": "rewards/r.py"}}}
_CE = {"spec.eval.continuous": {"follow": "checkpoints", "suites": [_SUITE]}}
_CE_GATE = {
    "spec.pool": {"store": "pool"},
    "spec.eval.continuous": {
        "follow": "pool",
        "suites": [_SUITE],
        "gate": {"suite": "held-out", "min": 0.5, "promote": "serving"},
    },
}
_CE_BUILTIN = {"spec.eval.continuous": {"follow": "checkpoints",
                                        "suites": [{**_SUITE, "scorer": {"builtin": {"name": "gsm8k"}}}]}}  # fmt: skip


#: Fields whose value does not appear literally; each says why, and the output must differ instead.
#: (``spec.roles.<role>.memory`` and ``cpus_per_gpu`` are deliberately not here: they must appear.)
NON_LITERAL: dict[str, str] = {
    "spec.lifecycle.timeout_seconds": "Slurm renders a time limit (2:09:37), Kubernetes activeDeadlineSeconds",
    "spec.roles.actor.gpus": "a GPU count of the pool: 4 of 8 is a number the base spec has elsewhere",
    "spec.placement.pools.0.gpus_per_node": "8 -> 4 GPUs per node: small numbers the base has elsewhere",
    "spec.placement.pools.0.nodes": "1 -> 2 nodes: small numbers the base has elsewhere",
    "spec.training.parallel.tp": "a small parallel degree (2): a number the base has elsewhere",
    "spec.training.parallel.pp": "a small parallel degree (2): a number the base has elsewhere",
    "spec.training.parallel.cp": "a small parallel degree (2): a number the base has elsewhere",
    "spec.training.parallel.sp": "a small parallel degree (2): a number the base has elsewhere",
    "spec.rollout.tensor_parallel": "a small parallel degree (4): a number the base has elsewhere",
    "spec.training.mini_batch": "must divide the global batch: a power of two the base has elsewhere",
    "spec.training.micro_batch_per_gpu": "must divide the per-GPU batch: a power of two the base has elsewhere",
    "spec.training.critic_optimizer.warmup_steps": "OpenRLHF takes warmup as a ratio of the total steps",
    "spec.training.critic_warmup_steps": "critic-only steps; verl's trainer.critic_warmup is the first actor step "
    "(N + 1), OpenRLHF 0.9.10+ counts its steps from 0 (N - 1)",
    "spec.training.budgets.old_log_prob.micro_batch_per_gpu": "OpenRLHF splits each GPU's share of the rollout "
    "into micro batches: a small power of two the base has elsewhere",
    "spec.training.budgets.ref_log_prob.micro_batch_per_gpu": "a small power of two the base has elsewhere",
    "spec.data.max_response_length": "OpenRLHF (0.9.8+) takes it in --max_len, the prompt plus response length",
}

#: The value (and context) of every field the type alone does not give a valid, distinctive value for.
PROBES: dict[str, Probe] = {
    "spec.volumes.0.mount": Probe(f"/{TEXT}"),
    "spec.volumes.0.source.host_path": Probe(
        f"/{TEXT}", needs={"spec.volumes.0.source": {"host_path": "/base"}}
    ),
    "spec.volumes.0.source.pvc": Probe(TEXT, needs={"spec.volumes.0.source": {"pvc": "base-pvc"}}),
    "spec.volumes.0.source.nfs.server": Probe(
        TEXT, needs={"spec.volumes.0.source": {"nfs": {"server": "nfs.example", "path": "/export"}}}
    ),
    "spec.volumes.0.source.nfs.path": Probe(
        f"/{TEXT}", needs={"spec.volumes.0.source": {"nfs": {"server": "nfs.example", "path": "/export"}}}
    ),
    "spec.volumes.0.source.memory": Probe("7777Mi", literals=("7777Mi",)),
    "spec.reward.function.path": Probe(f"rewards/{TEXT}.py", literals=(TEXT,)),
    "spec.reward.remote.url": Probe(
        f"http://{TEXT}:8000/score", needs={"spec.reward": {"remote": {"url": "http://base:8000/score"}}}
    ),
    "spec.reward.function.name": Probe(TEXT, needs={"spec.reward": {"function": {"path": "rewards/r.py"}}}),
    "spec.model.lora.target_modules": Probe([TEXT], literals=(TEXT,)),
    # a framework's own dataset in place of the files: its other settings by the framework's names
    "spec.data.builtin.options": Probe(
        {"split_validation_size": 0.0777},
        needs={"spec.data.builtin": {"name": "OpenMathInstruct-2"}, "spec.data.train": []},
        literals=("0.0777",),
    ),
    # builtin is the whole reward: the context replaces the example's function with a built-in scorer
    # (and drops NeMo-RL's reward-model pool, which only a reward model uses)
    "spec.reward.builtin.name": Probe(
        "math_dapo",
        needs={
            "spec.reward": {"builtin": {"name": "math"}},
            "spec.placement.pools": [
                {"name": "all", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout", "ref"]}
            ],
        },
    ),
    "spec.reward.model.path": Probe(TEXT, base="ppo"),
    "spec.reward.model.micro_batch_per_gpu": Probe(INT, base="ppo"),
    "spec.model.critic_path": Probe(TEXT, base="ppo"),
    "spec.algorithm.lambda": Probe(FLOAT, base="ppo"),
    "spec.algorithm.gamma": Probe(FLOAT, base="ppo"),  # a return discount: GAE's, which GRPO does not compute
    "spec.training.critic_optimizer.lr": Probe(FLOAT, base="ppo"),
    "spec.training.critic_optimizer.warmup_steps": Probe(INT, base="ppo"),
    "spec.training.critic_optimizer.weight_decay": Probe(FLOAT, base="ppo"),
    "spec.training.critic_optimizer.warmup_ratio": Probe(FLOAT, base="ppo"),
    "spec.training.critic_optimizer.max_grad_norm": Probe(FLOAT, base="ppo"),
    "spec.training.critic_warmup_steps": Probe(INT, base="ppo"),
    "spec.training.offload.critic.params": Probe(True, base="ppo"),
    "spec.training.offload.critic.optimizer": Probe(True, base="ppo"),
    "spec.checkpoint.resume_path": Probe(
        f"/ckpt/{TEXT}", needs={"spec.checkpoint.resume": "path", "spec.checkpoint.resume_path": "/ckpt/base"}
    ),
    "spec.algorithm.clip.dual": Probe(7.777, literals=("7.777",)),  # a constant > 1
    # the buffer is the end of the response budget (1024 in the example): shorter than it
    "spec.reward.overlong_penalty.buffer_tokens": Probe(
        777, needs={"spec.reward.overlong_penalty": {"buffer_tokens": 128}}
    ),
    "spec.reward.overlong_penalty.max_penalty": Probe(
        FLOAT, needs={"spec.reward.overlong_penalty": {"buffer_tokens": 128}}
    ),
    "spec.checkpoint.resume": Probe("never"),
    # a pool needs its store: the other pool fields are probed with one set
    "spec.pool.alias": Probe("rlprobe7777", needs={"spec.pool": {"store": "pool"}}),
    "spec.pool.every_steps": Probe(INT, needs={"spec.pool": {"store": "pool"}}),
    **{
        f"spec.pool.serve.{name}": Probe(value, needs={"spec.pool": {"store": "pool", "serve": {}}})
        for name, value in (("alias", TEXT), ("replicas", 77), ("engine", "sglang"), ("port", INT))
    },
    # never saving: the example's period and retention would do nothing, so the context drops them
    "spec.checkpoint.enabled": Probe(
        False, needs={"spec.checkpoint.every_steps": 0, "spec.checkpoint.keep_last": None}
    ),
    **{
        f"spec.checkpoint.keep_best.{name}": Probe(
            value,
            needs={
                "spec.checkpoint.keep_last": None,
                "spec.checkpoint.keep_best": {"metric": "val:accuracy"},
            },
        )
        for name, value in (("metric", TEXT), ("higher_is_better", False), ("count", 77))
    },
    **{
        f"spec.training.budgets.{role}.max_tokens_per_gpu": Probe(
            INT, needs={"spec.training.dynamic_batch.enabled": True}, base=base
        )
        for role, base in (
            ("old_log_prob", "grpo"),
            ("ref_log_prob", "grpo"),
            ("critic_update", "ppo"),
            ("critic_values", "ppo"),
        )
    },
    "spec.training.budgets.old_log_prob.micro_batch_per_gpu": Probe(32),
    "spec.training.budgets.ref_log_prob.micro_batch_per_gpu": Probe(32),
    "spec.training.budgets.critic_update.micro_batch_per_gpu": Probe(INT, base="ppo"),
    "spec.training.budgets.critic_values.micro_batch_per_gpu": Probe(INT, base="ppo"),
    "spec.algorithm.name": Probe("rloo"),
    "spec.training.global_batch": Probe(7168, literals=("7168",)),
    # OpenRLHF counts samples: max_samples = steps x global batch (1024 in the example)
    "spec.training.steps": Probe(
        INT, needs={"spec.training.epochs": None}, literals=(str(INT), str(INT * 1024))
    ),
    # OpenRLHF (0.10+) bounds the whole sequence: max_len = prompt + response (1024 in the example)
    "spec.data.max_prompt_length": Probe(INT, literals=(str(INT), str(INT + 1024))),
    "spec.rollout.max_tokens": Probe(777),  # at most data.max_response_length (1024 in the example)
    "spec.weight_sync.max_staleness": Probe(77, needs={"spec.placement.pools": _SEPARATE}),
    # partial rollouts need rollouts that may run ahead; 2 picks verl's fully-async trainer, which has them
    "spec.weight_sync.partial_rollout": Probe(
        True, needs={"spec.placement.pools": _SEPARATE, "spec.weight_sync.max_staleness": 2}
    ),
    "spec.weight_sync.run_ahead_fraction": Probe(
        FLOAT, needs={"spec.placement.pools": _SEPARATE, "spec.weight_sync.max_staleness": 2}
    ),
    "spec.algorithm.off_policy_correction.level": Probe(
        "sequence", needs={"spec.algorithm.off_policy_correction": {"max_ratio": 2.0}}
    ),
    "spec.algorithm.off_policy_correction.mode": Probe(
        "mask", needs={"spec.algorithm.off_policy_correction": {"max_ratio": 2.0, "min_ratio": 0.5}}
    ),
    "spec.algorithm.off_policy_correction.min_ratio": Probe(
        FLOAT,
        needs={"spec.algorithm.off_policy_correction": {"max_ratio": 2.0, "mode": "mask", "min_ratio": 0.5}},
    ),
    "spec.logging.project": Probe(TEXT, needs={"spec.logging.backends": ["console", "wandb"]}),
    "spec.logging.experiment": Probe(TEXT, needs={"spec.logging.backends": ["console", "wandb"]}),
    "spec.training.epochs": Probe(77),
    "spec.training.mini_batch": Probe(128),
    "spec.training.micro_batch_per_gpu": Probe(8),
    "spec.training.dynamic_batch.max_tokens_per_gpu": Probe(
        INT, needs={"spec.training.dynamic_batch.enabled": True}
    ),
    "spec.training.parallel.tp": Probe(2, needs={"spec.training.backend": "megatron"}),
    "spec.training.parallel.pp": Probe(2, needs={"spec.training.backend": "megatron"}),
    "spec.training.parallel.cp": Probe(2, needs={"spec.training.backend": "megatron"}),
    "spec.training.parallel.sp": Probe(2),
    "spec.training.parallel.zero_stage": Probe(3, needs={"spec.training.backend": "deepspeed"}),
    "spec.rollout.tensor_parallel": Probe(4),
    "spec.rollout.top_k": Probe(77),
    "spec.rollout.val.n": Probe(77),
    "spec.roles.actor.gpus": Probe(4),
    "spec.roles.actor.cpus_per_gpu": Probe(97, literals=("97", str(97 * 8))),  # per GPU, or per 8-GPU node
    # Kubernetes writes 7777Gi, Slurm 7777G (or 7963648M)
    "spec.roles.actor.memory": Probe("7777Gi", literals=("7777G", str(7777 * 1024))),
    "spec.placement.pools.0.nodes": Probe(2),
    "spec.placement.pools.0.gpus_per_node": Probe(4),
    "spec.placement.pools.0.roles": Probe("rollout in its own pool", edit=_rollout_apart),
    "spec.native": Probe(None),  # a section per framework: probe_for sets the rendered framework's own
    "spec.runtime.python": Probe(f"/opt/{TEXT}/bin/python3", literals=(TEXT,)),
    "spec.runtime.entrypoint": Probe(f"examples/run_grpo_{TEXT}.py", literals=(TEXT,)),
    "spec.runtime.config": Probe(f"/opt/{TEXT}/config/my_grpo.yaml", literals=(TEXT,)),
    "spec.ports.0.name": Probe(TEXT[:15], needs={"spec.ports": [_PORT]}),
    "spec.ports.0.port": Probe(INT, needs={"spec.ports": [_PORT]}),
    "spec.ports.0.protocol": Probe("UDP", needs={"spec.ports": [_PORT]}),
    "spec.ports.0.purpose": Probe("metrics", needs={"spec.ports": [_PORT]}),
    "spec.secrets.0.env": Probe(TEXT.upper(), needs={"spec.secrets": [_SECRET_ENV]}),
    "spec.secrets.0.from.0.env": Probe(TEXT.upper(), needs={"spec.secrets": [_SECRET_ENV]}),
    "spec.secrets.0.from.0.file": Probe(
        f"/run/{TEXT}", needs={"spec.secrets": [{"env": "PROBE_SECRET", "from": [{"file": "/run/base"}]}]}
    ),
    "spec.secrets.0.from.0.k8s_secret.name": Probe(TEXT, needs={"spec.secrets": [_SECRET_K8S]}),
    "spec.secrets.0.from.0.k8s_secret.key": Probe(TEXT, needs={"spec.secrets": [_SECRET_K8S]}),
    "spec.env": Probe({"RLPROBE": TEXT}, literals=(TEXT,)),
    "metadata.labels": Probe({"team": "reasoning", "probe": TEXT}, literals=(TEXT,)),
    "spec.eval.datasets": Probe([f"data/{TEXT}.parquet"], literals=(TEXT,)),
    "spec.data.train": Probe([f"data/{TEXT}.parquet"], literals=(TEXT,)),
    "spec.data.val": Probe([f"data/{TEXT}.parquet"], literals=(TEXT,)),
    "spec.logging.backends": Probe(["console", "tensorboard"]),
    "spec.eval.continuous.follow": Probe("pool", needs={**_CE, "spec.pool": {"store": "pool"}}),
    "spec.eval.continuous.suites.0.name": Probe(TEXT, needs=_CE),
    "spec.eval.continuous.suites.0.data": Probe([f"data/{TEXT}.jsonl"], needs=_CE, literals=(TEXT,)),
    "spec.eval.continuous.suites.0.scorer.function.path": Probe(
        f"rewards/{TEXT}.py", needs=_CE, literals=(TEXT,)
    ),
    "spec.eval.continuous.suites.0.scorer.function.name": Probe(TEXT, needs=_CE),
    "spec.eval.continuous.suites.0.scorer.builtin.name": Probe("math", needs=_CE_BUILTIN),
    "spec.eval.continuous.suites.0.generation.max_new_tokens": Probe(INT, needs=_CE),
    "spec.eval.continuous.suites.0.generation.temperature": Probe(FLOAT, needs=_CE),
    "spec.eval.continuous.suites.0.generation.samples": Probe(77, needs=_CE),
    "spec.eval.continuous.gate.suite": Probe(TEXT, needs=_CE_GATE),
    "spec.eval.continuous.gate.metric": Probe("max", needs=_CE_GATE),
    "spec.eval.continuous.gate.min": Probe(FLOAT, needs=_CE_GATE),
    "spec.eval.continuous.gate.promote": Probe(TEXT, needs=_CE_GATE),
}

#: Leaves that are not checked here, with the reason.
NOT_CHECKED: dict[str, str] = {
    "apiVersion": "one allowed value: there is nothing to change",
    "kind": "one allowed value: there is nothing to change",
    # Per-launcher options: each launcher's own vocabulary, refused by name when unknown (the kit's
    # LauncherConformance.test_unknown_option_is_refused) and tested by each launcher's suite.
    "spec.launcher": "per-launcher options, checked by the kit and the launcher suites",
    # Health thresholds are rladapt's own: recorded with the run and read by `status` / `watch`
    # (tests/metrics/test_health.py, tests/metrics/test_views_cli.py), never by a framework.
    **{
        f"spec.health.{name}": "read by rladapt status/watch from the run record"
        for name in Health.model_fields
    },
}


# --- the walk ------------------------------------------------------------------------------------------------

_NONE = type(None)


def _strip(annotation: Any) -> Any:
    """The annotation without Optional and Annotated."""
    if get_origin(annotation) is typing.Annotated:
        return _strip(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not _NONE]
        if len(args) == 1:
            return _strip(args[0])
    return annotation


def _model(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def leaves(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path by alias, annotation) of every leaf; list items as ``.0``, role maps as ``.actor``."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{info.alias or name}"
        annotation = _strip(info.annotation)
        args = get_args(annotation)
        if _model(annotation):
            yield from leaves(annotation, f"{path}.")
        elif get_origin(annotation) is list and _model(_strip(args[0])):
            yield from leaves(_strip(args[0]), f"{path}.0.")
        elif get_origin(annotation) is dict and _model(_strip(args[1])):
            yield from leaves(_strip(args[1]), f"{path}.{ROLE_NAMES[0]}.")
        else:
            yield path, annotation


LEAVES = dict(leaves(RLJob))


def is_choice(annotation: Any) -> bool:
    """A flag or a choice among names (or a list of them): there is no literal to search for."""
    annotation = _strip(annotation)
    if get_origin(annotation) is list:
        return is_choice(get_args(annotation)[0])
    return annotation is bool or get_origin(annotation) is Literal


def derived(path: str, annotation: Any, current: Any) -> Probe:
    """A valid, distinctive value from the type alone; a flag or a choice is compared, not searched."""
    annotation = _strip(annotation)
    if annotation is bool:
        return Probe(not current)
    if get_origin(annotation) is Literal:
        return Probe(next(a for a in get_args(annotation) if a != current))
    if get_origin(annotation) is list:
        return Probe([TEXT], literals=(TEXT,))
    if annotation is int:
        return Probe(INT)
    if annotation is float:
        return Probe(FLOAT)
    if annotation is str or get_origin(annotation) in (Union, types.UnionType):
        return Probe(TEXT)
    raise AssertionError(f"{path}: no probe for {annotation!r}; add one to PROBES")


def differs(path: str) -> bool:
    return path in NON_LITERAL or is_choice(LEAVES[path])


# --- setting and rendering -----------------------------------------------------------------------------------


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        if isinstance(node, list):
            index = int(key)
            while len(node) <= index:
                node.append({})
            node = node[index]
        else:
            if node.get(key) is None:
                node[key] = [] if key in ("volumes", "ports", "secrets", "pools", "from") else {}
            node = node[key]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is None:
        node.pop(last, None)
    else:
        node[last] = value


def _get(data: dict[str, Any], path: str) -> Any:
    node: Any = data
    for key in path.split("."):
        if isinstance(node, list):
            node = node[int(key)] if int(key) < len(node) else None
        elif isinstance(node, dict):
            node = node.get(key)
        if node is None:
            return None
    return node


def _job(framework: str, probe: Probe, path: str, with_value: bool) -> RLJob:
    data = copy.deepcopy(BASES[probe.base][framework])
    for key, value in probe.needs.items():
        _set(data, key, copy.deepcopy(value))
    if with_value and probe.edit is not None:
        probe.edit(data)
    elif with_value:
        _set(data, path, copy.deepcopy(probe.value))
    return validate_data(data, f"<{path} probe>")


#: A problem in the second section can be about a field of the first: a role's GPUs are a share of its pool.
ENCLOSING = {"spec.roles": "spec.placement"}


def _names(path: str, problem_path: str) -> bool:
    """Whether a problem's path is the field, or an enclosing section of it (``spec.model.lora`` for its rank)."""
    norm = re.sub(r"\[(\d+)\]", r".\1", problem_path)
    if norm.count(".") < 1:
        return False  # "spec" or the root names no field
    if any(path.startswith(f"{field}.") and norm == section for field, section in ENCLOSING.items()):
        return True
    return norm == path or path.startswith(norm + ".") or norm.startswith(path + ".")


def _quotes(text: str, literals: tuple[str, ...]) -> bool:
    """Whether a message quotes the probe's value (only values long enough not to match by chance)."""
    return any(len(lit) >= 3 and not lit.isdigit() and lit.lower() in text.lower() for lit in literals)


def _refusal_names(exc: RladaptError, path: str, literals: tuple[str, ...]) -> bool:
    if isinstance(exc, SpecError) and exc.problems:
        return any(_names(path, p.path) or _quotes(str(p), literals) for p in exc.problems)
    text = str(exc)
    return path in text or path.removeprefix("spec.") in text or _quotes(text, literals)


def _noted(native: NativeLaunch, path: str) -> bool:
    """Whether the adapter left a note on the launch about the field (e.g. "... is not used")."""
    return any(path.removeprefix("spec.") in note for note in native.notes)


def _found(text: str, literals: tuple[str, ...]) -> bool:
    for lit in literals:
        pattern = rf"(?<![\w.]){re.escape(lit)}(?![\w.])" if lit.isdigit() else re.escape(lit)
        if re.search(pattern, text):
            return True
    return False


def probe_for(path: str, framework: str) -> Probe:
    if path == "spec.native":  # the escape hatch is per framework: set the rendered framework's own
        return Probe({framework: [f"{TEXT}.key={INT}"]}, literals=(TEXT,))
    if path in PROBES:
        return PROBES[path]
    effective = validate_data(copy.deepcopy(BASES["grpo"][framework])).model_dump(by_alias=True)
    return derived(path, LEAVES[path], _get(effective, path))


def _render(job: RLJob, framework: str) -> NativeLaunch | RladaptError:
    try:
        return render_native(job, framework, REGISTRY).native
    except RladaptError as exc:
        return exc


def _artifacts(launcher: str, native: NativeLaunch) -> str | RladaptError:
    try:
        return render_artifacts(
            REGISTRY.launcher(launcher), native, LAUNCHER_OPTIONS.get(launcher, {})
        ).describe()
    except RladaptError as exc:
        return exc


def check_field(path: str) -> tuple[list[str], list[str]]:
    """(failures, frameworks that rendered the probe's context) for one field, every framework and launcher."""
    compare = differs(path)
    failures: list[str] = []
    checked: list[str] = []
    for framework in FRAMEWORKS:
        probe = probe_for(path, framework)
        literals = probe.literals or (str(probe.value),)
        where = f"{path}={probe.value!r}"
        try:
            base_job = _job(framework, probe, path, with_value=False)
        except SpecError:
            continue  # the probe's context is not valid on this framework's base spec (e.g. NeMo-RL's RM pool)
        base = _render(base_job, framework)
        if isinstance(base, RladaptError):
            continue  # this framework cannot express the probe's context
        checked.append(framework)
        try:
            changed = _job(framework, probe, path, with_value=True)
        except SpecError as exc:
            # the value is invalid with this framework's base (a one-GPU TRL pool has no room for 4 GPUs): the
            # spec's own validation refuses it, naming the field
            if not _refusal_names(exc, path, literals):
                failures.append(f"{framework}: {where} is refused without naming the field: {exc}")
            continue
        native = _render(changed, framework)
        if isinstance(native, RladaptError):
            if not _refusal_names(native, path, literals):
                failures.append(f"{framework} refuses {where} without naming the field: {native}")
            continue
        if _noted(native, path):
            continue
        if compare and native.to_json() != base.to_json():
            continue
        if not compare:
            assert not _found(base.to_json(), literals), f"{path}: {literals} is in {framework}'s base render"
            if _found(native.to_json(), literals):
                continue
        for launcher in LAUNCHERS:
            base_text = _artifacts(launcher, base)
            if isinstance(base_text, RladaptError):
                continue  # this launcher cannot run the probe's context
            text = _artifacts(launcher, native)
            if isinstance(text, RladaptError):
                if not _refusal_names(text, path, literals):
                    failures.append(
                        f"{framework}/{launcher} refuses {where} without naming the field: {text}"
                    )
                continue
            if not compare:
                assert not _found(base_text, literals), (
                    f"{path}: {literals} is in {launcher}'s base artifacts"
                )
            if (text != base_text) if compare else _found(text, literals):
                continue
            failures.append(
                f"{where} {'changes' if compare else 'reaches'} neither {framework}'s native launch nor "
                f"{launcher}'s artifacts, and nothing refuses it"
            )
    return failures, checked


# --- the rule ------------------------------------------------------------------------------------------------

#: Fields this rule finds silently ignored today, each a strict xfail: it fails as soon as the gap is closed, and
#: the entry goes with it.
SILENTLY_IGNORED: dict[str, str] = {}


def _params() -> list[Any]:
    params = []
    for path in sorted(LEAVES):
        if path in NOT_CHECKED:
            continue
        reason = SILENTLY_IGNORED.get(path)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=path, marks=marks))
    return params


@pytest.mark.parametrize("path", _params())
def test_every_spec_field_reaches_the_launch_or_is_refused(path: str) -> None:
    failures, checked = check_field(path)
    assert checked, f"no framework renders the context of {path}: {PROBES.get(path)}"
    assert not failures, "\n".join(failures)


def test_the_walk_sees_every_section() -> None:
    sections = {p.split(".")[1] for p in LEAVES if p.startswith("spec.")}
    assert sections == set(RLJob.model_fields["spec"].annotation.model_fields)  # type: ignore[union-attr]
    assert {
        "spec.roles.actor.memory",
        "spec.roles.actor.cpus_per_gpu",
        "spec.volumes.0.source.nfs.server",
    } <= set(LEAVES)


def test_every_exemption_names_a_real_field() -> None:
    for table in (PROBES, NON_LITERAL, NOT_CHECKED):
        assert set(table) <= set(LEAVES), sorted(set(table) - set(LEAVES))
    assert not {p for p in NON_LITERAL if is_choice(LEAVES[p])}, "flags and choices are compared anyway"
    assert not set(SILENTLY_IGNORED) & (set(NON_LITERAL) | set(NOT_CHECKED))
