"""The conformance checks as plain functions: each returns a list of failures, empty when conformant.

They are what the pytest classes of ``rladapt.plugins.testing`` run, one case per test; other test runners call
them directly (``assert not check_adapter(MyAdapter(), specs)``).
"""

from __future__ import annotations

import copy
import importlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from rladapt.primitives import RladaptError, RLJob, SpecError, UnsupportedError, UsageError, load_job

from ..adapter import FrameworkAdapter, FrameworkVersion
from ..capabilities import unknown_capabilities
from ..launcher import Artifacts, Launcher, render_artifacts
from ..native import NativeLaunch
from ..native import secrets as native_secrets
from ..patches import Patch
from ..signature import Signature, log_lines
from .fields import check_fields_reach

if TYPE_CHECKING:
    from .host import Registry

_NAME = re.compile(r"^[a-z][a-z0-9_-]*\Z")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_HOOK = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*\Z")
#: An upstream reference: a URL, or GitHub's short form ``owner/repo#123``.
_ISSUE = re.compile(r"^(https?://\S+|[\w.-]+/[\w.-]+#\d+)\Z")
#: What a launcher must refuse: no launcher declares it, so accepting it means options are silently ignored.
UNKNOWN_OPTION = "rladapt_conformance_unknown_option"
#: A runtime patch hook no real plugin has: it must reach the launcher's artifacts verbatim.
PROBE_HOOK = "rladapt_conformance_probe:apply"
#: The run id ``rladapt launch`` passes to ``render`` (a dry run passes none).
PROBE_RUN_ID = "conformance-run"

Spec = str | Path | RLJob


def load_specs(specs: Iterable[Spec], root: Path | None = None) -> list[RLJob]:
    """RLJobs as given; paths loaded, relative ones against ``root`` (default: the current directory)."""
    jobs = []
    for spec in specs:
        if isinstance(spec, RLJob):
            jobs.append(spec)
            continue
        path = Path(spec)
        jobs.append(load_job(path if root is None or path.is_absolute() else root / path))
    return jobs


# --- adapters ------------------------------------------------------------------------------------------------


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
    unknown: dict[str, list[str]] = {}
    for v in versions:
        for message in unknown_capabilities(v.capabilities, getattr(adapter, "OWN_CAPABILITIES", {})):
            unknown.setdefault(message, []).append(v.version)
    failures.extend(f"{', '.join(having)}: {message}" for message, having in unknown.items())
    # WHY_NOT explains a capability no version has (e.g. a spec.reward.builtin scorer the framework lacks):
    # a reason given for one some version declares would be shown for a job that version does run.
    for capability in getattr(adapter, "WHY_NOT", {}):
        having = [v.version for v in versions if capability in v.capabilities]
        if having:
            failures.append(f"WHY_NOT explains {capability!r}, which {', '.join(having)} declare")
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
    elif [(s.env, s.sources) for s in native.secrets] != [(s.env, s.sources) for s in native_secrets(job)]:
        # Every source, in order: a launcher takes the first it can read, so a dropped one breaks a launcher.
        failures.append(
            f"{where}: native.secrets must carry every source of each secret, in the spec's order"
        )
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


@dataclass(frozen=True)
class Translated:
    """One (version, spec) case: the native launch, or why the version refused the job, and the failures."""

    native: NativeLaunch | None
    refused: str | None = None
    failures: list[str] = field(default_factory=list)


def translate_case(adapter: FrameworkAdapter, version: FrameworkVersion, job: RLJob) -> Translated:
    """Translate ``job`` on ``version`` as the host does and check the result; a refusal is not a failure."""
    where = f"{job.name} on {adapter.PLUGIN_NAME} {version.version}"
    before = job.model_dump()
    try:
        adapter.check_capabilities(job, version)
        native = adapter.translate(job, version)
    except UnsupportedError as exc:
        if not exc.problems or not all(p.path.startswith("spec") for p in exc.problems):
            return Translated(None, str(exc), [f"{where}: UnsupportedError without spec field paths"])
        return Translated(None, str(exc))
    except SpecError as exc:
        return Translated(None, None, [f"{where}: translate raised SpecError for a valid job: {exc}"])
    failures = []
    if job.model_dump() != before:
        failures.append(f"{where}: translate changed the job")
    if adapter.translate(job, version) != native:
        failures.append(f"{where}: translate is not deterministic")
    failures.extend(check_native(adapter, version, job, native))
    failures.extend(check_fields_reach(adapter, version, job))
    return Translated(native, None, failures)


