# mypy: disable-error-code="empty-body"
"""Hook specifications of rladapt: the contract a plugin implements. Every hook name starts with ``rladapt_``.

Two kinds, as in hatch and datasette:

* registration hooks (``rladapt_register_*``) return lists of objects with a unique name; the core
  dispatches by that name, so no plugin ever has to ask "is this job mine?";
* policy hooks that every plugin may join: the chain hooks ``rladapt_modify_job`` and
  ``rladapt_modify_native`` (one implementation at a time, each receiving the previous one's result) and the
  collect hook ``rladapt_add_checks`` (every result concatenated).

Order: external plugins (entry points) are registered first and the built-ins after them, as in tox 4. pluggy
calls the last registered first, so built-in implementations run first and external ones after them, seeing
their results: an org policy plugin has the last word. ``@hookimpl(tryfirst=True)`` / ``trylast=True`` move an
implementation. Within the external plugins, the one whose entry point name sorts last runs first.

Rules the host enforces when it loads a plugin (a plugin that breaks one is listed as broken by
``rladapt plugins`` and skipped, never fatal for the others): every ``rladapt_*`` function marked
``@hookimpl`` must name a hook below (a typo is caught); an implementation takes only arguments named here, in
any order and any subset; ``wrapper=True`` and ``hookwrapper=True`` are not supported (each implementation is
called on its own). An exception raised by an implementation stops the command with an error naming the
plugin (exit 1), unless it is an ``rladapt.primitives`` error, which keeps its own message and exit code.
Hooks added after 0.1 carry ``.. versionadded::``.
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
    from .signature import Signature

PROJECT_NAME = "rladapt"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# --- registration ---------------------------------------------------------------------------------------


@hookspec
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    """Register framework adapters.

    Called once per process, when the plugin manager loads, after every plugin is registered.

    :returns: ``FrameworkAdapter`` instances (or subclasses, which are instantiated without arguments).
        Each one's ``PLUGIN_NAME`` (``verl``, ``openrlhf``, ...) is the name users pass to ``--framework``
        and use as a key under ``spec.native``. Two plugins registering the same name make that name
        unusable, with an error naming both plugins; anything that is not an adapter, or an exception, makes
        this plugin broken.

        An adapter also tells how its framework logs metrics (``FrameworkAdapter.metric_names(version)``, by
        default the ``names(version)`` of the adapter package's ``metrics`` module; read by ``rladapt metrics``,
        ``status`` and ``runs``): per neutral name (``rladapt.plugins.NEUTRAL``) the tags it is read back from, with
        the framework file that logs each one, or ``Absent`` with the reason; None keeps every native name.
    """


@hookspec
def rladapt_register_launchers() -> list[Launcher]:
    """Register launchers: ``local``, ``ray``, ``slurm``, ``kubernetes``, your own.

    Called once per process, when the plugin manager loads.

    :returns: ``Launcher`` instances (or subclasses). ``PLUGIN_NAME`` is the name users pass to ``--launcher``
        and use as a key under ``spec.launcher``; unique across plugins, as for frameworks.
    """


@hookspec
def rladapt_register_patches() -> list[Patch]:
    """Register patches: fixes for known framework bugs, each with a version range and its upstream issue.

    Called once per process, when the plugin manager loads. On every render the core applies, one after
    another, each patch whose ``framework`` and ``versions`` match the launch: after ``translate`` and before
    the framework's native validation. Applied patch ids are listed in ``NativeLaunch.patches``.

    :returns: ``Patch`` objects. ``Patch.id`` is unique across plugins.
    """


@hookspec
def rladapt_register_signatures() -> list[Signature]:
    """Register failure signatures for ``rladapt triage``: a known failure, how to recognise it in a log, its
    cause and its fix.

    Called once per process, the first time ``rladapt triage`` reads the catalogue (not on renders). The built-in
    catalogue (``rladapt.triage.catalogue``, registered by the built-in plugin ``triage``) comes first; a plugin's
    signatures are matched after it.

    :returns: ``rladapt.plugins.Signature`` records. ``Signature.id`` is unique across plugins and the built-in
        catalogue: an id registered twice makes that signature unusable, with a warning naming both owners;
        anything that is not a ``Signature``, or an exception, makes this plugin broken. Cite where each
        pattern's text comes from in ``Signature.source``.

    .. versionadded:: 0.2
    """


# --- policy ---------------------------------------------------------------------------------------------


@hookspec
def rladapt_modify_job(job: RLJob, framework: str) -> RLJob | None:
    """Apply org policy to the neutral spec (mandatory labels, a registry rewrite).

    Called on every render (``render``, ``launch``, ``validate -f``) after the spec is loaded and validated
    and the framework's version resolved; before capability checks and translation. A chain hook: each
    implementation receives the job returned by the one before it.

    :param job: the validated job (command-line ``key=value`` overrides applied). Frozen: never mutate it;
        build a new one (``job.model_copy(update=...)`` or ``RLJob.model_validate(...)``).
    :param framework: the bare framework name from ``--framework`` (``verl`` for ``--framework verl==0.9.1``);
        the version is resolved by then but not passed.
    :returns: a new ``RLJob``, or None to keep ``job``. A changed job is validated again as a spec. Anything
        else is an error naming this plugin.
    """


@hookspec
def rladapt_modify_native(native: NativeLaunch, job: RLJob) -> NativeLaunch | None:
    """Apply org policy to the native launch (e.g. NCCL variables for a fabric, a mount).

    Called on every render after translation, patches and the framework's native validation, before the
    preflight checks; chained like ``rladapt_modify_job``.

    :param native: the launch so far (frozen; ``native.with_env(...)`` and ``native.model_copy(update=...)``
        return new ones). It is not validated again against the framework's schema.
    :param job: the job it was translated from, after ``rladapt_modify_job``.
    :returns: a new ``NativeLaunch``, or None to keep ``native``. Anything else is an error naming this
        plugin.
    """


@hookspec
def rladapt_add_checks(job: RLJob, native: NativeLaunch) -> list[Problem]:
    """Preflight checks: problems that must stop the launch.

    Called on every render, last, after ``rladapt_modify_native``. Every implementation runs; the problems are
    concatenated and reported together as a spec error (exit 2), so name the spec field in ``Problem.path``.

    :param job: the job after ``rladapt_modify_job``.
    :param native: the final launch, after ``rladapt_modify_native``.
    :returns: a list of ``Problem`` (empty, or None, when all is well). Anything else is an error naming this
        plugin.
    """
