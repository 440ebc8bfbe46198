"""Verbs for business repos that pin a framework version (pin, check) and the maintainers' ``matrix`` group."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rladapt.primitives.errors import RladaptError, SpecError, UsageError

from .options import format_option, framework_option, render_spec
from .output import dump_json


def register(cli: click.Group) -> None:
    cli.add_command(pin)
    cli.add_command(check)
    cli.add_command(matrix)


@click.command(short_help="Write a pip constraints file pinning a version.")
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
    from rladapt.plugins import get_registry

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


@click.command(short_help="Check specs and this environment against a pin.")
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
    from rladapt.plugins import get_registry
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


# --- matrix: maintainer commands over the compatibility matrix ---------------------------------------------------


_FRAMEWORKS_HELP = "Only these frameworks (repeatable)."
_WRITE_HELP = "Write the report to this file (atomically; only a regular file is replaced) instead of stdout."


@click.group(invoke_without_command=True, short_help="The compatibility matrix and its snapshots.")
# `rladapt matrix [-f NAME] [--write FILE]` printed the report before it was `matrix show`: still does, unlisted
@click.option("--framework", "-f", "frameworks", multiple=True, hidden=True, help=_FRAMEWORKS_HELP)
@click.option(
    "--write", "write", type=click.Path(dir_okay=False), default=None, hidden=True, help=_WRITE_HELP
)
@click.pass_context
def matrix(ctx: click.Context, frameworks: tuple[str, ...], write: str | None) -> None:
    """Maintainer commands over the compatibility matrix (compat-matrix/) and its schema snapshots.

    Without a command: `rladapt matrix show`.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(show, frameworks=frameworks, write=write)
    elif frameworks or write is not None:
        raise UsageError(
            f"--framework and --write are options of `rladapt matrix show`, not of `rladapt matrix "
            f"{ctx.invoked_subcommand}`: give them after the command"
        )


@matrix.command("show", short_help="Print the compatibility matrix report (Markdown).")
@click.option("--framework", "-f", "frameworks", multiple=True, metavar="NAME", help=_FRAMEWORKS_HELP)
@click.option(
    "--write", "write", type=click.Path(dir_okay=False), default=None, metavar="FILE", help=_WRITE_HELP
)
def show(frameworks: tuple[str, ...], write: str | None) -> None:
    """The compatibility matrix report (Markdown): versions x capabilities, tested pins and patches."""
    from rladapt.compat.report import markdown_report
    from rladapt.files import write_text
    from rladapt.plugins import get_registry

    text = markdown_report(get_registry(), list(frameworks) or None)
    if write is None:
        click.echo(text, nl=False)
        return
    write_text(write, text, what="matrix report")


def _exact_version(framework: str, example: str) -> tuple[str, str]:
    """``NAME==VERSION`` of a maintainer command, both parts required (``pipeline.parse_framework`` allows NAME)."""
    name, sep, version = framework.partition("==")
    if not sep or not name.strip() or not version.strip():
        raise UsageError(f"--framework {framework!r}: expected NAME==VERSION, e.g. {example}")
    return name.strip(), version.strip()


@matrix.command("snapshot", short_help="Generate a framework version's schema snapshot.")
@click.option(
    "--framework",
    "-f",
    "framework",
    required=True,
    metavar="NAME==VERSION",
    help="The framework version to snapshot, e.g. verl==0.9.1, openrlhf==0.11.2, nemo-rl==0.7.0.",
)
@click.option(
    "--source",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="The release to read: a wheel or unpacked package (verl, openrlhf), a checkout of the tag (nemo-rl, "
    "required). Without it the verl or openrlhf wheel is downloaded (pip download --no-deps).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/<framework>/<version>.json (default: the snapshots bundled with this rladapt).",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing: exit 1 when the existing snapshot differs from the regenerated one (CI).",
)
def snapshot_cmd(framework: str, source: Path | None, output: Path | None, check_only: bool) -> None:
    """Generate the schema snapshot of one framework version from its own release."""
    from rladapt.compat.generate import bundled_dir, make_snapshot
    from rladapt.files import write_text
    from rladapt.primitives.errors import OutputError

    name, version = _exact_version(framework, "verl==0.9.1")
    snap = make_snapshot(name, version, source)
    target = (output if output is not None else bundled_dir()) / name / f"{version}.json"
    text = snap.to_text()
    if check_only:
        try:
            current = target.read_text(encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"{target}: cannot read the snapshot to check: {exc.strerror or exc}") from None
        if current != text:
            click.echo(
                f"STALE {target}: regenerate with rladapt matrix snapshot -f {name}=={version}", err=True
            )
            sys.exit(1)
        click.echo(f"ok   {target} is current ({len(snap.keys)} keys)")
        return
    write_text(target, text, what="schema snapshot", make_parents=True)
    click.echo(
        f"wrote {target}: {name} {version}, {len(snap.keys)} keys, {len(text.encode())} bytes", err=True
    )


