"""Hook specifications of rladapt. Every hook name starts with ``rladapt_``.

Two kinds, as in hatch and datasette:

* registration hooks (``rladapt_register_*``) return lists of objects with a unique name; the core dispatches by
  that name, so no plugin ever has to ask "is this job mine?";
* chain and collect hooks (``rladapt_modify_*``, ``rladapt_add_checks``) that every plugin may join. The modify
  hooks are called one implementation at a time, each seeing the previous one's result, in pluggy's order
  (last registered first; ``tryfirst``/``trylast`` move an implementation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from rladapt.primitives import Problem, RLJob

    from .adapter import FrameworkAdapter
    from .launcher import Launcher
    from .native import NativeLaunch
    from .patches import Patch

PROJECT_NAME = "rladapt"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    """Return framework adapters (instances of ``FrameworkAdapter``) this plugin provides.

    Called once when the plugin manager loads. Each adapter's ``PLUGIN_NAME`` (``verl``, ``openrlhf``, ...) is the
    name users pass to ``--framework``; two plugins registering the same name is an error naming both.
    """


@hookspec
def rladapt_register_launchers() -> list[Launcher]:
    """Return launchers (instances of ``Launcher``): ``local``, ``ray``, ``slurm``, ``kubernetes``, your own.

    Called once when the plugin manager loads; names are unique as for frameworks.
    """


@hookspec
def rladapt_register_patches() -> list[Patch]:
    """Return patches (``Patch``): fixes for known framework bugs, each with a version range and upstream issue.

    The core applies every patch whose framework and version range match a launch, after ``translate`` and
    before native validation, and lists them in the render output. Patch ids are unique.
    """


@hookspec
def rladapt_modify_job(job: RLJob, framework: str) -> RLJob | None:
    """Org policy on the neutral spec (mandatory labels, a registry rewrite): return a new RLJob or None.

    Called after the spec is loaded and validated, before translation; every implementation runs, in order,
    each receiving the previous result. The returned job is validated again. Never mutate ``job``.
    """


@hookspec
def rladapt_modify_native(native: NativeLaunch, job: RLJob) -> NativeLaunch | None:
    """Org policy on the native launch (e.g. NCCL variables for a fabric): return a new NativeLaunch or None.

    Called after translation, patches and native validation; chained like ``rladapt_modify_job``.
    """


@hookspec
def rladapt_add_checks(job: RLJob, native: NativeLaunch) -> list[Problem]:
    """Preflight checks: return problems that must stop the launch (empty list when all is well).

    Every implementation runs; the results are concatenated and reported together.
    """
