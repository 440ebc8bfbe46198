"""The kit's field probes: a spec field the adapter covers must change the render, or be refused with a message.

An adapter that translates a job while silently dropping a field (the data files, the warmup, the rollout's
tensor parallelism or temperature, the checkpoint directory, a multi-node placement) launches a run other than
the one the spec describes. Each probe below changes one field of a job the adapter translates and requires
what the framework's process reads (the ``NativeLaunch``'s argv, files, env, passthrough and runtime env) to
differ from the base one, or the translation to refuse the changed job (an rladapt error with its message). Fields every framework must honour are probed always;
the others when the version declares the capability that covers them (``KNOWN_CAPABILITIES``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rladapt.primitives import RladaptError, RLJob, SpecError, validate_data

from ..adapter import FrameworkAdapter, FrameworkVersion
from ..native import NativeLaunch

__all__ = ["PROBES", "FieldProbe", "check_fields_reach"]

Data = dict[str, Any]


@dataclass(frozen=True)
class FieldProbe:
    """Changes ``field`` of a job's data (``change`` returns False where the job has no such context)."""

    field: str
    change: Callable[[Data], bool]
    #: The capability that covers the field; None: every adapter must honour it.
    capability: str | None = None


def _spec(data: Data, *path: str) -> Data:
    node = data.setdefault("spec", {})
    for key in path:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    return node


def _other(current: Any, first: Any, second: Any) -> Any:
    return second if current == first else first


def _data(data: Data) -> bool:
    node = _spec(data, "data")
    node["train"] = [
        f"rladapt-probe/{i}-{path}" for i, path in enumerate(node.get("train") or ["train.jsonl"])
    ]
    return True


def _warmup(data: Data) -> bool:
    node = _spec(data, "training", "optimizer")
    if node.get("warmup_ratio") is not None:
        return False  # the ratio is its own probe: the two are exclusive
    node["warmup_steps"] = _other(node.get("warmup_steps"), 7, 3)
    return True


def _warmup_ratio(data: Data) -> bool:
    node = _spec(data, "training", "optimizer")
    node.pop("warmup_steps", None)
    node["warmup_ratio"] = _other(node.get("warmup_ratio"), 0.07, 0.03)
    return True


def _tensor_parallel(data: Data) -> bool:
    node = _spec(data, "rollout")
    if node.get("engine", "vllm") == "hf":
        return False  # HF generation has no tensor parallelism to set
    node["tensor_parallel"] = _other(node.get("tensor_parallel", 1), 2, 4)
    return True


def _temperature(data: Data) -> bool:
    node = _spec(data, "rollout")
    node["temperature"] = _other(node.get("temperature", 1.0), 0.7, 0.9)
    return True


def _checkpoint_dir(data: Data) -> bool:
    node = _spec(data, "checkpoint")
    node["dir"] = _other(node.get("dir"), "rladapt-probe/checkpoints", "rladapt-probe/other-checkpoints")
    return True


def _placement(data: Data) -> bool:
    spec = _spec(data)
    placement = spec.get("placement")
    if not isinstance(placement, dict) or not placement.get("pools"):
        return False  # check_fields_reach writes the job's default placement out first
    pool = placement["pools"][0]
    shape = (pool.get("nodes", 1), pool.get("gpus_per_node", 8))
    pool["nodes"], pool["gpus_per_node"] = _other(shape, (2, 8), (1, 8))
    return True


def _kl_coef(data: Data) -> bool:
    node = _spec(data, "algorithm", "kl")
    node["coef"] = _other(node.get("coef"), 0.0123, 0.0321)
    return True


def _keep_last(data: Data) -> bool:
    node = _spec(data, "checkpoint")
    node["keep_last"] = _other(node.get("keep_last"), 3, 5)
    return True


#: The probes, in the order their failures are reported.
PROBES: tuple[FieldProbe, ...] = (
    FieldProbe("spec.data.train", _data),
    FieldProbe("spec.training.optimizer.warmup_steps", _warmup),
    FieldProbe("spec.training.optimizer.warmup_ratio", _warmup_ratio, "optimizer.warmup_ratio"),
    FieldProbe("spec.rollout.tensor_parallel", _tensor_parallel),
    FieldProbe("spec.rollout.temperature", _temperature),
    FieldProbe("spec.checkpoint.dir", _checkpoint_dir),
    FieldProbe("spec.placement.pools[0] (nodes x gpus_per_node)", _placement),
    FieldProbe("spec.algorithm.kl.coef", _kl_coef, "kl.loss"),
    FieldProbe("spec.algorithm.kl.coef", _kl_coef, "kl.reward"),
    FieldProbe("spec.checkpoint.keep_last", _keep_last, "checkpoint.keep_last"),
)


def _translate(adapter: FrameworkAdapter, version: FrameworkVersion, job: RLJob) -> NativeLaunch | str:
    """The native launch, or the adapter's refusal (its message)."""
    try:
        adapter.check_capabilities(job, version)
        return adapter.translate(job, version)
    except RladaptError as exc:
        return str(exc) or type(exc).__name__
    except Exception as exc:  # a crash is no refusal: the user would see a traceback
        return Crash(f"{type(exc).__name__}: {exc}")


class Crash(str):
    """A translation that raised something other than an rladapt error."""


#: What the framework's process reads: NativeLaunch.from_job derives the rest (pools, checkpoint_dir...) for
#: the launchers, so a field that reaches only those never reaches the trainer.
FRAMEWORK_PART = ("argv", "files", "env", "passthrough", "runtime_env", "runtime_patches")


def _framework_part(native: NativeLaunch) -> dict[str, Any]:
    whole = native.to_dict()
    return {key: whole.get(key) for key in FRAMEWORK_PART}


def check_fields_reach(
    adapter: FrameworkAdapter, version: FrameworkVersion, job: RLJob, probes: tuple[FieldProbe, ...] = PROBES
) -> list[str]:
    """A failure for each probed field that ``version`` neither renders nor refuses, starting from ``job``
    (which it must translate; a job it refuses probes nothing)."""
    base = _translate(adapter, version, job)
    where = f"{job.name} on {adapter.PLUGIN_NAME} {version.version}"
    if isinstance(base, Crash):
        return [f"{where}: translate crashed ({base}): refuse the job with an UnsupportedError instead"]
    if isinstance(base, str):
        return []
    original = job.model_dump(mode="json", exclude_unset=True, by_alias=True)
    # the default placement (one colocated pool) made explicit, for the placement probe to change
    original.setdefault("spec", {}).setdefault("placement", job.placement.model_dump(mode="json"))
    failures = []
    done: set[str] = set()
    for probe in probes:
        if probe.field in done or (probe.capability and probe.capability not in version.capabilities):
            continue
        data = copy.deepcopy(original)
        if not probe.change(data):
            continue
        try:
            changed = validate_data(data)
        except SpecError:
            continue  # the change makes no valid job from this one: nothing to ask of the adapter
        done.add(probe.field)
        outcome = _translate(adapter, version, changed)
        if isinstance(outcome, Crash):
            failures.append(
                f"{where}: {probe.field} changed and translate crashed ({outcome}): refuse it instead"
            )
        if isinstance(outcome, NativeLaunch) and _framework_part(outcome) == _framework_part(base):
            failures.append(
                f"{where}: {probe.field} changed and the render did not: the field is ignored (render it, "
                "refuse the job with an UnsupportedError naming it"
                + (
                    f", or drop {probe.capability!r} from the version's capabilities)"
                    if probe.capability
                    else ")"
                )
            )
    return failures
