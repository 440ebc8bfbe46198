"""The framework adapter contract: what ``rladapt_register_frameworks`` returns."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar, Literal, cast

from packaging.version import InvalidVersion, Version

from rladapt.primitives.errors import PluginError, Problem, UnsupportedError, UsageError, one_line, quote

from ._matrix import read_matrix
from .capabilities import job_requirements

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.resources.abc import Traversable
    from pathlib import Path

    from rladapt.primitives import RLJob

    from .checkpoints import Checkpoint, CheckpointScan, ResumePlan
    from .metrics import MetricMap
    from .native import NativeLaunch


def unsupported(
    field: str,
    framework: str,
    version: str | Version,
    what: str,
    *,
    first: str | None = None,
    last: str | None = None,
    nowhere: Literal["any", "pinned"] | None = None,
    found: object = None,
    expected: str | None = None,
) -> Problem:
    """The problem "``framework`` ``version`` cannot express ``what`` (...)", blamed on the spec ``field``.

    The remark in parentheses says where ``what`` is supported: ``first`` (a later version), else ``last`` (an
    earlier one), else ``nowhere`` ("any": no version of the framework, "pinned": no pinned version); with none
    of them there is no remark. Collect the problems and raise them together as one ``UnsupportedError``.
    """
    if first is not None:
        remark = f" (first supported in {framework} {first})"
    elif last is not None:
        remark = f" (last supported in {framework} {last})"
    elif nowhere is not None:
        remark = f" (no {'pinned ' if nowhere == 'pinned' else ''}{framework} version supports it)"
    else:
        remark = ""
    return Problem(
        field,
        f"{framework} {version} cannot express {what}{remark}",
        expected=expected,
        found=None if found is None else str(found),
    )


@dataclass(frozen=True)
class FrameworkVersion:
    """One version an adapter supports, as listed in the compatibility matrix."""

    version: str
    capabilities: frozenset[str]
    status: Literal["supported", "deprecated"] = "supported"
    tested_with: dict[str, str] = field(default_factory=dict)

    @property
    def parsed(self) -> Version:
        return Version(self.version)


@dataclass(frozen=True)
class CheckpointLayout:
    """Where a framework version writes checkpoints and how a resume point is found."""

    root: str
    step_dir_pattern: str
    latest_marker: str | None
    resume_args: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class FrameworkAdapter(ABC):
    """Translates an RLJob into one framework's native launch.

    Subclasses set ``PLUGIN_NAME`` (unique across all plugins) and implement ``translate``. The supported versions
    come from a compatibility matrix file: set ``MATRIX`` to it (e.g.
    ``importlib.resources.files("my_plugin") / "matrix.toml"``) and implement ``capabilities``; or override
    ``versions`` instead. ``translate`` must be pure: same job and version, same NativeLaunch; it never changes
    the job.
    """

    PLUGIN_NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str] = ""
    #: capability -> why no version of this framework has it, appended to the refusal of a job that needs it.
    WHY_NOT: ClassVar[dict[str, str]] = {}
    #: The PyPI distribution that installs the framework (``rladapt pin`` pins it); None when there is none.
    DISTRIBUTION: ClassVar[str | None] = None
    #: The compatibility matrix file the default ``versions`` reads (format: ``rladapt/compat/matrix/*.toml``).
    MATRIX: ClassVar[Traversable | None] = None
    _matrix_versions: list[FrameworkVersion] | None = None

    def versions(self) -> list[FrameworkVersion]:
        """Every supported version, oldest first: by default the rows of ``MATRIX`` with ``capabilities``.

        The file is read once per adapter; a missing or malformed one is a ``PluginError`` naming it.
        """
        cached = self._matrix_versions
        if cached is None:
            if self.MATRIX is None:
                raise PluginError(
                    f"framework {self.PLUGIN_NAME!r} has no versions: set MATRIX to its compatibility matrix "
                    "file or override versions()"
                )
            cached = [
                FrameworkVersion(
                    version=row.version,
                    capabilities=self.capabilities(row.version),
                    status="deprecated" if row.status == "deprecated" else "supported",
                    tested_with=row.tested_with,
                )
                for row in read_matrix(self.MATRIX)
            ]
            self._matrix_versions = cached
        return list(cached)

    def capabilities(self, version: str) -> frozenset[str]:
        """What ``version`` (a row of ``MATRIX``) can express (names from ``KNOWN_CAPABILITIES``)."""
        raise PluginError(
            f"framework {self.PLUGIN_NAME!r} reads its versions from MATRIX but does not implement "
            "capabilities(version)"
        )

    @abstractmethod
    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        """The native launch of ``job`` on ``version``; raise ``UnsupportedError`` for what it cannot express."""

    def check_native(self, native: NativeLaunch) -> list[Problem] | None:
        """Problems a schema snapshot of ``native.version`` finds, offline and without importing the framework.

        This check runs on every render. None: no snapshot of that version; the pipeline then runs
        ``validate_native`` instead.
        """
        return None

    def validate_native(self, native: NativeLaunch) -> list[Problem] | None:
        """The deep check: problems the framework's own installed schema finds in ``native`` (Hydra composition,
        the real parser); None when that schema is not available here.

        Runs when ``check_native`` has no snapshot, or on request (``render --deep-check``). The pipeline turns
        None into a note on the launch, so a skipped check is never silent.
        """
        return None

    def checkpoint_layout(self, native: NativeLaunch) -> CheckpointLayout | None:
        """Where ``native`` writes checkpoints and in which pattern, for people (``render`` prints it)."""
        return None

    # --- checkpoints and resume: read by `rladapt checkpoints`, `rladapt resume` and the job's bootstrap ---------
    #
    # By default these come from the adapter package's ``checkpoints`` module (``<package of the class>.checkpoints``,
    # e.g. ``rladapt/adapters/verl/checkpoints.py``), which defines ``scan(root, version)``,
    # ``plan_resume(argv, version, scan, chosen)`` and ``CAN_RESHARD``; an adapter without one has no checkpoints
    # rladapt knows (nothing resumes). A plugin may override the methods instead.

    def _checkpoints_module(self) -> ModuleType | None:
        package = type(self).__module__
        try:
            return importlib.import_module(f"{package}.checkpoints")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.checkpoints":
                raise
            return None

    @property
    def can_reshard(self) -> bool:
        """Whether a checkpoint loads on another world size: ``rladapt resume`` refuses a changed one otherwise."""
        module = self._checkpoints_module()
        return bool(getattr(module, "CAN_RESHARD", False))

    def scan_checkpoints(self, root: Path, version: str) -> CheckpointScan | None:
        """Every step under the checkpoint directory ``root`` as ``version`` writes it, complete or not.

        A step is complete only when every file the framework's save writes is there, non-empty, and the
        framework's commit point (its marker, its rename, its last file) says the save ended; otherwise its
        ``reason`` names what is missing. ``native_pick`` is what the framework's own resume would load. Pure
        (reads only). None: this adapter does not know its framework's checkpoints, and nothing resumes.
        """
        module = self._checkpoints_module()
        return None if module is None else cast("CheckpointScan", module.scan(root, version))

    def plan_resume(
        self, argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
    ) -> ResumePlan:
        """How the native command ``argv`` resumes from ``chosen`` (None: starts fresh), in the framework's own way.

        Called in the job, by the bootstrap, before each attempt (``rladapt.resume``). Pure: the plan says which
        steps to move aside and which markers to rewrite, and the bootstrap does it.
        """
        module = self._checkpoints_module()
        if module is None:
            raise UnsupportedError(
                [
                    Problem(
                        "spec.checkpoint.resume",
                        f"{self.PLUGIN_NAME} declares no way to resume from a checkpoint",
                    )
                ]
            )
        return cast("ResumePlan", module.plan_resume(argv, version, scan, chosen))

    # --- metrics: read by `rladapt metrics`, `status`, `runs` ---------------------------------------------------

    def metric_names(self, version: str) -> MetricMap | None:
        """What ``version`` logs each neutral metric as (``rladapt.metrics.mapping.MetricMap``); None: no mapping,
        every metric keeps its native name.

        By default the ``names(version)`` function of the adapter package's ``metrics`` module
        (``<package of the class>.metrics``, e.g. ``rladapt/adapters/trl/metrics.py``); a plugin may override this
        method instead. Each ``Logged`` entry cites the file of the framework's source that logs it, and a quantity
        the version does not have is ``Absent`` with the reason.

        .. versionadded:: 0.2
        """
        package = type(self).__module__
        try:
            module = importlib.import_module(f"{package}.metrics")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.metrics":
                raise
            return None
        return cast("MetricMap", module.names(version))

    # --- shared machinery --------------------------------------------------------------------------------

    def resolve_version(self, requested: str | None) -> FrameworkVersion:
        """The matrix entry for ``requested`` (newest supported when None); outside the matrix is an error."""
        known = self.versions()
        if not known:
            raise UsageError(f"framework {self.PLUGIN_NAME!r} declares no versions")
        if requested is None:
            supported = [v for v in known if v.status == "supported"] or known
            return max(supported, key=lambda v: v.parsed)
        try:
            wanted = Version(requested)
        except InvalidVersion:
            raise UsageError(
                f"--framework {self.PLUGIN_NAME}=={one_line(requested)}: {quote(requested)} is not a version"
            ) from None
        for entry in known:
            if entry.parsed == wanted:
                return entry
        listed = ", ".join(v.version for v in known)
        raise UsageError(
            f"{self.PLUGIN_NAME}=={one_line(requested)} is outside the compatibility matrix; expected one of: {listed}"
        )

    def unsupported(
        self,
        field: str,
        version: FrameworkVersion | str,
        what: str,
        *,
        first: str | None = None,
        last: str | None = None,
        nowhere: Literal["any", "pinned"] | None = None,
        found: object = None,
        expected: str | None = None,
    ) -> Problem:
        """The problem "<this framework> ``version`` cannot express ``what`` (...)"; see ``unsupported``."""
        return unsupported(
            field,
            self.PLUGIN_NAME,
            version.version if isinstance(version, FrameworkVersion) else version,
            what,
            first=first,
            last=last,
            nowhere=nowhere,
            found=found,
            expected=expected,
        )

    def check_capabilities(self, job: RLJob, version: FrameworkVersion) -> None:
        """Raise one UnsupportedError listing everything ``job`` needs that ``version`` cannot express."""
        problems = []
        for req in job_requirements(job):
            if req.capability in version.capabilities:
                continue
            having = [v for v in self.versions() if req.capability in v.capabilities]
            later = [v.version for v in having if v.parsed > version.parsed]
            earlier = [v.version for v in having if v.parsed < version.parsed]
            why = self.WHY_NOT.get(req.capability)
            problems.append(
                self.unsupported(
                    req.field,
                    version,
                    f"{req.capability}: {why}" if why else req.capability,
                    first=later[0] if later else None,
                    last=earlier[-1] if earlier else None,
                    nowhere="any",
                    found=req.found,
                )
            )
        if problems:
            raise UnsupportedError(problems)
