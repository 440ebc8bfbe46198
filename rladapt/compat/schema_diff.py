"""What changed in a framework's configuration surface between two versions, from their schema snapshots.

Renames are a heuristic (a snapshot has no history): a removed key and an added key are paired when they are the
same name spelled differently (OpenRLHF 0.10.2's ``--actor_num_nodes`` -> ``--actor.num_nodes``), or when the same
leaf name moved under a new parent with the same type and default (verl 0.7.1's ``reward_model.sandbox_fusion.url``
-> ``reward.sandbox_fusion.url``), or a flat flag's words regrouped under a dotted one with the same type and default
(``--micro_train_batch_size`` -> ``--train.micro_batch_size``). Each key is paired at most once, best match first.
Everything else is reported as removed and added; a maintainer confirms the pairs.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .schema import KeySpec, Snapshot
from .schema._values import COMPUTED

__all__ = ["Change", "Rename", "SchemaDiff", "collapse", "diff_snapshots", "jsonable"]


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    #: why the two were paired: ``spelling`` (the same name), ``moved`` (same leaf under a new parent, same type and
    #: default) or ``words`` (a flat flag's words regrouped, same type and default)
    why: str


@dataclass(frozen=True)
class Change:
    key: str
    old: Any
    new: Any


@dataclass(frozen=True)
class SchemaDiff:
    framework: str
    old: str
    new: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    renamed: tuple[Rename, ...] = ()
    #: (old prefix, new prefix, how many renamed keys moved that way), for at least two keys
    moved_sections: tuple[tuple[str, str, int], ...] = ()
    types: tuple[Change, ...] = ()
    defaults: tuple[Change, ...] = ()
    scopes_added: tuple[str, ...] = ()
    scopes_removed: tuple[str, ...] = ()
    rename_of: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "old": self.old,
            "new": self.new,
            "added": list(self.added),
            "removed": list(self.removed),
            "renamed": [{"old": r.old, "new": r.new, "why": r.why} for r in self.renamed],
            "moved_sections": [{"old": o, "new": n, "keys": c} for o, n, c in self.moved_sections],
            "types_changed": [{"key": c.key, "old": c.old, "new": c.new} for c in self.types],
            "defaults_changed": [
                {"key": c.key, "old": jsonable(c.old), "new": jsonable(c.new)} for c in self.defaults
            ],
            "configs_added": list(self.scopes_added),
            "configs_removed": list(self.scopes_removed),
        }


def jsonable(value: Any) -> Any:
    """``value`` with non-finite floats as their text: a default of ``float('inf')`` (OpenRLHF) is not JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def diff_snapshots(old: Snapshot, new: Snapshot) -> SchemaDiff:
    """The changes from ``old`` to ``new`` (two versions of one framework)."""
    gone = sorted(set(old.keys) - set(new.keys))
    came = sorted(set(new.keys) - set(old.keys))
    renamed = _renames(old, new, gone, came)
    paired_old = {r.old for r in renamed}
    paired_new = {r.new for r in renamed}
    both = sorted(set(old.keys) & set(new.keys))
    types = [
        Change(k, old.keys[k].type, new.keys[k].type) for k in both if old.keys[k].type != new.keys[k].type
    ]
    defaults = [
        Change(k, old.keys[k].default, new.keys[k].default)
        for k in both
        if old.keys[k].default != new.keys[k].default and not _computed(old.keys[k], new.keys[k])
    ]
    return SchemaDiff(
        framework=new.framework,
        old=old.version,
        new=new.version,
        added=tuple(k for k in came if k not in paired_new),
        removed=tuple(k for k in gone if k not in paired_old),
        renamed=tuple(renamed),
        moved_sections=_sections(renamed),
        types=tuple(types),
        defaults=tuple(defaults),
        scopes_added=tuple(s for s in new.scopes if s not in old.scopes),
        scopes_removed=tuple(s for s in old.scopes if s not in new.scopes),
        rename_of={r.old: r.new for r in renamed},
    )


