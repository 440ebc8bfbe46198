"""``rladapt render --explain``: every native key of a render with where its value comes from.

A value comes from a spec field the user wrote (its path), an rladapt default (the field was left unset; the
framework version's own default is shown beside it when they differ, from the adapter's schema snapshot), a patch
(its id) or a ``spec.native.<fw>[i]`` item. A native item that sets a key rladapt also derived is flagged: it
wins, and the derived value is lost. Fields whose default is null ("what the framework does by itself") emit
nothing; they are listed with the key they leave to the framework and that key's own default.

"User wrote it" is pydantic's ``model_fields_set`` followed along the field path: a field the loader never saw
is a default even when its value happens to equal one the user could have written.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from rladapt.compat.schema import Snapshot
    from rladapt.pipeline import Rendered
    from rladapt.plugins import FrameworkAdapter, NativeLaunch, ServiceRole
    from rladapt.primitives import RLJob

Source = Literal["spec", "default", "patch", "native", "adapter", "framework"]

#: Shown where a snapshot has no such key or there is no snapshot of the version.
NO_DEFAULT: Any = type("_NoDefault", (), {"__repr__": lambda self: "<none>"})()


@dataclass(frozen=True)
class Explained:
    """One native key of the render and where its value comes from."""

    key: str
    value: Any
    source: Source
    origin: str
    framework_default: Any = NO_DEFAULT
    flags: tuple[str, ...] = field(default=())

    @property
    def differs(self) -> bool:
        """An rladapt default that is not what the framework version would do by itself."""
        return (
            self.source == "default"
            and self.framework_default is not NO_DEFAULT
            and not _interpolation(self.framework_default)
            and not _same(self.value, self.framework_default)
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "value": self.value, "source": self.source}
        out["origin"] = self.origin
        if self.framework_default is not NO_DEFAULT:
            out["framework_default"] = self.framework_default
        out["differs_from_framework"] = self.differs
        if self.flags:
            out["flags"] = list(self.flags)
        return out


def explain_render(rendered: Rendered) -> list[Explained]:
    """Every native key of ``rendered`` in launch order, then the keys unset fields leave to the framework."""
    native = rendered.native
    snap = rendered.adapter.find_snapshot(native.version)
    entries = list(_entries(native, rendered.adapter))
    derived = {key for key, _, origin in entries if not origin.startswith("spec.native.")}
    passthrough_keys = {key for key, _, origin in entries if origin.startswith("spec.native.")}
    out: list[Explained] = []
    for key, value, origin in entries:
        source, label = _classify(rendered.job, origin)
        flags: list[str] = []
        if source == "native" and key in derived:
            flags.append(f"overrides the value rladapt derived for {key!r}; the derived value is lost")
        elif source != "native" and key in passthrough_keys:
            flags.append(f"overridden by spec.native.{native.framework}")
        out.append(
            Explained(
                key=key,
                value=value,
                source=source,
                origin=label,
                framework_default=_default(snap, key),
                flags=tuple(flags),
            )
        )
    emitted = {e.key for e in out}
    for spec_field, key in _left_to_framework(rendered):
        if key in emitted or (snap is not None and _default(snap, key) is NO_DEFAULT):
            continue  # set after all (a native item), or a key this version does not have
        out.append(
            Explained(
                key=key,
                value=_default(snap, key),
                source="framework",
                origin=f"{spec_field} (unset: not emitted)",
                framework_default=_default(snap, key),
            )
        )
    return out


#: Fields whose default is a name or a place derived from the job (metadata.name), not a training setting: a
#: framework's placeholder there (verl's experiment name "gsm8k") is no behaviour the run loses.
_NAMING_FIELDS = frozenset({"spec.logging.experiment", "spec.logging.project", "spec.checkpoint.dir"})


def differing_defaults(explained: list[Explained], framework: str, version: str) -> list[str]:
    """A note per native key an unset spec field sets to something else than the version's own default."""
    return [
        f"{e.origin} is unset: rladapt's default sets {e.key}={_show(e.value)}, "
        f"{framework} {version}'s own default is {_show(e.framework_default)}"
        for e in explained
        if e.differs and e.origin not in _NAMING_FIELDS
    ]