def coverage_failure(name: str, version: str, jobs: Sequence[RLJob], refusals: Sequence[str]) -> str:
    """The failure of a version that translates none of the specs: an adapter refusing every job is broken."""
    if not jobs:
        return f"{name} {version}: no specs to translate; set `specs` to jobs the adapter should translate"
    first = refusals[0].replace("\n", " ") if refusals else "no refusal recorded"
    return (
        f"{name} {version} translates none of the {len(jobs)} specs ({', '.join(j.name for j in jobs)}): "
        f"every declared version must translate at least one; first refusal: {first}"
    )


def check_translate(adapter: FrameworkAdapter, jobs: Sequence[RLJob]) -> list[str]:
    failures = []
    for version in adapter.versions():
        outcomes = [translate_case(adapter, version, job) for job in jobs]
        for outcome in outcomes:
            failures.extend(outcome.failures)
        if not any(o.native is not None for o in outcomes):
            refusals = [o.refused for o in outcomes if o.refused]
            failures.append(coverage_failure(adapter.PLUGIN_NAME, version.version, jobs, refusals))
    return failures


def check_adapter(adapter: FrameworkAdapter, specs: Iterable[Spec]) -> list[str]:
    """Every conformance failure of ``adapter`` on ``specs`` (an empty list means conformant)."""
    return check_declaration(adapter) + check_translate(adapter, load_specs(specs))


# --- launchers -----------------------------------------------------------------------------------------------


def declared_options(launcher: Launcher | type[Launcher]) -> dict[str, str]:
    """``--launcher-opt`` name -> help text, as ``Launcher.declared_options`` reads ``OPTIONS``."""
    cls = launcher if isinstance(launcher, type) else type(launcher)
    return {name: option.help for name, option in cls.declared_options().items()}


