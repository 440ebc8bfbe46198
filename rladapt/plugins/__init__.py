"""What a plugin author imports. A plugin is a module (or object) with ``@hookimpl`` functions named after
the hooks in ``rladapt.plugins.hookspecs``, announced by an entry point of group ``rladapt``::

    # pyproject.toml: [project.entry-points.rladapt]  my-plugin = "my_plugin"
    from rladapt.plugins import NativeLaunch, hookimpl

    @hookimpl
    def rladapt_modify_native(native: NativeLaunch) -> NativeLaunch:
        return native.with_env({"NCCL_IB_HCA": "mlx5"})

Take only the hook arguments you need. Register adapters (``FrameworkAdapter``), launchers (``Launcher``) and
patches (``Patch``) with the ``rladapt_register_*`` hooks; check yours with ``rladapt.plugins.testing``.
"""

from __future__ import annotations

from rladapt.primitives import Problem, RLJob

from .adapter import CheckpointLayout, FrameworkAdapter, FrameworkVersion, unsupported
from .capabilities import KNOWN_CAPABILITIES, Requirement, job_requirements
from .checkpoints import Checkpoint, CheckpointScan, ResumePlan
from .hookspecs import hookimpl, hookspec
from .launcher import TERMINAL_STATES, Artifacts, Command, Launcher, Option, RunState, RunStatus
from .native import (
    NATIVE_FORMAT_VERSION,
    NativeLaunch,
    PoolSpec,
    PortSpec,
    Resume,
    RolePlacement,
    SecretKind,
    SecretRef,
    SecretSourceRef,
    VolumeSpec,
)
from .patches import Patch
from .translation import TranslationBuilder

__all__ = [
    "KNOWN_CAPABILITIES",
    "NATIVE_FORMAT_VERSION",
    "TERMINAL_STATES",
    "Artifacts",
    "Checkpoint",
    "CheckpointLayout",
    "CheckpointScan",
    "Command",
    "FrameworkAdapter",
    "FrameworkVersion",
    "Launcher",
    "NativeLaunch",
    "Option",
    "Patch",
    "PoolSpec",
    "PortSpec",
    "Problem",
    "RLJob",
    "Requirement",
    "Resume",
    "ResumePlan",
    "RolePlacement",
    "RunState",
    "RunStatus",
    "SecretKind",
    "SecretRef",
    "SecretSourceRef",
    "TranslationBuilder",
    "VolumeSpec",
    "hookimpl",
    "hookspec",
    "job_requirements",
    "unsupported",
]
