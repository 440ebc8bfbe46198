"""Run the launch-script reader over every training launch script of an upstream checkout; write a ledger.

    python scripts/script_reader_ledger.py verl CHECKOUT --source volcengine/verl@REV -o LEDGER.tsv
    python scripts/script_reader_ledger.py openrlhf CHECKOUT --source OpenRLHF/OpenRLHF@v0.11.0 -o LEDGER.tsv

CHECKOUT is an extracted tree of the repository (``git archive REV | tar -x``). Only the reader runs
(``read_launch`` with the framework's own matcher): a script is ``read`` when the reader returns the launch's
argv, else ``refused`` with the reader's one-line reason. Nothing of the checkout is executed or copied: the ledger
holds paths and outcomes only.
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
    """The framework's own matcher (the one ``rladapt import`` uses), wherever this version keeps it."""
    for module in (f"rladapt.adapters.{framework}.importing", f"rladapt.importing.{framework}"):
        try:
            mod = __import__(module, fromlist=["match"])
        except ImportError:
            continue
        if hasattr(mod, "match"):
            return mod.match
    raise SystemExit(f"no matcher for {framework}")


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
    os.chdir(
        root
    )  # scripts run from the checkout's root, as upstream's READMEs do: what they source is there
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
