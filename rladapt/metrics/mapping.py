"""What a framework version logs each neutral quantity as: data an adapter provides per version.

An adapter's ``metric_names(version)`` (``rladapt.plugins.FrameworkAdapter``) returns a ``MetricMap``: for every
neutral name (``rladapt.metrics.names``) either the tags it is read back under, with the name the framework's
code logs and the file that logs it, or ``Absent`` with the reason the version has no such quantity. A tag that
no entry claims keeps its native name in ``RunMetrics.series``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .names import NAMES


@dataclass(frozen=True)
class Logged:
    """One way a version logs a quantity.

    ``tag`` is the name as read back from the TensorBoard events rladapt makes the launch write (a regular
    expression when ``pattern``, for names that carry a data set or a reward function's name); ``logged`` is
    the string literal the framework's code logs it under, in ``file`` (a path inside the distribution
    ``dist``, the framework's own when None), so a test can prove it is still logged there.
    """

    tag: str
    logged: str
    file: str
    dist: str | None = None
    pattern: bool = False
    note: str = ""

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


def neutral_series(
    raw: Mapping[str, Mapping[int, float]], names: MetricMap | None
) -> tuple[dict[str, dict[int, float]], dict[str, str]]:
    """``raw`` ({tag: {step: value}}) renamed: mapped tags under their neutral names, the rest under their own.

    Returns the series and ``{neutral: tag}``. A tag that is read as a neutral quantity is not repeated under its
    native name.
    """
    chosen = names.resolve(list(raw)) if names is not None else {}
    series = {neutral: dict(raw[tag]) for neutral, tag in chosen.items()}
    used = set(chosen.values())
    for tag, points in raw.items():
        if tag not in used and tag not in series:
            series[tag] = dict(points)
    return series, chosen
