"""``rladapt compare RUN_A RUN_B [...]``: runs side by side per step in neutral names, each against the first.

The baseline check of a migration step or a framework switch (the same job before and after): the metrics come
from ``rladapt.metrics.read_run_metrics`` (each run's own framework version's names), the alignment and the
differences from ``rladapt.metrics.compare``, the plot from ``rladapt.metrics.plot`` (matplotlib, imported only
with ``--plot``).
"""

from __future__ import annotations

import csv
import io
import math
from typing import TYPE_CHECKING

import click

from rladapt.metrics.names import NAMES, no_such_metric
from rladapt.primitives.errors import UsageError

from .options import format_option, metric_option
from .output import dump_json

if TYPE_CHECKING:
    from rladapt.metrics import RunMetrics
    from rladapt.metrics.compare import Comparison, MetricComparison

FORMATS = ("table", "json", "csv")


def register(cli: click.Group) -> None:
    cli.add_command(compare)


@click.command(short_help="Show runs side by side, against the first one.")
@click.argument("run_ids", metavar="RUN_A RUN_B [RUN...]", nargs=-1, required=True)
@metric_option(
    "Only this metric (repeatable): a neutral name, or a native name the runs logged. Default: every "
    "neutral name the first run and another one logged."
)
@format_option(*FORMATS)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    metavar="FILE.png",
    help="Also draw the curves into FILE: one panel per metric, a line per run (needs matplotlib).",
)
def compare(run_ids: tuple[str, ...], wanted: tuple[str, ...], fmt: str, plot_path: str | None) -> None:
    """Show runs side by side per step, in neutral names, with each run's difference from RUN_A (the baseline).

    Runs are ids or unique prefixes; steps are aligned by number, and a difference is given where both runs
    logged the step. Table (one block per metric, with the mean difference), JSON or CSV (one row per metric,
    step and run).
    """
    from rladapt.launch import Runner
    from rladapt.metrics import read_run_metrics
    from rladapt.metrics.compare import compare as align

    if len(run_ids) < 2:
        raise UsageError(f"compare needs at least two runs (RUN_A RUN_B), got {len(run_ids)}")
    runner = Runner()
    runs = [runner.get(r) for r in run_ids]
    seen: dict[str, str] = {}
    for given, run in zip(run_ids, runs, strict=True):
        if run.id in seen:
            raise UsageError(f"{given!r} and {seen[run.id]!r} are the same run, {run.id}")
        seen[run.id] = given
    data = [read_run_metrics(run) for run in runs]
    empty = [m.run_id for m in data if not m.series]
    if empty:
        raise UsageError(f"no metrics logged yet by {', '.join(empty)} (see `rladapt metrics RUN`)")
    names = _check(list(wanted), data)
    comparison = align(data, names)
    if not comparison.metrics:
        raise UsageError(
            f"the runs share no neutral metric: {data[0].run_id} logged "
            f"{', '.join(sorted(n for n in data[0].series if n in NAMES)) or 'none'}; give --metric NAME"
        )
    if plot_path is not None:
        from rladapt.metrics.plot import save

        save(comparison, plot_path)
        click.echo(f"plot: {plot_path}", err=True)
    if fmt == "json":
        click.echo(dump_json(comparison.as_json(), what="the comparison"))
    elif fmt == "csv":
        click.echo(_csv(comparison), nl=False)
    else:
        click.echo(_table(comparison), nl=False)


def _check(wanted: list[str], data: list[RunMetrics]) -> list[str]:
    """The ``--metric`` names, each logged by at least one run; a UsageError naming every bad one."""
    from rladapt.metrics.store import metric_names

    problems = []
    for name in dict.fromkeys(wanted):
        if any(name in m.series for m in data):
            continue
        if name in NAMES:
            why = []
            for m in data:
                mapping = metric_names(m.framework, m.version)
                # Absent's reason alone; a quantity logged under a condition, that condition
                reason = (
                    (mapping.absent().get(name) or mapping.unlogged_reason(name))
                    if mapping is not None
                    else ""
                )
                why.append(f"{m.run_id}: {reason}" if reason else f"{m.run_id}: not logged")
            problems.append(f"--metric {name}: no run logged it ({'; '.join(why)})")
        else:
            problems.append(no_such_metric(name, (n for m in data for n in m.series), "the runs"))
    if problems:
        raise UsageError("; ".join(problems))
    return list(dict.fromkeys(wanted))


def _cell(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    return f"{value + 0.0:+.6g}" if signed else f"{value + 0.0:.6g}"


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"R{i + 1}"


def _table(c: Comparison) -> str:
    """A legend of the runs (A is the baseline), then one block per metric: a row per step with each run's value
    and each run's difference from A, and a last row with the mean difference over the steps both logged."""
    out = io.StringIO()
    for i, m in enumerate(c.runs):
        out.write(f"{_letter(i)}: {c.label(m)}" + (" (baseline)" if i == 0 else "") + "\n")
    headers = [_letter(i) for i in range(len(c.runs))] + [f"{_letter(i)}-A" for i in range(1, len(c.runs))]
    width = 12
    for metric in c.metrics:
        out.write("\n" + _heading(metric) + "\n")
        out.write("  ".join(["step".rjust(6), *(h.rjust(width) for h in headers)]) + "\n")
        for step, values in metric.rows:
            cells = [_cell(v) for v in values] + [_cell(d, signed=True) for d in metric.diffs(values)]
            out.write("  ".join([str(step).rjust(6), *(x.rjust(width) for x in cells)]) + "\n")
        # how many steps each mean is over: the JSON's mean_diff
        cells = ["" for _ in c.runs] + [_cell(mean, signed=True) for mean, _ in metric.mean_diffs()]
        out.write("  ".join(["mean".rjust(6), *(x.rjust(width) for x in cells)]).rstrip() + "\n")
    return out.getvalue()


def _heading(metric: MetricComparison) -> str:
    unit = f" [{metric.unit}]" if metric.unit else ""
    better = {True: ", higher is better", False: ", lower is better", None: ""}[metric.higher_is_better]
    return f"{metric.name}{unit}{(' (' + better[2:] + ')') if better else ''}"


def _csv(c: Comparison) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["metric", "step", "run", "framework", "version", "value", "diff_vs_baseline"])
    for metric in c.metrics:
        for step, values in metric.rows:
            diffs: list[float | None] = [None, *metric.diffs(values)]
            for m, v, d in zip(c.runs, values, diffs, strict=True):
                writer.writerow(
                    [
                        metric.name,
                        step,
                        m.run_id,
                        m.framework,
                        m.version or "",
                        "" if v is None else repr(v),
                        "" if d is None else repr(d),
                    ]
                )
    return out.getvalue()
