"""``rladapt metrics RUN``: a run's metrics per step, in neutral names (``rladapt.metrics``).

The figures are the TensorBoard events the rendered launch wrote into ``<checkpoint.dir>/rladapt-metrics``, read
with tensorboard's own reader and renamed by the framework version's mapping (``FrameworkAdapter.metric_names``).
Columns: the ``--metric`` names given (neutral, or a native name the run logged), else every neutral name the
version logs. ``--follow`` prints each step once it is complete (a later step was logged, or the run ended) and
returns when the run ends.
"""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from rladapt.metrics.names import NAMES, NEUTRAL, no_such_metric
from rladapt.primitives.errors import LaunchError, UsageError

from .options import format_option, metric_option, polling_options, run_argument
from .output import dump_json

if TYPE_CHECKING:
    from rladapt.launch import Runner
    from rladapt.metrics import MetricMap, RunMetrics
    from rladapt.runs import Run

FORMATS = ("table", "json", "csv")


def register(cli: click.Group) -> None:
    cli.add_command(metrics)


@click.command(short_help="Show a run's metrics per step, in neutral names.")
@run_argument()
@click.option("--follow", "-f", is_flag=True, help="Print each new step as it is logged, until the run ends.")
@format_option(*FORMATS)
@metric_option("Only this metric (repeatable): a neutral name, or a native name the run logged.")
@polling_options("With --follow: ")
def metrics(
    run_id: str, follow: bool, fmt: str, wanted: tuple[str, ...], interval: float, timeout: float | None
) -> None:
    """Show RUN's metrics per step (an id or unique prefix), in neutral names: table, JSON or CSV.

    Without --metric the columns are the neutral names its framework version logs; --format json also lists
    the native name behind each one and why a version lacks the others.
    """
    from rladapt.launch import Runner
    from rladapt.metrics.store import metric_names

    runner = Runner()
    run = runner.get(run_id)
    mapping = metric_names(run.record.framework, run.record.version or None)
    if follow:
        _follow(runner, run, mapping, list(wanted), fmt, interval, timeout)
        return
    data = _read(run)
    for warning in data.warnings:  # damaged event records were skipped: the read-back may be short
        click.echo(f"warning: {warning}", err=True)
    if not data.series:
        ended = runner.status(run).terminal
        raise UsageError(_no_metrics(run, ended))
    columns = _columns(list(wanted), data, mapping, only_logged=True)
    _refuse_unlogged(run, columns, data, mapping, ended=lambda: runner.status(run).terminal)
    if fmt == "json":
        click.echo(dump_json(_document(data, columns, mapping), what="the metrics"))
        return
    # rows printed a batch at a time, each batch formatted a column at a time: one click.echo and one lookup of
    # the series per cell cost a 100,000-step table most of its time
    steps = data.steps()
    if fmt == "table":
        widths = [max(len(n), 10) for n in columns]
        click.echo(_table_header(columns, widths))
    else:
        click.echo(_csv_line(["step", *columns]))
    for start in range(0, len(steps), 4096):
        chunk = steps[start : start + 4096]
        if fmt == "table":
            cells = [[str(s).rjust(6) for s in chunk]]
            cells += [
                _table_column(data.series.get(n) or {}, chunk, w)
                for n, w in zip(columns, widths, strict=True)
            ]
            click.echo("\n".join("  ".join(row) for row in zip(*cells, strict=True)))
        else:
            cells = [[str(s) for s in chunk]] + [
                _csv_column(data.series.get(n) or {}, chunk) for n in columns
            ]
            click.echo("\n".join(_csv_line(list(row)) for row in zip(*cells, strict=True)))


def _table_column(points: Mapping[int, float], steps: list[int], width: int) -> list[str]:
    """One column's cells (``_cell``, right-aligned) at ``steps``."""
    get = points.get
    return [("-" if (v := get(s)) is None else f"{v + 0.0:.6g}").rjust(width) for s in steps]


def _csv_column(points: Mapping[int, float], steps: list[int]) -> list[str]:
    get = points.get
    return ["" if (v := get(s)) is None else repr(v) for s in steps]


def _table_header(columns: list[str], widths: list[int]) -> str:
    return "  ".join(["step".rjust(6), *(n.rjust(w) for n, w in zip(columns, widths, strict=True))])


def _read(run: Run) -> RunMetrics:
    from rladapt.metrics import read_run_metrics

    return read_run_metrics(run)


def _no_metrics(run: Run, ended: bool) -> str:
    from rladapt.metrics import run_metrics_dir

    where = run_metrics_dir(run)
    if ended:
        return f"run {run.id} ({run.state}) logged no metrics: no TensorBoard events in {where}"
    return f"run {run.id} has logged no metrics yet (they appear in {where}); --follow waits for them"


