"""What a plugin author imports. A plugin is a module (or object) with ``@hookimpl`` functions named after
the hooks in ``rladapt.plugins.hookspecs``, announced by an entry point of group ``rladapt``::

    # pyproject.toml: [project.entry-points.rladapt]  my-plugin = "my_plugin"
    from rladapt.plugins import NativeLaunch, hookimpl

    @hookimpl
    def rladapt_modify_native(native: NativeLaunch) -> NativeLaunch:
        return native.with_env({"NCCL_IB_HCA": "mlx5"})

Take only the hook arguments you need. Register adapters (``FrameworkAdapter``), launchers (``Launcher``),
patches (``Patch``) and triage signatures (``Signature``) with the ``rladapt_register_*`` hooks; check yours with
``rladapt.plugins.testing``. Every type a hook or a contract method takes or returns is importable from here (an
adapter's metric mapping: ``MetricMap``, ``Logged``, ``Absent`` over the ``NEUTRAL`` names).

The host reaches the loaded plugins through the registry, imported from here too (``get_registry``,
``load_registry``, ``Registry``): ``rladapt.plugins.registry`` is not imported by name elsewhere.
"""

from __future__ import annotations

from rladapt.compat.schema import KeySpec, NativeItem, Snapshot
from rladapt.primitives import Problem, RLJob

from .adapter import (
    CheckpointLayout,
    FrameworkAdapter,
    FrameworkVersion,
    LaunchImporter,
    NativeSetting,
    unsupported,
)
from .capabilities import KNOWN_CAPABILITIES, Requirement, job_requirements, unknown_capabilities
from .checkpoints import Checkpoint, CheckpointScan, ResumePlan
from .effective import Effective, derived, same
from .hookspecs import hookimpl, hookspec
from .launcher import (
    TERMINAL_STATES,
    Artifacts,
    Command,
    Launcher,
    Option,
    RunState,
    RunStatus,
    ServiceStatus,
)
from .metrics import BY_NAME, NAMES, NEUTRAL, Absent, Entry, Logged, MetricMap, Neutral
from .native import (
    METRICS_DIR,
    NATIVE_FORMAT_VERSION,
    NativeLaunch,
    PoolSpec,
    Resume,
    RolePlacement,
    SecretKind,
    SecretRef,
    SecretSourceRef,
    VolumeSpec,
)
from .patches import Patch
from .registry import (
    BLOCK_ENV,
    BUILTIN_PLUGINS,
    ENTRY_POINT_GROUP,
    TRACE_ENV,
    BrokenPlugin,
    Registered,
    Registry,
    get_registry,
    load_registry,
    trace_hooks,
)
from .resumes import Restored, ResumeTrace
from .service import PortSpec, ServiceRole
from .signature import Detail, Found, Signature
from .translation import TranslationBuilder

__all__ = [
    "BLOCK_ENV",
    "BUILTIN_PLUGINS",
    "BY_NAME",
    "ENTRY_POINT_GROUP",
    "KNOWN_CAPABILITIES",
    "METRICS_DIR",
    "NAMES",
    "NATIVE_FORMAT_VERSION",
    "NEUTRAL",
    "TERMINAL_STATES",
    "TRACE_ENV",
    "Absent",
    "Artifacts",
    "BrokenPlugin",
    "Checkpoint",
    "CheckpointLayout",
    "CheckpointScan",
    "Command",
    "Detail",
    "Effective",
    "Entry",
    "Found",
    "FrameworkAdapter",
    "FrameworkVersion",
    "KeySpec",
    "LaunchImporter",
    "Launcher",
    "Logged",
    "MetricMap",
    "NativeItem",
    "NativeLaunch",
    "NativeSetting",
    "Neutral",
    "Option",
    "Patch",
    "PoolSpec",
    "PortSpec",
    "Problem",
    "RLJob",
    "Registered",
    "Registry",
    "Requirement",
    "Restored",
    "Resume",
    "ResumePlan",
    "ResumeTrace",
    "RolePlacement",
    "RunState",
    "RunStatus",
    "SecretKind",
    "SecretRef",
    "SecretSourceRef",
    "ServiceRole",
    "ServiceStatus",
    "Signature",
    "Snapshot",
    "TranslationBuilder",
    "VolumeSpec",
    "derived",
    "get_registry",
    "hookimpl",
    "hookspec",
    "job_requirements",
    "load_registry",
    "same",
    "trace_hooks",
    "unknown_capabilities",
    "unsupported",
]
