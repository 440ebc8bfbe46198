"""Verbs about runs: launch, status, logs, stop, runs.

``launch`` prints only the run id on stdout (so ``RUN=$(rladapt launch ...)`` works); hints go to stderr. Every
run is recorded by ``rladapt.runs.RunStore`` so that the other verbs work from any shell session.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rladapt.primitives.errors import LaunchError, RladaptError

from .options import framework_option, launcher_options, merged_launcher_options, render_spec, spec_argument

if TYPE_CHECKING:
    from rladapt.plugins import Launcher, RunStatus
    from rladapt.runs import Run, RunStore


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


def _launcher_for(run: Run) -> Launcher:
    from rladapt.plugins._manager import get_registry

    return get_registry().launcher(run.launcher)


def _describe(status: RunStatus) -> str:
    code = f" (exit code {status.exit_code})" if status.exit_code is not None else ""
    return f"{status.state}{code}"


def _refresh(run: Run) -> RunStatus:
    """Ask the run's launcher for its state and record it; a run never submitted keeps its recorded state."""
    handle = run.handle
    if handle is None:
        return run.recorded_status()
    current = _launcher_for(run).status(handle, run.dir)
    run.save_status(current)
    return current


def _stream_logs(run: Run, follow: bool) -> None:
    handle = run.handle
    if handle is None:
        raise LaunchError(f"run {run.id} was never submitted ({run.record.get('message') or run.state})")
    for line in _launcher_for(run).logs(handle, run.dir, follow=follow):
        click.echo(line, nl=False)


def _store() -> RunStore:
    from rladapt.runs import RunStore

    return RunStore()


def _get_run(run_id: str | None) -> Run:
    from rladapt.primitives.errors import UsageError

    store = _store()
    if run_id is not None:
        return store.get(run_id)
    every = store.list()
    if not every:
        raise UsageError(f"no runs yet in {store.runs_dir}; start one with `rladapt launch`")
    return every[-1]


@click.command()
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
def launch(
    framework: str,
    spec: str,
    overrides: tuple[str, ...],
    launcher_name: str,
    launcher_opts: tuple[str, ...],
    dry_run: bool,
    follow: bool,
) -> None:
    """Launch SPEC (with OVERRIDES) on FRAMEWORK through a launcher, and record the run."""
    from rladapt.plugins._manager import get_registry
    from rladapt.runs import RUN_ID_OPTION, new_run_id, spec_hash

    registry = get_registry()
    rendered = render_spec(spec, overrides, framework, registry)
    native = rendered.native
    launcher = registry.launcher(launcher_name)
    options = merged_launcher_options(native.launcher_options, launcher_name, launcher_opts)
    if dry_run:
        # No run id: the dry run shows the same bytes as `rladapt render --launcher`, run after run.
        click.echo(launcher.render(native, options).describe(), nl=False)
        return

    run_id = new_run_id(native.job_name)
    artifacts = launcher.render(native, {**options, RUN_ID_OPTION: run_id})
    run = _store().create(
        run_id=run_id,
        launcher=launcher_name,
        framework=native.framework,
        version=native.version,
        job_name=native.job_name,
        spec_hash=spec_hash(Path(spec).read_text(encoding="utf-8"), overrides),
        artifacts=artifacts,
        options=options,
        spec_path=str(spec),
    )
    try:
        with _waiting(f"submitting {run_id} to {launcher_name}"):
            handle = launcher.submit(artifacts, run.dir)
    except RladaptError as exc:
        run.mark_submit_failed(exc.message)
        raise
    except Exception as exc:
        run.mark_submit_failed(f"{type(exc).__name__}: {exc}")
        raise LaunchError(
            f"{launcher_name} launcher failed to submit run {run_id}: {type(exc).__name__}: {exc}"
        ) from exc
    run.save_handle(handle)
    click.echo(run_id)
    if not follow:
        click.echo(
            f"submitted; follow with `rladapt logs -f {run_id}`, stop with `rladapt stop {run_id}`", err=True
        )
        return
    try:
        _stream_logs(run, follow=True)
    except KeyboardInterrupt:
        click.echo(f"\nstill running; stop it with `rladapt stop {run_id}`", err=True)
        raise
    final = _refresh(run)
    if final.state == "SUCCEEDED":
        click.echo(f"run {run_id}: {_describe(final)}", err=True)
    else:
        raise LaunchError(
            f"run {run_id} ended {_describe(final)}" + (f": {final.message}" if final.message else "")
        )


