"""The schema snapshot of a framework version by framework name, through the registered adapter's ``SNAPSHOTS``
(``FrameworkAdapter.find_snapshot``): the lookup the verbs, triage and the adapters' own checks use.

The built-in adapters' snapshots are bundled in ``rladapt/compat/matrix/snapshots/<framework>/``; a third-party
adapter's are wherever its ``SNAPSHOTS`` points, and are found the same way. A framework no adapter registers
has none. The format and the check are ``rladapt.compat.schema``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rladapt.primitives.errors import PluginError

from .registry import get_registry

if TYPE_CHECKING:
    from rladapt.compat.schema import Snapshot

    from .adapter import FrameworkAdapter

__all__ = ["find_snapshot", "snapshot", "snapshot_versions", "versions_having"]


def _adapter(framework: str) -> FrameworkAdapter | None:
    found = get_registry().frameworks.get(framework)
    return None if found is None else found.obj


def snapshot_versions(framework: str) -> list[str]:
    """The versions of ``framework`` that have a snapshot (file names, not loaded)."""
    adapter = _adapter(framework)
    return [] if adapter is None else adapter.snapshot_versions()


def find_snapshot(framework: str, version: str) -> Snapshot | None:
    """The snapshot of ``framework`` ``version``, or None when there is none (loaded once)."""
    adapter = _adapter(framework)
    return None if adapter is None else adapter.find_snapshot(version)


def snapshot(framework: str, version: str) -> Snapshot:
    """The snapshot of ``framework`` ``version``; its ``default(key)`` is that version's own default."""
    adapter = _adapter(framework)
    if adapter is None:
        raise PluginError(f"no schema snapshot of {framework} {version} (no adapter registers {framework!r})")
    return adapter.snapshot(version)


def versions_having(framework: str, key: str, exclude: str) -> list[str]:
    """The other versions of ``framework`` that have ``key`` (loads them: only call it on an error)."""
    adapter = _adapter(framework)
    return [] if adapter is None else adapter.versions_having(key, exclude)
