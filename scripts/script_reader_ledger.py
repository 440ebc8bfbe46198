"""Run the launch-script reader over every training launch script of an upstream checkout; write a ledger.

    python scripts/script_reader_ledger.py verl CHECKOUT --source volcengine/verl@REV -o LEDGER.tsv
    python scripts/script_reader_ledger.py openrlhf CHECKOUT --source OpenRLHF/OpenRLHF@v0.11.0 -o LEDGER.tsv

CHECKOUT is an extracted tree of the repository (``git archive REV | tar -x``). Only the reader runs
(``read_launch`` with the framework's own matcher): a script is ``read`` when the reader returns the launch's
argv, else ``refused`` with the reader's one-line reason. Nothing of the checkout is executed or copied: the ledger
holds paths and outcomes only. ``--check LEDGER`` compares with a committed ledger and fails (exit 1) on a
script that got worse. The committed ones (tests/importing/fixtures/script_reader_ledger_*.tsv) were made with
``--set HOME=/home/user``, the one variable nearly every upstream script reads from its caller.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from rladapt.importing.script import parse_sets, read_launch
from rladapt.primitives import UsageError

#: Which scripts are training launches, per framework: the file name filter and the launch they must contain.
FIELD: dict[str, tuple[str, re.Pattern[str]]] = {
    "verl": (
        "**/*.sh",
        re.compile(r"-m\s+verl\.(trainer\.main_ppo|experimental\.[A-Za-z0-9_.]*main[A-Za-z0-9_]*)\b"),
    ),
    "openrlhf": ("examples/scripts/train_*.sh", re.compile(r"-m\s+openrlhf\.cli\.train_ppo_ray\b")),
}


def matcher(framework: str) -> Callable[[list[str]], int | None]:
    """The framework's own matcher: the one ``rladapt import`` uses, from the adapter's launch importer."""
    from rladapt.importing.importer import framework_importer

    return framework_importer(framework).match


def field_of(framework: str, root: Path) -> list[Path]:
    pattern, launch = FIELD[framework]
    return sorted(
        p for p in root.glob(pattern) if p.is_file() and launch.search(p.read_text(errors="replace"))
    )


def outcome(
    path: Path, root: Path, match: Callable[[list[str]], int | None], sets: dict[str, str]
) -> tuple[str, str]:
    try:
        # run from the checkout's root, as upstream's READMEs do: $(pwd) is "." (no path of this machine)
        launch = read_launch(
            path.read_text(errors="replace"), str(path.relative_to(root)), match, sets, cwd="."
        )
    except UsageError as exc:
        reason = str(exc).splitlines()[0]
        if reason.endswith("found in it"):  # the framework's matcher accepts none of the script's commands
            modules = sorted(set(re.findall(r"-m\s+([A-Za-z0-9_.]+)", path.read_text(errors="replace"))))
            reason += f" (it runs {', '.join(modules)}: not a module rladapt import reads)"
        return "refused", reason
    except Exception as exc:  # the ledger's point is to find these: record, never stop
        return "crashed", f"{type(exc).__name__}: {exc}".splitlines()[0]
    return "read", f"line {launch.line}: {len(launch.args)} arguments"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=sorted(FIELD))
    parser.add_argument("checkout", type=Path)
    parser.add_argument(
        "--source", required=True, help="owner/repo@tag-or-commit the checkout was taken from"
    )
    parser.add_argument("--output", "-o", type=Path)
    parser.add_argument(
        "--check",
        type=Path,
        metavar="LEDGER",
        help="compare with a committed ledger: exit 1 when a script it reads is no longer read (or is new)",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="VAR=VALUE",
        help="a variable of the caller's environment every script may read (HOME), as rladapt import --set",
    )
    opts = parser.parse_args(argv)
    match = matcher(opts.framework)
    sets = parse_sets(opts.sets)
    root = opts.checkout.resolve()
    output = opts.output.resolve() if opts.output else None
    here = os.getcwd()
    # scripts run from the checkout's root, as upstream's READMEs do: what they source is there
    os.chdir(root)
    try:
        rows = [
            (str(p.relative_to(root)), *outcome(p, root, match, sets)) for p in field_of(opts.framework, root)
        ]
    finally:
        os.chdir(here)
    read = sum(1 for _, status, _ in rows if status == "read")
    lines = [
        f"# Launch-script reader ledger: {opts.framework} scripts of {opts.source}",
        "# (derived data: script path, outcome, reason; regenerate with scripts/script_reader_ledger.py)",
        f"# given: {' '.join('--set ' + s for s in opts.sets) or 'no --set'}",
        f"# read {read} of {len(rows)}",
        *("\t".join(row) for row in rows),
    ]
    text = "\n".join(lines) + "\n"
    if output:
        output.write_text(text)
    else:
        sys.stdout.write(text)
    print(f"{opts.framework}: read {read} of {len(rows)}", file=sys.stderr)
    if opts.check is None:
        return 0
    worse = regressions(opts.check.read_text(), rows)
    for line in worse:
        print(line, file=sys.stderr)
    return 1 if worse else 0


def regressions(ledger: str, rows: list[tuple[str, str, str]]) -> list[str]:
    """What got worse against ``ledger``: a script it reads that is now refused, crashes or is gone."""
    now = {path: (status, reason) for path, status, reason in rows}
    worse = []
    for line in ledger.splitlines():
        if line.startswith("#"):
            continue
        path, status, _ = line.split("\t", 2)
        if status != "read":
            continue
        got = now.get(path)
        if got is None:
            worse.append(f"{path}: read before, not in the field now")
        elif got[0] != "read":
            worse.append(f"{path}: read before, now {got[0]}: {got[1]}")
    return worse


if __name__ == "__main__":
    sys.exit(main())
