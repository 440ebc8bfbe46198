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

import importlib as _importlib
import typing as _typing

# The names below are loaded on first use (PEP 562 ``__getattr__``): ``import rladapt.plugins.launcher``, which the
# run store and every verb's options do, runs this file, and must not load pluggy, the registry, the native
# launch's pydantic models and the snapshot format with it (benchmarks/cold_start.py). The imports are written out
# here all the same, so that type checkers and the layers contract (pyproject.toml) see every dependency.
if _typing.TYPE_CHECKING:
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
    from .metrics import BY_NAME, METRICS_DIR, NAMES, NEUTRAL, Absent, Entry, Logged, MetricMap, Neutral
    from .native import (
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

#: every name re-exported here -> the module that defines it
_WHERE: dict[str, str] = {
    "KeySpec": "rladapt.compat.schema",
    "NativeItem": "rladapt.compat.schema",
    "Snapshot": "rladapt.compat.schema",
    "CheckpointLayout": "rladapt.plugins.adapter",
    "FrameworkAdapter": "rladapt.plugins.adapter",
    "FrameworkVersion": "rladapt.plugins.adapter",
    "LaunchImporter": "rladapt.plugins.adapter",
    "NativeSetting": "rladapt.plugins.adapter",
    "unsupported": "rladapt.plugins.adapter",
    "job_requirements": "rladapt.plugins.capabilities",
    "KNOWN_CAPABILITIES": "rladapt.plugins.capabilities",
    "Requirement": "rladapt.plugins.capabilities",
    "unknown_capabilities": "rladapt.plugins.capabilities",
    "Checkpoint": "rladapt.plugins.checkpoints",
    "CheckpointScan": "rladapt.plugins.checkpoints",
    "ResumePlan": "rladapt.plugins.checkpoints",
    "derived": "rladapt.plugins.effective",
    "Effective": "rladapt.plugins.effective",
    "same": "rladapt.plugins.effective",
    "hookimpl": "rladapt.plugins.hookspecs",
    "hookspec": "rladapt.plugins.hookspecs",
    "Artifacts": "rladapt.plugins.launcher",
    "Command": "rladapt.plugins.launcher",
    "Launcher": "rladapt.plugins.launcher",
    "Option": "rladapt.plugins.launcher",
    "RunState": "rladapt.plugins.launcher",
    "RunStatus": "rladapt.plugins.launcher",
    "ServiceStatus": "rladapt.plugins.launcher",
    "TERMINAL_STATES": "rladapt.plugins.launcher",
    "Absent": "rladapt.plugins.metrics",
    "BY_NAME": "rladapt.plugins.metrics",
    "Entry": "rladapt.plugins.metrics",
    "Logged": "rladapt.plugins.metrics",
    "MetricMap": "rladapt.plugins.metrics",
    "NAMES": "rladapt.plugins.metrics",
    "NEUTRAL": "rladapt.plugins.metrics",
    "Neutral": "rladapt.plugins.metrics",
    "METRICS_DIR": "rladapt.plugins.metrics",
    "NATIVE_FORMAT_VERSION": "rladapt.plugins.native",
    "NativeLaunch": "rladapt.plugins.native",
    "PoolSpec": "rladapt.plugins.native",
    "PortSpec": "rladapt.plugins.service",
    "Resume": "rladapt.plugins.native",
    "RolePlacement": "rladapt.plugins.native",
    "SecretKind": "rladapt.plugins.native",
    "SecretRef": "rladapt.plugins.native",
    "SecretSourceRef": "rladapt.plugins.native",
    "ServiceRole": "rladapt.plugins.service",
    "VolumeSpec": "rladapt.plugins.native",
    "Patch": "rladapt.plugins.patches",
    "BLOCK_ENV": "rladapt.plugins.registry",
    "BrokenPlugin": "rladapt.plugins.registry",
    "BUILTIN_PLUGINS": "rladapt.plugins.registry",
    "ENTRY_POINT_GROUP": "rladapt.plugins.registry",
    "get_registry": "rladapt.plugins.registry",
    "load_registry": "rladapt.plugins.registry",
    "Registered": "rladapt.plugins.registry",
    "Registry": "rladapt.plugins.registry",
    "TRACE_ENV": "rladapt.plugins.registry",
    "trace_hooks": "rladapt.plugins.registry",
    "Restored": "rladapt.plugins.resumes",
    "ResumeTrace": "rladapt.plugins.resumes",
    "Detail": "rladapt.plugins.signature",
    "Found": "rladapt.plugins.signature",
    "Signature": "rladapt.plugins.signature",
    "TranslationBuilder": "rladapt.plugins.translation",
    "Problem": "rladapt.primitives",
    "RLJob": "rladapt.primitives",
}


def __getattr__(name: str) -> _typing.Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(where), name)
    globals()[name] = value  # resolved once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
