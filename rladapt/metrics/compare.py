"""Runs side by side per step, in neutral names, each against the first (the baseline): what ``rladapt compare``
prints and plots. The baseline check of a migration step or a framework switch: the same job before and after.

Runs are aligned by step number (every framework counts optimizer steps from 1); a difference is only given at a
step both runs logged, and is ``run - baseline`` in the metric's own unit.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .names import BY_NAME, NEUTRAL
from .series import RunMetrics


@dataclass(frozen=True)
class MetricComparison:
    """One metric across runs: ``rows`` are ``(step, values)`` with one value (or None) per run, in run order."""

    name: str
    unit: str
    higher_is_better: bool | None
    rows: list[tuple[int, list[float | None]]]
    runs: int

    def diffs(self, step_values: list[float | None]) -> list[float | None]:
        """Each run's value minus the baseline's at one step (None where either is missing); the baseline's own
        entry is left out."""
        base = step_values[0]
        return [None if base is None or v is None else v - base for v in step_values[1:]]

    def mean_diffs(self) -> list[tuple[float | None, int]]:
        """Per run after the baseline: the mean finite difference over the steps both logged, and how many."""
        out: list[tuple[float | None, int]] = []
        for i in range(1, self.runs):
            d = []
            for _, values in self.rows:
                base, other = values[0], values[i]
                if base is not None and other is not None and math.isfinite(other - base):
                    d.append(other - base)
            out.append((statistics.fmean(d) if d else None, len(d)))
        return out


@dataclass(frozen=True)
class Comparison:
    runs: list[RunMetrics]
    metrics: list[MetricComparison]

    @property
    def baseline(self) -> RunMetrics:
        return self.runs[0]

    def label(self, m: RunMetrics) -> str:
        """``run-id (trl 1.16.0)``: what a legend and a column header name a run by."""
        return f"{m.run_id} ({m.framework} {m.version or '?'})"

    def as_json(self) -> dict[str, Any]:
        def clean(v: float | None) -> float | None:
            return v if v is not None and math.isfinite(v) else None  # JSON has no NaN

        others = [m.run_id for m in self.runs[1:]]
        return {
            "baseline": self.baseline.run_id,
            "runs": [{"run": m.run_id, "framework": m.framework, "version": m.version} for m in self.runs],
            "metrics": {
                c.name: {
                    "unit": c.unit,
                    "higher_is_better": c.higher_is_better,
                    "steps": [
                        {
                            "step": step,
                            "values": {m.run_id: clean(v) for m, v in zip(self.runs, values, strict=True)},
                            "diff": {r: clean(d) for r, d in zip(others, c.diffs(values), strict=True)},
                        }
                        for step, values in c.rows
                    ],
                    "mean_diff": {
                        r: {"mean": mean, "steps": n}
                        for r, (mean, n) in zip(others, c.mean_diffs(), strict=True)
                    },
                }
                for c in self.metrics
            },
        }


def default_metrics(runs: Sequence[RunMetrics]) -> list[str]:
    """The neutral names the baseline and at least one other run logged, in the neutral order."""
    base = runs[0].series
    return [n.name for n in NEUTRAL if n.name in base and any(n.name in r.series for r in runs[1:])]


def compare(runs: Sequence[RunMetrics], names: Sequence[str] | None = None) -> Comparison:
    """``runs`` (the first is the baseline) aligned by step for ``names`` (default: ``default_metrics``).

    A name no run logged is kept with no rows; the caller decides whether that is an error.
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    chosen = list(names) if names else default_metrics(runs)
    out = []
    for name in chosen:
        steps = sorted({s for r in runs for s in (r.series.get(name) or {})})
        rows = [(s, [(r.series.get(name) or {}).get(s) for r in runs]) for s in steps]
        meta = BY_NAME.get(name)
        out.append(
            MetricComparison(
                name=name,
                unit=meta.unit if meta else "",
                higher_is_better=meta.higher_is_better if meta else None,
                rows=rows,
                runs=len(runs),
            )
        )
    return Comparison(runs=list(runs), metrics=out)
