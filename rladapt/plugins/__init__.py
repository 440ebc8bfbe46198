"""The plugin contract: hookspecs, the plugin manager, NativeLaunch and the adapter/launcher/patch base types."""

from __future__ import annotations

from .adapter import CheckpointLayout, FrameworkAdapter, FrameworkVersion
from .capabilities import KNOWN_CAPABILITIES, Requirement, job_requirements
from .hookspecs import hookimpl, hookspec
from .launcher import TERMINAL_STATES, Artifacts, Launcher, RunState, RunStatus
from .manager import BLOCK_ENV, ENTRY_POINT_GROUP, BrokenPlugin, Registry, get_registry, load_registry
from .native import (
    NATIVE_FORMAT_VERSION,
    NativeLaunch,
    PoolSpec,
    PortSpec,
    Resume,
    RolePlacement,
    SecretRef,
    VolumeSpec,
)
from .patches import Patch

__all__ = [
    "BLOCK_ENV",
    "ENTRY_POINT_GROUP",
    "KNOWN_CAPABILITIES",
    "NATIVE_FORMAT_VERSION",
    "TERMINAL_STATES",
    "Artifacts",
    "BrokenPlugin",
    "CheckpointLayout",
    "FrameworkAdapter",
    "FrameworkVersion",
    "Launcher",
    "NativeLaunch",
    "Patch",
    "PoolSpec",
    "PortSpec",
    "Registry",
    "Requirement",
    "Resume",
    "RolePlacement",
    "RunState",
    "RunStatus",
    "SecretRef",
    "VolumeSpec",
    "get_registry",
    "hookimpl",
    "hookspec",
    "job_requirements",
    "load_registry",
]
