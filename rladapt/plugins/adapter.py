"""The framework adapter contract: what ``rladapt_register_frameworks`` returns."""

from __future__ import annotations

import importlib
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, cast

from packaging.version import InvalidVersion, Version

from rladapt.compat.schema._format import Snapshot
from rladapt.primitives.errors import PluginError, Problem, UnsupportedError, UsageError, one_line, quote

from ._matrix import read_matrix
from .capabilities import job_requirements

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from importlib.resources.abc import Traversable
    from pathlib import Path

    from rladapt.primitives import RLJob

    from .checkpoints import Checkpoint, CheckpointScan, ResumePlan
    from .effective import Effective
    from .metrics import MetricMap
    from .native import NativeLaunch
    from .resumes import Restored, ResumeTrace


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


def nearest_pinned(wanted: Version, pinned: Sequence[Version]) -> str:
    """The pinned versions on either side of ``wanted``, the closer release first, each saying how it differs:
    ``0.9.1 (a newer patch), 0.8.0 (an older minor)`` for verl 0.9.0. A user who asked for an unpinned version
    most likely wants the same minor's pinned patch, then the neighbouring minor; a bare list of every pinned
    version leaves them to work that out."""
    older = [v for v in pinned if v < wanted]
    newer = [v for v in pinned if v > wanted]
    sides = [(max(older), False)] if older else []
    sides += [(min(newer), True)] if newer else []

    def shared(version: Version) -> int:
        """How many leading release numbers ``version`` shares with ``wanted`` (0.9.1 and 0.9.0: two)."""
        count = 0
        for a, b in zip(_release3(version), _release3(wanted), strict=True):
            if a != b:
                break
            count += 1
        return count

    sides.sort(key=lambda side: (-shared(side[0]), not side[1]))  # closer first; at a tie the newer one
    parts = []
    for version, is_newer in sides:
        step = ("major", "minor", "patch", "patch")[shared(version)]
        if shared(version) == 3:  # the same release numbers: 0.10.1.post2 for 0.10.1
            step = (
                "post-release" if version.is_postrelease else "pre-release" if version.is_prerelease else step
            )
        what = f"{'a newer' if is_newer else 'an older'} {step}"
        if len(sides) == 1:
            what += ", the newest pinned" if not is_newer else ", the oldest pinned"
        parts.append(f"{version} ({what})")
    return ", ".join(parts)


def _release3(version: Version) -> tuple[int, int, int]:
    major, minor, micro = (*version.release, 0, 0)[:3]
    return major, minor, micro


@dataclass(frozen=True)
class CheckpointLayout:
    """Where a framework version writes checkpoints and how a resume point is found."""

    root: str
    step_dir_pattern: str
    latest_marker: str | None
    resume_args: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class NativeSetting:
    """One native key a launch sets, as the framework reads it (``FrameworkAdapter.native_settings``).

    .. versionadded:: 0.3
    """

    key: str
    value: Any
    #: the spec field, ``spec.native.<fw>[i]`` entry or patch that produced it
    where: str
    #: the framework config it lands in (verl: the Hydra config name), None when the framework has one
    scope: str | None = None


