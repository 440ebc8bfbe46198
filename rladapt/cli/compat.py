"""Verbs for business repos that pin a framework version: pin, check."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rladapt.primitives.errors import RladaptError, SpecError

from .options import framework_option, render_spec


def register(cli: click.Group) -> None:
    cli.add_command(pin)
    cli.add_command(check)


@click.command()
@framework_option()
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the constraints file here (atomically; only a regular file is replaced) instead of stdout.",
)
def pin(framework: str, output: Path | None) -> None:
    """Write a pip constraints file pinning FRAMEWORK==VERSION and what the matrix tested it with."""
    from rladapt.compat.pin import pin_text
    from rladapt.files import write_text
    from rladapt.pipeline import parse_framework
    from rladapt.plugins._manager import get_registry

    name, requested = parse_framework(framework)
    adapter = get_registry().framework(name)
    version = adapter.resolve_version(requested)
    if version.status != "supported":
        click.echo(f"warning: {name} {version.version} is {version.status} in rladapt's matrix", err=True)
    text = pin_text(adapter, version)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text(output, text, what="pin file")
        click.echo(f"wrote {str(output)!r}: {name}=={version.version}", err=True)


@click.command()
@click.argument("pin_file", metavar="PIN", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("specs", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--env/--no-env",
    "check_env",
    default=True,
    show_default=True,
    help="Also check that the installed packages match the pin.",
)
def check(pin_file: Path, specs: tuple[str, ...], check_env: bool) -> None:
    """Check SPECS (and this environment) against PIN, a file written by `rladapt pin`.

    Exit 2 when a spec cannot run on the pinned version, 1 when the environment does not match, 0 when all is well.
    """
    from rladapt.compat.pin import environment_problems, read_pin
    from rladapt.plugins._manager import get_registry
    from rladapt.primitives import UsageError

    pinned = read_pin(pin_file)
    registry = get_registry()
    adapter = registry.framework(pinned.framework)
    try:
        version = adapter.resolve_version(pinned.version)
    except UsageError as exc:
        raise UsageError(
            f"{str(pin_file)!r} pins {pinned.framework}=={pinned.version}: {exc.message}"
        ) from None
    if version.status != "supported":
        click.echo(
            f"warning: {pinned.framework} {version.version} is {version.status}: plan the move", err=True
        )
    failed_specs = 0
    for spec in specs:
        try:
            render_spec(spec, (), f"{pinned.framework}=={version.version}", registry)
        except SpecError as exc:
            failed_specs += 1
            click.echo(f"FAIL {spec!r}: " + "\n".join(exc.message.splitlines()[1:]).strip(), err=True)
        except RladaptError as exc:
            failed_specs += 1
            click.echo(f"FAIL {spec!r}: {exc.message}", err=True)
        else:
            click.echo(f"ok   {spec}: renders on {pinned.framework} {version.version}")
    env_problems = environment_problems(pinned) if check_env else []
    for problem in env_problems:
        click.echo(f"FAIL environment: {problem}", err=True)
    if failed_specs:
        sys.exit(2)
    if env_problems:
        sys.exit(1)
    if check_env:
        click.echo(f"ok   environment matches {pin_file}")
