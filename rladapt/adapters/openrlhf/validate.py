"""Native validation: the real parser of ``native.version`` judges the whole argv, native flags included.

The parser is built from the released source of that version when it is available here (``parser.find_source``);
without it there is no native check (``None``), which the pipeline notes on the launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from rladapt.compat.schema import KeySpec, Snapshot
from rladapt.compat.schema._values import UNKNOWN
from rladapt.primitives.errors import Problem

from .checks import FlagView, check
from .parser import ParserUnavailable, build_parser_cached, find_source, parse, problems, split_native
from .translate import ENTRY_MODULE

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch

NATIVE_FIELD = "spec.native.openrlhf"


def validate_native(native: NativeLaunch) -> list[Problem] | None:
    source = find_source(native.version)
    if source is None:
        return None
    try:
        parser = build_parser_cached(source, f"openrlhf-{native.version}")
    except ParserUnavailable:
        return None
    if tuple(native.argv[1:3]) != ("-m", ENTRY_MODULE):
        return [
            Problem(
                "native.argv",
                f"expected `<python> -m {ENTRY_MODULE} ...`",
                found=" ".join(native.argv[:3]),
            )
        ]
    args = native.argv[3:]
    # the spec's native.openrlhf tokens are appended last by translate: blame them, not rladapt
    first_user = len(args) - len(split_native(list(native.passthrough)))
    origin = {i: (NATIVE_FIELD if i >= first_user else "native.argv") for i in range(len(args))}
    found = problems(parser, args, origin, native.version)
    if found:
        return found
    namespace = parse(parser, args).namespace
    return check(FlagView.from_namespace(Version(native.version), namespace, NATIVE_FIELD))


# --- the offline check against the bundled schema snapshot ---------------------------------------------------


def check_native(native: NativeLaunch) -> list[Problem] | None:
    """Every flag of ``native`` against openrlhf ``native.version``'s schema snapshot; None without a snapshot.

    The argv is read the way argparse reads it (a flag takes as many values as its ``nargs``/action says), each
    value converted by the flag's type; nothing of openrlhf is imported and no parser is built.
    """
    from rladapt.compat.schema import NativeItem, check
    from rladapt.plugins.snapshots import find_snapshot, versions_having

    snap = find_snapshot("openrlhf", native.version)
    if snap is None:
        return None
    if tuple(native.argv[1:3]) != ("-m", ENTRY_MODULE):
        return [
            Problem(
                "native.argv",
                f"expected `<python> -m {ENTRY_MODULE} ...`",
                found=" ".join(native.argv[:3]),
            )
        ]
    args = list(native.argv[3:])
    entry_of = _passthrough_entries(native, len(args))
    items: list[NativeItem] = []
    stray: list[Problem] = []
    for flag in read_flags(args, snap):
        where = entry_of.get(flag.at)
        if not flag.flag.startswith("--"):
            stray.append(
                Problem(
                    where or "native.argv",
                    f"openrlhf {native.version} does not expect the value {flag.flag!r} here",
                    found=flag.flag,
                )
            )
            continue
        if where is None:
            where = native.origins.get(flag.flag, f"openrlhf argv: {flag.flag}")
        if flag.key is None:
            items.append(NativeItem(key=flag.flag, where=where, found=flag.flag))
            continue
        items.append(NativeItem(key=flag.key, value=flag.value, where=where, found=flag.text))
    found = stray + check(
        snap, items, noun="flag", other_versions=lambda key: versions_having("openrlhf", key, native.version)
    )
    return found


@dataclass(frozen=True)
class Flag:
    """One flag of an argv as argparse reads it, with its values (or a stray value: ``flag`` without ``--``)."""

    at: int  # index of the flag's token
    flag: str  # the option as written, before any ``=``
    key: str | None  # the snapshot key it names (an alias resolved); None: not a flag of this version
    values: tuple[str, ...]  # its value tokens (the inline one of ``--flag=value``)
    value: Any  # as argparse stores it (a text that does not convert stays text: a type error)
    tokens: tuple[str, ...]  # the tokens as written

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


def read_flags(args: Sequence[str], snap: Snapshot) -> list[Flag]:
    """The flags of ``args`` in order, each taking the values its ``nargs``/action says, read with the schema
    snapshot ``snap`` alone (nothing of openrlhf is imported, no parser is built)."""
    canonical = {alias: key for key, spec in snap.keys.items() for alias in (key, *spec.aliases)}
    out: list[Flag] = []
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--"):
            out.append(Flag(i, token, None, (), None, (token,)))
            i += 1
            continue
        flag, eq, inline = token.partition("=")
        key = canonical.get(flag)
        spec = None if key is None else snap.keys[key]
        values, end = _values(list(args), i + 1, spec, inline if eq else None)
        value = None if spec is None else _convert(values, spec)
        out.append(Flag(i, flag, key, tuple(values), value, tuple(args[i:end])))
        i = end
    return out


def _passthrough_entries(native: NativeLaunch, count: int) -> dict[int, str]:
    """argv index (after ``-m <module>``) -> ``spec.native.openrlhf[i]`` for the tokens of the spec's entries."""
    entries = list(native.passthrough)
    sizes = [len(split_native([e])) for e in entries]
    start = count - sum(sizes)
    out: dict[int, str] = {}
    for index, size in enumerate(sizes):
        for _ in range(size):
            out[start] = f"{NATIVE_FIELD}[{index}]"
            start += 1
    return out


def _values(args: list[str], at: int, spec: KeySpec | None, inline: str | None) -> tuple[list[str], int]:
    """The values the flag before ``at`` takes, and the index after them (argparse's nargs rules)."""
    if inline is not None:
        return [inline], at
    if spec is None or spec.type == "bool" or spec.action in ("store_const", "count"):
        if spec is None:  # an unknown flag: its values are the tokens up to the next flag
            end = at
            while end < len(args) and not args[end].startswith("--"):
                end += 1
            return args[at:end], end
        return [], at
    nargs = spec.nargs
    if nargs is None:
        want = 1
    elif nargs == "?":
        want = 1 if at < len(args) and not args[at].startswith("--") else 0
    elif nargs in ("*", "+"):
        end = at
        while end < len(args) and not args[end].startswith("--"):
            end += 1
        return args[at:end], end
    else:
        want = int(nargs)
    return args[at : at + want], at + want


def _convert(values: list[str], spec: KeySpec) -> Any:
    """The value as argparse would store it (a text that does not convert stays text: a type error)."""
    if spec.type == "bool" or spec.action in ("store_const", "count"):
        return values or UNKNOWN  # a value given to a switch: argparse refuses it
    item = spec.item or spec.type
    converted = [_one(v, item) for v in values]
    if spec.type == "list":
        return converted
    return converted[0] if converted else None


def _one(text: str, kind: str) -> Any:
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        return text
    return text
