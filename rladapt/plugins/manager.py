"""Loading plugins: entry points of group ``rladapt`` first, then the built-ins (as tox 4 does).

A plugin that fails to import, or whose hook raises, is recorded in ``Registry.broken`` and skipped; it never
breaks the other frameworks. ``RLADAPT_BLOCK_PLUGINS`` (comma-separated plugin names) blocks plugins, built-in
ones included.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar

import pluggy

from rladapt.primitives.errors import PluginError, UsageError

from . import hookspecs
from .adapter import FrameworkAdapter
from .launcher import Launcher
from .patches import Patch

ENTRY_POINT_GROUP = "rladapt"
BLOCK_ENV = "RLADAPT_BLOCK_PLUGINS"

#: Built-in plugins: name -> module. Registered after external ones, so external hook implementations run first.
BUILTIN_PLUGINS: dict[str, str] = {
    "verl": "rladapt.adapters.verl",
    "openrlhf": "rladapt.adapters.openrlhf",
    "nemo-rl": "rladapt.adapters.nemo_rl",
    "local": "rladapt.launchers.local",
    "ray": "rladapt.launchers.ray",
    "slurm": "rladapt.launchers.slurm",
    "kubernetes": "rladapt.launchers.kubernetes",
}

T = TypeVar("T")


@dataclass(frozen=True)
class BrokenPlugin:
    name: str
    error: str


@dataclass(frozen=True)
class Registered(Generic[T]):
    obj: T
    plugin: str


@dataclass
class Registry:
    """Everything the loaded plugins registered, by unique name."""

    pm: pluggy.PluginManager
    frameworks: dict[str, Registered[FrameworkAdapter]] = field(default_factory=dict)
    launchers: dict[str, Registered[Launcher]] = field(default_factory=dict)
    patches: dict[str, Registered[Patch]] = field(default_factory=dict)
    broken: list[BrokenPlugin] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    conflicts: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)

    def framework(self, name: str) -> FrameworkAdapter:
        return self._get("framework", name, self.frameworks).obj

    def launcher(self, name: str) -> Launcher:
        return self._get("launcher", name, self.launchers).obj

    def patches_for(self, framework: str, version: str) -> list[Patch]:
        return [r.obj for r in self.patches.values() if r.obj.applies_to(framework, version)]

    def _get(self, kind: str, name: str, table: dict[str, Registered[T]]) -> Registered[T]:
        owners = self.conflicts.get((kind, name))
        if owners:
            raise PluginError(
                f"{kind} {name!r} is registered by more than one plugin: {', '.join(owners)}; "
                f"block one with {BLOCK_ENV}"
            )
        if name in table:
            return table[name]
        broken = [b for b in self.broken if b.name == name]
        if broken:
            raise PluginError(f"{kind} {name!r} is unavailable: plugin {name!r} is broken: {broken[0].error}")
        if name in self.blocked:
            raise UsageError(f"{kind} {name!r} is blocked by {BLOCK_ENV}")
        import difflib

        hint = difflib.get_close_matches(name, list(table), n=1)
        known = ", ".join(sorted(table)) or "none"
        raise UsageError(
            f"unknown {kind} {name!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + f"; expected one of: {known}"
        )

    # --- chain hooks ---------------------------------------------------------------------------------------

    def chain(self, hook_name: str, value: Any, **kwargs: Any) -> Any:
        """Call every implementation of a modify hook in order, threading ``value`` through."""
        hook = getattr(self.pm.hook, hook_name)
        arg = next(iter(hook.spec.argnames))
        for impl in reversed(hook.get_hookimpls()):  # pluggy calls last-registered first; keep that order
            result = _call_plugin(self.pm.get_name(impl.plugin) or "?", impl.function, {arg: value, **kwargs})
            if result is not None:
                value = result
        return value

    def collect(self, hook_name: str, **kwargs: Any) -> list[Any]:
        hook = getattr(self.pm.hook, hook_name)
        out: list[Any] = []
        for impl in reversed(hook.get_hookimpls()):
            out.extend(_call_plugin(self.pm.get_name(impl.plugin) or "?", impl.function, kwargs) or [])
        return out


def _call_plugin(name: str, function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    try:
        return function(**{k: v for k, v in kwargs.items() if k in function.__code__.co_varnames})
    except Exception as exc:  # a policy plugin that raises must name itself
        if hasattr(exc, "exit_code"):
            raise
        raise PluginError(f"plugin {name!r} raised {type(exc).__name__}: {exc}") from exc


def _blocked_names() -> set[str]:
    return {n.strip() for n in os.environ.get(BLOCK_ENV, "").split(",") if n.strip()}


def _load_module(name: str, loader: Callable[[], Any], registry: Registry) -> Any | None:
    try:
        return loader()
    except Exception as exc:  # any import-time failure of a plugin is reported, never fatal
        registry.broken.append(BrokenPlugin(name, f"{type(exc).__name__}: {exc}"))
        return None


def load_registry(
    builtins: dict[str, str] | None = None,
    extra: Iterable[tuple[str, object]] = (),
    use_entry_points: bool = True,
) -> Registry:
    """Build a fresh Registry. ``extra`` registers (name, plugin object) pairs directly, e.g. in tests."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    registry = Registry(pm=pm)
    blocked = _blocked_names()

    def register(name: str, plugin: object) -> None:
        if name in blocked:
            registry.blocked.append(name)
            return
        try:
            pm.register(plugin, name=name)
            registry.plugins.append(name)
        except Exception as exc:  # e.g. a hook implementation whose signature does not match the spec
            registry.broken.append(BrokenPlugin(name, f"{type(exc).__name__}: {exc}"))

    if use_entry_points:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in blocked:
                registry.blocked.append(ep.name)
                continue
            plugin = _load_module(ep.name, ep.load, registry)
            if plugin is not None:
                register(ep.name, plugin)
    for name, plugin in extra:
        register(name, plugin)
    for name, module in (BUILTIN_PLUGINS if builtins is None else builtins).items():
        if name in blocked:
            registry.blocked.append(name)
            continue
        loaded: ModuleType | None = _load_module(name, partial(importlib.import_module, module), registry)
        if loaded is not None:
            register(name, loaded)

    _collect(
        registry,
        "framework",
        "rladapt_register_frameworks",
        registry.frameworks,
        FrameworkAdapter,
        "PLUGIN_NAME",
    )
    _collect(registry, "launcher", "rladapt_register_launchers", registry.launchers, Launcher, "PLUGIN_NAME")
    _collect(registry, "patch", "rladapt_register_patches", registry.patches, Patch, "id")
    return registry


def _collect(
    registry: Registry, kind: str, hook_name: str, table: dict[str, Any], cls: type, attr: str
) -> None:
    hook = getattr(registry.pm.hook, hook_name)
    for impl in reversed(hook.get_hookimpls()):
        plugin = registry.pm.get_name(impl.plugin) or "?"
        try:
            objects = [obj() if isinstance(obj, type) else obj for obj in impl.function() or []]
            for obj in objects:
                if not isinstance(obj, cls):
                    raise TypeError(f"{hook_name} returned {obj!r}, expected a {cls.__name__}")
                getattr(obj, attr)  # a missing unique name is a broken plugin, not a crash later
        except Exception as exc:
            registry.broken.append(BrokenPlugin(plugin, f"{hook_name}: {type(exc).__name__}: {exc}"))
            continue
        for obj in objects:
            name = getattr(obj, attr)
            if name in table:
                registry.conflicts.setdefault((kind, name), [table[name].plugin]).append(plugin)
                continue
            table[name] = Registered(obj, plugin)


@lru_cache(maxsize=1)
def get_registry() -> Registry:
    """The process-wide registry (loaded once; tests build their own with ``load_registry``)."""
    return load_registry()
