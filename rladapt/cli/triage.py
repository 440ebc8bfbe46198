"""``rladapt triage``: match a run's logs (or a log file) against the catalogue of failure signatures.

Exit codes: 0 when a signature matched, 1 when none did, 2 for a usage error (no such file or run, a bad
``--framework``). The matching is ``rladapt.triage``'s; here are the arguments, where the lines come from, and the
printing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from rladapt.primitives.errors import UsageError

from .options import format_option
from .output import dump_json

if TYPE_CHECKING:
    from rladapt.plugins import Registry
    from rladapt.triage import Match, Signature


def register(cli: click.Group) -> None:
    cli.add_command(triage)


def _catalogue(registry: Registry) -> list[Signature]:
    table = registry.signatures()
    for broken in registry.broken:
        if "rladapt_register_signatures" in broken.error:
            click.echo(f"warning: plugin {broken.name!r} is broken: {broken.error}", err=True)
    usable = []
    for sig_id, entry in table.items():
        owners = registry.conflicts.get(("signature", sig_id))
        if owners:  # registered twice: neither owner's text can be trusted to be the one meant
            click.echo(
                f"warning: signature {sig_id!r} is registered by more than one plugin ({', '.join(owners)}); "
                "skipped",
                err=True,
            )
            continue
        usable.append(entry.obj)
    return usable


def _framework(registry: Registry, text: str) -> tuple[str, str | None]:
    from rladapt.pipeline import parse_framework

    name, requested = parse_framework(text)
    adapter = registry.framework(name)  # an unknown name is a UsageError listing the known ones
    if requested is None:
        return name, None
    return name, adapter.resolve_version(requested).version


def _open_file(path: Path) -> IO[str]:
    """The log file, opened to be streamed (``rladapt.triage.match.text_chunks``): never read whole."""
    try:
        if path.is_dir():
            raise IsADirectoryError
        return open(path, encoding="utf-8", errors="replace")
    except IsADirectoryError:
        raise UsageError(f"{str(path)!r} is a directory, expected a log file or a run id") from None
    except OSError as exc:
        raise UsageError(f"cannot read {str(path)!r}: {exc.strerror}") from None


def _read_run(target: str) -> tuple[list[str], str, str | None, str | None]:
    """The run's output lines and its final state as one more line, the run's id, framework and version."""
    from rladapt.launch import Runner

    runner = Runner()
    run = runner.get(target)
    lines = [line.rstrip("\r\n") for line in runner.logs(run)]
    current = runner.status(run)
    # the state is evidence too: a SIGKILL leaves no line in the output, only an exit code in the record
    state = f"[rladapt] run {run.id}: {current.state}"
    if current.exit_code is not None:
        state += f" (exit code {current.exit_code})"
    if current.message:
        state += f": {current.message}"
    lines.append(state)
    return lines, f"run {run.id}", run.record.framework or None, run.record.version or None


def _text(matches: list[Match], what: str, count: int) -> str:
    out = [f"{len(matches)} known failure{'s' if len(matches) != 1 else ''} in {what} ({count} lines):"]
    for m in matches:
        out.append("")
        out.append(f"[{m.signature}] {m.cause}")
        out.append(f"  fix:      {m.fix}")
        for i, (number, line) in enumerate(zip(m.line_numbers, m.evidence, strict=True)):
            out.append(f"  {'evidence:' if i == 0 else '':9} line {number}: {line.strip()}")
        out.append(f"  source:   {m.source}")
    return "\n".join(out)


@click.command(short_help="Match a run's logs against known failures.")
@click.argument("target", metavar="RUN|LOGFILE")
@click.option(
    "--framework",
    "-f",
    metavar="NAME[==VERSION]",
    help="The framework (and version) the log comes from: narrows the catalogue and names renamed keys for that "
    "version. Default for a run: the run's own; for a file: every framework.",
)
@format_option("text", "json")
def triage(target: str, framework: str | None, fmt: str) -> None:
    """Match the logs of RUN (an id or unique prefix) or of LOGFILE against known failure signatures.

    Prints, for each match, the cause, the fix and the log lines that matched. Exit 0 when something matched,
    1 when nothing did.
    """
    from rladapt.plugins import get_registry
    from rladapt.triage.match import scan, scan_chunks, text_chunks

    registry = get_registry()
    fw, version = _framework(registry, framework) if framework else (None, None)
    path = Path(target)
    if path.exists() or "/" in target or not target.strip():
        if not path.exists():
            raise UsageError(f"no such log file {target!r}")
        with _open_file(path) as stream:
            found = scan_chunks(text_chunks(stream), _catalogue(registry), fw, version)
        what = repr(target)
    else:
        try:
            lines, what, run_fw, run_version = _read_run(target)
        except UsageError as exc:
            raise UsageError(f"{target!r} is neither a log file nor a run: {exc.message}") from None
        if framework is None:
            fw, version = run_fw, run_version
        found = scan(lines, _catalogue(registry), fw, version)
    matches, count = found.matches, found.lines
    if fmt == "json":
        click.echo(dump_json({"matches": [m.to_json() for m in matches]}, what="the triage"))
    elif matches:
        click.echo(_text(matches, what, count))
    if not matches:
        if fmt == "text":
            click.echo(f"no known failure signature matched {what} ({count} lines)", err=True)
        sys.exit(1)  # as `check` does: `python -m rladapt.cli` drops a returned code
