"""The built-in adapters' way of keeping a framework's knowledge: one module per concept in the adapter's folder.

Each contract method of ``FrameworkAdapter`` that a built-in adapter serves is answered by a module of its own
folder (``checkpoints.py``, ``metrics.py``, ``snapshot.py``, ``explain.py``, ``resumes.py``; for the frameworks whose launches
rladapt reads back also ``translate.py``'s defaults, ``settings.py`` and ``importer.py``), imported on first use so
that a render of one framework never loads another's importer or generator. Unlike the deprecated lookup by name in
``FrameworkAdapter`` (which silently meant "no checkpoints" when an adapter lived in a plain module), an adapter
opts in by its base class, and a module it lacks is an ImportError, never a silent "cannot".
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, cast

from rladapt.plugins import FrameworkAdapter

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path
    from types import ModuleType

    from rladapt.compat.schema import Snapshot
    from rladapt.plugins import MetricMap
    from rladapt.plugins.adapter import LaunchImporter, NativeSetting
    from rladapt.plugins.checkpoints import Checkpoint, CheckpointScan, ResumePlan
    from rladapt.plugins.native import NativeLaunch
    from rladapt.plugins.resumes import Restored
    from rladapt.primitives import Problem, RLJob

__all__ = ["FolderAdapter", "ImportingFolderAdapter"]


class FolderAdapter(FrameworkAdapter):
    """Checkpoints, metrics, snapshot generation and explain entries from the modules of the adapter's folder."""

    def _module(self, name: str) -> ModuleType:
        # the adapter class is defined in its folder's __init__.py, so its module is the folder's package
        return importlib.import_module(f"{type(self).__module__}.{name}")

    @property
    def can_reshard(self) -> bool:
        return bool(self._module("checkpoints").CAN_RESHARD)

    def scan_checkpoints(self, root: Path, version: str) -> CheckpointScan:
        return cast("CheckpointScan", self._module("checkpoints").scan(root, version))

    def plan_resume(
        self, argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
    ) -> ResumePlan:
        return cast("ResumePlan", self._module("checkpoints").plan_resume(argv, version, scan, chosen))

    def metric_names(self, version: str) -> MetricMap:
        return cast("MetricMap", self._module("metrics").names(version))

    def weight_files(self, root: Path, step: Checkpoint, version: str) -> Mapping[str, Path]:
        return cast("Mapping[str, Path]", self._module("weights").files(root, step, version))

    def generate_snapshot(self, version: str, source: Path) -> Snapshot:
        return cast("Snapshot", self._module("snapshot").generate(source, version))

    def explain_entries(self, native: NativeLaunch) -> Iterator[tuple[str, Any, str]]:
        return cast("Iterator[tuple[str, Any, str]]", self._module("explain").entries(native))

    def resume_restores(self, version: str) -> Sequence[Restored]:
        return cast("Sequence[Restored]", self._module("resumes").restores(version))

    def resume_hazards(self, native: NativeLaunch) -> list[Problem]:
        hazards = getattr(self._module("resumes"), "hazards", None)
        return [] if hazards is None else cast("list[Problem]", hazards(native))


class ImportingFolderAdapter(FolderAdapter):
    """A ``FolderAdapter`` whose launches rladapt also reads back: import, diff, ``upgrade`` and explain's defaults."""

    def framework_default_keys(self, job: RLJob, version: str) -> dict[str, tuple[str, ...]]:
        return cast(
            "dict[str, tuple[str, ...]]", self._module("translate").framework_default_keys(job, version)
        )

    def native_settings(self, native: NativeLaunch) -> list[NativeSetting]:
        return cast("list[NativeSetting]", self._module("settings").native_settings(native))

    def launch_importer(self) -> LaunchImporter:
        return cast("LaunchImporter", self._module("importer"))
