"""Interpolation in a spec: ``${dotted.path}`` copies another field of the same spec, and nothing else can happen.

Why a resolver of our own rather than OmegaConf's: OmegaConf's grammar calls resolvers (``oc.env`` reads the
environment of the submitting shell, ``oc.decode`` parses a string into a new interpolation, ``oc.create``,
``oc.select``, any resolver a library registered), and a string assembled from other fields is parsed again
when it is decoded. Refusing those by a pattern on the raw text misses every other spelling (a YAML escape such
as ``"\\x24{oc.env:X}"``, text assembled from ``$`` and ``{...}`` in two fields). A spec needs only references
to its own fields, so this resolver knows nothing else:

- ``${a.b.c}``, ``${a.list.0}`` / ``${a.list[0]}``: an absolute reference; ``${.x}``, ``${..x}``: relative to the
  mapping or list that holds the string, as in OmegaConf (one dot per level up).
- A string that is exactly one reference takes the referenced value with its type (a number stays a number, a
  mapping is copied); a reference inside longer text must be a string, number or boolean (written as YAML writes
  it: ``true``/``false``).
- ``${name:...}`` -- a resolver call, of any name -- and ``${...${...}...}`` are problems naming the field.
- ``\\${`` is a literal ``${``.
- Each string is parsed once, on the text the user wrote; a value it receives is never parsed again, so text
  assembled by references stays literal.
- A reference cycle is reported with its path; chains of references deeper than ``MAX_REFERENCE_DEPTH`` are
  refused (they are a mistake, and each level is a Python call).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import Problem, field_path, quote

#: References followed from one string before giving up (a chain a -> b -> c ... this long is a mistake).
MAX_REFERENCE_DEPTH = 32

Key = str | int
FieldPath = tuple[Key, ...]

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_REFERENCE = re.compile(r"\s*(?P<dots>\.*)(?P<rest>[A-Za-z0-9_\-.\[\]]*)\s*")
_RESOLVER_NAME = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*:")
_EXPECTED = "a reference to a field of this spec, e.g. ${metadata.name}"


class _Failure(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class _Ref:
    """``${...}`` in a string: ``up`` levels above the string's container (None: from the root), then ``keys``."""

    up: int | None
    keys: tuple[str, ...]
    text: str


Piece = str | _Ref


def parse(text: str, where: FieldPath) -> list[Piece]:
    """The literal text and references of one string, as the user wrote it."""
    pieces: list[Piece] = []
    literal: list[str] = []
    i = 0
    while True:
        start = text.find("${", i)
        if start < 0:
            literal.append(text[i:])
            break
        if start > i and text[start - 1] == "\\":
            literal.append(text[i : start - 1] + "${")
            i = start + 2
            continue
        literal.append(text[i:start])
        i = start
        end = text.find("}", i + 2)
        if end < 0:
            raise _Failure(_problem(where, "unclosed ${ in interpolation", text))
        inner = text[i + 2 : end]
        call = _RESOLVER_NAME.match(inner)
        if call is not None or ":" in inner:
            name = call.group(1) if call is not None else inner.split(":", 1)[0].strip()
            raise _Failure(
                Problem(
                    field_path(where),
                    f"resolver {quote(name)} called in interpolation",
                    "only references to fields of this spec, e.g. ${metadata.name} (a value of the submitting "
                    "shell goes in spec.secrets, by reference)",
                    quote(text),
                )
            )
        if "${" in inner:
            raise _Failure(_problem(where, "nested interpolation is not allowed", text))
        _flush(literal, pieces)
        pieces.append(_parse_reference(inner, where, text))
        i = end + 1
    _flush(literal, pieces)
    return pieces


def _flush(literal: list[str], pieces: list[Piece]) -> None:
    """Move the literal text gathered so far into PIECES, as one piece."""
    text = "".join(literal)
    literal.clear()
    if text:
        pieces.append(text)


def _parse_reference(inner: str, where: FieldPath, text: str) -> _Ref:
    match = _REFERENCE.fullmatch(inner)
    if match is None:
        raise _Failure(_problem(where, f"malformed interpolation {quote('${' + inner + '}')}", text))
    dots, rest = match.group("dots"), match.group("rest")
    keys: list[str] = []
    if rest:
        for part in re.split(r"\.", re.sub(r"\[([0-9]+)\]", r".\1", rest)):
            if not _SEGMENT.fullmatch(part):
                raise _Failure(_problem(where, f"malformed interpolation {quote('${' + inner + '}')}", text))
            keys.append(part)
    elif not dots:
        raise _Failure(_problem(where, "empty interpolation ${}", text))
    return _Ref(up=len(dots) - 1 if dots else None, keys=tuple(keys), text="${" + inner + "}")


def _problem(where: FieldPath, message: str, text: str) -> Problem:
    return Problem(field_path(where), message, _EXPECTED, quote(text))


