"""The native keys one launch sets, with their values, as the framework reads them: what upgrades and onboarding
compare between versions.

The reading is each adapter's (``FrameworkAdapter.native_settings``; the built-in ones read as their offline
check does, in ``rladapt/adapters/<fw>/settings.py``). Nothing of a framework is imported.
"""

from __future__ import annotations

from rladapt.plugins import NativeLaunch, get_registry
from rladapt.plugins.adapter import NativeSetting
from rladapt.primitives.errors import UsageError

__all__ = ["NativeSetting", "settings"]


def settings(native: NativeLaunch) -> dict[str, NativeSetting]:
    """Every native key ``native`` sets (the last setting wins, as in the framework), by key."""
    found = get_registry().framework(native.framework).native_settings(native)
    if found is None:
        raise UsageError(f"framework {native.framework!r} cannot list the native keys of a launch")
    return {s.key: s for s in found}
