"""Per-version schema snapshots of the frameworks' configuration surfaces, and checks of native keys against them.

A snapshot holds, for one framework version, each key the framework accepts with its type and default (format:
``_format``). Each adapter keeps its own in its ``SNAPSHOTS`` folder (the built-in ones in
``rladapt/compat/matrix/snapshots/<framework>/<version>.json``) and generates them from the framework's own
release (``FrameworkAdapter.generate_snapshot``; the maintainer command ``rladapt matrix snapshot``,
``rladapt.compat.generate``). They are read lazily, through the registered adapter of a framework
(``rladapt.plugins.snapshots``), so a third-party adapter's snapshots are found like the built-in ones. Checking a
launch against one (``check``) imports no framework package.

This package is the format and the check only, beneath the adapter contract (which reads the format): it imports
neither the registry nor the generators (they live in the adapter folders and import the adapters' own modules).
"""

from __future__ import annotations

from ._check import NativeItem, Op, check
from ._format import FORMAT, KeySpec, Snapshot

__all__ = [
    "FORMAT",
    "KeySpec",
    "NativeItem",
    "Op",
    "Snapshot",
    "check",
]