@matrix.command("onboard", short_help="Snapshot a new release; print the work list.")
@click.option(
    "--framework",
    "-f",
    "framework",
    required=True,
    metavar="NAME==VERSION",
    help="The new release, e.g. verl==0.10.0.",
)
@click.option(
    "--source",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="The release to read (as for `matrix snapshot`); without it the wheel is downloaded (pip download "
    "--no-deps).",
)
@click.option(
    "--against",
    default=None,
    metavar="VERSION",
    help="The pinned version to compare with (default: the newest pinned version older than the new one).",
)
@click.option(
    "--against-source",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="The pinned version's release, to compare entrypoints (default: its wheel, downloaded).",
)
@click.option(
    "--examples",
    "examples_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("examples"),
    show_default=True,
    help="The example specs (*.yaml) whose native keys must survive the upgrade.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the snapshot to DIR/<framework>/<version>.json (default: the snapshots bundled with this rladapt).",
)
@format_option("text", "json")
def onboard_cmd(
    framework: str,
    source: Path | None,
    against: str | None,
    against_source: Path | None,
    examples_dir: Path,
    output: Path | None,
    fmt: str,
) -> None:
    """Snapshot a new framework release and print the work list against a pinned version."""
    from rladapt.compat.generate import bundled_dir
    from rladapt.compat.onboard import onboard
    from rladapt.files import write_text
    from rladapt.plugins import get_registry

    name, version = _exact_version(framework, "verl==0.10.0")
    examples = sorted(examples_dir.glob("*.yaml")) if examples_dir.is_dir() else []
    registry = get_registry()
    report = onboard(
        name,
        version,
        source,
        against=against,
        against_source=against_source,
        examples=examples,
        render=lambda spec, fw: render_spec(str(spec), (), fw, registry),
    )
    target = (output if output is not None else bundled_dir()) / name / f"{version}.json"
    if not target.parent.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
    text = report.snapshot.to_text()
    write_text(target, text, what="schema snapshot")
    click.echo(f"wrote {target}: {name} {version}, {len(report.snapshot.keys)} keys", err=True)
    if not examples:
        click.echo(f"warning: no example specs in {str(examples_dir)!r}: emitted keys not compared", err=True)
    click.echo(
        dump_json(report.to_json(), what="the onboarding report") if fmt == "json" else report.to_text(),
        nl=fmt == "json",
    )


@matrix.command("outdated", short_help="List releases on PyPI newer than the matrix.")
@click.option(
    "--index",
    default=None,
    metavar="URL",
    help="PyPI's JSON API base (default: $RLADAPT_PYPI_URL, else https://pypi.org/pypi).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=300),
    default=10.0,
    show_default=True,
    help="Seconds per request.",
)
@format_option("text", "json")
def outdated_cmd(index: str | None, timeout: float, fmt: str) -> None:
    """Releases on PyPI newer than the newest pinned version of each framework (needs the network).

    Exit 0 with the list (newer releases are news, not an error), 1 when PyPI cannot be asked.
    """
    from packaging.version import Version

    from rladapt import compat
    from rladapt.compat.pypi import outdated

    newest = {
        fw: max((e.version for e in compat.pinned(fw)), key=Version) for fw in ("verl", "openrlhf", "nemo-rl")
    }
    rows = outdated(newest, index=index, timeout=timeout)
    if fmt == "json":
        click.echo(dump_json([r.to_json() for r in rows], what="the outdated report"))
    else:
        for row in rows:
            if row.note:
                click.echo(f"{row.framework:<9} pinned {row.newest_pinned}: not checked: {row.note}")
            elif row.newer:
                click.echo(
                    f"{row.framework:<9} pinned {row.newest_pinned}: newer on PyPI: {', '.join(row.newer)} "
                    f"(rladapt matrix onboard -f {row.framework}=={row.newer[-1]})"
                )
            else:
                click.echo(f"{row.framework:<9} pinned {row.newest_pinned}: current")
