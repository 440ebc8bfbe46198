"""Where a run's metrics are, and reading them back in neutral names.

Every render makes the launch write TensorBoard event files (the one logging backend every pinned version of
every framework has) beside the user's own backends: where the launch names a location of its own (an imported
script's TensorBoard directory, NeMo-RL's ``logger.log_dir``), there, since moving it would change the run
(``NativeLaunch.metrics_dir``, recorded in the run record); else into ``<spec.checkpoint.dir>/rladapt-metrics``:
the checkpoint directory is the one place that is the run's own, survives a resume, and is already where rladapt
reads back checkpoints from (``rladapt resume``, the bootstrap). A run on a cluster is read back the same way when
that directory is on a file system this machine sees.

A run's metrics are its own: when runs one after another write into one checkpoint directory (a second launch
with ``resume: auto`` after the first ended, a ``--take-over``), each reads back only the event files written
while it held the directory (``rladapt.runs.owner.holder_at``; an event file names the second its writer was
opened). A directory without that record (an older rladapt, a job started by hand) is read whole, as before. A
location of the launch's own outside the checkpoint directory may be shared with runs that never held it: there,
files opened before the run first took its checkpoint directory are another run's too.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from .mapping import MetricMap, neutral_series
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
    """The directory a run's TensorBoard events are under: the launch's own location when it named one (recorded
    at launch), else ``<checkpoint dir>/rladapt-metrics``; UsageError with neither."""
    return run.record.metrics_root()


#: Seconds an event file of a shared location may predate the run's first take of its checkpoint directory and
#: still be the run's: the trainer may run on another host than the bootstrap, its clock a little behind.
CLOCK_SLACK = 60


#: ``events.out.tfevents.<seconds>.<host>...``: when the writer was opened (tensorboard ``EventFileWriter``).
_EVENT_STAMP = re.compile(r"events\.out\.tfevents\.(\d+)\.")


def foreign_event_files(run: Run) -> list[Path]:
    """The event files under the run's metrics directory that another run wrote: opened while another run held
    the checkpoint directory (``rladapt.runs.owner``). A file of no known time is everyone's. A file opened before
    the first recorded take is the first holder's (the trainer may run on another host than the bootstrap, its
    clock a little behind), and also that of a run with no take recorded at all (it predates the record)."""
    from rladapt.runs.owner import holder_at, read_holders

    from .events import EVENT_FILE_GLOB

    root = run.record.checkpoint_root()
    holders = read_holders(root)
    if not holders:
        return []
    where = run_metrics_dir(run)
    # a location of the launch's own outside its checkpoint directory (NeMo-RL's `logs`, a TensorBoard folder)
    # may hold the files of runs that never held this checkpoint directory, written before this run began
    shared = not where.resolve().is_relative_to(root.resolve())
    mine = any(r == run.id for _, r in holders)
    first = min((t for t, r in holders if r == run.id), default=None)
    out = []
    for path in sorted(where.rglob(EVENT_FILE_GLOB)):
        stamp = _EVENT_STAMP.match(path.name)
        if stamp is None:
            continue
        when = int(stamp.group(1))
        holder = holder_at(holders, when)
        if shared and first is not None and when < int(first) - CLOCK_SLACK:
            out.append(path)
        elif holder is None:
            if mine and holders[0][1] != run.id:
                out.append(path)
        elif holder != run.id:
            out.append(path)
    return out


def read_run_metrics(run: Run) -> RunMetrics:
    """The metrics of a recorded run, per step, in neutral names (``read_metrics_dir`` on its metrics directory,
    without the event files other runs wrote there), with when the job's latest start began."""
    where = run_metrics_dir(run)
    foreign = set(foreign_event_files(run))
    framework, version = run.record.framework, run.record.version or None
    if not foreign:
        metrics = read_metrics_dir(where, framework, version, run.id)
    else:
        # the reader takes directories: a view of the run's own files, linked (not copied) in their places
        with tempfile.TemporaryDirectory(prefix="rladapt-own-events-") as scratch:
            view = Path(scratch)
            for path in where.rglob("*"):
                if path.is_file() and path not in foreign:
                    link = view / path.relative_to(where)
                    link.parent.mkdir(parents=True, exist_ok=True)
                    os.symlink(path, link)
            metrics = read_metrics_dir(view, framework, version, run.id)
        # a warning names the file where it is, not the view
        metrics = dataclasses.replace(
            metrics, warnings=tuple(w.replace(str(view), str(where)) for w in metrics.warnings)
        )
    return with_eval_results(dataclasses.replace(metrics, started=latest_start(run)), run)


def with_eval_results(metrics: RunMetrics, run: Run) -> RunMetrics:
    """``metrics`` with the evaluator's results (``rladapt.evaluate``): each result's metrics become the series
    ``eval/<suite>/<metric>`` at the training step of the version it measured, which ``versions`` names."""
    from rladapt.evaluate.results import read_results, results_root

    found, warnings = read_results(results_root(run.record.checkpoint_root()), run.id)
    if not found and not warnings:
        return metrics
    series = {name: dict(points) for name, points in metrics.series.items()}
    versions: dict[str, dict[int, str]] = {}
    for result in found:
        for metric, value in result.metrics.items():
            name = f"eval/{result.suite}/{metric}"
            series.setdefault(name, {})[result.step] = value
            versions.setdefault(name, {})[result.step] = result.version
    return dataclasses.replace(
        metrics, series=series, versions=versions, warnings=(*metrics.warnings, *warnings)
    )


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