def _columns(
    wanted: list[str], data: RunMetrics, mapping: MetricMap | None, *, only_logged: bool
) -> list[str]:
    """The ``--metric`` names (checked), else the neutral names the version logs (those the run has, when
    ``only_logged``)."""
    absent = mapping.absent() if mapping is not None else {}
    if not wanted:
        known = [n.name for n in NEUTRAL if n.name not in absent]
        if mapping is None or only_logged:
            known = [n for n in known if n in data.series]
        # the evaluator's results (rladapt.evaluate) are the run's too: shown by default, after the training's
        # (what a framework logs under eval/ itself is a native name, not shown by default)
        return known + sorted(data.versions)
    problems = []
    for name in wanted:
        if name in absent:
            problems.append(
                f"--metric {name}: {data.framework} {data.version} does not log it ({absent[name]})"
            )
        elif name not in NAMES and name not in data.series:
            problems.append(no_such_metric(name, data.series, "this run"))
    if problems:
        raise UsageError("; ".join(problems))
    return list(dict.fromkeys(wanted))


def _refuse_unlogged(
    run: Run, columns: list[str], data: RunMetrics, mapping: MetricMap | None, ended: Callable[[], bool]
) -> None:
    """A UsageError for each neutral ``--metric`` the run has no value of, with the reason its framework version
    gives (a column of '-' on every step would not say why)."""
    missing = [name for name in columns if name in NAMES and not data.series.get(name)]
    if not missing:
        return
    done = ended()
    where = f"run {run.id} ({run.state if done else 'running'}, {len(data.steps())} steps logged)"
    problems = []
    for name in missing:
        reason = mapping.unlogged_reason(name) if mapping is not None else ""
        if not reason:
            natives = (
                [repr(one.tag) for n, one in mapping.logged() if n == name] if mapping is not None else []
            )
            reason = f"{data.framework} {data.version} logs it" + (
                f" as {' or '.join(natives)}" if natives else ""
            )
        problems.append(f"--metric {name}: {where} logged none of it{'' if done else ' yet'}: {reason}")
    raise UsageError("; ".join(problems))


def _value(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _document(data: RunMetrics, columns: list[str], mapping: MetricMap | None) -> dict[str, Any]:
    absent = mapping.absent() if mapping is not None else {}
    return {
        "run": data.run_id,
        "framework": data.framework,
        "version": data.version,
        "metrics": columns,
        "native": {name: data.native[name] for name in columns if name in data.native},
        "absent": absent,
        # the version of the weights each evaluation value measured (eval/<suite>/<metric>: step -> version)
        "versions": {
            name: {str(step): v for step, v in sorted(data.versions[name].items())}
            for name in columns
            if name in data.versions
        },
        # a NaN or an infinity (a diverged loss) is null: JSON has no such numbers
        "steps": [_row(step, data, columns) for step in data.steps()],
    }


def _row(step: int, data: RunMetrics, columns: Sequence[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"step": step}
    for name in columns:
        value = (data.series.get(name) or {}).get(step)
        row[name] = None if value is None else _value(value)
    return row


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value + 0.0:.6g}"  # -0.0 shows as 0


def _emitter(
    fmt: str, columns: list[str], out: Callable[[str], object] = click.echo
) -> Callable[[int, RunMetrics], None]:
    """A function printing one step's row in ``fmt`` through ``out``; the header (table, CSV) is printed here."""
    if fmt == "csv":
        click.echo(_csv_line(["step", *columns]))

        def csv_row(step: int, data: RunMetrics) -> None:
            values = [(data.series.get(n) or {}).get(step) for n in columns]
            out(_csv_line([str(step), *("" if v is None else repr(v) for v in values)]))

        return csv_row
    if fmt == "json":  # --follow: one JSON object per line and step

        def json_row(step: int, data: RunMetrics) -> None:
            out(dump_json(_row(step, data, columns), what="the metrics", indent=None))

        return json_row
    widths = [max(len(n), 10) for n in columns]
    click.echo(_table_header(columns, widths))

    def table_row(step: int, data: RunMetrics) -> None:
        cells = [_cell((data.series.get(n) or {}).get(step)) for n in columns]
        out("  ".join([str(step).rjust(6), *(c.rjust(w) for c, w in zip(cells, widths, strict=True))]))

    return table_row


def _csv_line(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    return out.getvalue()


def _follow(
    runner: Runner,
    run: Run,
    mapping: MetricMap | None,
    wanted: list[str],
    fmt: str,
    interval: float,
    timeout: float | None,
) -> None:
    """Print each step once it is complete, until the run ends (or ``timeout`` seconds, a LaunchError)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    emit: Callable[[int, RunMetrics], None] | None = None
    shown = -1
    while True:
        ended = runner.status(run).terminal
        data = _read(run)
        if emit is None and (data.series or ended):
            if not data.series:
                raise UsageError(_no_metrics(run, ended=True))
            emit = _emitter(fmt, _columns(wanted, data, mapping, only_logged=mapping is None))
        if emit is not None:
            last = data.last_step()
            # a step is complete once a later one was logged (its evaluation is logged before the next step)
            for step in data.steps():
                if step > shown and (ended or (last is not None and step < last)):
                    emit(step, data)
                    shown = step
        if ended:
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise LaunchError(f"run {run.id} has not ended after {timeout:g} s (it goes on)")
        time.sleep(interval)
