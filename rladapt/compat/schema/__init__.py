"""Per-version schema snapshots of the frameworks' configuration surfaces, and checks of native keys against them.

``rladapt/compat/matrix/snapshots/<framework>/<version>.json`` holds, for every pinned version, each key the framework
accepts with its type and default (format: ``_format``). They are generated from the framework's own release
(``generate``; the maintainer command ``rladapt matrix snapshot``) and read lazily: ``snapshot(fw, v)`` loads only
that one file, once. Checking a launch against one (``check``) imports no framework package.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from rladapt.primitives.errors import PluginError

from ._check import NativeItem, Op, check
from ._format import FORMAT, KeySpec, Snapshot

if TYPE_CHECKING:
    from ._generate import GENERATORS, bundled_dir, generate, make_snapshot

#: Generating a snapshot (subprocess, wheel download) is a maintainer's command: a render's check does not
#: import it; these names are read from ``_generate`` when first used (PEP 562 module ``__getattr__``).
_GENERATOR_NAMES = frozenset({"GENERATORS", "bundled_dir", "generate", "make_snapshot"})


def __getattr__(name: str) -> Any:
    if name in _GENERATOR_NAMES:
        from . import _generate

        return getattr(_generate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMAT",
    "GENERATORS",
    "KeySpec",
    "NativeItem",
    "Op",
    "Snapshot",
    "bundled_dir",
    "check",
    "find_snapshot",
    "generate",
    "make_snapshot",
    "snapshot",
    "snapshot_versions",
    "versions_having",
]


def _dir(framework: str) -> resources.abc.Traversable:
    return resources.files("rladapt.compat").joinpath("matrix", "snapshots").joinpath(framework)


def snapshot_versions(framework: str) -> list[str]:
    """The versions of ``framework`` that have a bundled snapshot (file names, not loaded)."""
    folder = _dir(framework)
    if not folder.is_dir():
        return []
    return sorted(e.name.removesuffix(".json") for e in folder.iterdir() if e.name.endswith(".json"))


@cache
def find_snapshot(framework: str, version: str) -> Snapshot | None:
    """The bundled snapshot of ``framework`` ``version``, or None when there is none (loaded once)."""
    ref = _dir(framework).joinpath(f"{version}.json")
    if not ref.is_file():
        return None
    origin = f"rladapt/compat/matrix/snapshots/{framework}/{version}.json"
    try:
        return Snapshot.from_text(ref.read_text(encoding="utf-8"), origin)
    except (ValueError, KeyError, TypeError) as exc:
        raise PluginError(f"{origin} is damaged ({exc}); reinstall rladapt") from None


def snapshot(framework: str, version: str) -> Snapshot:
    """The bundled snapshot of ``framework`` ``version``; its ``default(key)`` is that version's own default."""
    found = find_snapshot(framework, version)
    if found is None:
        have = ", ".join(snapshot_versions(framework)) or "none"
        raise PluginError(f"no schema snapshot of {framework} {version} (bundled: {have})")
    return found


def versions_having(framework: str, key: str, exclude: str) -> list[str]:
    """The other bundled versions of ``framework`` that have ``key`` (loads them: only call it on an error)."""
    from packaging.version import Version

    found = []
    for version in sorted(snapshot_versions(framework), key=Version):
        snap = find_snapshot(framework, version) if version != exclude else None
        if snap is not None and snap.has(key):
            found.append(version)
    return found
