"""The OpenRLHF snapshot generator: every flag of ``train_ppo_ray`` from that version's real argparse parser.

The parser is built from the wheel's source without importing openrlhf (``rladapt.adapters.openrlhf.parser``), so
types, choices, nargs, actions and defaults are exactly what that release parses with.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path
from typing import Any

from rladapt.compat.schema._format import KeySpec, Snapshot
from rladapt.compat.schema._values import COMPUTED

_ACTIONS = {
    argparse._StoreAction: "store",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._StoreConstAction: "store_const",
    argparse._AppendAction: "append",
    argparse._CountAction: "count",
    argparse.BooleanOptionalAction: "boolean_optional",
}
_TYPES: dict[object, str] = {int: "int", float: "float", str: "str", None: "str"}


def generate(source: Path, version: str) -> Snapshot:
    """The snapshot of openrlhf ``version`` from ``source``: its wheel, a ``train_ppo_ray.py`` or a checkout."""
    from .parser import ENTRY_FILE, _from_path, build_parser

    text = _from_path(source, version)
    if text is None:
        raise ValueError(f"{source} holds no {ENTRY_FILE} of openrlhf {version}")
    parser = build_parser(text, f"{source.name}/{ENTRY_FILE}")
    computed = _computed_defaults(text)
    keys: dict[str, KeySpec] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        kind = _ACTIONS.get(type(action), type(action).__name__)
        if kind in ("store_true", "store_false", "boolean_optional"):
            type_name = "bool"
        elif kind == "count":
            type_name = "int"
        else:
            type_name = _TYPES.get(action.type, "any")
        if action.nargs not in (None, "?") and kind in ("store", "append"):
            type_name = "list"
        flags = sorted(action.option_strings, key=lambda o: (not o.startswith("--"), o))
        keys[flags[0]] = KeySpec(
            type=type_name,
            default=computed.get(flags[0], _plain(action.default)),
            choices=tuple(_plain(c) for c in action.choices) if action.choices else (),
            required=bool(action.required),
            nargs=None if action.nargs is None or type_name == "bool" else str(action.nargs),
            action=kind,
            aliases=tuple(flags[1:]),
            item=_item_type(action),
        )
    return Snapshot(
        framework="openrlhf", version=version, source=source.name, scopes=("train_ppo_ray",), keys=keys
    )


def _computed_defaults(text: str) -> dict[str, str]:
    """Flags whose default is computed when the parser is built: recorded as ``<computed: EXPR>`` so the snapshot
    is the same whenever it is generated (openrlhf 0.11.2 openrlhf/cli/train_ppo_ray.py names the wandb run
    ``"ppo_%s" % datetime.now().strftime(...)``)."""
    out: dict[str, str] = {}
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if not names or default is None:
            continue
        # pure conversions of constants (float('inf'), int(1e8)) are fixed; anything reading a clock, the
        # environment or another module (datetime.now()) is not
        fixed = all(
            isinstance(
                n, (ast.Constant, ast.Call, ast.Load, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)
            )
            or (isinstance(n, ast.Name) and n.id in ("float", "int", "str", "bool"))
            or isinstance(n, (ast.List, ast.Tuple))
            for n in ast.walk(default)
        )
        if not fixed:
            for name in names:
                out[name] = f"{COMPUTED}{ast.unparse(default)}>"
    return out


def _item_type(action: argparse.Action) -> str | None:
    """The element type of a list-valued flag (``nargs`` set), kept beside the list type."""
    if action.nargs in (None, "?", 0) or action.type is None:
        return None
    return _TYPES.get(action.type, "any")


def _plain(value: Any) -> Any:
    """A default as JSON data (a default that is not JSON, e.g. a path object, becomes its text)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value
