"""Load an RLJob: YAML -> dotlist overrides -> interpolation -> typed model -> cross-field rules.

Every stage returns a new value. All problems of a file are collected and raised together as one ``SpecError``.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from .errors import Problem, SpecError, UsageError
from .spec import RLJob
from .validation import check_job

# PyYAML follows YAML 1.1, where `1e-6` is a string; every RL config has learning rates written that way.
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 floats and duplicate keys rejected (a duplicate silently wins in PyYAML)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


_SpecLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def parse_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_SpecLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise SpecError([Problem("", f"malformed YAML at {where}: {exc.problem}")], source) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem("", f"malformed YAML: {exc}")], source) from None


_ENV_RESOLVER = re.compile(r"\$\{\s*oc\.env\s*:")


def apply_overrides(data: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    """Apply Hydra-style ``key=value`` overrides and resolve ``${...}`` interpolation; returns a new plain dict.

    Keys are dotted paths; list elements are addressed by index (``spec.placement.pools.0.nodes=2``). Values are
    YAML, read like the spec file itself.
    """
    parsed: list[tuple[str, str, Any]] = []
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"override {item!r}: expected KEY=VALUE, e.g. spec.training.global_batch=128")
        try:
            value = yaml.load(text, Loader=_SpecLoader) if text.strip() else ""
        except yaml.YAMLError as exc:
            reason = str(getattr(exc, "problem", None) or exc).splitlines()[0]
            raise UsageError(f"override {item!r}: the value is not valid YAML ({reason})") from None
        parsed.append((item, key, value))
    if _ENV_RESOLVER.search(repr(data)) or any(_ENV_RESOLVER.search(item) for item in overrides):
        # ${oc.env:...} would copy a value of this shell into every rendered file and run record
        raise SpecError(
            [
                Problem(
                    "",
                    "${oc.env:...} interpolation is not allowed",
                    "spec.secrets (by reference) or spec.env with the value itself",
                    "${oc.env:...}",
                )
            ],
            source,
        )
    if not parsed and "${" not in repr(data):
        return data  # nothing to do: skip importing OmegaConf (a fifth of the CLI's start-up time)
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        conf: Any = OmegaConf.create(data)
    except OmegaConfBaseException as exc:
        raise SpecError([Problem("", f"cannot read the spec: {str(exc).splitlines()[0]}")], source) from None
    for item, key, value in parsed:
        try:
            OmegaConf.update(conf, key, value, merge=True, force_add=True)
        except (OmegaConfBaseException, ValueError, IndexError, KeyError, TypeError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UsageError(f"override {item!r}: cannot set {key}: {reason}") from None
    try:
        resolved = OmegaConf.to_container(conf, resolve=True)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or ""
        msg = str(exc).splitlines()[0]
        raise SpecError([Problem(str(key), f"cannot resolve interpolation: {msg}")], source) from None
    assert isinstance(resolved, dict)
    return typing.cast(dict[str, Any], resolved)


def load_job(path: str | Path, overrides: list[str] | None = None) -> RLJob:
    """Read a spec file (``-`` is not supported: specs are files that belong in version control)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"spec file {str(path)!r} does not exist") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read spec file {str(path)!r}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"cannot read spec file {str(path)!r}: {exc.strerror or exc}") from None
    return load_job_text(text, overrides or [], source=str(path))


def load_job_text(text: str, overrides: list[str], source: str = "<spec>") -> RLJob:
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


def _format_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


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


def _found(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def problems_from_validation(exc: ValidationError) -> list[Problem]:
    merged: dict[str, Problem] = {}
    order: list[str] = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not _is_union_tag(p))
        path = _format_path(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            known = _known_keys(loc)
            hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
            msg = f"unknown key {str(loc[-1])!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
            problem = Problem(path, msg, expected="one of " + ", ".join(known))
        elif kind == "missing":
            problem = Problem(path, "required key is missing")
        elif kind == "value_error":
            problem = Problem(
                path,
                "invalid value",
                expected=str(err.get("ctx", {}).get("error", err["msg"])),
                found=_found(err.get("input")),
            )
        else:
            expected = err["msg"].removeprefix("Input should be ").removeprefix("Value should be ")
            problem = Problem(path, "wrong value", expected=expected, found=_found(err.get("input")))
        if path in merged and kind != "extra_forbidden":
            old = merged[path]
            if problem.expected and old.expected and problem.expected not in old.expected:
                merged[path] = Problem(path, old.message, f"{old.expected} or {problem.expected}", old.found)
            continue
        if path not in merged:
            order.append(path)
        merged[path] = problem
    return [merged[p] for p in order]
