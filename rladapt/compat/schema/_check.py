"""Judge the native keys a launch sets against one version's snapshot: unknown keys, wrong types, bad choices.

The adapters turn their launch into ``NativeItem`` records (a key, its value as the framework reads it, and the
spec field or ``spec.native.<fw>[i]`` entry that produced it); the judgement is the same for every framework.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from rladapt.primitives.errors import Problem

from ._format import Snapshot
from ._values import UNKNOWN, describe, fits

#: ``set`` a key, ``add`` one that may be new (Hydra's ``+``/``++``: an unknown key is the user's intent),
#: ``delete`` one (Hydra's ``~``).
Op = Literal["set", "add", "delete"]
_MAX_PROBLEMS = 20


@dataclass(frozen=True)
class NativeItem:
    key: str
    value: Any = UNKNOWN
    where: str = ""
    found: str | None = None
    op: Op = "set"
    #: the framework config the key lands in (verl: the Hydra config name); None: any of the snapshot's
    scope: str | None = None


def check(
    snap: Snapshot,
    items: Iterable[NativeItem],
    *,
    noun: str = "key",
    other_versions: Callable[[str], list[str]] | None = None,
) -> list[Problem]:
    """Every problem of ``items`` against ``snap`` (at most 20); ``other_versions(key)`` names pinned versions
    that do have a key this one lacks (called only for unknown keys)."""
    label = f"{snap.framework} {snap.version}"
    out: list[Problem] = []
    for item in items:
        if len(out) >= _MAX_PROBLEMS:
            break
        found = snap.lookup(item.key, item.scope)
        if found is None:
            if item.op == "add":
                continue
            out.append(_unknown(snap, item, label, noun, other_versions))
            continue
        name, spec = found
        if item.op == "delete" or name != item.key or item.value is UNKNOWN:
            continue  # below a free-form mapping, or nothing to judge
        if not fits(item.value, spec.type):
            out.append(
                Problem(
                    item.where,
                    f"{label} {noun} {_show(noun)(item.key)} takes {_type_text(spec.type)}, "
                    f"not {_article(describe(item.value))}",
                    expected=_type_text(spec.type),
                    found=item.found if item.found is not None else repr(item.value),
                )
            )
            continue
        values = list(item.value) if isinstance(item.value, list) else [item.value]
        bad = [v for v in values if spec.choices and v is not None and v not in spec.choices]
        if bad:
            out.append(
                Problem(
                    item.where,
                    f"{label} {noun} {_show(noun)(item.key)} does not accept {bad[0]!r}",
                    expected="one of " + ", ".join(str(c) for c in spec.choices),
                    found=item.found if item.found is not None else repr(item.value),
                )
            )
    return out


def _show(noun: str) -> Callable[[str], str]:
    # flags read as they are typed (--actor.num_nodes); dotted keys are quoted like every other key rladapt names
    return str if noun == "flag" else repr


def _article(name: str) -> str:
    known = {"str": "a string", "list": "a list", "dict": "a mapping", "int": "an integer", "null": "null"}
    return known.get(name, f"a {name}")


def _type_text(kind: str) -> str:
    names = [n for n in kind.split("|") if n != "null"]
    text = " or ".join(_article(n) for n in names)
    return text + (" or null" if "null" in kind.split("|") else "")


def _unknown(
    snap: Snapshot,
    item: NativeItem,
    label: str,
    noun: str,
    other_versions: Callable[[str], list[str]] | None,
) -> Problem:
    hint = suggest(snap, item.key, item.scope)
    show = _show(noun)
    message = f"{label} has no {noun} {show(item.key)}"
    if hint:
        message += f" (did you mean {show(hint)}?)"
    elsewhere = other_versions(item.key) if other_versions is not None else []
    if elsewhere:
        message += f"; it exists in {snap.framework} " + ", ".join(elsewhere)
    return Problem(item.where, message, found=item.found if item.found is not None else item.key)


def suggest(snap: Snapshot, key: str, scope: str | None = None) -> str | None:
    """The nearest key of ``snap``: a close spelling, else a sibling with a close leaf name, else the same leaf
    moved under another parent (a renamed section)."""
    names = snap.names(scope)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.85)
    if close:
        return close[0]
    parent, _, leaf = key.rpartition(".")
    siblings = [n.rpartition(".")[2] for n in names if n.rpartition(".")[0] == parent]
    close = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.6)
    if close:
        return f"{parent}.{close[0]}" if parent else close[0]
    moved = [n for n in names if n.rpartition(".")[2] == leaf and "." in key]
    if moved:
        return min(moved, key=lambda n: -difflib.SequenceMatcher(None, n, key).ratio())
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return close[0] if close else None
