"""Helpers the built-in adapters share: Hydra passthrough, override notes, upload excludes.

The framework-independent parts of a NativeLaunch (placement, ports, volumes, secrets, resume point) live in
``rladapt.plugins.native`` so that external adapters get them through ``NativeLaunch.from_job``; they are
re-exported here for the built-ins.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rladapt.compat.schema._values import UNKNOWN
from rladapt.compat.schema._values import hydra_value as read_hydra_value
from rladapt.plugins.native import placement, pools, ports, resume, secrets, volumes
from rladapt.primitives.errors import Problem, SpecError, UsageError, quote

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch
    from rladapt.primitives import RLJob

__all__ = [
    "WEIGHT_EXCLUDES",
    "hydra_native_value",
    "hydra_passthrough",
    "hydra_value",
    "override_notes",
    "placement",
    "pools",
    "ports",
    "resume",
    "secrets",
    "volumes",
]


#: Files Ray must never upload with a job's working dir: weights and data sets (verl issue 696,
#: HTTPRequestEntityTooLarge). Each adapter adds its own framework's output folders.
WEIGHT_EXCLUDES: tuple[str, ...] = (
    "*.safetensors",
    "*.bin",
    "*.pt",
    "*.pth",
    "*.ckpt",
    "*.gguf",
    "*.parquet",
    "*.arrow",
)


# Hydra's override grammar, as far as a passthrough item must follow it: an optional +, ++ or ~, a dotted key
# (config-group paths may hold / and @), and an optional =value.
_HYDRA_OVERRIDE = re.compile(r"(?:~|\+{1,2})?[A-Za-z_][A-Za-z0-9_.\-@/]*(?:=.*)?", re.S)


def hydra_passthrough(job: RLJob, framework: str) -> list[str]:
    """``spec.native.<framework>`` for a Hydra-configured framework: each item must be a Hydra override."""
    items = list(job.spec.native.get(framework, []))
    bad = [
        Problem(
            f"spec.native.{framework}[{i}]",
            "not a Hydra override",
            "KEY=VALUE, +KEY=VALUE, ++KEY=VALUE or ~KEY",
            item,
        )
        for i, item in enumerate(items)
        if not _HYDRA_OVERRIDE.fullmatch(item)
    ]
    if bad:
        raise SpecError(bad)
    return items


def hydra_native_value(job: RLJob, framework: str, key: str) -> str | None:
    """The text ``spec.native.<framework>`` sets ``key`` to (its last item for that key, as the framework applies
    them in order); None when no item sets it, or the last one deletes it or sets it to null."""
    found: str | None = None
    for item in job.spec.native.get(framework, []):
        lhs, sep, rhs = item.partition("=")
        if lhs.lstrip("+~") != key:
            continue
        value = override_value(lhs, sep, rhs)
        found = None if value is None or value == DELETED else str(value)
    return found


def override_notes(
    framework: str, passthrough: Iterable[tuple[int, str]], generated: Iterable[str]
) -> list[str]:
    """Notes for escape-hatch items that replace a value rladapt derived from the spec.

    The escape hatch may override anything (that is what it is for), but never silently: the render and the
    dry run say which derived value lost. ``passthrough`` holds (index in spec.native.<framework>, key);
    ``generated`` the ``key=value`` (or ``--flag[=value]``) items rladapt emitted.
    """
    derived: dict[str, str] = {}
    for item in generated:
        derived.setdefault(item.split("=", 1)[0].lstrip("+~"), item)
    return [
        f"spec.native.{framework}[{i}] overrides {derived[key]!r}, which rladapt derived from the spec"
        for i, key in passthrough
        if key in derived
    ]


#: A Hydra override value that needs no quotes (Hydra's grammar reads it back as this very string).
_BARE = re.compile(r"^[A-Za-z0-9_./\-:~+@%]+\Z")


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar (quoted when it would otherwise parse as something else): the
    verl and NeMo-RL launches and their imports write overrides with it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    if _BARE.match(text) and not _looks_typed(text):
        return text
    return "'" + _QUOTE_ESCAPES.sub(_escaped, text) + "'"


#: Inside a quoted Hydra value a backslash escapes only in a run of them before a quote or the closing quote
#: (hydra 1.3 grammar/OverrideLexer.g4 QUOTED_VALUE, core/override_parser/overrides_visitor.py
#: _unescape_quoted_string): elsewhere it is literal, so a Jinja chat template's ``\n`` must stay one backslash.
#: Such a run is doubled, and the quote gets one backslash of its own.
_QUOTE_ESCAPES = re.compile(r"(\\*)'|(\\+)\Z")


def _escaped(match: re.Match[str]) -> str:
    before_quote, at_end = match.group(1), match.group(2)
    return before_quote * 2 + "\\'" if before_quote is not None else at_end * 2


def _looks_typed(text: str) -> bool:
    if text.lower() in {"true", "false", "null", "inf", "-inf", "nan"}:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def working_dir_runtime_env(
    job: RLJob, excludes: Iterable[str], outputs: Iterable[str | None] = ()
) -> dict[str, Any]:
    """Ray's runtime_env for a job shipped as its working directory: ``excludes`` (gitignore-style, from the
    working directory) plus the checkpoint directory and the ``outputs`` (the launch's own TensorBoard location)
    when they lie inside it, and the spec's environment."""
    out = list(excludes)
    ck = job.checkpoint_dir
    if not ck.startswith("/"):
        out.append("/" + ck.strip("/").removeprefix("./") + "/")
    out += [f"/{inside}/" for inside in map(inside_working_dir, outputs) if inside]
    env: dict[str, Any] = {"working_dir": job.spec.runtime.working_dir, "excludes": list(dict.fromkeys(out))}
    if job.spec.env:
        env["env_vars"] = dict(job.spec.env)
    return env


def inside_working_dir(path: str | None) -> str | None:
    """``path`` normalized, when it is relative and stays inside the job's working directory; else None."""
    if not path or path.startswith("/"):
        return None
    norm = posixpath.normpath(path)
    return None if norm in (".", "..") or norm.startswith("../") else norm


# --- Hydra overrides as explain and upgrade read them (verl's argv, NeMo-RL's overrides) ------------------------

#: What a Hydra ``~key`` override sets: the key is taken out of the config.
DELETED = "<deleted>"


def override_value(lhs: str, sep: str, rhs: str) -> Any:
    """A Hydra override's value as the framework reads it; its text where the reader cannot tell (an interpolation)."""
    if lhs.startswith("~"):
        return DELETED
    if not sep:
        return None
    value = read_hydra_value(rhs)
    return rhs if value is UNKNOWN else value


def hydra_entries(items: Iterable[str], native: NativeLaunch) -> Iterator[tuple[str, Any, str]]:
    """(key, value, origin) of Hydra overrides ``items`` for ``render --explain``: a ``spec.native`` item names
    its index, any other the spec field the adapter recorded."""
    fw = native.framework
    passthrough = list(native.passthrough)
    for item in items:
        lhs, sep, rhs = item.partition("=")
        key = lhs.lstrip("+~")
        value: Any = read_hydra_value(rhs) if sep else ("<deleted>" if lhs.startswith("~") else None)
        if value is UNKNOWN:
            value = rhs
        if item in passthrough:
            origin = f"spec.native.{fw}[{passthrough.index(item)}]"
        else:
            origin = native.origins.get(key, "")
        yield key, value, origin


@dataclass(frozen=True)
class HydraItem:
    """One Hydra override: ``op`` is ``set`` (k=v), ``add`` (+k=v), ``force`` (++k=v) or ``delete`` (~k[=v])."""

    op: str
    key: str
    text: str  # the right-hand side as written ('' for a bare delete)
    item: str  # the whole override as written

    @property
    def value(self) -> Any:
        parsed = read_hydra_value(self.text)
        return self.text if parsed is UNKNOWN else parsed


def hydra_item(item: str, where: str) -> HydraItem:
    key, sep, text = item.partition("=")
    if key.startswith("++"):
        op, key = "force", key[2:]
    elif key.startswith("+"):
        op, key = "add", key[1:]
    elif key.startswith("~"):
        op, key = "delete", key[1:]
    else:
        op = "set"
    if not key or (op != "delete" and not sep):
        raise UsageError(
            f"{where}: {quote(item)} is not a Hydra override; expected KEY=VALUE, +KEY=VALUE or ~KEY"
        )
    return HydraItem(op=op, key=key.strip(), text=text, item=item)
