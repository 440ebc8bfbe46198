"""Where a run's metrics are, and reading them back in neutral names.

Every render makes the launch write TensorBoard event files (the one logging backend every pinned version of
every framework has) into ``<spec.checkpoint.dir>/rladapt-metrics``, beside the user's own backends: the
checkpoint directory is the one place that is the run's own, survives a resume, and is already where rladapt
reads back checkpoints from (``rladapt resume``, the bootstrap). A run on a cluster is read back the same way when
that directory is on a file system this machine sees.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from .mapping import MetricMap, neutral_series
from .names import METRICS_DIR
from .series import RunMetrics

if TYPE_CHECKING:
    from rladapt.runs import Run


def metric_names(framework: str, version: str | None) -> MetricMap | None:
    """The registered adapter's mapping for ``framework`` ``version``; None when it declares none."""
    if not version:
        return None
    from rladapt.plugins import get_registry

    adapter = get_registry().framework(framework)
    return adapter.metric_names(version)


def read_metrics_dir(path: str | Path, framework: str, version: str | None, run_id: str = "") -> RunMetrics:
    """The metrics under ``path`` (a directory of TensorBoard event files) in neutral names.

    Tags the framework version's mapping names become neutral names (the native tag kept in
    ``RunMetrics.native``); every other tag keeps its own name. An empty or missing directory gives a
    ``RunMetrics`` without series.
    """
    from .events import read_events

    found = read_events(Path(path))
    series, chosen = neutral_series(found.scalars, metric_names(framework, version))
    return RunMetrics(
        run_id=run_id,
        framework=framework,
        version=version,
        series=series,
        native=chosen,
        wall_time=found.wall,
        warnings=tuple(found.warnings),
    )


def run_metrics_dir(run: Run) -> Path:
    """The metrics directory a run writes to (from its recorded checkpoint directory); UsageError without one."""
    return run.record.checkpoint_root() / METRICS_DIR


def read_run_metrics(run: Run) -> RunMetrics:
    """The metrics of a recorded run, per step, in neutral names (``read_metrics_dir`` on its metrics directory),
    with when the job's latest start began."""
    metrics = read_metrics_dir(run_metrics_dir(run), run.record.framework, run.record.version or None, run.id)
    return dataclasses.replace(metrics, started=latest_start(run))


def latest_start(run: Run) -> float | None:
    """When the job's latest start began (seconds since the epoch), as the job recorded it; None when unknown."""
    from rladapt.resume import read_attempts

    starts = [a.get("started") for a in read_attempts(run.dir)]
    stamp = starts[-1] if starts else None
    if not isinstance(stamp, str):
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()