def resolve(tree: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """TREE with every interpolation replaced; TREE is a fresh plain tree and is updated in place.

    Every field with a problem is reported; a field that references one is reported too, naming it.
    """
    resolver = _Resolver(tree)
    for path in list(resolver.pending):
        resolver.settle(path)
    return tree, list(resolver.failed.values())


def _strings(node: Any, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, (*path, index))
    elif isinstance(node, str):
        yield path, node


class _Resolver:
    def __init__(self, tree: dict[str, Any]) -> None:
        self.tree = tree
        # Strings still as the user wrote them. Only these are ever parsed: a value copied into a field later
        # is final, whatever text it holds.
        self.pending: dict[FieldPath, str] = {path: text for path, text in _strings(tree, ()) if "${" in text}
        self.active: list[FieldPath] = []
        self.failed: dict[str, Problem] = {}
        # Fields left unresolved because a field they reference has a problem (reported once, for that field).
        self.broken: set[FieldPath] = set()

    def settle(self, path: FieldPath) -> None:
        """Resolve the string at PATH (if still pending), recording a problem rather than raising it."""
        if path not in self.pending:
            return
        try:
            self._resolve_string(path)
        except _Failure as exc:
            for stuck in self.active:
                self.pending.pop(stuck, None)
                self.broken.add(stuck)
            self.active.clear()
            self.failed.setdefault(exc.problem.path, exc.problem)

    def _resolve_string(self, path: FieldPath) -> None:
        if path in self.active:
            cycle = [*self.active[self.active.index(path) :], path]
            raise _Failure(
                Problem(
                    field_path(path),
                    "interpolation cycle: " + " -> ".join(field_path(p) for p in cycle),
                    "references that end at a value",
                )
            )
        if len(self.active) >= MAX_REFERENCE_DEPTH:
            raise _Failure(
                Problem(
                    field_path(path),
                    f"interpolation references are chained more than {MAX_REFERENCE_DEPTH} deep",
                    f"at most {MAX_REFERENCE_DEPTH} references from one field to a value",
                )
            )
        text = self.pending[path]
        self.active.append(path)
        pieces = parse(text, path)
        if len(pieces) == 1 and isinstance(pieces[0], _Ref):
            value = copy.deepcopy(self._value(pieces[0], path))
        else:
            value = "".join(p if isinstance(p, str) else self._embedded(p, path) for p in pieces)
        self.active.pop()
        _set(self.tree, path, value)
        del self.pending[path]

    def _embedded(self, ref: _Ref, where: FieldPath) -> str:
        value = self._value(ref, where)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | int | float):
            return str(value)
        kind = "null" if value is None else type(value).__name__
        raise _Failure(
            Problem(
                field_path(where),
                f"{ref.text} inside text refers to a {kind} value",
                "a string, number or boolean (or the reference alone, to copy the value)",
            )
        )

    def _value(self, ref: _Ref, where: FieldPath) -> Any:
        """The final value REF points to, from the string at WHERE; a container has every string in it final."""
        if ref.up is None:
            base: FieldPath = ()
        else:
            container = where[:-1]
            if ref.up > len(container):
                raise _Failure(
                    Problem(
                        field_path(where),
                        f"cannot resolve interpolation {ref.text}: it goes above the top of the spec",
                    )
                )
            base = container[: len(container) - ref.up]
        path = base
        node: Any = _get(self.tree, base)
        for key in ref.keys:
            if path in self.pending:
                self._resolve_string(path)
                node = _get(self.tree, path)
            step = _step(node, key)
            if step is None:
                raise _Failure(
                    Problem(
                        field_path(where),
                        f"cannot resolve interpolation {ref.text}: there is no field "
                        + field_path((*path, key)),
                    )
                )
            path = (*path, step)
            node = _get(self.tree, path)
        if path in self.broken:
            raise _Failure(
                Problem(field_path(where), f"{ref.text} refers to {field_path(path)}, which has a problem")
            )
        if path in self.pending:
            self._resolve_string(path)
        elif isinstance(node, dict | list):
            inside = [p for p in self.pending if p[: len(path)] == path]
            for p in inside:
                if p in self.pending:
                    self._resolve_string(p)
        return _get(self.tree, path)


def _step(node: Any, key: str) -> Key | None:
    """The actual key or index KEY names in NODE, or None."""
    if isinstance(node, dict):
        if key in node:
            return key
        if key.isdigit() and int(key) in node:
            return int(key)
        return None
    if isinstance(node, list) and key.isdigit() and int(key) < len(node):
        return int(key)
    return None


def _get(tree: Any, path: FieldPath) -> Any:
    node = tree
    for key in path:
        node = node[key]
    return node


def _set(tree: Any, path: FieldPath, value: Any) -> None:
    _get(tree, path[:-1])[path[-1]] = value