def format_text(explained: list[Explained], native: NativeLaunch) -> str:
    """One line per key: key = value  <- source, with the framework's default and the flags beside it."""
    lines = [f"# {native.framework} {native.version}: {native.job_name} (explain)"]
    width = max((len(e.key) for e in explained), default=0)
    for e in explained:
        where = {
            "spec": f"spec field {e.origin}",
            "default": f"rladapt default of {e.origin}",
            "patch": f"patch {e.origin}",
            "native": e.origin,
            "adapter": f"rladapt ({e.origin})",
            "framework": f"{native.framework}'s own default; {e.origin}",
        }[e.source]
        line = f"{e.key.ljust(width)} = {_show(e.value)}  <- {where}"
        if e.differs:
            line += f" [{native.framework} {native.version} default: {_show(e.framework_default)}]"
        for flag in e.flags:
            line += f" [!] {flag}"
        lines.append(_one_line(line))
    lines.extend(_one_line(service_line(role)) for role in native.services)
    return "\n".join(lines)


def service_line(role: ServiceRole) -> str:
    """``# service NAME: ARGV (2 CPUs, 1 GPU, 4Gi, restart on-failure, ends with the job)``: one service role."""
    asks = [f"{role.cpus} CPU" + ("s" if role.cpus != 1 else "")]
    if role.gpus:
        asks.append(f"{role.gpus} GPU" + ("s" if role.gpus != 1 else ""))
    if role.memory:
        asks.append(role.memory)
    asks += [f"port {p.name}={p.port}" for p in role.ports]
    asks.append(f"restart {role.restart}")
    asks.append("outlives the job" if role.outlives_job else "ends with the job")
    return f"# service {role.name}: {shlex.join(role.argv)} ({', '.join(asks)})"


# --- where a key comes from ----------------------------------------------------------------------------------


def _classify(job: RLJob, origin: str) -> tuple[Source, str]:
    if origin.startswith("patch "):
        return "patch", origin.removeprefix("patch ")
    if origin.startswith("spec.native."):
        return "native", origin
    if origin.startswith("spec."):
        return ("spec" if is_set(job, origin) else "default"), origin
    return "adapter", origin or "derived"


def is_set(job: RLJob, path: str) -> bool:
    """Whether the user wrote the field at ``path`` (``spec.a.b``, aliases as written, ``[i]`` ignored)."""
    node: Any = job
    parts = path.split(".")
    for part in parts:
        part = part.split("[", 1)[0]
        if not isinstance(node, BaseModel):
            return True  # below a mapping or list the user wrote
        name = _field_name(type(node), part)
        if name is None or name not in node.model_fields_set:
            return False
        node = getattr(node, name)
    return True


def _field_name(model: type[BaseModel], part: str) -> str | None:
    for name, info in model.model_fields.items():
        if part in (name, info.alias):
            return name
    return None


def _default(snap: Snapshot | None, key: str) -> Any:
    if snap is None:
        return NO_DEFAULT
    spec = snap.get(key)
    return NO_DEFAULT if spec is None else spec.default


def _left_to_framework(rendered: Rendered) -> Iterator[tuple[str, str]]:
    """(spec field, native key) for each unset null-default field the adapter leaves to the framework."""
    keys = rendered.adapter.framework_default_keys(rendered.job, rendered.version.version)
    if keys is None:
        return
    for spec_field, native_keys in keys.items():
        # a label that is no field path (it holds a space) names a setting the framework defines: always listed
        if " " not in spec_field and is_set(rendered.job, spec_field):
            continue
        for key in native_keys:
            yield spec_field, key


# --- the native keys of a launch: the adapter's reading ---------------------------------------------------------


def _entries(native: NativeLaunch, adapter: FrameworkAdapter) -> Iterator[tuple[str, Any, str]]:
    """(native key, value, origin) in launch order; origin is the spec field, ``patch X`` or spec.native item."""
    found = adapter.explain_entries(native)
    if found is None:  # an adapter that does not read its launches back: what it recorded
        found = ((key, NO_DEFAULT, origin) for key, origin in native.origins.items())
    yield from found


def _interpolation(value: Any) -> bool:
    """An OmegaConf interpolation (``${policy.model_name}``): its value depends on other keys, not judged here."""
    return isinstance(value, str) and "${" in value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _show(value: Any) -> str:
    import json

    if value is NO_DEFAULT:
        return "<none>"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
