"""The neutral metric names, and what a framework version logs each neutral quantity as: data an adapter provides
per version.

An adapter's ``metric_names(version)`` (``rladapt.plugins.FrameworkAdapter``) returns a ``MetricMap``: for every
neutral name (``NEUTRAL``: one name per quantity, whatever a framework calls it) either the tags it is read back
under, with the name the framework's code logs and the file that logs it, or ``Absent`` with the reason the version
has no such quantity (never approximated from another one). A tag that no entry claims keeps its native name in
``RunMetrics.series``. Reading a run's metrics back is ``rladapt.metrics``'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["BY_NAME", "METRICS_DIR", "NAMES", "NEUTRAL", "Absent", "Entry", "Logged", "MetricMap", "Neutral"]

#: The directory, inside the checkpoint directory, a launch writes TensorBoard events to when it names no location
#: of its own (``NativeLaunch.metrics_dir`` None): rladapt chooses it, and reads the events back from it.
METRICS_DIR = "rladapt-metrics"


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


@dataclass(frozen=True)
class Logged:
    """One way a version logs a quantity.

    ``tag`` is the name as read back from the TensorBoard events rladapt makes the launch write (a regular
    expression when ``pattern``, for names that carry a data set or a reward function's name); ``logged`` is
    the string literal the framework's code logs it under, in ``file`` (a path inside the distribution
    ``dist``, the framework's own when None), so a test can prove it is still logged there. ``when`` is the
    condition under which that code logs it, for a quantity not logged on every run: a run that logged none
    of it is told this reason instead of being shown an empty column.
    """

    tag: str
    logged: str
    file: str
    dist: str | None = None
    pattern: bool = False
    note: str = ""
    when: str = ""

    def matches(self, tag: str) -> bool:
        return bool(re.fullmatch(self.tag, tag)) if self.pattern else tag == self.tag


@dataclass(frozen=True)
class Absent:
    """The version has no such quantity (``reason`` says why); it is never approximated from another one."""

    reason: str


Entry = tuple[Logged, ...] | Absent


@dataclass(frozen=True)
class MetricMap:
    """Every neutral name of one framework version: its candidate tags (the first one present wins) or Absent."""

    framework: str
    version: str
    entries: Mapping[str, Entry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.entries) - NAMES
        if unknown:
            raise ValueError(f"{self.framework} {self.version}: not neutral metric names: {sorted(unknown)}")

    def logged(self) -> list[tuple[str, Logged]]:
        """Every ``(neutral, Logged)`` pair, in declaration order."""
        return [(n, one) for n, e in self.entries.items() if not isinstance(e, Absent) for one in e]

    def absent(self) -> dict[str, str]:
        """Neutral name -> why this version does not log it."""
        return {n: e.reason for n, e in self.entries.items() if isinstance(e, Absent)}

    def unlogged_reason(self, name: str) -> str:
        """Why a run of this version may have logged none of ``name``: Absent's reason, else the conditions of
        its ``Logged`` entries ("" when it should have been logged on every run)."""
        entry = self.entries.get(name)
        if isinstance(entry, Absent):
            return f"{self.framework} {self.version} does not log it ({entry.reason})"
        if not entry:
            return ""
        conditions = [f"{one.logged!r} ({one.file}) {one.when}" for one in entry if one.when]
        if not conditions:
            return ""
        return f"{self.framework} {self.version} logs it " + "; or ".join(conditions)

    def resolve(self, tags: list[str]) -> dict[str, str]:
        """Neutral name -> the tag it is read from, among ``tags`` (for a pattern, the first match sorted)."""
        out: dict[str, str] = {}
        ordered = sorted(tags)
        for neutral, entry in self.entries.items():
            if isinstance(entry, Absent):
                continue
            for candidate in entry:
                found = next((t for t in ordered if candidate.matches(t)), None)
                if found is not None:
                    out[neutral] = found
                    break
        return out
