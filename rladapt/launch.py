"""The runner: spec -> native launch -> launcher artifacts -> run record -> submission -> the run's life.

Modelled on TorchX's ``Runner`` (``torchx/runner/api.py``): ``dryrun`` is pure and returns what would be
submitted (``Planned``, TorchX's ``AppDryRunInfo``), ``schedule`` submits it and records the run, and
``status``/``logs``/``stop`` act on a recorded run through the launcher that started it. The CLI verbs in
``rladapt.cli.runs`` only parse arguments and print; everything that decides something lives here, so the
library, the tests and the CLI launch the same way.

Resume and restarts will extend this module rather than the CLI:

- resume: a new run started from an old run's record (``Run.record["spec_path"]``, its options, its
  checkpoint directory) goes through ``dryrun`` with the resume settings as overrides, then ``schedule``;
- restarts: ``follow``/``wait`` are where a run is seen to end, so a restart policy will decide there whether
  to ``schedule`` the same ``Planned`` again as a new attempt, recording the attempt in the run store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rladapt.plugins.launcher import RUN_ID_OPTION, TERMINAL_STATES, Artifacts, Launcher, RunStatus
from rladapt.primitives.errors import LaunchError, RladaptError, SpecError, UsageError
from rladapt.runs import Run, RunStore, new_run_id, spec_hash

if TYPE_CHECKING:
    from rladapt.pipeline import Rendered
    from rladapt.plugins import NativeLaunch
    from rladapt.plugins._manager import Registry

__all__ = ["Planned", "Runner", "render_spec"]

#: Wraps a call that waits on a launcher; gets a message saying what is awaited (the CLI shows a spinner).
Progress = Callable[[str], AbstractContextManager[object]]


def render_spec(
    spec: str | Path, overrides: Sequence[str], framework: str, registry: Registry, text: str | None = None
) -> Rendered:
    """Load SPEC with OVERRIDES and render it for FRAMEWORK; a problem found after loading names the spec file.

    ``text`` is SPEC's text when the caller has read it already (``read_spec_text``): a pipe reads only once.
    """
    from rladapt.pipeline import render_native
    from rladapt.primitives import load_job

    job = load_job(spec, list(overrides), text=text)
    try:
        return render_native(job, framework, registry)
    except SpecError as exc:
        source = f"{spec}: {exc.source}" if exc.source else str(spec)
        raise type(exc)(exc.problems, source) from None


@dataclass(frozen=True)
class Planned:
    """What a launch would submit, computed without side effects and without a run id.

    ``describe()`` is exactly what ``rladapt launch --dry-run`` prints. ``schedule`` renders the artifacts again
    with the run id (launchers name jobs and objects after it), so ``artifacts`` here is the dry run's.
    """

    spec_path: str
    overrides: tuple[str, ...]
    spec_hash: str
    rendered: Rendered
    launcher_name: str
    launcher: Launcher
    #: ``spec.launcher.<name>`` overridden by the caller's options, as recorded with the run.
    options: dict[str, Any]
    artifacts: Artifacts

    @property
    def native(self) -> NativeLaunch:
        return self.rendered.native

    def describe(self) -> str:
        return self.artifacts.describe()


class Runner:
    """Launches specs and acts on recorded runs, through a plugin registry and a run store.

    ``registry`` defaults to the installed plugins (``rladapt.plugins._manager.get_registry()``, looked up when first
    needed), ``store`` to ``RunStore()`` (``$RLADAPT_HOME``). ``progress`` wraps the calls a user waits on
    (``schedule``'s submission, ``status``, ``stop``); ``refresh``, ``follow`` and ``wait`` go without it.
    """

    def __init__(
        self,
        registry: Registry | None = None,
        store: RunStore | None = None,
        *,
        progress: Progress | None = None,
    ) -> None:
        self._registry = registry
        self.store = store if store is not None else RunStore()
        self._progress: Progress = progress or (lambda message: nullcontext())

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from rladapt.plugins import (
                _manager,
            )  # through the module, so a registry installed by a test applies

            self._registry = _manager.get_registry()
        return self._registry

    # --- launching -------------------------------------------------------------------------------------------

    def dryrun(
        self,
        spec: str | Path,
        overrides: Sequence[str] = (),
        *,
        framework: str,
        launcher: str = "local",
        options: Mapping[str, str] | None = None,
    ) -> Planned:
        """Pure: load and render SPEC, merge the launcher options and render the launcher's artifacts.

        No run id is made, so the same inputs give the same bytes, run after run (``rladapt render
        --launcher`` shows them too). Nothing is written.
        """
        given = dict(options or {})
        if RUN_ID_OPTION in given:
            raise UsageError(
                f"launcher option {RUN_ID_OPTION} is set by the runner for each run, not by hand"
            )
        from rladapt.primitives import read_spec_text

        # Read once: what is hashed is what was loaded, even from a pipe (`launch <(cat job.yaml)`).
        text = read_spec_text(spec)
        rendered = render_spec(spec, overrides, framework, self.registry, text)
        native = rendered.native
        plugin = self.registry.launcher(launcher)
        # The launcher's own typed merge (spec.launcher.<name> under the caller's options, defaults filled in):
        # the record holds exactly the values the artifacts were rendered with.
        merged = plugin.merge_options(native, given)
        return Planned(
            spec_path=str(spec),
            overrides=tuple(overrides),
            spec_hash=spec_hash(text, overrides),
            rendered=rendered,
            launcher_name=launcher,
            launcher=plugin,
            options=merged,
            artifacts=plugin.render(native, merged),
        )

    def schedule(self, planned: Planned) -> Run:
        """Make a run id, render with it, record the run, submit it and save the launcher's handle.

        The record exists before the submission, so a submission that fails leaves a run marked FAILED with
        the reason (and no handle) rather than nothing. A launcher's own ``RladaptError`` is raised as it is;
        anything else becomes a ``LaunchError`` naming the launcher and the run id.
        """
        native = planned.native
        name = planned.launcher_name
        run_id = new_run_id(native.job_name)
        artifacts = planned.launcher.render(native, {**planned.options, RUN_ID_OPTION: run_id})
        run = self.store.create(
            run_id=run_id,
            launcher=name,
            framework=native.framework,
            version=native.version,
            job_name=native.job_name,
            spec_hash=planned.spec_hash,
            artifacts=artifacts,
            options=planned.options,
            spec_path=planned.spec_path,
        )
        try:
            with self._progress(f"submitting {run_id} to {name}"):
                handle = planned.launcher.submit(artifacts, run.dir)
        except RladaptError as exc:
            run.mark_submit_failed(exc.message)
            raise
        except Exception as exc:
            run.mark_submit_failed(f"{type(exc).__name__}: {exc}")
            raise LaunchError(
                f"{name} launcher failed to submit run {run_id}: {type(exc).__name__}: {exc}"
            ) from exc
        run.save_handle(handle)
        return run

    def launch(
        self,
        spec: str | Path,
        overrides: Sequence[str] = (),
        *,
        framework: str,
        launcher: str = "local",
        options: Mapping[str, str] | None = None,
    ) -> Run:
        """``schedule(dryrun(...))``: the recorded, submitted run."""
        return self.schedule(
            self.dryrun(spec, overrides, framework=framework, launcher=launcher, options=options)
        )

    # --- recorded runs ---------------------------------------------------------------------------------------

    def get(self, run_id: str | None = None) -> Run:
        """The run with this id or unique id prefix; without one, the latest run."""
        if run_id is not None:
            return self.store.get(run_id)
        every = self.store.list()
        if not every:
            raise UsageError(f"no runs yet in {self.store.runs_dir}; start one with `rladapt launch`")
        return every[-1]

    def launcher_for(self, run: Run) -> Launcher:
        return self.registry.launcher(run.launcher)

    def status(self, run: Run) -> RunStatus:
        """Ask the run's launcher for its state and record it; a run never submitted keeps its recorded state."""
        if run.handle is None:
            return run.recorded_status()
        with self._progress(f"asking {run.launcher} about {run.id}"):
            return self._ask(run)

    def _ask(self, run: Run) -> RunStatus:
        handle = run.handle
        if handle is None:
            return run.recorded_status()
        current = self.launcher_for(run).status(handle, run.dir)
        run.save_status(current)
        return current

    def refresh(self, run: Run, *, remote: bool = False) -> RunStatus:
        """Bring the record up to date where that is cheap, or wherever asked (``remote``).

        A run known to have ended, or never submitted, keeps its recorded state. Otherwise a launcher whose
        status reads local state only (``LOCAL_STATUS``) is always asked; one that must reach an engine (Ray,
        Slurm, Kubernetes) only when ``remote`` is true. Errors from the launcher are raised, so a caller going
        through many runs can report one unreachable engine and go on.
        """
        if run.state in TERMINAL_STATES or run.handle is None:
            return run.recorded_status()
        if not remote:
            known = self.registry.launchers.get(run.launcher)
            if known is None or not known.obj.LOCAL_STATUS:
                return run.recorded_status()
        return self._ask(run)

    def logs(self, run: Run, *, follow: bool = False) -> Iterator[str]:
        """The run's output, line by line with line ends; with ``follow``, until the run ends.

        A run never submitted is a ``LaunchError`` here, before any line is read.
        """
        handle = run.handle
        if handle is None:
            raise LaunchError(f"run {run.id} was never submitted ({run.record.get('message') or run.state})")
        return self.launcher_for(run).logs(handle, run.dir, follow=follow)

    def follow(self, run: Run, echo: Callable[[str], object]) -> RunStatus:
        """Stream the run's output to ``echo`` until it ends, then record and return its final state.

        Restarts will hook in here: a run that ends FAILED is where a restart policy schedules the next attempt.
        """
        for line in self.logs(run, follow=True):
            echo(line)
        return self._ask(run)

    def wait(self, run: Run, *, interval: float = 2.0, timeout: float | None = None) -> RunStatus:
        """Poll the launcher until the run ends, recording each state; returns the final one.

        ``timeout`` (seconds) raises a ``LaunchError`` if the run has not ended by then; the run keeps going.
        Like ``follow``, this is where restarts will decide on the next attempt.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            current = self._ask(run)
            if current.terminal or run.handle is None:
                return current
            if deadline is not None and time.monotonic() >= deadline:
                raise LaunchError(f"run {run.id} has not ended after {timeout:g} s (it is {current.state})")
            time.sleep(interval)

    def stop(self, run: Run) -> RunStatus | None:
        """Stop the run and record what the launcher says; ``None`` if it was never submitted (nothing to stop).

        Stopping a run that has ended changes nothing: the launcher says so in the returned message.
        """
        handle = run.handle
        if handle is None:
            return None
        with self._progress(f"stopping {run.id}"):
            result = self.launcher_for(run).stop(handle, run.dir)
        run.save_status(result)
        return result
