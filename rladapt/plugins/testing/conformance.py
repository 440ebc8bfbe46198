"""The conformance classes a plugin's pytest suite subclasses: one test per (version, spec), through the host.

Each class parametrizes its own tests (a class-level ``pytest_generate_tests``), so it works whether or not the
kit's pytest plugin is loaded. Relative spec paths are resolved against pytest's rootdir.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from rladapt.pipeline import render_native
from rladapt.primitives import RladaptError, RLJob, UnsupportedError, UsageError

from ..adapter import FrameworkAdapter, FrameworkVersion
from ..launcher import Launcher
from ..native import NativeLaunch
from ..patches import Patch
from .checks import (
    Spec,
    check_declaration,
    check_launcher_declaration,
    check_native,
    check_patch,
    check_runtime_patches,
    check_unknown_option,
    coverage_failure,
    load_specs,
    render_case,
    translate_case,
)
from .host import Registry, entry_point_registry, host_registry

if TYPE_CHECKING:
    import pytest


def _fail(failures: Sequence[str]) -> None:
    if failures:
        import pytest

        pytest.fail("\n".join(failures), pytrace=False)


def _skip(reason: str) -> NoReturn:
    import pytest

    pytest.skip(reason.replace("\n", " "))


def _root(metafunc: pytest.Metafunc) -> Path:
    return Path(metafunc.config.rootpath)


@dataclass(frozen=True)
class AdapterCase:
    version: FrameworkVersion
    job: RLJob


@dataclass(frozen=True)
class VersionCase:
    version: FrameworkVersion
    jobs: tuple[RLJob, ...]


class AdapterConformance:
    """Subclass in a pytest module, setting ``framework`` (a registered name) or ``adapter``, and ``specs``.

    Test ids are ``<version>-<spec name>``; a version that cannot express a spec skips that case with the
    reason, and ``test_every_version_translates_a_spec`` fails a version that translates none of them.
    """

    #: The framework's registered name, looked up in the registry of installed plugins (entry points).
    framework: ClassVar[str | None] = None
    #: Or the adapter object itself, registered next to the installed plugins for the host checks.
    adapter: ClassVar[FrameworkAdapter | None] = None
    #: Spec files (relative to pytest's rootdir) or RLJob objects the adapter should translate.
    specs: ClassVar[Sequence[Spec]] = ()
    #: Versions known to translate none of the specs -> why. Their coverage test is a strict xfail: it fails
    #: again once the version translates a spec, so the entry is removed with the gap.
    known_gaps: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def subject(cls) -> FrameworkAdapter:
        if cls.framework:
            return entry_point_registry().framework(cls.framework)
        if cls.adapter is not None:
            return cls.adapter
        raise UsageError(f"{cls.__name__}: set `framework` (a registered name) or `adapter`")

    @classmethod
    def registry(cls) -> Registry:
        """A fresh host registry holding the adapter (and every installed plugin)."""
        return host_registry() if cls.framework else host_registry(cls.subject())

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        names = metafunc.fixturenames
        if "adapter_case" not in names and "adapter_version" not in names:
            return
        adapter = self.subject()
        jobs = tuple(load_specs(self.specs, _root(metafunc)))
        versions = adapter.versions()
        if "adapter_case" in names:
            cases = [AdapterCase(v, j) for v in versions for j in jobs]
            metafunc.parametrize(
                "adapter_case", cases, ids=[f"{c.version.version}-{c.job.name}" for c in cases]
            )
        if "adapter_version" in names:
            import pytest

            params = [
                pytest.param(
                    VersionCase(v, jobs),
                    id=v.version,
                    marks=[pytest.mark.xfail(strict=True, reason=self.known_gaps[v.version])]
                    if v.version in self.known_gaps
                    else [],
                )
                for v in versions
            ]
            metafunc.parametrize("adapter_version", params)

    def test_registered(self) -> None:
        registry = self.registry()
        adapter = self.subject()
        try:
            found = registry.framework(adapter.PLUGIN_NAME)
        except RladaptError as exc:
            broken = "; ".join(f"{b.name}: {b.error}" for b in registry.broken)
            _fail([f"{exc}" + (f" (broken plugins: {broken})" if broken else "")])
            return
        if type(found) is not type(adapter):
            _fail(
                [
                    f"framework {adapter.PLUGIN_NAME!r} is a {type(found).__name__}, not a {type(adapter).__name__}"
                ]
            )

    def test_declaration(self) -> None:
        _fail(check_declaration(self.subject()))

    def test_translate(self, adapter_case: AdapterCase) -> None:
        outcome = translate_case(self.subject(), adapter_case.version, adapter_case.job)
        _fail(outcome.failures)
        if outcome.refused is not None:
            _skip(f"{adapter_case.version.version} cannot express {adapter_case.job.name}: {outcome.refused}")

    def test_render_through_host(self, adapter_case: AdapterCase) -> None:
        """The host's whole render: policy hooks of every installed plugin, patches, native validation."""
        adapter, version, job = self.subject(), adapter_case.version, adapter_case.job
        try:
            rendered = render_native(job, f"{adapter.PLUGIN_NAME}=={version.version}", self.registry())
        except UnsupportedError as exc:
            _skip(f"{version.version} cannot express {job.name}: {exc}")
        except RladaptError as exc:
            _fail([f"{job.name} on {adapter.PLUGIN_NAME} {version.version}: the host refuses it: {exc}"])
            return
        _fail(check_native(rendered.adapter, version, rendered.job, rendered.native))

    def test_every_version_translates_a_spec(self, adapter_version: VersionCase) -> None:
        adapter, version = self.subject(), adapter_version.version
        outcomes = [translate_case(adapter, version, job) for job in adapter_version.jobs]
        if not any(o.native is not None for o in outcomes):
            refusals = [o.refused for o in outcomes if o.refused]
            _fail([coverage_failure(adapter.PLUGIN_NAME, version.version, adapter_version.jobs, refusals)])


