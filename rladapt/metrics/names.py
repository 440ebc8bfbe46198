"""The neutral metric names: one name per quantity, whatever a framework calls it.

Each adapter maps its framework's logged names to these per version (``rladapt.metrics.mapping``); a native
metric with no neutral meaning keeps its own name. A quantity a version does not log is absent, never
approximated from another one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Neutral:
    """One neutral quantity: its name, its unit and which way is better (None: neither)."""

    name: str
    unit: str
    meaning: str
    higher_is_better: bool | None = None


NEUTRAL: tuple[Neutral, ...] = (
    Neutral("policy_loss", "", "the policy-gradient loss of the update", None),
    Neutral("kl", "nats", "KL divergence of the policy from the reference", None),
    Neutral("reward_mean", "", "mean sequence reward of the step's rollouts", True),
    Neutral("response_length_mean", "tokens", "mean generated response length", None),
    Neutral("response_clip_ratio", "fraction", "share of responses cut at the length limit", False),
    Neutral("entropy", "nats", "mean token entropy of the policy", None),
    Neutral("grad_norm", "", "gradient norm before clipping", None),
    Neutral("lr", "", "the actor's learning rate", None),
    Neutral("throughput_tokens_per_s_per_gpu", "tokens/s/GPU", "tokens processed per second per GPU", True),
    Neutral("step_time_s", "s", "wall time of one training step", False),
    Neutral("generation_time_s", "s", "wall time of the step's rollout generation", False),
    Neutral("val_score", "", "validation score (mean reward on the validation set)", True),
)

NAMES: frozenset[str] = frozenset(n.name for n in NEUTRAL)
BY_NAME: dict[str, Neutral] = {n.name: n for n in NEUTRAL}


def no_such_metric(name: str, logged: Iterable[str], whose: str) -> str:
    """The message for ``--metric NAME`` that is neither neutral nor logged: what would have been accepted."""
    native = sorted(set(logged) - NAMES)
    return (
        f"--metric {name}: no such metric; expected a neutral name ({', '.join(n.name for n in NEUTRAL)})"
        + (f" or one {whose} logged ({', '.join(native)})" if native else "")
    )


# --- where a rendered launch logs for rladapt to read back (the adapters add it; rladapt.metrics.store reads it) --

#: The directory, inside the checkpoint directory, the rendered launch writes TensorBoard events to.
METRICS_DIR = "rladapt-metrics"
#: The origin of the native settings an adapter adds for it (``render --explain`` shows it).
READ_BACK = f"rladapt metrics: TensorBoard events in <checkpoint.dir>/{METRICS_DIR}, read back"
#: The backend name every adapter adds beside the user's (``spec.logging.backends`` spells it the same).
TENSORBOARD = "tensorboard"


def with_tensorboard(backends: list[str], field: str = "spec.logging.backends") -> tuple[list[str], str]:
    """``backends`` with TensorBoard added when the user did not list it, and the origin to record."""
    if TENSORBOARD in backends:
        return list(backends), field
    return [*backends, TENSORBOARD], f"{READ_BACK}, beside {field}"


def metrics_dir(checkpoint_dir: str) -> str:
    """The metrics directory of a launch whose checkpoint directory is ``checkpoint_dir`` (as the spec gives it)."""
    return posixpath.join(checkpoint_dir, METRICS_DIR)
