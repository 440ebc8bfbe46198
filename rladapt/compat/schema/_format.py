"""The snapshot format: one JSON file per framework version, ``rladapt/compat/matrix/snapshots/<framework>/<version>.json``.

A snapshot is the framework's configuration surface as data: every key (verl: dotted Hydra key; OpenRLHF: a flag;
NeMo-RL: dotted config key) with its type and default. The file is written one key per line, sorted, so a new
release shows up in review as a line diff. Keys are ``KeySpec`` records; fields with their default value are left
out of the file to keep it small.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Bumped when the file layout changes; a loader refuses a format it does not know.
FORMAT = 1


@dataclass(frozen=True)
class KeySpec:
    """One key of a framework version's configuration surface.

    ``type`` is ``|``-joined names from ``bool int float str list dict null any`` (``any``: not declared).
    ``scopes`` lists the indexes (into ``Snapshot.scopes``) of the configs that have the key; empty means all.
    ``open`` marks a free-form mapping: any key below it is accepted. ``declared`` names where the type comes
    from when not from the default (``dataclass``, ``TypedDict``); ``item`` is a list flag's element type.
    """

    type: str = "any"
    default: Any = None
    choices: tuple[Any, ...] = ()
    required: bool = False
    open: bool = False
    nargs: str | None = None
    action: str | None = None
    aliases: tuple[str, ...] = ()
    declared: str | None = None
    item: str | None = None
    scopes: tuple[int, ...] = ()
    #: (scope index, default) where a scope's own default differs from ``default`` (the first scope's): verl's
    #: ppo_trainer with model_engine=megatron has ``actor.strategy: megatron`` where ppo_trainer has ``fsdp``
    scoped_defaults: tuple[tuple[int, Any], ...] = ()

    def default_in(self, index: int | None) -> Any:
        """The default in the scope of that index (``default`` when the scope has none of its own)."""
        for where, value in self.scoped_defaults:
            if where == index:
                return value
        return self.default

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.default is not None or self.type != "dict":
            out["default"] = self.default
        if self.choices:
            out["choices"] = list(self.choices)
        for name in ("required", "open"):
            if getattr(self, name):
                out[name] = True
        for name in ("nargs", "action", "declared", "item"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.aliases:
            out["aliases"] = list(self.aliases)
        if self.scopes:
            out["in"] = list(self.scopes)
        if self.scoped_defaults:
            out["default_in"] = {str(i): value for i, value in self.scoped_defaults}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeySpec:
        return cls(
            type=str(data.get("type", "any")),
            default=data.get("default"),
            choices=tuple(data.get("choices", ())),
            required=bool(data.get("required", False)),
            open=bool(data.get("open", False)),
            nargs=data.get("nargs"),
            action=data.get("action"),
            aliases=tuple(data.get("aliases", ())),
            declared=data.get("declared"),
            item=data.get("item"),
            scopes=tuple(data.get("in", ())),
            scoped_defaults=tuple((int(i), v) for i, v in data.get("default_in", {}).items()),
        )


@dataclass(frozen=True)
class Snapshot:
    """The configuration surface of one framework version (see the module docstring)."""

    framework: str
    version: str
    source: str
    scopes: tuple[str, ...]
    keys: Mapping[str, KeySpec] = field(default_factory=dict)

    def get(self, key: str) -> KeySpec | None:
        return self.keys.get(key)

    def default(self, key: str, scope: str | None = None) -> Any:
        """The framework's own default of ``key`` in this version, in ``scope`` when given (KeyError when the
        version has no such key)."""
        return self.keys[key].default_in(self.scope_index(scope))

    def scope_index(self, scope: str | None) -> int | None:
        """The index of ``scope`` in ``scopes`` (None for None or a scope this snapshot does not have)."""
        return self.scopes.index(scope) if scope is not None and scope in self.scopes else None

    def has(self, key: str, scope: str | None = None) -> bool:
        """Whether ``key`` exists (itself or below a free-form mapping), in ``scope`` when given."""
        return self.lookup(key, scope) is not None

    def lookup(self, key: str, scope: str | None = None) -> tuple[str, KeySpec] | None:
        """The entry that accepts ``key``: the key itself, or the nearest free-form mapping above it."""
        spec = self.keys.get(key)
        if spec is not None and self.in_scope(spec, scope):
            return key, spec
        parts = key.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent = ".".join(parts[:i])
            spec = self.keys.get(parent)
            if spec is not None and spec.open and self.in_scope(spec, scope):
                return parent, spec
        return None

    def in_scope(self, spec: KeySpec, scope: str | None) -> bool:
        if scope is None or not spec.scopes or scope not in self.scopes:
            return True
        return self.scopes.index(scope) in spec.scopes

    def names(self, scope: str | None = None) -> list[str]:
        return sorted(k for k, s in self.keys.items() if self.in_scope(s, scope))

    def to_text(self) -> str:
        """The file text: a header, then one key per line, sorted (diff-friendly)."""
        head = {
            "format": FORMAT,
            "framework": self.framework,
            "version": self.version,
            "source": self.source,
            "scopes": list(self.scopes),
        }
        lines = [json.dumps(head, sort_keys=True)[:-1] + ', "keys": {']
        items = sorted(self.keys.items())
        for i, (key, spec) in enumerate(items):
            comma = "," if i < len(items) - 1 else ""
            lines.append(f"{json.dumps(key)}: {json.dumps(spec.to_json(), sort_keys=True)}{comma}")
        lines.append("}}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str, origin: str) -> Snapshot:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{origin}: not a format-{FORMAT} rladapt snapshot")
        return cls(
            framework=str(data["framework"]),
            version=str(data["version"]),
            source=str(data["source"]),
            scopes=tuple(data.get("scopes", ())),
            keys=_ParsedOnUse(data["keys"]),
        )


class _ParsedOnUse(Mapping[str, KeySpec]):
    """A snapshot's key table read from its file: each entry becomes a ``KeySpec`` when first looked up.

    A render looks up the hundred-odd keys its launch sets, not all 1,250 of a verl version; building every
    record up front was most of the time a cold snapshot check took (about 5 ms of 7 for verl 0.9.1).
    """

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw
        self._parsed: dict[str, KeySpec] = {}

    def __getitem__(self, key: str) -> KeySpec:
        spec = self._parsed.get(key)
        if spec is None:
            spec = self._parsed[key] = KeySpec.from_json(self._raw[key])  # KeyError as a dict's
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw  # without parsing the entry


def merge_scopes(
    per_scope: Iterable[tuple[str, Mapping[str, KeySpec]]],
    *,
    scoped_defaults: bool = False,
) -> tuple[tuple[str, ...], dict[str, KeySpec]]:
    """One key table from several configs of a version: the first config's entry wins, ``scopes`` says where.

    Keys present in every config carry no ``scopes`` (the common case, and the small file). ``scoped_defaults``:
    also keep each config's own default where it differs from the first one's (``KeySpec.scoped_defaults``).
    """
    names: list[str] = []
    where: dict[str, list[int]] = {}
    first: dict[str, KeySpec] = {}
    others: dict[str, list[tuple[int, Any]]] = {}
    for index, (name, keys) in enumerate(per_scope):
        names.append(name)
        for key, spec in keys.items():
            where.setdefault(key, []).append(index)
            kept = first.setdefault(key, spec)
            if scoped_defaults and _json(spec.default) != _json(kept.default):
                others.setdefault(key, []).append((index, spec.default))
    everywhere = list(range(len(names)))
    merged = {
        key: KeySpec(
            **{
                **spec.__dict__,
                "scopes": () if where[key] == everywhere else tuple(where[key]),
                "scoped_defaults": tuple(others.get(key, ())),
            }
        )
        for key, spec in first.items()
    }
    return tuple(names), merged


def _json(value: Any) -> str:
    """A value as the file holds it (1 and 1.0, False and 0 stay different)."""
    return json.dumps(value, sort_keys=True)
