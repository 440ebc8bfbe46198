"""What ``render --explain`` lists of an OpenRLHF launch: its flags, in launch order, with typed values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rladapt.plugins.native import NativeLaunch

from .parser import split_native


def entries(native: NativeLaunch) -> Iterator[tuple[str, Any, str]]:
    """(flag, value, origin) of every flag of ``native``; a ``spec.native`` entry's flags name the entry."""
    args = list(native.argv[3:])
    items = list(native.passthrough)
    sizes = [len(split_native([e])) for e in items]
    first_user = len(args) - sum(sizes)
    entry_at: dict[int, int] = {}
    at = first_user
    for index, size in enumerate(sizes):
        for _ in range(size):
            entry_at[at] = index
            at += 1
    i = 0
    while i < len(args):
        token = args[i]
        start = i
        i += 1
        if not token.startswith("--"):
            continue
        flag, eq, inline = token.partition("=")
        values = [inline] if eq else []
        while not eq and i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
        value: Any = True if not values else values[0] if len(values) == 1 else values
        if start in entry_at:
            origin = f"spec.native.openrlhf[{entry_at[start]}]"
        else:
            origin = native.origins.get(flag, "")
        yield flag, _typed(value), origin


def _typed(value: Any) -> Any:
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value
