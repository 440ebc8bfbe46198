"""The one-direction data flow from a loaded RLJob to a checked NativeLaunch.

job -> rladapt_modify_job (chain) -> capabilities -> adapter.translate -> patches -> adapter.check_native
    [-> adapter.validate_native] -> rladapt_modify_native (chain) -> rladapt_add_checks
Each stage returns a new value; none reaches back into an earlier one.

Native checks: ``check_native`` judges every native key against the version's bundled schema snapshot (always,
offline). The deep check ``validate_native`` (the framework's own Hydra composition or parser, where installed)
runs when there is no snapshot, or on request: ``deep_check=True`` or ``RLADAPT_DEEP_CHECK=1``
(``render --deep-check``).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rladapt.plugins import FrameworkAdapter, FrameworkVersion, NativeLaunch, Registry
from rladapt.primitives import Problem, RLJob, SpecError, UsageError, load_job, validate_data

#: Set to 1 to run the deep native check (the framework's own schema, where installed) on every render.
DEEP_CHECK_ENV = "RLADAPT_DEEP_CHECK"


@dataclass(frozen=True)
class Rendered:
    job: RLJob
    adapter: FrameworkAdapter
    version: FrameworkVersion
    native: NativeLaunch


def parse_framework(text: str) -> tuple[str, str | None]:
    """``verl`` or ``verl==0.9.1``."""
    name, sep, version = text.partition("==")
    name = name.strip()
    if not name or (sep and not version.strip()) or any(c in name for c in "<>=!~ "):
        raise UsageError(f"--framework {text!r}: expected NAME or NAME==VERSION, e.g. verl==0.9.1")
    return name, (version.strip() or None)


def render_native(
    job: RLJob, framework: str, registry: Registry, *, deep_check: bool | None = None
) -> Rendered:
    """The checked native launch of ``job``; ``deep_check`` None reads ``RLADAPT_DEEP_CHECK``."""
    name, requested = parse_framework(framework)
    adapter = registry.framework(name)
    version = adapter.resolve_version(requested)

    modified = registry.chain("rladapt_modify_job", job, framework=name)
    if modified is not job:  # policy output is user-facing spec too: it must still be a valid job
        # exclude_unset keeps what the user (or the policy) wrote apart from defaults: unset fields stay unset,
        # so a null default still means "the framework's own value" and explain can tell the two apart
        modified = validate_data(
            modified.model_dump(by_alias=True, exclude_unset=True), "<after rladapt_modify_job>"
        )

    problems = _unknown_names("spec.native", modified.spec.native, registry.frameworks, "framework")
    problems += _unknown_names("spec.launcher", modified.spec.launcher, registry.launchers, "launcher")
    if problems:
        raise SpecError(problems)

    adapter.check_capabilities(modified, version)
    native = adapter.translate(modified, version)
    for patch in registry.patches_for(name, version.version):
        before = set(native.argv)
        native = patch(native, modified)
        native = _blame_patch(native, before, patch.id)

    found = adapter.check_native(native)
    deep = _deep_requested() if deep_check is None else deep_check
    if deep or found is None:
        deeper = adapter.validate_native(native)
        if deeper:
            # the framework's own verdict first; the snapshot adds what it alone judges (types, other fields)
            blamed = {p.path for p in deeper} | {p.found for p in deeper if p.found is not None}
            found = [*deeper, *(p for p in found or [] if p.path not in blamed and p.found not in blamed)]
        elif deeper is None and (found is None or deep):
            if found is None:
                note = (
                    f"not checked against {name} {version.version}'s own schema, which is not available here"
                )
            else:
                note = f"deep check skipped: {name} {version.version}'s own schema is not available here"
            if adapter.DISTRIBUTION:
                note += (
                    f" (install {adapter.DISTRIBUTION}=={version.version}, no dependencies needed, to check)"
                )
            native = native.model_copy(update={"notes": (*native.notes, note)})
    if found:
        raise SpecError(found, f"{name} {version.version} rejects the translated config")
    # before anything runs: a job that restarts itself resumes, and its framework is known to resume it wrongly
    # (each hazard cited in the adapter); `rladapt resume` asks again (rladapt.launch)
    if int(native.lifecycle.get("max_restarts") or 0) > 0:
        hazards = adapter.resume_hazards(native)
        if hazards:
            raise SpecError(hazards, f"{name} {version.version} resumes this job wrongly on a restart")

    native = registry.chain("rladapt_modify_native", native, job=modified)
    checks = registry.collect("rladapt_add_checks", job=modified, native=native)
    if checks:
        raise SpecError(checks, "preflight checks")
    return Rendered(job=modified, adapter=adapter, version=version, native=native)


def _unknown_names(field: str, used: Iterable[str], known: Iterable[str], kind: str) -> list[Problem]:
    """Per-framework or per-launcher sections naming nothing installed (a typo would otherwise be ignored)."""
    names = sorted(known)
    problems = []
    for key in used:
        if key in names:
            continue
        hint = difflib.get_close_matches(key, names, n=1)
        problems.append(
            Problem(
                f"{field}.{key}",
                f"no such {kind}" + (f" (did you mean {hint[0]!r}?)" if hint else ""),
                "one of " + (", ".join(names) or "none installed"),
                key,
            )
        )
    return problems


def _deep_requested() -> bool:
    return os.environ.get(DEEP_CHECK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _blame_patch(native: NativeLaunch, before: set[str], patch_id: str) -> NativeLaunch:
    """Record the patch as the origin of the argv items it added (native checks name it when they fail)."""
    added = [item for item in native.argv if item not in before]
    if not added:
        return native
    origins = dict(native.origins)
    for item in added:
        key = item.split("=", 1)[0].lstrip("+~")
        origins[key] = f"patch {patch_id}"
    return native.model_copy(update={"origins": origins})


def render_spec(
    spec: str | Path, overrides: Sequence[str], framework: str, registry: Registry, text: str | None = None
) -> Rendered:
    """Load SPEC with OVERRIDES and render it for FRAMEWORK; a problem found after loading names the spec file.

    ``text`` is SPEC's text when the caller has read it already (``read_spec_text``): a pipe reads only once.
    """
    job = load_job(spec, list(overrides), text=text)
    try:
        return render_native(job, framework, registry)
    except SpecError as exc:
        source = f"{spec}: {exc.source}" if exc.source else str(spec)
        raise type(exc)(exc.problems, source) from None