@click.command()
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the run record with the current state as JSON.")
def status(run_id: str | None, as_json: bool) -> None:
    """Show the state of RUN_ID (an id or a unique prefix; default: the latest run)."""
    run = _get_run(run_id)
    with _waiting(f"asking {run.launcher} about {run.id}"):
        current = _refresh(run)
    if as_json:
        record = {k: v for k, v in run.record.items() if k != "artifacts"}
        click.echo(json.dumps(record, indent=2, sort_keys=True))
        return
    rec = run.record
    click.echo(f"run:       {run.id}")
    click.echo(f"job:       {rec.get('job_name', '')}")
    click.echo(f"framework: {rec.get('framework', '')} {rec.get('version', '')}")
    click.echo(f"launcher:  {run.launcher}")
    click.echo(f"created:   {rec.get('created', '')}")
    click.echo(f"state:     {_describe(current)}")
    if current.message:
        click.echo(f"message:   {current.message}")
    click.echo(f"directory: {run.dir}")


@click.command()
@click.argument("run_id", required=False)
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the run ends.")
def logs(run_id: str | None, follow: bool) -> None:
    """Print the output of RUN_ID (default: the latest run)."""
    run = _get_run(run_id)
    _stream_logs(run, follow=follow)
    if follow:
        _refresh(run)


@click.command()
@click.argument("run_id")
def stop(run_id: str) -> None:
    """Stop RUN_ID (an id or a unique prefix). Stopping a run that has ended says so and changes nothing."""
    run = _get_run(run_id)
    handle = run.handle
    if handle is None:
        click.echo(
            f"run {run.id}: never submitted ({run.record.get('message') or run.state}); nothing to stop"
        )
        return
    with _waiting(f"stopping {run.id}"):
        result = _launcher_for(run).stop(handle, run.dir)
    run.save_status(result)
    click.echo(f"run {run.id}: {_describe(result)}" + (f" - {result.message}" if result.message else ""))


@click.command()
@click.option(
    "--refresh",
    is_flag=True,
    help="Also ask remote engines (Ray, Slurm, Kubernetes) for the state of runs not known to have ended; local runs are always current.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run (without the artifacts).")
def runs(refresh: bool, as_json: bool) -> None:
    """List recorded runs, oldest first, with their last known state."""
    from rladapt.plugins import TERMINAL_STATES
    from rladapt.plugins._manager import get_registry

    every = _store().list()
    launchers = get_registry().launchers
    for run in every:
        cheap = run.launcher in launchers and launchers[run.launcher].obj.LOCAL_STATUS
        if (refresh or cheap) and run.state not in TERMINAL_STATES and run.handle is not None:
            try:
                _refresh(run)
            except RladaptError as exc:  # one unreachable engine must not hide the other runs
                click.echo(f"warning: {run.id}: {exc.message}", err=True)
    if as_json:
        for run in every:
            click.echo(json.dumps({k: v for k, v in run.record.items() if k != "artifacts"}, sort_keys=True))
        return
    if not every:
        click.echo("no runs", err=True)
        return
    rows = [("RUN", "LAUNCHER", "FRAMEWORK", "STATE", "CREATED")]
    for run in every:
        rec = run.record
        state = run.state + (f" ({rec['exit_code']})" if rec.get("exit_code") is not None else "")
        rows.append(
            (
                run.id,
                run.launcher,
                f"{rec.get('framework', '')} {rec.get('version', '')}",
                state,
                str(rec.get("created", "")),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