def check_launcher_declaration(launcher: Launcher) -> list[str]:
    failures = []
    name = getattr(launcher, "PLUGIN_NAME", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        failures.append(f"PLUGIN_NAME {name!r} must be a lowercase identifier")
    if not str(getattr(launcher, "DESCRIPTION", "") or "").strip():
        failures.append(f"launcher {name!r}: DESCRIPTION is empty (`rladapt plugins` shows it)")
    for option, text in declared_options(launcher).items():
        if not text.strip():
            failures.append(f"launcher {name!r}: option {option!r} has no help text")
    return failures


@contextmanager
def isolated_filesystem() -> Iterator[Path]:
    """A fresh empty directory as cwd and as ``$RLADAPT_HOME`` (where run directories live), restored after."""
    old_cwd, old_home = os.getcwd(), os.environ.get("RLADAPT_HOME")
    with tempfile.TemporaryDirectory(prefix="rladapt-conformance-") as tmp:
        root = Path(tmp)
        os.chdir(root)
        os.environ["RLADAPT_HOME"] = str(root)
        try:
            yield root
        finally:
            os.chdir(old_cwd)
            if old_home is None:
                os.environ.pop("RLADAPT_HOME", None)
            else:
                os.environ["RLADAPT_HOME"] = old_home


@dataclass(frozen=True)
class Rendered:
    """One render case: the artifacts, or why the launcher refused the native, and the failures."""

    artifacts: Artifacts | None
    refused: str | None = None
    failures: list[str] = field(default_factory=list)


def render_case(launcher: Launcher, native: NativeLaunch, options: Mapping[str, Any]) -> Rendered:
    """Render twice, as a dry run and as ``rladapt launch`` does (with a run id): pure and deterministic.

    Pure means: equal Artifacts every time, the native and the options unchanged, ``describe()`` stable, and
    nothing written to the filesystem (the cwd and ``$RLADAPT_HOME`` are fresh empty directories meanwhile).
    A typed refusal (``RladaptError``) of the native is not a failure.
    """
    where = f"{launcher.PLUGIN_NAME} render of {native.job_name} ({native.framework} {native.version})"
    before = native.model_dump()
    failures: list[str] = []
    first: Artifacts | None = None
    with isolated_filesystem() as root:
        for mode, run_id in (("dry run", None), ("launch", PROBE_RUN_ID)):
            opts = dict(options)
            kept = copy.deepcopy(opts)
            try:
                one = render_artifacts(launcher, native, opts, run_id=run_id)
                two = render_artifacts(launcher, native, opts, run_id=run_id)
            except RladaptError as exc:
                if mode == "launch" and first is not None:
                    failures.append(f"{where}: renders as a dry run but refuses a run id: {exc}")
                    break
                return Rendered(None, f"{type(exc).__name__}: {exc}")
            if not isinstance(one, Artifacts):
                failures.append(f"{where} ({mode}): render returned {type(one).__name__}, expected Artifacts")
                break
            if one != two:
                failures.append(f"{where} ({mode}): two renders of the same native differ")
            if one.describe() != one.describe() or one.describe() != two.describe():
                failures.append(f"{where} ({mode}): describe() is not stable")
            if one.launcher != launcher.PLUGIN_NAME:
                failures.append(f"{where} ({mode}): Artifacts.launcher is {one.launcher!r}")
            if opts != kept:
                failures.append(f"{where} ({mode}): render changed its options")
            first = first or one
        if native.model_dump() != before:
            failures.append(f"{where}: render changed the native launch")
        written = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        if written:
            failures.append(f"{where}: render wrote to the filesystem: {', '.join(written[:5])}")
    return Rendered(first, None, failures)


def check_runtime_patches(launcher: Launcher, native: NativeLaunch, options: Mapping[str, Any]) -> list[str]:
    """A runtime patch hook must reach what the launcher submits: a launcher that drops it runs unpatched."""
    probe = native.model_copy(update={"runtime_patches": (*native.runtime_patches, PROBE_HOOK)})
    try:
        with isolated_filesystem():
            text = render_artifacts(launcher, probe, options).describe()
    except RladaptError as exc:
        return [f"{launcher.PLUGIN_NAME}: refuses a native with a runtime patch: {exc}"]
    if PROBE_HOOK not in text:
        return [
            f"{launcher.PLUGIN_NAME}: the runtime patch {PROBE_HOOK!r} reaches none of the artifacts; run the "
            "native argv through the patch bootstrap (rladapt.bootstrap.bootstrap_argv)"
        ]
    return []


def check_unknown_option(launcher: Launcher, native: NativeLaunch, options: Mapping[str, Any]) -> list[str]:
    """An option no launcher declares must be a usage error, never silently ignored."""
    try:
        with isolated_filesystem():
            render_artifacts(launcher, native, {**options, UNKNOWN_OPTION: "1"})
    except UsageError as exc:
        if UNKNOWN_OPTION not in str(exc):
            return [f"{launcher.PLUGIN_NAME}: refuses an unknown option without naming it: {exc}"]
        return []
    except RladaptError as exc:
        return [f"{launcher.PLUGIN_NAME}: an unknown option raises {type(exc).__name__}, expected UsageError"]
    return [f"{launcher.PLUGIN_NAME}: accepts the unknown option {UNKNOWN_OPTION!r} (silently ignored)"]


def check_launcher(
    launcher: Launcher, natives: Sequence[NativeLaunch], options: Mapping[str, Any] | None = None
) -> list[str]:
    """Every conformance failure of ``launcher`` rendering ``natives`` with ``options``."""
    opts = dict(options or {})
    failures = check_launcher_declaration(launcher)
    rendered = []
    for native in natives:
        outcome = render_case(launcher, native, opts)
        failures.extend(outcome.failures)
        if outcome.artifacts is not None:
            rendered.append(native)
            failures.extend(check_runtime_patches(launcher, native, opts))
            failures.extend(check_unknown_option(launcher, native, opts))
    if not rendered:
        failures.append(
            f"{launcher.PLUGIN_NAME}: renders none of the {len(natives)} native launches; give it natives "
            "(and options, e.g. a required image) it should accept"
        )
    return failures


# --- patches -------------------------------------------------------------------------------------------------


def check_patch(patch: Patch, registry: Registry | None = None) -> list[str]:
    """The patch is well formed, names its upstream issue, and (with a registry) targets a registered framework
    at one of its declared versions."""
    where = f"patch {patch.id!r}"
    failures = []
    if not _NAME.fullmatch(patch.id):
        failures.append(f"{where}: id must be a lowercase identifier")
    try:
        specifier = SpecifierSet(patch.versions)
    except InvalidSpecifier:
        failures.append(f"{where}: versions {patch.versions!r} is not a PEP 440 specifier")
        specifier = None
    if not patch.versions.strip():
        failures.append(f"{where}: versions is empty; name the versions the upstream bug affects")
    if not _ISSUE.fullmatch(patch.issue.strip()):
        failures.append(f"{where}: issue {patch.issue!r} must be the upstream issue's URL (or owner/repo#N)")
    if not patch.summary.strip():
        failures.append(f"{where}: summary is empty")
    if patch.kind not in ("env", "config", "runtime"):
        failures.append(f"{where}: kind {patch.kind!r} is not env, config or runtime")
    if patch.kind in ("env", "config") and patch.apply is None:
        failures.append(f"{where}: an {patch.kind} patch needs apply")
    if patch.kind == "runtime":
        failures.extend(_check_hook(where, patch.runtime_hook))
    if registry is not None:
        if patch.framework not in registry.frameworks:
            failures.append(f"{where}: framework {patch.framework!r} is not registered")
        elif specifier is not None:
            declared = [v.version for v in registry.framework(patch.framework).versions()]
            if not any(Version(v) in specifier for v in declared):
                failures.append(
                    f"{where}: versions {patch.versions!r} matches none of {patch.framework}'s declared "
                    f"versions ({', '.join(declared)}): it never applies"
                )
    return failures


def _check_hook(where: str, hook: str | None) -> list[str]:
    if not hook or not _HOOK.fullmatch(hook):
        return [f"{where}: a runtime patch needs runtime_hook 'module:function', found {hook!r}"]
    module, _, function = hook.partition(":")
    try:
        target = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        return [f"{where}: runtime_hook {hook!r} does not resolve: {type(exc).__name__}: {exc}"]
    return [] if callable(target) else [f"{where}: runtime_hook {hook!r} is not callable"]


def check_patches(patches: Iterable[Patch], registry: Registry | None = None) -> list[str]:
    return [failure for patch in patches for failure in check_patch(patch, registry)]


def check_signature(
    signature: Signature, examples: Sequence[str], registry: Registry | None = None
) -> list[str]:
    """A triage signature is well formed, cites its source, and matches ``examples``: lines carrying the real
    message text it was built from (as the source prints it), each of which must be evidence of it. With a registry:
    its frameworks are registered, its versions match a declared version, and its id is registered once.

    .. versionadded:: 0.2
    """
    where = f"signature {signature.id!r}"
    failures = []
    if not _NAME.fullmatch(signature.id):
        failures.append(f"{where}: id must be a lowercase identifier")
    for name in ("cause", "fix", "source"):
        if not getattr(signature, name).strip():
            failures.append(
                f"{where}: {name} is empty"
                + (": cite where the message text comes from" if name == "source" else "")
            )
    if not examples:
        failures.append(f"{where}: give at least one example line with the real message text")
    for line in examples:
        hits, _ = signature.hits(log_lines([line]))  # as `rladapt triage` reads a log line
        if not hits:
            failures.append(f"{where}: does not match its example {line!r}")
    if registry is not None:
        for fw in signature.frameworks:
            if fw not in registry.frameworks:
                failures.append(f"{where}: framework {fw!r} is not registered")
            elif signature.versions:
                declared = [v.version for v in registry.framework(fw).versions()]
                if not any(Version(v) in SpecifierSet(signature.versions) for v in declared):
                    failures.append(
                        f"{where}: versions {signature.versions!r} matches none of {fw}'s declared versions "
                        f"({', '.join(declared)}): it never applies"
                    )
        registry.signatures()  # collects them, and with them the conflicts
        owners = registry.conflicts.get(("signature", signature.id))
        if owners:
            failures.append(f"{where}: registered by more than one plugin: {', '.join(owners)}")
    return failures
