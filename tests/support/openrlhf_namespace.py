"""OpenRLHF's own effective namespace of a launch, computed by the code of its real wheel.

The parser of ``openrlhf/cli/train_ppo_ray.py`` is built from the wheel's source (``rladapt.adapters.openrlhf.
parser.build_parser``), the flags are parsed with it, and then the statements of the wheel's own ``__main__``
block after ``parse_args`` run on the result: its post-parse rewrites and asserts, up to ``train(args)`` (the
ModelScope hub patch, which only runs with ``--use_ms``, and ``train`` itself are left out). From 0.10.2 that
block nests the namespace with ``openrlhf/utils/config.py``'s ``hierarchize``, which is taken from the same
wheel. Nothing of openrlhf is imported: only these statements, which need the standard library alone.

The result is keyed by option string (the snapshot's spelling: a flag's first ``--`` option), as rladapt's
offline ``openrlhf_effective`` is, so the two can be compared key by key.
"""

from __future__ import annotations

import argparse
import ast
import zipfile
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rladapt.adapters.openrlhf.parser import ENTRY_FILE, build_parser, source_from_wheel
from tests.support.wheels import download_wheel

_CONFIG = "openrlhf/utils/config.py"


@cache
def _source(version: str) -> str:
    return source_from_wheel(download_wheel("openrlhf", version))


@cache
def parser(version: str) -> argparse.ArgumentParser:
    return build_parser(_source(version), f"openrlhf-{version}/{ENTRY_FILE}")


def _wheel_file(version: str, name: str) -> str:
    with zipfile.ZipFile(download_wheel("openrlhf", version)) as zf:
        for entry in zf.namelist():
            if entry == name or entry.endswith("/purelib/" + name):
                return zf.read(entry).decode("utf-8")
    raise FileNotFoundError(f"openrlhf {version} wheel holds no {name}")


@cache
def _post_parse(version: str) -> tuple[ast.Module, str | None]:
    """The statements after ``parse_args`` in the wheel's ``__main__`` block, and the hierarchize source."""
    tree = ast.parse(_source(version))
    guard = next(
        node
        for node in reversed(tree.body)
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)
    )
    index = next(i for i, stmt in enumerate(guard.body) if "parse_args" in ast.unparse(stmt))
    body: list[ast.stmt] = []
    config: str | None = None
    for stmt in guard.body[index + 1 :]:
        text = ast.unparse(stmt)
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "openrlhf.utils.config":
            config = _wheel_file(version, _CONFIG)
            continue
        if text.startswith("if args.use_ms") or text == "train(args)":
            continue
        body.append(stmt)
    return ast.Module(body=body, type_ignores=[]), config


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in vars(node).items():
        key = f"{prefix}{name}"
        if isinstance(value, SimpleNamespace):
            out.update(_flatten(value, key + "."))
        else:
            out[key] = value
    return out


def namespace(version: str, args: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Option string -> value of OpenRLHF ``version``'s namespace for ``args``, after its own post-parse code.

    A flag the parser does not know, or a value it refuses, fails (``SystemExit`` from argparse), as the launch
    itself would; so does an assert of the post-parse block (``AssertionError``)."""
    real = parser(version)
    parsed = real.parse_args(list(args))
    module, config = _post_parse(version)
    scope: dict[str, Any] = {"args": parsed, "print": lambda *a, **k: None}
    if config is not None:
        exec(compile(config, f"openrlhf-{version}/{_CONFIG}", "exec"), scope)
    exec(compile(module, f"openrlhf-{version}/{ENTRY_FILE}", "exec"), scope)
    dests = _flatten(scope["args"])
    options: dict[str, str] = {}
    for action in real._actions:
        if action.option_strings and action.dest != "help":
            first = sorted(action.option_strings, key=lambda o: (not o.startswith("--"), o))[0]
            # two flags of one attribute (--x.y and its negation --x.no_y): the attribute's own name
            if options.get(action.dest) != f"--{action.dest}":
                options[action.dest] = first
    return {options[dest]: value for dest, value in dests.items()}


def wheel_path(version: str) -> Path:
    return download_wheel("openrlhf", version)
