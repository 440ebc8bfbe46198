"""``rladapt watch RUN``: a run's progress and health, live, until it ends; and the lines ``rladapt status`` adds.

Step / total, time per step, ETA, the latest reward and validation score and the health warnings come from
``rladapt.metrics.progress`` over the running aggregates the run's summary keeps (``rladapt.metrics.summary``:
each poll reads only the bytes logged since the last one), judged by the ``spec.health`` thresholds recorded with
the run at launch (the defaults for a run recorded before them).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from rladapt.primitives.errors import LaunchError, RladaptError

from .options import polling_options, run_argument

if TYPE_CHECKING:
    from rich.console import RenderableType

    from rladapt.metrics import RunMetrics
    from rladapt.metrics.progress import Progress
    from rladapt.metrics.summary import Summary
    from rladapt.plugins import RunStatus
    from rladapt.primitives.spec import Health
    from rladapt.runs import Run

#: The label column of ``rladapt status``.
WIDTH = 11


def register(cli: click.Group) -> None:
    cli.add_command(watch)


def thresholds(run: Run) -> Health:
    """The ``spec.health`` the run was launched with; the defaults for a record without (or with an unreadable) one."""
    return run.record.thresholds()


def total_steps(run: Run) -> int | None:
    return run.record.steps_total


def run_progress(
    run: Run, running: bool, metrics: RunMetrics | None = None, summary: Summary | None = None
) -> Progress:
    """The run's progress now (a stall and an ETA only while ``running``): from ``metrics`` when given, else from
    the run's summary (``summary``, read when not given: only what was logged since the last call), else (a
    directory the summary cannot keep) from its metrics read whole; RladaptError when unreadable."""
    from rladapt.metrics.progress import progress

    limits = thresholds(run)
    now = time.time() if running else None
    if metrics is None:
        from rladapt.metrics.store import latest_start
        from rladapt.metrics.summary import run_summary

        found = summary if summary is not None else run_summary(run)
        if found.state is not None:
            found.state.started = latest_start(run)
            return progress(found.state, total_steps(run), limits, now)
        from rladapt.metrics import read_run_metrics

        metrics = read_run_metrics(run)
    return progress(metrics, total_steps(run), limits, now)


def status_lines(
    run: Run,
    current: RunStatus,
    validation: bool = True,
    metrics: RunMetrics | None = None,
    summary: Summary | None = None,
) -> list[str]:
    """What ``rladapt status`` prints about progress and health (nothing when the run never started); without
    the validation row when ``validation`` is false (``status`` has its own, with the best checkpoint).
    ``metrics``, ``summary``: the run's metrics or summary when the caller has read them already."""
    if current.state in ("CREATED", "SUBMITTING", "PENDING"):
        return []
    try:
        now = run_progress(run, running=not current.terminal, metrics=metrics, summary=summary)
    except RladaptError as exc:
        return [_row("metrics", f"unreadable: {exc.message}")]
    rows = [(label, text) for label, text in now.lines() if validation or label != "val"]
    if not rows:
        return [_row("metrics", "none logged yet")]
    return [_row(label, text) for label, text in rows]


def status_json(
    run: Run, current: RunStatus, metrics: RunMetrics | None = None, summary: Summary | None = None
) -> dict[str, Any]:
    """The ``progress`` object of ``rladapt status --format json``: ``Progress.as_json``, or ``{"error": message}``."""
    try:
        return run_progress(run, running=not current.terminal, metrics=metrics, summary=summary).as_json()
    except RladaptError as exc:
        return {"error": exc.message}


def _row(label: str, text: str) -> str:
    return f"{label + ':':<{WIDTH}}{text}"


@click.command(short_help="Follow a run's progress and health until it ends.")
@run_argument(required=False)
@polling_options("")
def watch(run_id: str | None, interval: float, timeout: float | None) -> None:
    """Follow RUN (an id or unique prefix; default: the latest run) until it ends: step / total, time per step,
    ETA, the latest reward and validation score, and health warnings (thresholds: spec.health).

    On a terminal the view is redrawn in place; otherwise a line is printed for each new step and each new
    warning. Exit status: 0 when the run succeeded, 1 when it ended otherwise (or --timeout passed).
    """
    from rladapt.launch import Runner

    runner = Runner()
    run = runner.get(run_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    live = sys.stdout.isatty()
    if live:
        final = _watch_live(runner, run, interval, deadline)
    else:
        final = _watch_lines(runner, run, interval, deadline)
    if final.state != "SUCCEEDED":
        code = f" (exit code {final.exit_code})" if final.exit_code is not None else ""
        raise LaunchError(
            f"run {run.id} ended {final.state}{code}" + (f": {final.message}" if final.message else "")
        )


def _poll(runner: Any, run: Run) -> tuple[RunStatus, Progress | None, str]:
    current = runner.status(run)
    try:
        return current, run_progress(run, running=not current.terminal), ""
    except RladaptError as exc:
        if current.terminal:
            return current, None, exc.message
        raise


def _waited(run: Run, deadline: float | None, interval: float) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise LaunchError(f"run {run.id} has not ended by --timeout (it goes on)")
    time.sleep(interval)


def _line(p: Progress) -> str:
    """One line per step: ``step 3 / 4 | per step 1.2 s | eta 1.2 s | reward 0.5 | val 0.6``."""
    from rladapt.metrics.progress import duration, number

    parts = [f"step {p.step}" + (f" / {p.total}" if p.total else "")]
    if p.seconds_per_step is not None:
        parts.append(f"per step {duration(p.seconds_per_step)}")
    if p.eta_seconds is not None:
        parts.append(f"eta {duration(p.eta_seconds)}")
    if p.reward is not None:
        parts.append(f"reward {number(p.reward[1])}")
    if p.val_latest is not None:
        parts.append(f"val {number(p.val_latest[1])} (step {p.val_latest[0]})")
    return " | ".join(parts)


def _watch_lines(runner: Any, run: Run, interval: float, deadline: float | None) -> RunStatus:
    shown_step: int | None = None
    shown_warnings: set[tuple[str, str]] = set()
    while True:
        current, p, problem = _poll(runner, run)
        if p is not None:
            if p.step is not None and p.step != shown_step:
                click.echo(_line(p))
                shown_step = p.step
            for w in p.warnings:
                if (w.rule, w.metric) not in shown_warnings:
                    click.echo(f"warning: {w.rule}: {w.message}")
                    shown_warnings.add((w.rule, w.metric))
        if current.terminal:
            if p is None or p.step is None:
                click.echo(f"no metrics logged{': ' + problem if problem else ''}")
            click.echo(f"run {run.id}: {current.state}")
            return current
        _waited(run, deadline, interval)


def _watch_live(runner: Any, run: Run, interval: float, deadline: float | None) -> RunStatus:
    from rich.console import Console
    from rich.live import Live

    with Live(console=Console(), auto_refresh=False, transient=False) as view:
        while True:
            current, p, problem = _poll(runner, run)
            view.update(_panel(run, current, p, problem), refresh=True)
            if current.terminal:
                return current
            _waited(run, deadline, interval)


def _panel(run: Run, current: RunStatus, p: Progress | None, problem: str) -> RenderableType:
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("run", f"{run.id}  ({run.record.framework} {run.record.version})")
    grid.add_row("state", current.state)
    if p is None or p.step is None:
        grid.add_row("metrics", problem or "none logged yet")
    else:
        for label, text in p.lines():
            grid.add_row(label, Text(text, style="yellow" if label == "warning" else ""))
    return grid
