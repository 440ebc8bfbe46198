"""Load an RLJob: bytes -> YAML -> dotlist overrides -> interpolation -> typed model -> cross-field rules.

Every stage returns a new value. All problems of a file are collected and raised together as one ``SpecError``.

Input is bounded before the expensive stages, so a hostile or mistaken spec is refused in milliseconds rather
than parsed for a minute (a 50 MB list of paths took 48 s and 832 MiB): a spec file, and each override value,
is at most ``MAX_SPEC_BYTES``; while YAML is composed, nesting stops at ``MAX_DEPTH`` levels, a list or
mapping at ``MAX_ENTRIES`` entries and the document at ``MAX_NODES`` values, aliases counted where they are
used; an alias inside its own anchor (``&a [*a]``) is refused. libyaml scans the text where PyYAML has it;
the composer that enforces the limits is always the Python one. A string holding a lone surrogate (``"\\ud800"``,
which no file or terminal can encode) is refused with its field path.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from . import _interpolation
from .errors import Problem, SpecError, UsageError, field_path, quote
from .spec import RLJob
from .validation import check_job

#: Largest spec file (and override value), in bytes. Real specs are a few KiB; a list of 10,000 data paths
#: fits in well under a MiB.
MAX_SPEC_BYTES = 4 * 1024 * 1024
#: Most entries in one list or mapping.
MAX_ENTRIES = 10_000
#: Most values in one document, counting an alias each time it is used (so ``&a [...]`` used 1,000 times
#: counts its entries 1,000 times: the classic "billion laughs" expansion is refused, not built).
MAX_NODES = 100_000
#: Deepest nesting of lists and mappings; the spec's own fields go 6 levels deep.
MAX_DEPTH = 32

# PyYAML follows YAML 1.1, where `1e-6` is a string; every RL config has learning rates written that way.
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)

_Key = str | int


class _Refused(Exception):
    """Input over a limit or impossible to represent, found at PATH (inside the document or override value)."""

    def __init__(self, path: tuple[_Key, ...], message: str, expected: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.expected = expected

    def problem(self, prefix: tuple[_Key, ...] = ()) -> Problem:
        return Problem(field_path((*prefix, *self.path)), self.message, self.expected)


class _Bounded(yaml.composer.Composer, yaml.constructor.SafeConstructor):
    """PyYAML's composer and safe constructor with duplicate keys rejected (a duplicate silently wins in
    PyYAML) and the composition bounded: the composer recurses once per nesting level and follows an alias into
    the node that holds it, so unbounded input is a RecursionError or an object that contains itself.
    """

    _path: list[_Key]
    _open_anchors: set[str]
    _nodes: int

    def _start_bounds(self) -> None:
        self._path = []
        self._open_anchors = set()
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if isinstance(parent, yaml.SequenceNode):
            key: _Key = len(parent.value)
        elif isinstance(parent, yaml.MappingNode):
            key = str(index.value) if isinstance(index, yaml.ScalarNode) else "<key>"
        else:
            key = ""
        # a mapping's key is composed with index None: each key starts an entry
        entries = len(parent.value) if isinstance(parent, yaml.CollectionNode) else 0
        starts_entry = isinstance(parent, yaml.SequenceNode) or index is None
        if starts_entry and entries >= MAX_ENTRIES:
            raise _Refused(
                tuple(self._path),
                f"more than {MAX_ENTRIES} entries (the limit on a list or mapping)",
                f"at most {MAX_ENTRIES} entries",
            )
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _Refused(
                tuple(self._path),
                f"the spec holds more than {MAX_NODES} values (the limit on a spec)",
                f"at most {MAX_NODES} values, aliases counted where they are used",
            )
        if parent is not None:
            self._path.append(key)
        try:
            if len(self._path) > MAX_DEPTH:
                raise _Refused(
                    tuple(self._path[:MAX_DEPTH]),
                    f"nested more than {MAX_DEPTH} levels deep (the limit on a spec)",
                    f"at most {MAX_DEPTH} levels of lists and mappings",
                )
            event = self.peek_event()  # type: ignore[attr-defined]  # the parser's, beside it in the bases
            if isinstance(event, yaml.AliasEvent) and event.anchor in self._open_anchors:
                raise _Refused(
                    tuple(self._path),
                    f"the alias *{event.anchor} is inside its own anchor &{event.anchor}",
                    "an alias to a value defined before it, not one that contains it",
                )
            anchor = None if isinstance(event, yaml.AliasEvent) else event.anchor
            if anchor is not None:
                self._open_anchors.add(anchor)
            try:
                return super().compose_node(parent, index)
            finally:
                if anchor is not None:
                    self._open_anchors.discard(anchor)
        finally:
            if parent is not None:
                self._path.pop()

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base`: its keys may be overridden by the mapping's own (flatten_mapping)
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # a list or mapping as a key; SafeConstructor says so below, with the position
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {quote(key)}",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


class _SpecLoader(_Bounded, yaml.SafeLoader):
    """The bounded loader on PyYAML's pure-Python scanner and parser: slow (about a microsecond a character),
    but it reads everything YAML allows, so its problems name the field."""

    def __init__(self, stream: str) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._start_bounds()


_FastSpecLoader: type[_Bounded] | None = None
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _LibyamlSpecLoader(_Bounded, CParser, yaml.resolver.Resolver):
        """The bounded loader on libyaml's scanner and parser, some hundred times faster. libyaml gives the
        composer the same events (yaml/_yaml.pyx, PyYAML 6.0.4: CParser's check_event/peek_event/get_event),
        and _Bounded comes first among the bases, so CParser's own composer (in C, unbounded) is never used.
        """

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._start_bounds()

    _FastSpecLoader = _LibyamlSpecLoader

for _loader in (_SpecLoader, _FastSpecLoader):
    if _loader is not None:
        _loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))  # type: ignore[attr-defined]


def _load_yaml(text: str) -> Any:
    """TEXT as plain data, checked against the limits; raises yaml.YAMLError or _Refused."""
    if _FastSpecLoader is not None:
        try:
            return _load_with(_FastSpecLoader, text)
        except yaml.YAMLError:
            # libyaml refuses some text PyYAML reads (a "\\ud800" escape, nesting past its own limit), and says
            # where in the text, not which field: the pure-Python parser has the last word on bad input.
            pass
    return _load_with(_SpecLoader, text)


def _load_with(kind: type[_Bounded], text: str) -> Any:
    loader: Any = kind(text)  # type: ignore[call-arg]
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    return _plain(data, [], [0])


def _plain(node: Any, path: list[_Key], count: list[int]) -> Any:
    """A copy of NODE with every alias expanded (so an override changes one place), within the limits.

    Merge keys (``<<: [*a, *b]``) can make a mapping bigger than any written in the file, and aliases nest
    anchored values deeper than they were written: both are checked here, on the values built.
    """
    count[0] += 1
    if count[0] > MAX_NODES:
        raise _Refused(
            tuple(path),
            f"the spec holds more than {MAX_NODES} values (the limit on a spec)",
            f"at most {MAX_NODES} values, aliases counted where they are used",
        )
    if isinstance(node, str):
        _check_text(node, path)
        return node
    if not isinstance(node, dict | list):
        return node
    if len(path) >= MAX_DEPTH:
        raise _Refused(
            tuple(path),
            f"nested more than {MAX_DEPTH} levels deep (the limit on a spec)",
            f"at most {MAX_DEPTH} levels of lists and mappings",
        )
    if len(node) > MAX_ENTRIES:
        raise _Refused(
            tuple(path),
            f"{len(node)} entries, more than {MAX_ENTRIES} (the limit on a list or mapping)",
            f"at most {MAX_ENTRIES} entries",
        )
    if isinstance(node, list):
        return [_plain(item, [*path, i], count) for i, item in enumerate(node)]
    out: dict[Any, Any] = {}
    for key, value in node.items():
        if isinstance(key, str):
            _check_text(key, [*path, key])
        out[key] = _plain(value, [*path, key], count)
    return out


def _check_text(text: str, path: list[_Key]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A lone surrogate ("\ud800" in YAML): valid in a Python str, but no file, pipe or terminal can hold it.
        raise _Refused(
            tuple(path),
            f"text holds {quote(text[exc.start : exc.end])}, a lone UTF-16 surrogate that cannot be written",
            "Unicode text (a surrogate pair is written as one \\U escape)",
        ) from None


def parse_yaml(text: str, source: str) -> Any:
    try:
        return _load_yaml(text)
    except _Refused as exc:
        raise SpecError([exc.problem()], source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise SpecError([Problem("", f"malformed YAML at {where}: {exc.problem}")], source) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem("", f"malformed YAML: {exc}")], source) from None
    except ValueError as exc:  # an integer of more than 4300 digits (Python's int() limit)
        raise SpecError([Problem("", f"malformed YAML: {exc}")], source) from None


def _too_big(size: int | None, what: str) -> Problem:
    """SIZE None: not known (a pipe is read only up to the limit)."""
    how_big = f"is {size} bytes, larger" if size is not None else "is larger"
    return Problem(
        "",
        f"{what} {how_big} than the limit of {MAX_SPEC_BYTES // (1024 * 1024)} MiB on a spec",
        f"at most {MAX_SPEC_BYTES} bytes",
    )


@dataclass(frozen=True)
class _Override:
    item: str
    keys: tuple[str, ...]
    value: Any


def _parse_override(item: str) -> _Override:
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"override {quote(item)}: expected KEY=VALUE, e.g. spec.training.global_batch=128")
    keys = tuple(re.sub(r"\[([0-9]+)\]", r".\1", key).split("."))
    bad = next((k for k in keys if not k or not _plain_key(k)), None)
    if bad is not None:
        raise UsageError(
            f"override {quote(item)}: the key {quote(key)} is not a dotted path of names and list indices"
            ", e.g. spec.placement.pools.0.nodes"
        )
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES:
        raise UsageError(f"override {quote(item[:40])}: {_too_big(len(text), 'the value')}")
    try:
        value = _load_yaml(text) if text.strip() else ""
    except _Refused as exc:
        raise UsageError(f"override {quote(item)}: the value is refused: {exc.problem(keys)}") from None
    except (yaml.YAMLError, ValueError) as exc:
        reason = str(getattr(exc, "problem", None) or exc).splitlines()[0]
        raise UsageError(
            f"override {quote(item)}: the value is not valid YAML ({quote(reason, 200)[1:-1]})"
        ) from None
    return _Override(item, keys, value)


def _plain_key(key: str) -> bool:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return key.isprintable()


def _apply(data: dict[str, Any], override: _Override) -> None:
    """Set one override in DATA (a fresh tree): mappings on the way are made, list indices must exist, and a
    mapping value is merged into a mapping already there (as Hydra and ``OmegaConf.update(merge=True)`` do).
    """
    node: Any = data
    done: list[_Key] = []
    for i, part in enumerate(override.keys):
        last = i == len(override.keys) - 1
        if isinstance(node, dict):
            key: _Key = part
            if part not in node and part.isdigit() and int(part) in node:
                key = int(part)
            if last:
                node[key] = _merged(node.get(key), override.value)
                return
            if not isinstance(node.get(key), dict | list):
                node[key] = {}
        elif isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                where = field_path(done) or "the spec"
                raise UsageError(
                    f"override {quote(override.item)}: cannot set {'.'.join(override.keys)}: {where} is a list "
                    f"of {len(node)}, and {quote(part)} is not one of its indices (0 to {len(node) - 1})"
                )
            key = int(part)
            if last:
                node[key] = _merged(node[key], override.value)
                return
            if not isinstance(node[key], dict | list):
                node[key] = {}
        node = node[key]
        done.append(key)


def _merged(old: Any, new: Any) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            out[key] = _merged(old.get(key), value)
        return out
    return new


def apply_overrides(data: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    """Apply Hydra-style ``key=value`` overrides and resolve ``${...}`` interpolation; returns a new plain dict.

    Keys are dotted paths; list elements are addressed by index (``spec.placement.pools.0.nodes=2``). Values are
    YAML, read like the spec file itself and within the same limits. Interpolation is resolved afterwards, in
    the file and the override values alike (see ``_interpolation``: references to fields of the spec only).
    """
    parsed = [_parse_override(item) for item in overrides]
    try:
        tree = _plain(data, [], [0])
        for override in parsed:
            _apply(tree, override)
        if parsed:
            _plain(tree, [], [0])  # the limits hold for the spec as overridden, not only for each part
    except _Refused as exc:
        raise SpecError([exc.problem()], source) from None
    resolved, problems = _interpolation.resolve(tree)
    if problems:
        raise SpecError(problems, source)
    return resolved


def read_spec_text(path: str | Path) -> str:
    """The text of a spec file, read once (a pipe such as ``<(cat job.yaml)`` has nothing the second time).

    At most ``MAX_SPEC_BYTES`` are read: a larger file is refused without reading the rest.
    """
    try:
        with open(path, "rb") as stream:
            info = os.fstat(stream.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > MAX_SPEC_BYTES:
                raise SpecError([_too_big(info.st_size, "the spec file")], str(path))
            chunks: list[bytes] = []
            got = 0
            # in chunks: one read(MAX_SPEC_BYTES + 1) would allocate the whole limit for every small spec
            while got <= MAX_SPEC_BYTES and (chunk := stream.read(1 << 16)):
                chunks.append(chunk)
                got += len(chunk)
            data = b"".join(chunks)
    except FileNotFoundError:
        raise UsageError(f"spec file {quote(str(path))} does not exist") from None
    except OSError as exc:
        raise UsageError(f"cannot read spec file {quote(str(path))}: {exc.strerror or exc}") from None
    if len(data) > MAX_SPEC_BYTES:  # a pipe, or a file that grew while it was read
        raise SpecError([_too_big(None, "the spec file")], str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read spec file {quote(str(path))}: not UTF-8 text ({exc.reason})") from None


def load_job(path: str | Path, overrides: list[str] | None = None, *, text: str | None = None) -> RLJob:
    """Read a spec file (``-`` is not supported: specs are files that belong in version control).

    ``text`` is the file's text when the caller has read it already (``read_spec_text``), e.g. to hash exactly
    what was loaded.
    """
    if text is None:
        text = read_spec_text(path)
    return load_job_text(text, overrides or [], source=str(path))


def load_job_text(text: str, overrides: list[str], source: str = "<spec>") -> RLJob:
    if len(text) > MAX_SPEC_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES:
        raise SpecError([_too_big(len(text.encode("utf-8", "surrogatepass")), "the spec")], source)
    raw = parse_yaml(text, source)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(
            [
                Problem(
                    "", "the spec must be a mapping", "apiVersion, kind, metadata, spec", type(raw).__name__
                )
            ],
            source,
        )
    data = apply_overrides(raw, overrides, source)
    return validate_data(data, source)


def validate_data(data: dict[str, Any], source: str = "<spec>") -> RLJob:
    try:
        job = RLJob.model_validate(data)
    except ValidationError as exc:
        raise SpecError(problems_from_validation(exc), source) from None
    problems = check_job(job)
    if problems:
        raise SpecError(problems, source)
    return job


# --- turning pydantic errors into Problems -------------------------------------------------------------------


def _is_union_tag(part: object) -> bool:
    return isinstance(part, str) and ("[" in part or part.startswith("function-") or part in {"str", "int"})


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes an annotation may hold (through Optional, list, dict values)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _unwrap(arg)]
    if origin in (list, tuple):
        return [m for arg in get_args(annotation) for m in _unwrap(arg)]
    if origin is dict:
        args = get_args(annotation)
        return _unwrap(args[1]) if len(args) == 2 else []
    if origin is typing.Annotated:
        return _unwrap(get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """Keys allowed at the mapping that holds ``loc[-1]``."""
    models: list[type[BaseModel]] = [RLJob]
    for part in loc[:-1]:
        if isinstance(part, int) or _is_union_tag(part):
            continue
        nxt: list[type[BaseModel]] = []
        for model in models:
            for name, field in model.model_fields.items():
                if part in (name, field.alias):
                    nxt.extend(_unwrap(field.annotation))
        if nxt:
            models = nxt
    return sorted({field.alias or name for model in models for name, field in model.model_fields.items()})


def problems_from_validation(exc: ValidationError) -> list[Problem]:
    merged: dict[str, Problem] = {}
    order: list[str] = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not _is_union_tag(p))
        path = field_path(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            known = _known_keys(loc)
            hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
            msg = f"unknown key {quote(str(loc[-1]))}" + (
                f" (did you mean {quote(hint[0])}?)" if hint else ""
            )
            problem = Problem(path, msg, expected="one of " + ", ".join(known))
        elif kind == "missing":
            problem = Problem(path, "required key is missing")
        elif kind == "value_error":
            problem = Problem(
                path,
                "invalid value",
                expected=str(err.get("ctx", {}).get("error", err["msg"])),
                found=quote(err.get("input")),
            )
        else:
            expected = err["msg"].removeprefix("Input should be ").removeprefix("Value should be ")
            problem = Problem(path, "wrong value", expected=expected, found=quote(err.get("input")))
        if path in merged and kind != "extra_forbidden":
            old = merged[path]
            if problem.expected and old.expected and problem.expected not in old.expected:
                merged[path] = Problem(path, old.message, f"{old.expected} or {problem.expected}", old.found)
            continue
        if path not in merged:
            order.append(path)
        merged[path] = problem
    return [merged[p] for p in order]
