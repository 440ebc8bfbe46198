"""Verbs about checkpoints: ``checkpoints`` (what is on disk) and ``resume`` (start a run again from it).

``checkpoints RUN|DIR`` scans a run's checkpoint directory (or any directory, with ``-f NAME==VERSION``)
with that framework version's own layout: every step, complete or not and why, and the one a resume would use.
``resume RUN`` is ``rladapt.launch.Runner.resume``: the recorded spec, version and launcher, as a new attempt.
"""

from __future__ import annotations

from pathlib import Path

import click

from rladapt.primitives.errors import UsageError

from .options import format_option, run_argument
from .output import dump_json


def register(cli: click.Group) -> None:
    cli.add_command(checkpoints)
    cli.add_command(resume)


@click.command(short_help="List a run's checkpoints, and the one to resume.")
@click.argument("target", metavar="RUN|DIR")
@click.option(
    "--framework",
    "-f",
    metavar="NAME==VERSION",
    help="The framework version that wrote DIR (default for a run: the one it was launched with).",
)
@format_option("text", "json")
def checkpoints(target: str, framework: str | None, fmt: str) -> None:
    """List every checkpoint step of RUN (an id or prefix) or DIR, its state, and the one a resume would use."""
    from rladapt.launch import Runner
    from rladapt.pipeline import parse_framework

    runner = Runner()
    path = Path(target)
    if path.is_dir():
        if framework is None:
            raise UsageError(f"{target!r} is a directory: say which framework wrote it, e.g. -f verl==0.9.1")
        root = path
    elif "/" in target or target.startswith("."):
        raise UsageError(f"no directory {target!r} (and a run id holds no '/')")
    else:
        run = runner.get(target)
        root = run.record.checkpoint_root()
        if framework is None:
            framework = run.record.framework_version
    name, version = parse_framework(framework)
    adapter = runner.registry.framework(name)
    entry = adapter.resolve_version(version)
    scan = adapter.scan_checkpoints(root, entry.version)
    if scan is None:
        raise UsageError(f"the {name} adapter does not know how {name} writes checkpoints")
    # a step a start failed to load is partial here too, with the reason, as every later start judges it
    scan = scan.judged()
    if fmt == "json":
        click.echo(dump_json(scan.to_json(), what="the checkpoints"))
        return
    click.echo(f"checkpoints of {name} {entry.version} in {root}")
    if not scan.checkpoints:
        click.echo("  no steps")
    for ck in scan.checkpoints:
        state = "complete" if ck.complete else f"partial: {ck.reason}"
        click.echo(f"  step {ck.step:<8} {state}  ({ck.path.name})")
    for note in scan.notes:
        click.echo(f"  note: {note}")
    chosen = scan.resume_from
    click.echo(
        "resume from: "
        + (f"step {chosen.step} ({chosen.path})" if chosen else "nothing (a resume starts fresh)")
    )


@click.command(short_help="Start a run again from a checkpoint.")
@run_argument()
@click.option(
    "--from-step",
    type=int,
    default=None,
    help="Resume from this step instead of the newest complete (this start only: a restart after a fault "
    "continues from the newest complete step).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Resume even when the spec changed in a way the checkpoint may not survive or will override (a new "
    "learning rate, batch size), or its framework is known to resume this job wrongly.",
)
@click.option(
    "--take-over",
    is_flag=True,
    help="Resume even though another run holds the checkpoint directory (only once you know it is gone).",
)
def resume(run_id: str, from_step: int | None, force: bool, take_over: bool) -> None:
    """Start RUN again from its newest complete checkpoint (or --from-step), as a new attempt of the same run."""
    from rladapt.launch import Runner

    runner = Runner()
    run = runner.get(run_id)
    attempt, chosen = runner.resume(run, from_step=from_step, force=force, take_over=take_over)
    click.echo(run.id)
    where = f"step {chosen.step}" if chosen is not None else "the start (no complete checkpoint)"
    click.echo(f"attempt {attempt} submitted from {where}; follow with `rladapt logs -f {run.id}`", err=True)
