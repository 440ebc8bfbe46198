"""Verbs about runs: launch, status, logs, stop, runs.

``launch`` prints only the run id on stdout (so ``RUN=$(rladapt launch ...)`` works); hints go to stderr. Every
run is recorded by ``rladapt.runs.RunStore`` so that the other verbs work from any shell session. What the verbs
do is ``rladapt.launch.Runner``'s; here are only the arguments and the printing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from rladapt.primitives.errors import LaunchError, RladaptError, UsageError
from rladapt.runs import DamagedRecord, DamagedRun, Run, ServiceRecord

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


def _runner() -> Runner:
    from rladapt.launch import Runner

    return Runner(progress=_waiting)


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


def _validation(runner: Runner, run: Run, metrics: RunMetrics | None = None) -> Validation | None:
    """The run's latest and best validation score and best checkpoint (``rladapt.metrics.validation``); None
    without any, with a warning when they cannot be read (the run's other fields are still shown)."""
    from rladapt.metrics.validation import run_validation

    try:
        return run_validation(run, runner.registry.framework(run.record.framework), metrics)
    except RladaptError as exc:
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
        metrics = _read_metrics(run)
        found = _validation(runner, run, metrics)
        record["validation"] = None if found is None else found.to_json()
        record["progress"] = _progress_json(run, current, metrics)
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
    metrics = _read_metrics(run)
    found = _validation(runner, run, metrics)
    if found is not None:
        click.echo(f"validation: {found.summary()}")
    for line in _progress_lines(run, current, metrics):
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

    from rladapt.pool import VersionStore

    where = os.environ.get("RLADAPT_POOL")
    if not where or not os.path.isdir(where):
        return None
    try:
        found = VersionStore(where).of_run(run_id)
    except RladaptError:
        return None
    return [{"version": m.version, "step": m.source.step, "aliases": aliases} for m, aliases in found]


def _read_metrics(run: Run) -> RunMetrics | None:
    """The run's metrics, read once for the validation and progress lines of ``status``; None when they cannot
    be read, so that each of those reports its own error as before."""
    from rladapt.metrics import read_run_metrics

    try:
        return read_run_metrics(run)
    except RladaptError:
        return None


def _progress_lines(run: Run, current: RunStatus, metrics: RunMetrics | None) -> list[str]:
    # step / total, time per step, ETA, reward, health warnings (the validation line is above): rladapt/cli/watch.py
    from .watch import status_lines

    return status_lines(run, current, validation=False, metrics=metrics)


def _progress_json(run: Run, current: RunStatus, metrics: RunMetrics | None) -> dict[str, Any]:
    from .watch import status_json

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
    runner = _runner()
    readable, damaged = runner.store.scan()
    every = []
    for run in readable:
        try:
            runner.refresh(run, remote=refresh)
        except DamagedRecord as exc:  # a handle of the wrong shape: this run is damaged, the others are not
            damaged.append(DamagedRun(run.dir, exc.reason))
            continue
        except RladaptError as exc:  # one unreachable engine must not hide the other runs
            click.echo(f"warning: {run.id}: {exc.message}", err=True)
        every.append(run)
    # A damaged record is listed, with the reason, after the readable runs: never skipped as if absent.
    for broken in damaged:
        click.echo(f"warning: {broken.id}: damaged: {broken.reason}", err=True)
    if fmt == "json":
        for run in every:
            record = run.record.to_json(artifacts=False)
            found = _validation(runner, run)
            record["validation"] = None if found is None else found.to_json()
            click.echo(dump_json(record, what="the run record", indent=None, sort_keys=True))
        for broken in damaged:
            entry = {
                "id": broken.id,
                "state": "DAMAGED",
                "damaged": broken.reason,
                "directory": str(broken.dir),
            }
            click.echo(dump_json(entry, what="the run list", indent=None, sort_keys=True))
        return
    if not every and not damaged:
        click.echo("no runs", err=True)
        return
    rows = [("RUN", "LAUNCHER", "FRAMEWORK", "STATE", "STARTS", "CREATED", "VALIDATION")]
    for run in every:
        rec = run.record
        state = run.recorded_status().state if run.submitting else run.state
        state += f" ({rec.exit_code})" if rec.exit_code is not None else ""
        rows.append(
            (
                run.id,
                run.launcher,
                f"{rec.framework} {rec.version}",
                state,
                _starts_cell(run),
                rec.created,
                _validation_cell(_validation(runner, run)),
            )
        )
    rows.extend((broken.id, "-", "-", "DAMAGED", "-", "-", "-") for broken in damaged)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
