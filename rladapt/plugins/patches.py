"""Patches: named, versioned fixes for known framework bugs, each tied to the upstream issue it works around."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from packaging.specifiers import SpecifierSet
from packaging.version import Version

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

    from .native import NativeLaunch


@dataclass(frozen=True)
class Patch:
    """A fix applied to every launch of ``framework`` whose version is in ``versions`` (a PEP 440 specifier).

    ``kind``: ``env`` and ``config`` patches rewrite the NativeLaunch through ``apply`` (returning a new one);
    ``runtime`` patches name a ``module:function`` that ``python -m rladapt.bootstrap`` (and every Ray worker, via
    ``worker_process_setup_hook``) calls before the framework code runs.
    """

    id: str
    framework: str
    versions: str
    issue: str
    summary: str
    kind: Literal["env", "config", "runtime"]
    apply: Callable[[NativeLaunch, RLJob], NativeLaunch] | None = None
    runtime_hook: str | None = None
    when: Callable[[NativeLaunch, RLJob], bool] | None = None

    def applies_to(self, framework: str, version: str) -> bool:
        return framework == self.framework and Version(version) in SpecifierSet(self.versions)

    def __call__(self, native: NativeLaunch, job: RLJob) -> NativeLaunch:
        if self.when is not None and not self.when(native, job):
            return native
        out = native if self.apply is None else self.apply(native, job)
        update: dict[str, object] = {"patches": (*out.patches, self.id)}
        if self.kind == "runtime" and self.runtime_hook:
            update["runtime_patches"] = (*out.runtime_patches, self.runtime_hook)
        return out.model_copy(update=update)
