"""A run's validation results for ``status`` and ``runs``: the latest and best validation score, and the best
step that has a complete checkpoint.

Computed when asked, from the metrics the run logged and the checkpoints on disk, rather than written back into
``run.json``: the run store has one writer (DESIGN.md), and the job, which logs the scores, is not it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rladapt.primitives.errors import UsageError

from .names import BY_NAME
from .series import RunMetrics

if TYPE_CHECKING:
    from rladapt.plugins import FrameworkAdapter
    from rladapt.runs import Run

VAL = "val_score"


@dataclass(frozen=True)
class Validation:
    """``(step, value)`` pairs; ``best_checkpoint`` is None when no validated step has a complete checkpoint."""

    latest: tuple[int, float]
    best: tuple[int, float]
    best_checkpoint: tuple[int, float] | None

    def to_json(self) -> dict[str, Any]:
        def point(p: tuple[int, float] | None) -> dict[str, Any] | None:
            return None if p is None else {"step": p[0], "value": p[1] if math.isfinite(p[1]) else None}

        return {
            "latest": point(self.latest),
            "best": point(self.best),
            "best_checkpoint": point(self.best_checkpoint),
        }

    def summary(self) -> str:
        """``0.42 at step 40, best 0.5 at step 30, best checkpoint step 30``."""
        ck = (
            f"best checkpoint step {self.best_checkpoint[0]}"
            if self.best_checkpoint is not None
            else "no complete checkpoint of a validated step"
        )
        return f"{self.latest[1]:.4g} at step {self.latest[0]}, best {self.best[1]:.4g} at step {self.best[0]}, {ck}"


def validation(metrics: RunMetrics, complete_steps: Iterable[int]) -> Validation | None:
    """The validation results in ``metrics``; None when the run logged no validation score."""
    higher = BY_NAME[VAL].higher_is_better is not False
    latest, best = metrics.latest(VAL), metrics.best(VAL, higher)
    if latest is None or best is None:
        return None
    kept = set(complete_steps)
    with_checkpoint = RunMetrics(
        run_id=metrics.run_id,
        framework=metrics.framework,
        version=metrics.version,
        series={VAL: {s: v for s, v in metrics.series[VAL].items() if s in kept}},
    )
    return Validation(latest=latest, best=best, best_checkpoint=with_checkpoint.best(VAL, higher))


def run_validation(
    run: Run, adapter: FrameworkAdapter, metrics: RunMetrics | None = None
) -> Validation | None:
    """The validation results of a recorded run; None when it has no metrics directory or no validation score.
    ``metrics``: the run's metrics when the caller has read them already (else the run's validation summary is
    read, ``rladapt.metrics.summary``: only what was logged since the last call).

    Cheap for a run without metrics (one directory check): ``runs`` asks it of every run.
    """
    from .events import event_dirs
    from .store import run_metrics_dir
    from .summary import run_summary

    try:
        root = run.record.checkpoint_root()
    except UsageError:  # a run recorded without a checkpoint directory
        return None
    dirs = event_dirs(run_metrics_dir(run))
    if not dirs:
        return None
    if metrics is None:
        metrics = run_summary(run, dirs).metrics(run.id, run.record.framework, run.record.version or None)
    scan = adapter.scan_checkpoints(root, run.record.version)
    complete = [c.step for c in scan.checkpoints if c.complete] if scan is not None else []
    return validation(metrics, complete)
