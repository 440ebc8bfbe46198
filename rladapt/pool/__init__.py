"""The active model pool: versioned weights in immutable folders, aliases, leases and garbage collection.

``VersionStore`` is the store (``rladapt pool`` is its command line); ``Manifest`` says what a version holds and
where it came from. See ``docs/concepts/pool.md`` for why versions never change and how a switch is made.
"""

from .manifest import MANIFEST, DamagedManifest, FileEntry, Manifest, Source, version_name
from .store import AliasMoved, AliasState, GcReport, Lease, VersionStore, hf_weight_files

__all__ = [
    "MANIFEST",
    "AliasMoved",
    "AliasState",
    "DamagedManifest",
    "FileEntry",
    "GcReport",
    "Lease",
    "Manifest",
    "Source",
    "VersionStore",
    "hf_weight_files",
    "version_name",
]