def _computed(a: KeySpec, b: KeySpec) -> bool:
    # OpenRLHF defaults computed at parse time are recorded as their expression; a new spelling is no change
    return all(isinstance(s.default, str) and s.default.startswith(COMPUTED) for s in (a, b))


def _norm(key: str) -> str:
    return key.lstrip("-").replace(".", "_").replace("-", "_")


def _leaf(key: str) -> str:
    return key.lstrip("-").rpartition(".")[2]


def _words(key: str) -> set[str]:
    return set(_norm(key).split("_")) - {""}


def _suffix(a: str, b: str) -> int:
    """How many trailing dotted parts ``a`` and ``b`` share."""
    pa, pb = a.lstrip("-").split("."), b.lstrip("-").split(".")
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    return n


def _renames(old: Snapshot, new: Snapshot, gone: list[str], came: list[str]) -> list[Rename]:
    by_norm: dict[str, list[str]] = {}
    by_leaf: dict[str, list[str]] = {}
    for key in came:
        by_norm.setdefault(_norm(key), []).append(key)
        by_leaf.setdefault(_leaf(key), []).append(key)
    scored: list[tuple[tuple[int, int, float], str, str, str]] = []
    for key in gone:
        spec = old.keys[key]
        for cand in by_norm.get(_norm(key), []):
            scored.append(((2, 0, 1.0), key, cand, "spelling"))
        if spec.type == "dict":
            continue  # sections are judged by their leaves (moved_sections)
        for cand in by_leaf.get(_leaf(key), []):
            other = new.keys[cand]
            shared = _suffix(key, cand)
            # a dotted key moves with its parent's name (``sandbox_fusion.url``): a bare leaf such as ``enable``
            # is too common to pair on; a flat flag (``--seed``) has only its leaf
            enough = shared >= min(2, len(key.lstrip("-").split(".")))
            if (
                enough
                and other.type == spec.type
                and other.default == spec.default
                and _norm(cand) != _norm(key)
            ):
                ratio = difflib.SequenceMatcher(None, key, cand).ratio()
                scored.append(((1, shared, ratio), key, cand, "moved"))
        if len(key.lstrip("-").split(".")) == 1:
            # a flat flag regrouped into a dotted one (``--micro_train_batch_size`` -> ``--train.micro_batch_size``):
            # the same words, same type and default
            words = _words(key)
            for cand in came:
                other = new.keys[cand]
                if other.type != spec.type or other.default != spec.default or other.type == "dict":
                    continue
                theirs = _words(cand)
                shared = len(words & theirs)
                if words <= theirs or (shared >= 2 and shared / len(words | theirs) >= 0.5):
                    scored.append(((0, shared, shared / len(words | theirs)), key, cand, "words"))
    scored.sort(key=lambda s: s[0], reverse=True)
    used_old: set[str] = set()
    used_new: set[str] = set()
    out = []
    for _, key, cand, why in scored:
        if key in used_old or cand in used_new:
            continue
        used_old.add(key)
        used_new.add(cand)
        out.append(Rename(key, cand, why))
    return sorted(out, key=lambda r: r.old)


def _sections(renamed: list[Rename]) -> tuple[tuple[str, str, int], ...]:
    counts: Counter[tuple[str, str]] = Counter()
    for r in renamed:
        n = _suffix(r.old, r.new)
        if n == 0:
            continue
        po, pn = r.old.split("."), r.new.split(".")
        head_old, head_new = ".".join(po[: len(po) - n]), ".".join(pn[: len(pn) - n])
        if head_old and head_new:
            counts[(head_old, head_new)] += 1
    return tuple((o, n, c) for (o, n), c in sorted(counts.items()) if c >= 2)


def collapse(keys: tuple[str, ...] | list[str]) -> list[str]:
    """``keys`` with every key below another listed one folded into ``parent.*`` (a short work list)."""
    listed = set(keys)
    out = []
    for key in sorted(keys):
        parts = key.split(".")
        if any(".".join(parts[:i]) in listed for i in range(1, len(parts))):
            continue
        below = sum(1 for k in listed if k.startswith(key + "."))
        out.append(f"{key}.* ({below + 1} keys)" if below else key)
    return out
