"""The active model pool: versioned weights in immutable folders, aliases, leases and garbage collection.

``VersionStore`` is the store (``rladapt pool`` is its command line); ``Manifest`` says what a version holds and
where it came from. See ``docs/concepts/pool.md`` for why versions never change and how a switch is made.
"""

from .engines import Engine, EngineCallFailed, EngineFailed, engine_for
from .manifest import MANIFEST, DamagedManifest, FileEntry, Manifest, Source, version_name
from .objects import ObjectVersionStore, open_store
from .serve import ENGINES, ServeGroup, check_engine
from .store import AliasMoved, AliasState, GcReport, Lease, VersionStore, hf_weight_files
from .switch import Group, SwitchFailed, SwitchResult, move_alias, read_group, rollback_alias, switch

__all__ = [
    "ENGINES",
    "MANIFEST",
    "AliasMoved",
    "AliasState",
    "DamagedManifest",
    "Engine",
    "EngineCallFailed",
    "EngineFailed",
    "FileEntry",
    "GcReport",
    "Group",
    "Lease",
    "Manifest",
    "ObjectVersionStore",
    "ServeGroup",
    "Source",
    "SwitchFailed",
    "SwitchResult",
    "VersionStore",
    "check_engine",
    "engine_for",
    "hf_weight_files",
    "move_alias",
    "open_store",
    "read_group",
    "rollback_alias",
    "switch",
    "version_name",
]
