"""The one-direction data flow from a loaded RLJob to a checked NativeLaunch.

job -> rladapt_modify_job (chain) -> capabilities -> adapter.translate -> patches -> adapter.validate_native
    -> rladapt_modify_native (chain) -> rladapt_add_checks
Each stage returns a new value; none reaches back into an earlier one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from rladapt.plugins import FrameworkAdapter, FrameworkVersion, NativeLaunch
from rladapt.plugins._manager import Registry
from rladapt.primitives import Problem, RLJob, SpecError, UsageError, validate_data


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


def render_native(job: RLJob, framework: str, registry: Registry) -> Rendered:
    name, requested = parse_framework(framework)
    adapter = registry.framework(name)
    version = adapter.resolve_version(requested)

    modified = registry.chain("rladapt_modify_job", job, framework=name)
    if modified is not job:  # policy output is user-facing spec too: it must still be a valid job
        modified = validate_data(
            modified.model_dump(by_alias=True, exclude_none=False), "<after rladapt_modify_job>"
        )

    problems = _unknown_names("spec.native", modified.spec.native, registry.frameworks, "framework")
    problems += _unknown_names("spec.launcher", modified.spec.launcher, registry.launchers, "launcher")
    if problems:
        raise SpecError(problems)

    adapter.check_capabilities(modified, version)
    native = adapter.translate(modified, version)
    for patch in registry.patches_for(name, version.version):
        native = patch(native, modified)

    found = adapter.validate_native(native)
    if found:
        raise SpecError(found, f"{name} {version.version} rejects the translated config")
    if found is None:
        note = f"not checked against {name} {version.version}'s own schema, which is not available here"
        if adapter.DISTRIBUTION:
            note += f" (install {adapter.DISTRIBUTION}=={version.version}, no dependencies needed, to check)"
        native = native.model_copy(update={"notes": (*native.notes, note)})

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
