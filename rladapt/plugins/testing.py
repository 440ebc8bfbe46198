"""The conformance kit: what every framework adapter must satisfy, importable by plugin authors' test suites.

    from rladapt.plugins.testing import AdapterConformance

    class TestMyAdapter(AdapterConformance):
        adapter = MyAdapter()
        specs = ["examples/my-job.yaml"]          # paths, or RLJob objects

Every check is also a plain function (``check_adapter``) returning a list of failures, for other test runners.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from packaging.version import InvalidVersion, Version

from rladapt.primitives import RLJob, SpecError, UnsupportedError, UsageError, load_job

from .adapter import FrameworkAdapter, FrameworkVersion
from .native import NativeLaunch

_NAME = re.compile(r"^[a-z][a-z0-9_-]*\Z")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def _jobs(specs: Iterable[str | Path | RLJob]) -> list[RLJob]:
    return [s if isinstance(s, RLJob) else load_job(s) for s in specs]


def check_declaration(adapter: FrameworkAdapter) -> list[str]:
    failures = []
    name = getattr(adapter, "PLUGIN_NAME", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        failures.append(f"PLUGIN_NAME {name!r} must be a lowercase identifier")
    versions = adapter.versions()
    if not versions:
        failures.append("versions() is empty")
    for v in versions:
        try:
            Version(v.version)
        except InvalidVersion:
            failures.append(f"version {v.version!r} is not PEP 440")
        if not isinstance(v.capabilities, frozenset):
            failures.append(f"{v.version}: capabilities must be a frozenset")
    try:
        adapter.resolve_version("0.0.0.dev0")
        failures.append("resolve_version accepted 0.0.0.dev0, which is outside any matrix")
    except UsageError:
        pass
    return failures


def check_native(
    adapter: FrameworkAdapter, version: FrameworkVersion, job: RLJob, native: NativeLaunch
) -> list[str]:
    where = f"{job.name} on {adapter.PLUGIN_NAME} {version.version}"
    failures = []
    if native.framework != adapter.PLUGIN_NAME:
        failures.append(f"{where}: native.framework is {native.framework!r}")
    if native.version != version.version:
        failures.append(f"{where}: native.version is {native.version!r}")
    if not native.argv or not all(isinstance(a, str) for a in native.argv):
        failures.append(f"{where}: argv must be a non-empty list of strings")
    for name in native.files:
        if name.startswith("/") or ".." in Path(name).parts:
            failures.append(f"{where}: file {name!r} must be a relative path inside the working directory")
    for key in native.env:
        if not _ENV.fullmatch(key):
            failures.append(f"{where}: env name {key!r} is not a valid variable name")
    secret_envs = {s.env for s in job.spec.secrets}
    if secret_envs & set(native.env):
        failures.append(f"{where}: secrets {sorted(secret_envs & set(native.env))} are in plain env")
    if {s.env for s in native.secrets} != secret_envs:
        failures.append(f"{where}: native.secrets must reference exactly the spec's secrets")
    roles = set(job.spec.required_roles)
    if set(native.placement) != roles:
        failures.append(
            f"{where}: placement covers {sorted(native.placement)}, the job has roles {sorted(roles)}"
        )
    again = NativeLaunch.model_validate({k: v for k, v in native.to_dict().items() if k != "format"})
    if again != native:
        failures.append(f"{where}: NativeLaunch does not survive its JSON form")
    problems = adapter.validate_native(native)
    if problems is not None and not isinstance(problems, list):
        failures.append(f"{where}: validate_native must return a list of Problems or None")
    return failures


def check_translate(adapter: FrameworkAdapter, jobs: Sequence[RLJob]) -> list[str]:
    failures = []
    for version in adapter.versions():
        for job in jobs:
            before = job.model_dump()
            try:
                adapter.check_capabilities(job, version)
                native = adapter.translate(job, version)
            except UnsupportedError as exc:
                if not exc.problems or not all(p.path.startswith("spec") for p in exc.problems):
                    failures.append(
                        f"{job.name} on {version.version}: UnsupportedError without spec field paths"
                    )
                continue
            except SpecError as exc:
                failures.append(
                    f"{job.name} on {version.version}: translate raised SpecError for a valid job: {exc}"
                )
                continue
            if job.model_dump() != before:
                failures.append(f"{job.name} on {version.version}: translate changed the job")
            if adapter.translate(job, version) != native:
                failures.append(f"{job.name} on {version.version}: translate is not deterministic")
            failures.extend(check_native(adapter, version, job, native))
    return failures


def check_adapter(adapter: FrameworkAdapter, specs: Iterable[str | Path | RLJob]) -> list[str]:
    """Every conformance failure of ``adapter`` on ``specs`` (an empty list means conformant)."""
    return check_declaration(adapter) + check_translate(adapter, _jobs(specs))


class AdapterConformance:
    """Subclass in a pytest module, setting ``adapter`` and ``specs``; pytest collects the checks."""

    adapter: ClassVar[FrameworkAdapter]
    specs: ClassVar[Sequence[str | Path | RLJob]] = ()

    def test_declaration(self) -> None:
        failures = check_declaration(self.adapter)
        assert not failures, "\n".join(failures)

    def test_translate(self) -> None:
        assert self.specs, "set `specs` to at least one spec the adapter should translate"
        failures = check_translate(self.adapter, _jobs(self.specs))
        assert not failures, "\n".join(failures)
