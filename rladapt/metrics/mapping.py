"""Neutral names read back from a run's tags (``neutral_series``). The mapping an adapter declares (``MetricMap``,
``Logged``, ``Absent``) belongs to the plugin contract, ``rladapt.plugins``; it is re-exported here for existing
imports.
"""

from __future__ import annotations

from collections.abc import Mapping

from rladapt.plugins.metrics import Absent, Entry, Logged, MetricMap

__all__ = ["Absent", "Entry", "Logged", "MetricMap", "neutral_series"]


def _as_dict(points: Mapping[int, float]) -> dict[int, float]:
    return points if isinstance(points, dict) else dict(points)


def neutral_series(
    raw: Mapping[str, Mapping[int, float]], names: MetricMap | None
) -> tuple[dict[str, dict[int, float]], dict[str, str]]:
    """``raw`` ({tag: {step: value}}) renamed: mapped tags under their neutral names, the rest under their own.

    Returns the series and ``{neutral: tag}``. A tag that is read as a neutral quantity is not repeated under its
    native name.
    """
    chosen = names.resolve(list(raw)) if names is not None else {}
    # a dict is taken as it is, not copied: a 100,000-step run's copy cost as much memory as its read
    series = {neutral: _as_dict(raw[tag]) for neutral, tag in chosen.items()}
    used = set(chosen.values())
    for tag, points in raw.items():
        if tag not in used and tag not in series:
            series[tag] = _as_dict(points)
    return series, chosen