@dataclass(frozen=True)
class LauncherCase:
    framework: str
    job: RLJob


class LauncherConformance:
    """Subclass in a pytest module, setting ``launcher`` (a registered name, or the object), ``framework`` (one
    or more registered names, optionally ``NAME==VERSION``: they turn ``specs`` into native launches through the
    host), ``specs`` and the ``options`` the launcher needs (e.g. a required image). Test ids are
    ``<framework>-<spec name>``.
    """

    launcher: ClassVar[str | Launcher]
    framework: ClassVar[str | Sequence[str]] = ()
    specs: ClassVar[Sequence[Spec]] = ()
    options: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def subject(cls) -> Launcher:
        chosen = getattr(cls, "launcher", None)
        if isinstance(chosen, str):
            return entry_point_registry().launcher(chosen)
        if isinstance(chosen, Launcher):
            return chosen
        raise UsageError(f"{cls.__name__}: set `launcher` (a registered name or a Launcher)")

    @classmethod
    def registry(cls) -> Registry:
        chosen = getattr(cls, "launcher", None)
        return host_registry() if isinstance(chosen, str) else host_registry(cls.subject())

    @classmethod
    def frameworks(cls) -> list[str]:
        return [cls.framework] if isinstance(cls.framework, str) else list(cls.framework)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "launcher_case" not in metafunc.fixturenames and "launcher_cases" not in metafunc.fixturenames:
            return
        jobs = load_specs(self.specs, _root(metafunc))
        cases = [LauncherCase(f, j) for f in self.frameworks() for j in jobs]
        if "launcher_case" in metafunc.fixturenames:
            metafunc.parametrize("launcher_case", cases, ids=[f"{c.framework}-{c.job.name}" for c in cases])
        else:
            metafunc.parametrize("launcher_cases", [cases], ids=["all"])

    def native(self, case: LauncherCase) -> NativeLaunch:
        """The case's native launch, rendered through the host; a framework's refusal skips the case."""
        try:
            return render_native(case.job, case.framework, self.registry()).native
        except UnsupportedError as exc:
            _skip(f"{case.framework} cannot express {case.job.name}: {exc}")

    def rendered(self, case: LauncherCase) -> NativeLaunch:
        """The case's native launch, or a skip when the launcher refuses it (with a typed error)."""
        native = self.native(case)
        outcome = render_case(self.subject(), native, self.options)
        _fail(outcome.failures)
        if outcome.refused is not None:
            _skip(
                f"{self.subject().PLUGIN_NAME} refuses {case.job.name} on {case.framework}: {outcome.refused}"
            )
        return native

    def test_declaration(self) -> None:
        _fail(check_launcher_declaration(self.subject()))

    def test_registered(self) -> None:
        launcher = self.subject()
        found = self.registry().launcher(launcher.PLUGIN_NAME)
        if type(found) is not type(launcher):
            _fail(
                [
                    f"launcher {launcher.PLUGIN_NAME!r} is a {type(found).__name__}, not a {type(launcher).__name__}"
                ]
            )

    def test_render_is_pure(self, launcher_case: LauncherCase) -> None:
        self.rendered(launcher_case)

    def test_runtime_patches_reach_the_artifacts(self, launcher_case: LauncherCase) -> None:
        _fail(check_runtime_patches(self.subject(), self.rendered(launcher_case), self.options))

    def test_unknown_option_is_refused(self, launcher_case: LauncherCase) -> None:
        _fail(check_unknown_option(self.subject(), self.rendered(launcher_case), self.options))

    def test_renders_a_spec(self, launcher_cases: list[LauncherCase]) -> None:
        launcher, registry = self.subject(), self.registry()
        refusals = []
        for case in launcher_cases:
            try:
                native = render_native(case.job, case.framework, registry).native
            except UnsupportedError as exc:
                refusals.append(f"{case.framework}: {exc}")
                continue
            outcome = render_case(launcher, native, self.options)
            if outcome.artifacts is not None:
                return
            refusals.append(f"{launcher.PLUGIN_NAME}: {outcome.refused}")
        first = refusals[0].replace("\n", " ") if refusals else "no specs: set `specs` and `framework`"
        _fail(
            [
                f"{launcher.PLUGIN_NAME} renders none of the {len(launcher_cases)} cases: give it specs and "
                f"options it should accept; first refusal: {first}"
            ]
        )


class PatchConformance:
    """Subclass in a pytest module, setting ``patches`` (registered ids, or Patch objects) or ``plugin`` (every
    patch that plugin registers). One test per patch id."""

    patches: ClassVar[Sequence[str | Patch]] = ()
    plugin: ClassVar[str | None] = None

    @classmethod
    def subjects(cls) -> list[Patch]:
        registry = entry_point_registry()
        chosen = [p if isinstance(p, Patch) else registry.patches[p].obj for p in cls.patches]
        if cls.plugin is not None:
            chosen += [r.obj for r in registry.patches.values() if r.plugin == cls.plugin]
        return chosen

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "patch_case" in metafunc.fixturenames:
            patches = self.subjects()
            metafunc.parametrize("patch_case", patches, ids=[p.id for p in patches])

    def test_declares_patches(self) -> None:
        _fail([] if self.subjects() else [f"{type(self).__name__}: no patches (set `patches` or `plugin`)"])

    def test_patch(self, patch_case: Patch) -> None:
        _fail(check_patch(patch_case, entry_point_registry()))
