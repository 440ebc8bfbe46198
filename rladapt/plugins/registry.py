"""The registry: loading plugins and calling their hooks; host machinery, imported through ``rladapt.plugins``
(``Registry``, ``get_registry``, ``load_registry``).

Load order, as in tox 4: entry points of group ``rladapt`` (sorted by name), then ``extra`` (tests), then the
built-ins. pluggy calls the last registered implementation first, so **built-in implementations run first and
external ones after them**: an org policy plugin sees what the built-ins did and has the last word
(``tryfirst``/``trylast`` move an implementation). ``tests/plugins/test_registry.py`` asserts this order.

Hooks are called one implementation at a time, as pluggy calls them (arguments by ``HookImpl.argnames``, in
pluggy's order), so that a chain threads its value and a failure names its plugin. A plugin that fails to
import, fails pluggy's validation or ``check_pending`` (an unknown hook name), declares a wrapper, or whose
registration hook raises, is recorded in ``Registry.broken`` and skipped; it never breaks the other plugins.
``RLADAPT_BLOCK_PLUGINS`` (comma-separated plugin names) blocks plugins, built-in ones included, through
``PluginManager.set_blocked``. ``RLADAPT_TRACE_PLUGINS=1`` (or ``rladapt --debug``) prints every hook call to
stderr.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, cast

import pluggy

from rladapt.primitives import Problem, RLJob
from rladapt.primitives.errors import PluginError, RladaptError, UsageError

from . import hookspecs
from .adapter import FrameworkAdapter
from .launcher import Launcher
from .native import NativeLaunch
from .patches import Patch
from .signature import Signature

__all__ = [
    "BLOCK_ENV",
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "TRACE_ENV",
    "BrokenPlugin",
    "Registered",
    "Registry",
    "get_registry",
    "load_registry",
    "trace_hooks",
]

ENTRY_POINT_GROUP = "rladapt"
BLOCK_ENV = "RLADAPT_BLOCK_PLUGINS"
TRACE_ENV = "RLADAPT_TRACE_PLUGINS"

#: Built-in plugins: name -> module. Registered after the external ones, so their implementations run first.
BUILTIN_PLUGINS: dict[str, str] = {
    "verl": "rladapt.adapters.verl",
    "openrlhf": "rladapt.adapters.openrlhf",
    "nemo-rl": "rladapt.adapters.nemo_rl",
    "trl": "rladapt.adapters.trl",
    "local": "rladapt.launchers.local",
    "ray": "rladapt.launchers.ray",
    "slurm": "rladapt.launchers.slurm",
    "kubernetes": "rladapt.launchers.kubernetes",
    # the triage catalogue: a tiny module whose hook imports the catalogue only when `rladapt triage` asks
    "triage": "rladapt.triage.plugin",
}

#: Chain hooks: the value threaded through, by type. Each implementation returns a new value or None.
CHAIN_TYPES: dict[str, type] = {"rladapt_modify_job": RLJob, "rladapt_modify_native": NativeLaunch}

T = TypeVar("T")
V = TypeVar("V")


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
    #: Print every hook call to stderr (``RLADAPT_TRACE_PLUGINS=1``, ``rladapt --debug``).
    trace: bool = False
    #: ``rladapt_register_signatures``'s results by id, once ``signatures()`` has collected them
    _signatures: dict[str, Registered[Signature]] | None = None

    def signatures(self) -> dict[str, Registered[Signature]]:
        """The triage signatures of the plugins, by id; the built-in catalogue is the built-in plugin ``triage``'s.

        Collected on first use, not at load: only ``rladapt triage`` needs them, and a render must not import
        the catalogue. The built-in implementations run first, so the built-in catalogue keeps an id a plugin
        registers again (the id is marked as a conflict).
        """
        if self._signatures is None:
            table: dict[str, Registered[Signature]] = {}
            _register_all(self, "signature", "rladapt_register_signatures", table, Signature, attr="id")
            self._signatures = table
        return self._signatures

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
        hint = difflib.get_close_matches(name, list(table), n=1)
        known = ", ".join(sorted(table)) or "none"
        raise UsageError(
            f"unknown {kind} {name!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + f"; expected one of: {known}"
        )

    # --- chain and collect hooks --------------------------------------------------------------------------

    def chain(self, hook_name: str, value: V, **kwargs: Any) -> V:
        """Call a modify hook one implementation at a time, in pluggy's order, each given the last result.

        A result that is neither None nor of the chained type is a PluginError naming the plugin.
        """
        expected = CHAIN_TYPES[hook_name]
        hook = getattr(self.pm.hook, hook_name)
        arg = hook.spec.argnames[0]
        for impl in _call_order(hook):
            result = self._call(hook_name, impl, {arg: value, **kwargs})
            if result is None:
                continue
            if not isinstance(result, expected):
                raise PluginError(
                    f"plugin {impl.plugin_name!r} {hook_name} returned {type(result).__name__}, "
                    f"expected {expected.__name__} or None"
                )
            value = cast(V, result)  # checked against CHAIN_TYPES just above
        return value

    def collect(self, hook_name: str, **kwargs: Any) -> list[Problem]:
        """Call ``rladapt_add_checks`` in every plugin and concatenate the problems, checking each result."""
        out: list[Problem] = []
        for impl in _call_order(getattr(self.pm.hook, hook_name)):
            result = self._call(hook_name, impl, kwargs)
            if result is None:
                continue
            if not isinstance(result, (list, tuple)):
                raise PluginError(
                    f"plugin {impl.plugin_name!r} {hook_name} returned {type(result).__name__}, "
                    "expected a list of Problem"
                )
            odd = [p for p in result if not isinstance(p, Problem)]
            if odd:
                raise PluginError(
                    f"plugin {impl.plugin_name!r} {hook_name} returned a list holding "
                    f"{type(odd[0]).__name__}, expected a list of Problem"
                )
            out.extend(result)
        return out

    def _call(self, hook_name: str, impl: pluggy.HookImpl, kwargs: Mapping[str, Any]) -> Any:
        """Call one implementation as pluggy does (positionally, by ``impl.argnames``), naming it on failure.

        One at a time rather than ``pm.hook.x(...)``, so a chain threads its value and a failure is tied to
        one plugin; these calls are traced like the ones pluggy makes.
        """
        call: Callable[[], Any] = partial(impl.function, *(kwargs[name] for name in impl.argnames))
        if self.trace:
            _trace_before(hook_name, [impl], kwargs)
            outcome: pluggy.Result[Any] = pluggy.Result.from_call(call)
            _trace_after(outcome, hook_name, [impl], kwargs)
            call = outcome.get_result
        try:
            return call()
        except RladaptError:  # already typed, with its own message and exit code
            raise
        except Exception as exc:  # a policy plugin that raises must name itself
            raise PluginError(f"plugin {impl.plugin_name!r} raised {type(exc).__name__}: {exc}") from exc


def _call_order(hook: pluggy.HookCaller) -> list[pluggy.HookImpl]:
    return list(reversed(hook.get_hookimpls()))  # pluggy calls the last registered (and tryfirst) first


def _blocked_names() -> set[str]:
    return {n.strip() for n in os.environ.get(BLOCK_ENV, "").split(",") if n.strip()}


_trace_requested = False


def trace_hooks() -> None:
    """Print every hook call of registries loaded from now on (``rladapt --debug``)."""
    global _trace_requested
    _trace_requested = True
    get_registry.cache_clear()


def _tracing() -> bool:
    return _trace_requested or os.environ.get(TRACE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _trace_line(hook_name: str, impls: Sequence[pluggy.HookImpl], tail: str) -> None:
    names = ", ".join(impl.plugin_name for impl in reversed(impls))
    print(f"rladapt: hook {hook_name} [{names}] {tail}", file=sys.stderr, flush=True)


def _trace_before(hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]) -> None:
    _trace_line(hook_name, impls, "...")


def _trace_after(
    outcome: pluggy.Result[Any], hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]
) -> None:
    exc = outcome.exception
    _trace_line(hook_name, impls, f"-> raised {type(exc).__name__}: {exc}" if exc else "-> ok")


def _check_plugin(pm: pluggy.PluginManager, name: str) -> str | None:
    """Why a just-registered plugin cannot stay (an unknown hook, a wrapper), or None."""
    plugin = pm.get_plugin(name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        unknown = [
            c.name
            for c in pm.get_hookcallers(plugin) or []
            if not c.has_spec() and any(not i.optionalhook for i in c.get_hookimpls())
        ]
        if not unknown:
            return str(exc)
        known = [n for n, c in vars(pm.hook).items() if not n.startswith("_") and c.has_spec()]
        hint = difflib.get_close_matches(unknown[0], known, n=1)
        return f"unknown hook {unknown[0]!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    for caller in pm.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            kind = "wrapper" if impl.wrapper else "hookwrapper" if impl.hookwrapper else None
            if kind:  # each plugin is called on its own, so there is no call for a wrapper to wrap
                return f"{caller.name}: {kind}=True implementations are not supported"
    return None


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
    registry = Registry(pm=pm, trace=_tracing())
    if registry.trace:  # for calls through pm.hook; Registry._call traces its own per-implementation calls
        pm.add_hookcall_monitoring(_trace_before, _trace_after)
    for name in _blocked_names():
        pm.set_blocked(name)

    def register(name: str, load: Callable[[], object]) -> None:
        if pm.is_blocked(name):  # blocked plugins are not even imported
            registry.blocked.append(name)
            return
        plugin = _load_module(name, load, registry)
        if plugin is None:
            return
        try:
            pm.register(plugin, name=name)
        except Exception as exc:  # e.g. a hook implementation whose signature does not match the spec
            registry.broken.append(BrokenPlugin(name, f"{type(exc).__name__}: {exc}"))
            return
        why = _check_plugin(pm, name)
        if why:
            pm.unregister(name=name)
            registry.broken.append(BrokenPlugin(name, why))
            return
        registry.plugins.append(name)

    if use_entry_points:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            register(ep.name, ep.load)
    for name, obj in extra:
        register(name, partial(lambda o: o, obj))
    for name, module in (BUILTIN_PLUGINS if builtins is None else builtins).items():
        register(name, partial(importlib.import_module, module))

    _register_all(registry, "framework", "rladapt_register_frameworks", registry.frameworks, FrameworkAdapter)
    _register_all(registry, "launcher", "rladapt_register_launchers", registry.launchers, Launcher)
    _register_all(registry, "patch", "rladapt_register_patches", registry.patches, Patch, attr="id")
    return registry


def _register_all(
    registry: Registry,
    kind: str,
    hook_name: str,
    table: dict[str, Any],
    cls: type,
    attr: str = "PLUGIN_NAME",
) -> None:
    for impl in _call_order(getattr(registry.pm.hook, hook_name)):
        plugin = impl.plugin_name
        try:
            objects = [
                obj() if isinstance(obj, type) else obj for obj in registry._call(hook_name, impl, {}) or []
            ]
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
