"""A run's metrics per step, in neutral names: what ``metrics``, ``compare``, ``status`` and ``watch`` read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RunMetrics:
    """The metrics of one run.

    ``series`` maps a neutral name (``rladapt.metrics.names``), or a native name where the metric has no neutral
    meaning, to ``{step: value}``. ``native`` maps each neutral name present to the framework's own name for it,
    so that every figure can be traced back to what the framework logged. ``wall_time`` maps a step to when it
    was logged (seconds since the epoch, its newest event): what time per step, ETA and a stalled run are told by.
    ``started`` is when the job's latest start began (the run's attempts; None when unknown): a start that has
    logged no step yet is told by it.
    """

    run_id: str
    framework: str
    version: str | None
    series: Mapping[str, Mapping[int, float]]
    native: Mapping[str, str] = field(default_factory=dict)
    wall_time: Mapping[int, float] = field(default_factory=dict)
    started: float | None = None
    #: damaged event-file records skipped while reading (``rladapt.metrics.events.Damage.message``): a read-back
    #: that may be short says so
    warnings: tuple[str, ...] = ()
    #: for metrics measured on a version of the weights (``eval/<suite>/<metric>``, ``rladapt.evaluate``): name ->
    #: ``{step: version}``, the pool version (or ``step-N`` checkpoint) each value belongs to
    versions: Mapping[str, Mapping[int, str]] = field(default_factory=dict)

    def steps(self) -> list[int]:
        """Every step at which any metric was logged, ascending."""
        return sorted({step for points in self.series.values() for step in points})

    def last_step(self) -> int | None:
        steps = self.steps()
        return steps[-1] if steps else None

    def latest(self, name: str) -> tuple[int, float] | None:
        """The newest ``(step, value)`` of ``name``; None when the run never logged it."""
        points = self.series.get(name)
        if not points:
            return None
        step = max(points)
        return step, points[step]

    def best(self, name: str, higher_is_better: bool = True) -> tuple[int, float] | None:
        """The best finite ``(step, value)`` of ``name`` (the earliest step on a tie)."""
        points = [(s, v) for s, v in sorted((self.series.get(name) or {}).items()) if math.isfinite(v)]
        if not points:
            return None
        pick = max if higher_is_better else min
        return pick(points, key=lambda p: p[1])

    def table(self) -> dict[int, dict[str, float]]:
        """``{step: {name: value}}``: one row per step."""
        rows: dict[int, dict[str, float]] = {}
        for name, points in self.series.items():
            for step, value in points.items():
                rows.setdefault(step, {})[name] = value
        return dict(sorted(rows.items()))
