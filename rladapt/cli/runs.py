"""Verbs about runs: launch, status, logs, stop, runs.

``launch`` prints only the run id on stdout (so ``RUN=$(rladapt launch ...)`` works); hints go to stderr. Every
run is recorded by ``rladapt.runs.RunStore`` so that the other verbs work from any shell session. What the verbs
do is ``rladapt.launch.Runner``'s; here are only the arguments and the printing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rladapt.primitives.errors import LaunchError, RladaptError, UsageError
from rladapt.runs import DamagedRecord, DamagedRun, Run, RunStore, ServiceRecord

from .options import (
    format_option,
    framework_option,
    launcher_options,
    parse_launcher_opts,
    run_argument,
    spec_argument,
)
from .output import dump_json

if TYPE_CHECKING:
    from rladapt.evaluate import Progress
    from rladapt.launch import Runner
    from rladapt.metrics import RunMetrics
    from rladapt.metrics.summary import Summary
    from rladapt.metrics.validation import Validation
    from rladapt.plugins import RunStatus


def register(cli: click.Group) -> None:
    cli.add_command(launch)
    cli.add_command(status)
    cli.add_command(logs)
    cli.add_command(stop)
    cli.add_command(runs)


@contextmanager
def _waiting(message: str) -> Iterator[None]:
    """A spinner on a terminal; nothing at all when the output is piped or captured."""
    if sys.stdout.isatty():
        from rich.console import Console

        with Console(stderr=True).status(message):
            yield
    else:
        yield


def _runner(store: RunStore | None = None) -> Runner:
    from rladapt.launch import Runner

    return Runner(store=store, progress=_waiting)


def _describe(status: RunStatus) -> str:
    code = f" (exit code {status.exit_code})" if status.exit_code is not None else ""
    return f"{status.state}{code}"


def _starts_cell(run: Run) -> str:
    """How many times the job started, and the step the last start resumed from: ``2 (from 4)``."""
    starts = _starts(run)
    if not starts:
        return str(len(run.record.attempts) or 1)
    step = starts[-1].get("from_step")
    return f"{len(starts)}" + (f" (from {step})" if step is not None else "")


def _validation(
    runner: Runner,
    run: Run,
    metrics: RunMetrics | None = None,
    warn: Callable[[str], object] | None = None,
) -> Validation | None:
    """The run's latest and best validation score and best checkpoint (``rladapt.metrics.validation``); None
    without any, with a warning when they cannot be read (the run's other fields are still shown): printed, or
    given to ``warn``."""
    from rladapt.metrics.validation import run_validation

    try:
        return run_validation(run, runner.registry.framework(run.record.framework), metrics)
    except RladaptError as exc:
        if warn is not None:
            warn(f"no validation results: {exc.message}")
        else:
            click.echo(f"warning: {run.id}: no validation results: {exc.message}", err=True)
        return None


def _validation_cell(found: Validation | None) -> str:
    """``0.42 (best 0.5@30, ckpt 30)``; ``-`` without a validation score."""
    if found is None:
        return "-"
    ck = found.best_checkpoint
    return f"{found.latest[1]:.4g} (best {found.best[1]:.4g}@{found.best[0]}, " + (
        f"ckpt {ck[0]})" if ck is not None else "no ckpt)"
    )


def _echo_raw(line: str) -> None:
    click.echo(line, nl=False)


@click.command(short_help="Launch a spec through a launcher; record the run.")
@framework_option()
@spec_argument
@click.option(
    "--launcher",
    "-l",
    "launcher_name",
    default="local",
    show_default=True,
    help="Where to run: local, ray, slurm, kubernetes (or a plugin's launcher).",
)
@launcher_options
@click.option("--dry-run", is_flag=True, help="Print exactly what would be submitted, and submit nothing.")
@click.option(
    "--follow/--no-follow",
    default=False,
    show_default=True,
    help="Stream the logs until the run ends; the exit status is then the run's.",
)
@click.option(
    "--take-over",
    is_flag=True,
    help="Start even though another run holds the checkpoint directory (only once you know it is gone).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse the launch (exit 2) over the launcher's warnings, e.g. checkpoints on a pod's ephemeral disk.",
)
def launch(
    framework: str,
    spec: str,
    overrides: tuple[str, ...],
    launcher_name: str,
    launcher_opts: tuple[str, ...],
    dry_run: bool,
    follow: bool,
    take_over: bool,
    strict: bool,
) -> None:
    """Launch SPEC (with OVERRIDES) on FRAMEWORK through a launcher, and record the run."""
    runner = _runner()
    options = parse_launcher_opts(launcher_opts)
    planned = runner.dryrun(spec, overrides, framework=framework, launcher=launcher_name, options=options)
    # The dry run's artifacts: no run id, so the same bytes as `rladapt render --launcher`, run after run; the
    # warnings are said before anything is submitted.
    warnings = planned.artifacts.warnings
    if strict and warnings:
        raise UsageError(
            f"--strict: the {launcher_name} launcher warns, nothing was submitted:\n"
            + "\n".join(f"  - {w}" for w in warnings)
        )
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if dry_run:
        click.echo(planned.describe(), nl=False)
        return
    run = runner.schedule(planned, take_over=take_over)
    click.echo(run.id)
    # what the launcher found at submit (e.g. an existing claim unlike the spec's), kept in the record too
    for warning in (run.handle or {}).get("warnings") or ():
        click.echo(f"warning: {warning}", err=True)
    if not follow:
        click.echo(
            f"submitted; follow with `rladapt logs -f {run.id}`, stop with `rladapt stop {run.id}`", err=True
        )
        return
    try:
        final = runner.follow(run, _echo_raw)
    except KeyboardInterrupt:
        click.echo(f"\nstill running; stop it with `rladapt stop {run.id}`", err=True)
        raise
    if final.state == "SUCCEEDED":
        click.echo(f"run {run.id}: {_describe(final)}", err=True)
        click.echo(f"logs: rladapt logs {run.id} (run directory {run.dir})", err=True)
        click.echo(
            f"metrics: rladapt metrics {run.id} (progress and health: rladapt status {run.id})", err=True
        )
    else:
        raise LaunchError(
            f"run {run.id} ended {_describe(final)}" + (f": {final.message}" if final.message else "")
        )


@click.command(short_help="Show a run's state, progress and validation.")
@run_argument(required=False)
@format_option("text", "json", json_alias=True, help="json: the run record with the current state.")
def status(run_id: str | None, fmt: str) -> None:
    """Show the state of RUN (an id or a unique prefix; default: the latest run)."""
    runner = _runner()
    run = runner.get(run_id)
    current = runner.status(run)
    if fmt == "json":
        record = run.record.to_json(artifacts=False)
        # each start of the job (restarts included) and the step it resumed from, as the job recorded it
        record["starts"] = _starts(run)
        # read from the run's metrics and checkpoints now, not stored: the job is not the record's writer
        summary, metrics = _read_metrics(run)
        found = _validation(runner, run, metrics)
        record["validation"] = None if found is None else found.to_json()
        record["progress"] = _progress_json(run, current, metrics, summary)
        published = _published(run.id)
        if published is not None:
            record["pool"] = published
        evaluation = _evaluation(run)
        if evaluation is not None:
            record["evaluation"] = evaluation.to_json()
        click.echo(dump_json(record, what="the run record", sort_keys=True))
        return
    rec = run.record
    click.echo(f"run:       {run.id}")
    click.echo(f"job:       {rec.job_name}")
    click.echo(f"framework: {rec.framework} {rec.version}")
    click.echo(f"launcher:  {run.launcher}")
    click.echo(f"created:   {rec.created}")
    click.echo(f"state:     {_describe(current)}")
    if current.message:
        click.echo(f"message:   {current.message}")
    for service in run.record.services:  # as the status just asked found them (Runner.status)
        click.echo(f"service:   {_service_line(service)}")
    for line in _attempt_lines(run):
        click.echo(line)
    summary, metrics = _read_metrics(run)
    found = _validation(runner, run, metrics)
    if found is not None:
        click.echo(f"validation: {found.summary()}")
    for line in _progress_lines(run, current, metrics, summary):
        click.echo(line)
    for warning in metrics.warnings if metrics is not None else ():  # a read-back that may be short says so
        click.echo(f"metrics:   warning: {warning}")
    published = _published(run.id)
    if published:
        shown = [
            f"{v['version']} (step {v['step']})" + (f" [{', '.join(v['aliases'])}]" if v["aliases"] else "")
            for v in reversed(published)
        ]
        click.echo(f"pool:      {', '.join(shown)}")
    evaluation = _evaluation(run)
    if evaluation is not None:
        click.echo(f"evaluator: {evaluation.summary()}")
    click.echo(f"directory: {run.dir}")


def _evaluation(run: Run) -> Progress | None:
    """How far the run's evaluator (``rladapt.evaluate``) is behind its versions; None when none ran for it."""
    from rladapt.evaluate.results import read_state, results_root

    try:
        if read_state(results_root(run.record.checkpoint_root())) is None:
            return None  # no evaluator ran: the worker (the pool, its engines) is not imported for nothing
    except (RladaptError, OSError):
        return None
    from rladapt.evaluate.worker import evaluator_of_run

    try:
        evaluator = evaluator_of_run(run)
        return None if evaluator is None else evaluator.progress()
    except (RladaptError, OSError):
        return None


def _published(run_id: str) -> list[dict[str, Any]] | None:
    """The versions the run published to the pool ``RLADAPT_POOL`` names (None without one), each with the
    aliases naming it: what of the run is serving."""
    import os

    where = os.environ.get("RLADAPT_POOL")
    if not where or not os.path.isdir(where):
        return None
    from rladapt.pool import open_store  # only with a pool: its import costs status a tenth of a second

    try:
        found = open_store(where).of_run(run_id)
    except RladaptError:
        return None
    return [{"version": m.version, "step": m.source.step, "aliases": aliases} for m, aliases in found]


def _read_metrics(run: Run) -> tuple[Summary | None, RunMetrics | None]:
    """The run's summary (``rladapt.metrics.summary``: what was logged since the last call is read, nothing
    more) and, from it, the metrics the validation line reads (its validation scores, its damage); for a directory
    the summary cannot keep, no summary and the metrics read whole. ``(None, None)`` when they cannot be read, so
    that the validation and progress lines each report their own error as before."""
    import dataclasses

    from rladapt.metrics import read_run_metrics
    from rladapt.metrics.summary import run_summary

    try:
        summary = run_summary(run)
        if summary.state is None:
            return None, read_run_metrics(run)
    except RladaptError:
        return None, None
    metrics = summary.metrics(run.id, run.record.framework, run.record.version or None)
    return summary, dataclasses.replace(metrics, warnings=summary.damage)


def _progress_lines(
    run: Run, current: RunStatus, metrics: RunMetrics | None, summary: Summary | None
) -> list[str]:
    # step / total, time per step, ETA, reward, health warnings (the validation line is above): rladapt/cli/watch.py
    from .watch import status_lines

    if summary is not None:  # the metrics hold the validation scores alone: progress is the summary's
        return status_lines(run, current, validation=False, summary=summary)
    return status_lines(run, current, validation=False, metrics=metrics)


def _progress_json(
    run: Run, current: RunStatus, metrics: RunMetrics | None, summary: Summary | None
) -> dict[str, Any]:
    from .watch import status_json

    if summary is not None:
        return status_json(run, current, summary=summary)
    return status_json(run, current, metrics)


def _starts(run: Run) -> list[dict[str, Any]]:
    from rladapt.resume import read_attempts

    return read_attempts(run.dir)


def _attempt_lines(run: Run) -> list[str]:
    """Each submission (launch, resume) and each start of the job in it (restarts), with the step it began at."""
    submitted = run.record.attempts
    starts = _starts(run)
    if len(submitted) <= 1 and len(starts) <= 1:
        step = starts[0].get("from_step") if starts else None
        return [] if step is None else [f"started:   from step {step}"]
    lines = ["attempts:"]
    for attempt in submitted:
        step = attempt.from_step
        lines.append(
            f"  {attempt.attempt}. {attempt.kind} {attempt.submitted or ''}"
            + (f", from step {step}" if step is not None else "")
        )
    for n, entry in enumerate(starts, 1):
        step = entry.get("from_step")
        how = f"restart {entry.get('restart')}" if entry.get("restart") else "start"
        lines.append(
            f"  start {n}: {entry.get('started', '')} {how}, "
            + (f"from step {step}" if step is not None else "from the beginning")
        )
    return lines


@click.command(short_help="Print (or follow) a run's output.")
@run_argument(required=False)
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the run ends.")
def logs(run_id: str | None, follow: bool) -> None:
    """Print the output of RUN (an id or a unique prefix; default: the latest run)."""
    runner = _runner()
    run = runner.get(run_id)
    if follow:
        runner.follow(run, _echo_raw)
        return
    for line in runner.logs(run):
        _echo_raw(line)


@click.command(short_help="Stop a run.")
@run_argument()
def stop(run_id: str) -> None:
    """Stop RUN (an id or a unique prefix). Stopping a run that has ended says so and changes nothing."""
    runner = _runner()
    run = runner.get(run_id)
    result = runner.stop(run)
    if result is None:
        click.echo(f"run {run.id}: never submitted ({run.record.message or run.state}); nothing to stop")
        return
    click.echo(f"run {run.id}: {_describe(result)}" + (f" - {result.message}" if result.message else ""))
    for service in run.record.services:
        click.echo(f"service {_service_line(service)}")


def _service_line(service: ServiceRecord) -> str:
    """``NAME STATE (restarts N, pid 123): message``: one service role of a run."""
    more = ([f"restarts {service.restarts}"] if service.restarts else []) + (
        [service.unit] if service.unit else []
    )
    return (
        f"{service.name} {service.state}"
        + (f" ({', '.join(more)})" if more else "")
        + (f": {service.message}" if service.message else "")
    )


@click.command(short_help="List the recorded runs and their states.")
@click.option(
    "--refresh",
    is_flag=True,
    help="Also ask remote engines (Ray, Slurm, Kubernetes) for the state of runs not known to have ended; local runs are always current.",
)
@format_option(
    "table", "json", json_alias=True, help="json: one JSON object per run (without the artifacts)."
)
def runs(refresh: bool, fmt: str) -> None:
    """List recorded runs, oldest first, with their last known state."""
    from rladapt.runs import RunIndex

    store = RunStore()
    index = RunIndex(store.root)
    runners: list[Runner] = []

    def runner() -> Runner:
        # the runner (the plugin registry, the launchers) only for a run the index does not answer: a listing
        # of ended runs whose files did not change imports neither
        if not runners:
            runners.append(_runner(store))
        return runners[0]

    names = store.run_names()
    index.keep_only(names)
    listed: list[dict[str, Any]] = []
    damaged: list[DamagedRun] = []
    for name in names:
        # a run that has ended shows what it showed last time while nothing it was computed from changed
        value = index.get(name, skip=_DERIVED)
        if value is None:
            value = _listing(runner(), store.runs_dir / name, refresh, index, damaged)
        if value is not None:
            listed.append(value)
    listed.sort(key=lambda v: (v["created_ts"], v["id"]))
    damaged.sort(key=lambda d: d.id)
    index.save()
    for value in listed:
        for warning in value.get("refresh_warnings", ()):
            click.echo(f"warning: {value['id']}: {warning}", err=True)
    # A damaged record is listed, with the reason, after the readable runs: never skipped as if absent.
    for broken in damaged:
        click.echo(f"warning: {broken.id}: damaged: {broken.reason}", err=True)
    for value in listed:
        for warning in value.get("warnings", ()):
            click.echo(f"warning: {value['id']}: {warning}", err=True)
    if fmt == "json":
        for value in listed:
            click.echo(dump_json(value["json"], what="the run record", indent=None, sort_keys=True))
        for broken in damaged:
            entry = {
                "id": broken.id,
                "state": "DAMAGED",
                "damaged": broken.reason,
                "directory": str(broken.dir),
            }
            click.echo(dump_json(entry, what="the run list", indent=None, sort_keys=True))
        return
    if not listed and not damaged:
        click.echo("no runs", err=True)
        return
    rows = [("RUN", "LAUNCHER", "FRAMEWORK", "STATE", "STARTS", "CREATED", "VALIDATION")]
    rows.extend(tuple(value["row"]) for value in listed)
    rows.extend((broken.id, "-", "-", "DAMAGED", "-", "-", "-") for broken in damaged)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


#: files of a run directory derived from the others (rewritten by the very call that computes a listing): not part
#: of what makes a run's listing stale
_DERIVED = ("metrics-summary.json",)


def _places(run: Run) -> list[tuple[str, int | None]]:
    """What a run's listing is computed from (``rladapt.runs.index``): its directory (the record, the starts), its
    checkpoint directory two levels down (the steps, their roles and files: what the frameworks' completeness
    checks look at), and its metrics directory whole (the events files)."""
    from rladapt.metrics.store import run_metrics_dir

    places: list[tuple[str, int | None]] = [(str(run.dir), 0)]
    try:
        places.append((str(run.record.checkpoint_root()), 2))
        places.append((str(run_metrics_dir(run)), None))
    except RladaptError:  # a run recorded without a checkpoint directory
        pass
    return places


def _listing(
    runner: Runner, run_dir: Path, refresh: bool, index: Any, damaged: list[DamagedRun]
) -> dict[str, Any] | None:
    """What ``runs`` shows of the run in ``run_dir`` (its table row, its JSON object, the warnings about it),
    computed from its files and stored in the index when the run has ended; None when its record is damaged."""
    from rladapt.plugins.launcher import TERMINAL_STATES
    from rladapt.runs import read_record

    try:
        run = Run(dir=run_dir, record=read_record(run_dir))
    except DamagedRecord as exc:
        damaged.append(DamagedRun(run_dir, exc.reason))
        return None
    places = _places(run)
    from rladapt.runs import fingerprint

    before = fingerprint(places, _DERIVED)
    refresh_warnings = []
    try:
        runner.refresh(run, remote=refresh)
    except DamagedRecord as exc:  # a handle of the wrong shape: this run is damaged, the others are not
        damaged.append(DamagedRun(run.dir, exc.reason))
        index.drop(run_dir.name)
        return None
    except RladaptError as exc:  # one unreachable engine must not hide the other runs
        refresh_warnings.append(exc.message)
    warnings: list[str] = []
    found = _validation(runner, run, warn=warnings.append)
    rec = run.record
    state = run.recorded_status().state if run.submitting else run.state
    state += f" ({rec.exit_code})" if rec.exit_code is not None else ""
    record = rec.to_json(artifacts=False)
    record["validation"] = None if found is None else found.to_json()
    value = {
        "id": run.id,
        "created_ts": rec.created_ts,
        "row": [
            run.id,
            run.launcher,
            f"{rec.framework} {rec.version}",
            state,
            _starts_cell(run),
            rec.created,
            _validation_cell(found),
        ],
        "json": record,
        "warnings": warnings,
        "refresh_warnings": refresh_warnings,
    }
    ended = run.state in TERMINAL_STATES or (run.handle is None and not run.submitting)
    if ended and not refresh_warnings:
        index.put(run_dir.name, places, before, value)
    else:  # a run still going is asked again each time (``refresh``): never listed from the index
        index.drop(run_dir.name)
    return value
