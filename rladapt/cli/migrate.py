"""Verbs for moving an existing job onto rladapt: ``import`` (native launch -> spec) and ``diff``."""

from __future__ import annotations

import sys

import click

from .options import format_option


def register(cli: click.Group) -> None:
    cli.add_command(import_)
    cli.add_command(diff)


def _framework(text: str | None) -> tuple[str | None, str | None]:
    if text is None:
        return None, None
    from rladapt.pipeline import parse_framework

    return parse_framework(text)


@click.command("import", short_help="Turn a native launch (a script) into a spec.")
@click.option(
    "--framework",
    "-f",
    required=True,
    metavar="NAME[==VERSION]",
    help="The framework of the launch: verl, openrlhf or nemo-rl, optionally pinned (verl==0.7.1).",
)
@click.argument("native", type=click.Path(dir_okay=False))
@click.argument("overrides", nargs=-1)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="Write the spec here (default: stdout)."
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="VAR=VALUE",
    help="A shell variable for the launch script, over the script's own value: one it reads but does not set, "
    "or one that decides its if/case; VAR= is empty, 'VAR=(a b)' an array, 'VAR=()' an empty one, 1=VALUE the "
    "script's first argument (repeatable).",
)
@click.option(
    "--unset",
    "unsets",
    multiple=True,
    metavar="VAR",
    help="A shell variable the caller does not set, so ${VAR:-default} takes the script's default (repeatable).",
)
def import_(
    framework: str,
    native: str,
    overrides: tuple[str, ...],
    output: str | None,
    sets: tuple[str, ...],
    unsets: tuple[str, ...],
) -> None:
    """Turn the native launch NATIVE (a launch script or a command line in a file) into an RLJob spec.

    For NeMo-RL, NATIVE may also be a config file (its defaults: chain is followed), with Hydra OVERRIDES after
    it (k=v, +k=v, ++k=v, ~k); run from the NeMo-RL checkout its paths are relative to. Every setting lands in a
    spec field where one exists, the rest in spec.native.<framework> in order; where a spec default differs from
    the framework's own, the framework's value is written out. The spec renders to the same effective
    configuration as NATIVE (checked before anything is written).
    """
    from rladapt.files import write_text
    from rladapt.importing.diff import read_text, read_with
    from rladapt.importing.importer import at_line, build, framework_importer, read_native
    from rladapt.importing.script import parse_sets
    from rladapt.plugins import get_registry
    from rladapt.primitives import UsageError

    name, requested = _framework(framework)
    assert name is not None
    fw = framework_importer(name)
    registry = get_registry()
    version = registry.framework(name).resolve_version(requested).version
    text = read_text(native)
    launch = read_native(fw, text, native, parse_sets(sets, unsets), version, overrides)
    header = (
        f"Imported by rladapt import from {native} (line {launch.line}), {name} {version}.\n"
        f"rladapt render -f {name}=={version} gives the same effective {name} configuration."
    )
    recorded = read_with(sets, unsets)
    if recorded:  # `rladapt diff` of this spec and the script reads it the same way without them
        header += "\n" + recorded
    try:
        imported = build(
            fw, version, list(launch.argv), source=native, registry=registry, env=launch.env, header=header
        )
    except UsageError as exc:
        raise at_line(exc, launch) from None
    for note in imported.notes:
        click.echo(f"note: {note}", err=True)
    if output is None:
        click.echo(imported.text, nl=False)
        return
    write_text(output, imported.text, what="spec")
    click.echo(f"{output}: RLJob {imported.job.name!r} from {native} ({name} {version})", err=True)


@click.command(short_help="Compare two specs or launches' effective configuration.")
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option(
    "--framework",
    "-f",
    default=None,
    metavar="NAME[==VERSION]",
    help="Framework and version to compare on (needed when A or B is a spec; default version: newest).",
)
@format_option("text", "json")
@click.option("--exit-code", is_flag=True, help="Exit 1 when A and B differ (for CI).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="VAR=VALUE",
    help="A shell variable for a launch script, as import takes it (repeatable).",
)
@click.option(
    "--unset",
    "unsets",
    multiple=True,
    metavar="VAR",
    help="A shell variable the caller does not set, as import takes it (repeatable).",
)
def diff(
    a: str,
    b: str,
    framework: str | None,
    fmt: str,
    exit_code: bool,
    sets: tuple[str, ...],
    unsets: tuple[str, ...],
) -> None:
    """Compare A and B (each an RLJob spec or a native launch) by their effective native configuration.

    Every key whose value differs is listed with its value on each side and where it came from (a spec field,
    spec.native.<framework>[i], a script line, the framework's default). Exit 0 when equal; with --exit-code,
    1 when they differ. Without --set/--unset, a spec written by `rladapt import` gives the ones it was read with.
    """
    from rladapt.importing.diff import as_json, as_text, compare, recorded_reading, side
    from rladapt.importing.script import parse_sets
    from rladapt.plugins import get_registry

    name, version = _framework(framework)
    registry = get_registry()
    if name is not None and version is None:
        version = registry.framework(name).resolve_version(None).version
    if not sets and not unsets:
        # an imported spec records how its script was read: the same --set/--unset, unless given here
        sets, unsets = next(
            (r for r in (recorded_reading(a), recorded_reading(b)) if r != ((), ())), ((), ())
        )
    values = parse_sets(sets, unsets)
    left = side(a, name, version, values, registry)
    right = side(b, name or left.effective.framework, version or left.effective.version, values, registry)
    diffs = compare(left, right)
    click.echo(as_json(left, right, diffs) if fmt == "json" else as_text(left, right, diffs))
    if diffs and exit_code:
        sys.exit(1)  # as `rladapt compat check` does: click's Exit is swallowed in non-standalone mode
