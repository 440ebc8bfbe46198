"""The host the kit tests through: a registry loaded the way users get one (entry points, then built-ins).

Going through the host is what exercises a plugin's registration, its patches and the policy hooks of every
installed plugin; checking the adapter object alone does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Protocol

from ..adapter import FrameworkAdapter
from ..hookspecs import hookimpl
from ..launcher import Launcher
from ..patches import Patch
from ..registry import BLOCK_ENV, Registry, load_registry

__all__ = ["BLOCK_ENV", "Registry", "RegistryFactory", "as_plugin", "entry_point_registry", "host_registry"]


class RegistryFactory(Protocol):
    """The ``rladapt_registry_factory`` fixture: more plugins next to the installed ones, some blocked."""

    def __call__(self, *plugins: object, block: Iterable[str] = ()) -> Registry: ...


class _Registers:
    """A plugin that registers the given adapters, launchers and patches, for objects a test hands over."""

    def __init__(self, objects: Sequence[object]) -> None:
        self._objects = list(objects)

    @hookimpl
    def rladapt_register_frameworks(self) -> list[FrameworkAdapter]:
        return [o for o in self._objects if isinstance(o, FrameworkAdapter)]

    @hookimpl
    def rladapt_register_launchers(self) -> list[Launcher]:
        return [o for o in self._objects if isinstance(o, Launcher)]

    @hookimpl
    def rladapt_register_patches(self) -> list[Patch]:
        return [o for o in self._objects if isinstance(o, Patch)]


def as_plugin(index: int, plugin: object) -> tuple[str, object]:
    """``(name, plugin)`` for what a test passes: a pair as is, an adapter, launcher or patch wrapped in a plugin
    named after it, any other object (a module, a namespace of hook implementations) by its ``__name__``."""
    if isinstance(plugin, tuple) and len(plugin) == 2 and isinstance(plugin[0], str):
        return plugin[0], plugin[1]
    if isinstance(plugin, FrameworkAdapter | Launcher):
        return f"{plugin.PLUGIN_NAME}-under-test", _Registers([plugin])
    if isinstance(plugin, Patch):
        return f"{plugin.id}-under-test", _Registers([plugin])
    return str(getattr(plugin, "__name__", None) or f"extra-plugin-{index}"), plugin


def host_registry(*plugins: object) -> Registry:
    """A fresh registry: installed entry points, then ``plugins``, then the built-ins, as ``rladapt`` loads them."""
    extra = [as_plugin(i, p) for i, p in enumerate(plugins)]
    return load_registry(extra=extra, use_entry_points=True)


@lru_cache(maxsize=1)
def entry_point_registry() -> Registry:
    """The installed plugins' registry, loaded once per process: what test collection looks names up in."""
    return host_registry()