class LaunchImporter(Protocol):
    """What ``rladapt import`` and ``rladapt diff`` need of a framework (``FrameworkAdapter.launch_importer``).

    The built-in adapters' ``importer`` modules implement it (e.g. ``rladapt/adapters/verl/importer.py``).
    Optional module-level extras the importer reads when present: ``READS_FILES`` (the launch reads the files a
    render generates), ``INTERPRETER`` (None: the framework picks the interpreter itself), ``prefix(argv)`` (spec
    fields from the words before the framework's arguments), ``config_launch``/``is_config`` (a config file is a
    launch), ``ENV_FIELDS`` (variable of the launch's environment -> the spec field that expresses it, which the
    import writes instead of ``spec.env``).

    .. versionadded:: 0.3
    """

    FRAMEWORK: str
    EXAMPLE: str

    def match(self, argv: list[str]) -> int | None:
        """Where the framework's own arguments start in ``argv``; None: not this framework's launch."""

    def effective(self, argv: list[str], version: str) -> Effective:
        """The effective configuration of the launch ``argv`` on ``version``."""

    def fields(self, t: dict[str, Any], version: str) -> dict[str, Any]:
        """Spec fields (``spec.a.b`` -> value) that express the effective values ``t``."""

    def reward_standin(self, values: dict[str, Any]) -> dict[str, Any]:
        """A ``spec.reward`` that renders when the launch names none rladapt can express."""

    def unconsumed(self, argv: list[str], target: Effective, derived: Effective) -> list[str]:
        """The launch items a render of the spec does not reproduce (they become ``spec.native`` items)."""

    def fixups(self, target: Effective, got: Effective) -> list[str]:
        """Native items that set every key whose value still differs between ``target`` and ``got``."""


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
    #: capability -> what it means: names this adapter adds to ``KNOWN_CAPABILITIES`` (the kit and ``rladapt
    #: plugins`` refuse any other unknown name, as a typo).
    #:
    #: .. versionadded:: 0.3
    OWN_CAPABILITIES: ClassVar[dict[str, str]] = {}
    #: The PyPI distribution that installs the framework (``rladapt pin`` pins it); None when there is none.
    DISTRIBUTION: ClassVar[str | None] = None
    #: Where the framework's releases are when there is no ``DISTRIBUTION`` to ask PyPI about, for people
    #: (``rladapt matrix outdated`` prints it instead).
    #:
    #: .. versionadded:: 0.3
    RELEASES: ClassVar[str | None] = None
    #: The compatibility matrix file the default ``versions`` reads (format: ``rladapt/compat/matrix/*.toml``).
    MATRIX: ClassVar[Traversable | None] = None
    #: The folder of schema snapshots, one ``<version>.json`` per version (format: ``rladapt.compat.schema``,
    #: written by ``generate_snapshot`` through ``rladapt matrix snapshot``); None: no snapshots. ``check_native``,
    #: ``render --explain`` (the framework's own defaults) and ``rladapt import`` read them.
    #:
    #: .. versionadded:: 0.3
    SNAPSHOTS: ClassVar[Traversable | None] = None
    #: What ``generate_snapshot`` reads, for people (``rladapt matrix snapshot --help``, its errors).
    #:
    #: .. versionadded:: 0.3
    SNAPSHOT_SOURCE: ClassVar[str | None] = None
    #: The path of a file of a release (wheel or checkout) that is an entrypoint the adapter launches or names, as a
    #: regular expression whose group 1 is the entrypoint's name (``rladapt matrix onboard`` compares them between
    #: releases); None: no entrypoints to compare.
    #:
    #: .. versionadded:: 0.3
    RELEASE_ENTRYPOINTS: ClassVar[str | None] = None
    #: The native keys a render sets only so that rladapt reads the run's metrics back (the TensorBoard backend
    #: and its directory): two launches that differ only there are the same run (``rladapt diff``, ``import``).
    #:
    #: .. versionadded:: 0.3
    READ_BACK_KEYS: ClassVar[tuple[str, ...]] = ()
    _matrix_versions: list[FrameworkVersion] | None = None
    _snapshots: dict[str, Snapshot | None] | None = None

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
    # An adapter overrides these methods (the built-in ones call their ``checkpoints`` module). Until 0.4, an
    # adapter that does not is still served from a sibling ``<package of the class>.checkpoints`` module defining
    # ``scan(root, version)``, ``plan_resume(argv, version, scan, chosen)`` and ``CAN_RESHARD``, with a
    # DeprecationWarning: a convention that silently meant "nothing resumes" for an adapter in a plain module.

    def _legacy_module(self, name: str) -> ModuleType | None:
        package = type(self).__module__
        try:
            module = importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":
                raise
            return None
        warnings.warn(
            f"framework {self.PLUGIN_NAME!r}: finding {name} in the sibling module {package}.{name} is "
            f"deprecated and goes in rladapt 0.4; override the FrameworkAdapter methods instead",
            DeprecationWarning,
            stacklevel=3,
        )
        return module

    @property
    def can_reshard(self) -> bool:
        """Whether a checkpoint loads on another world size: ``rladapt resume`` refuses a changed one otherwise."""
        module = self._legacy_module("checkpoints")
        return bool(getattr(module, "CAN_RESHARD", False))

    def scan_checkpoints(self, root: Path, version: str) -> CheckpointScan | None:
        """Every step under the checkpoint directory ``root`` as ``version`` writes it, complete or not.

        A step is complete only when every file the framework's save writes is there, non-empty, and the
        framework's commit point (its marker, its rename, its last file) says the save ended; otherwise its
        ``reason`` names what is missing. ``native_pick`` is what the framework's own resume would load. Pure
        (reads only). None: this adapter does not know its framework's checkpoints, and nothing resumes.
        """
        module = self._legacy_module("checkpoints")
        return None if module is None else cast("CheckpointScan", module.scan(root, version))

    def plan_resume(
        self, argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
    ) -> ResumePlan:
        """How the native command ``argv`` resumes from ``chosen`` (None: starts fresh), in the framework's own way.

        Called in the job, by the bootstrap, before each attempt (``rladapt.resume``). Pure: the plan says which
        steps to move aside and which markers to rewrite, and the bootstrap does it.
        """
        module = self._legacy_module("checkpoints")
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

    def resume_restores(self, version: str) -> Sequence[Restored] | None:
        """The spec fields whose value a resume of ``version`` takes from the checkpoint, not from the spec
        (``rladapt.plugins.Restored``, each citing the framework's load code): ``rladapt resume`` refuses a run
        whose spec changed one since its launch, unless ``--force``. None: this adapter does not say.

        .. versionadded:: 0.4
        """
        return None

    def resume_hazards(self, native: NativeLaunch) -> list[Problem]:
        """Problems of ``native`` that make the framework resume it wrongly (a save that never commits, a
        dataloader state that runs ahead of training), each confirmed in the framework's code at that version
        and cited. A render of a job that restarts itself (``lifecycle.max_restarts``) and ``rladapt resume``
        (unless ``--force``) refuse such a launch before it runs. Empty: none known.

        .. versionadded:: 0.4
        """
        return []

    def resume_trace(self, checkpoint_dir: Path, version: str) -> ResumeTrace | None:
        """What a finished run whose checkpoints are in ``checkpoint_dir`` logged per step (metrics, samples
        consumed) and a hash of its final weights, for ``rladapt certify``. None: this adapter cannot read them,
        and its runs cannot be certified.

        .. versionadded:: 0.4
        """
        return None

    # --- metrics: read by `rladapt metrics`, `status`, `runs` ---------------------------------------------------

    def metric_names(self, version: str) -> MetricMap | None:
        """What ``version`` logs each neutral metric as (``rladapt.plugins.MetricMap``); None: no mapping,
        every metric keeps its native name.

        Each ``Logged`` entry cites the file of the framework's source that logs it, and a quantity the version
        does not have is ``Absent`` with the reason. (Until 0.4, an adapter that does not override it is still
        served from a sibling ``<package of the class>.metrics`` module's ``names(version)``, with a
        DeprecationWarning.)

        .. versionadded:: 0.2
        """
        module = self._legacy_module("metrics")
        return None if module is None else cast("MetricMap", module.names(version))

    # --- weights: read by `rladapt pool publish` --------------------------------------------------------------

    def weight_files(self, root: Path, step: Checkpoint, version: str) -> Mapping[str, Path] | None:
        """The Hugging Face model files (name in a pool version -> file) of the complete ``step`` that
        ``version`` wrote under the checkpoint directory ``root``; None: this adapter cannot export weights.

        Raise ``rladapt.plugins.weights.NoWeights`` when the step holds no loadable model, saying what the
        framework must be told to write one (a save option) or which of its converters makes one.

        .. versionadded:: 0.3
        """
        return None

    # --- schema snapshots: read by every render's check, `render --explain`, `import`, `upgrade` -----------------

    def snapshot_versions(self) -> list[str]:
        """The versions that have a snapshot in ``SNAPSHOTS`` (file names, not loaded).

        .. versionadded:: 0.3
        """
        folder = self.SNAPSHOTS
        if folder is None or not folder.is_dir():
            return []
        return sorted(e.name.removesuffix(".json") for e in folder.iterdir() if e.name.endswith(".json"))

    def find_snapshot(self, version: str) -> Snapshot | None:
        """The snapshot of ``version`` in ``SNAPSHOTS``, or None when there is none (each file loaded once); a
        damaged one is a ``PluginError`` naming it.

        .. versionadded:: 0.3
        """
        cache = self._snapshots
        if cache is None:
            cache = self._snapshots = {}
        if version in cache:
            return cache[version]
        found = None
        folder = self.SNAPSHOTS
        ref = folder.joinpath(f"{version}.json") if folder is not None else None
        if folder is not None and ref is not None and ref.is_file():
            origin = f"{_shown_folder(folder)}/{version}.json"
            try:
                found = Snapshot.from_text(ref.read_text(encoding="utf-8"), origin)
            except (ValueError, KeyError, TypeError) as exc:
                raise PluginError(
                    f"{origin} is damaged ({exc}); reinstall the package that ships it"
                ) from None
        cache[version] = found
        return found

    def snapshot(self, version: str) -> Snapshot:
        """The snapshot of ``version``; its ``default(key)`` is that version's own default. None is an error.

        .. versionadded:: 0.3
        """
        found = self.find_snapshot(version)
        if found is None:
            have = ", ".join(self.snapshot_versions()) or "none"
            raise PluginError(f"no schema snapshot of {self.PLUGIN_NAME} {version} (bundled: {have})")
        return found

    def versions_having(self, key: str, exclude: str) -> list[str]:
        """The other versions with a snapshot that has ``key`` (loads them: only call it on an error).

        .. versionadded:: 0.3
        """
        found = []
        for version in sorted(self.snapshot_versions(), key=Version):
            snap = self.find_snapshot(version) if version != exclude else None
            if snap is not None and snap.has(key):
                found.append(version)
        return found

    # --- optional: what the framework-neutral verbs ask of a framework. None: "this adapter cannot" ------------

    def generate_snapshot(self, version: str, source: Path) -> Snapshot | None:
        """The snapshot of ``version`` built from ``source`` (the release, as ``SNAPSHOT_SOURCE`` says), for
        ``rladapt matrix snapshot``; raise ``ValueError`` for a source that is not one. None: this adapter cannot
        generate snapshots.

        .. versionadded:: 0.3
        """
        return None

    def framework_default_keys(self, job: RLJob, version: str) -> Mapping[str, tuple[str, ...]] | None:
        """Spec field -> the native keys an unset (null-default) field leaves to the framework, for
        ``render --explain``: it lists each such key with the version's own default (from its snapshot). A label
        with a space names a setting the framework defines and is always listed. None: nothing is left.

        .. versionadded:: 0.3
        """
        return None

    def explain_entries(self, native: NativeLaunch) -> Iterable[tuple[str, Any, str]] | None:
        """(native key, value, origin) of every key ``native`` sets, in launch order, for ``render --explain``;
        origin is the spec field, ``patch X`` or ``spec.native.<fw>[i]`` item. None: explain lists
        ``native.origins`` without values.

        .. versionadded:: 0.3
        """
        return None

    def native_settings(self, native: NativeLaunch) -> list[NativeSetting] | None:
        """Every native key ``native`` sets, as the framework reads it, for ``rladapt upgrade`` and ``onboard``
        (later settings of a key win). None: this adapter cannot list them.

        .. versionadded:: 0.3
        """
        return None

    def launch_importer(self) -> LaunchImporter | None:
        """What reads a native launch of this framework back into a spec (``rladapt import``, ``rladapt diff``).
        None: this adapter cannot import launches.

        .. versionadded:: 0.3
        """
        return None

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
            f"{self.PLUGIN_NAME}=={one_line(requested)} is outside the compatibility matrix; nearest pinned: "
            f"{nearest_pinned(wanted, [v.parsed for v in known])}; expected one of: {listed}"
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


def _shown_folder(folder: Traversable) -> str:
    # a bundled folder is named from the package root (rladapt/compat/matrix/snapshots/verl), never this machine's path
    parts = str(folder).replace("\\", "/").split("/")
    for root in ("rladapt", "site-packages"):
        if root in parts:
            at = len(parts) - 1 - parts[::-1].index(root)
            return "/".join(parts[at + (root == "site-packages") :])
    return str(folder)
