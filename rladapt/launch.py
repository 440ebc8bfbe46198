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

import json
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rladapt.pipeline import render_spec
from rladapt.plugins.launcher import (
    RUN_ID_OPTION,
    TERMINAL_STATES,
    Artifacts,
    Launcher,
    RunStatus,
    stop_requested,
)
from rladapt.primitives.errors import LaunchError, OutputError, RladaptError, UsageError
from rladapt.processes import alive, this_process
from rladapt.runs import Run, RunStore, new_run_id, spec_hash

if TYPE_CHECKING:
    from rladapt.pipeline import Rendered
    from rladapt.plugins import NativeLaunch
    from rladapt.plugins._manager import Registry

__all__ = ["Planned", "Runner", "render_spec"]

_STOPPED_BEFORE = "stopped by `rladapt stop` during its submission, before the job started"

#: Wraps a call that waits on a launcher; gets a message saying what is awaited (the CLI shows a spinner).
Progress = Callable[[str], AbstractContextManager[object]]


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

        The record exists before the submission, and says ``SUBMITTING`` with the launcher's ``intent`` (what
        will identify the job) and this process as the submitter before ``submit`` is called: a submission cut
        short (``kill -9``, a full disk when the handle is saved) leaves a run that ``status``/``stop`` find
        by that identity. A stop requested meanwhile (``Run.request_stop``) is honoured before ``submit`` (it
        is not called) and after it (the job is stopped at once); either way this raises a ``LaunchError``.
        A submission that fails leaves a run marked FAILED with the reason (and no handle). A launcher's own
        ``RladaptError`` is raised as it is; anything else becomes a ``LaunchError`` naming the launcher and
        the run id.
        """
        native = planned.native
        name = planned.launcher_name
        plugin = planned.launcher
        run_id = new_run_id(native.job_name)
        artifacts = plugin.render(native, {**planned.options, RUN_ID_OPTION: run_id})
        intent = plugin.intent(artifacts, run_id)
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
        with run.submission():
            try:
                run.save_submitting(intent, this_process())
            except OutputError as exc:
                message = exc.message
                self._try_record(run, lambda: run.mark_submit_failed(message))
                raise
            if stop_requested(run.dir):
                self._try_record(
                    run, lambda: run.save_not_submitted(RunStatus("STOPPED", None, _STOPPED_BEFORE))
                )
                raise LaunchError(f"run {run_id}: {_STOPPED_BEFORE}")
            try:
                with self._progress(f"submitting {run_id} to {name}"):
                    handle = plugin.submit(artifacts, run.dir)
            except RladaptError as exc:
                if stop_requested(run.dir):  # the launcher saw the request and started nothing
                    self._try_record(
                        run, lambda: run.save_not_submitted(RunStatus("STOPPED", None, _STOPPED_BEFORE))
                    )
                    raise LaunchError(f"run {run_id}: {_STOPPED_BEFORE}") from None
                failure = exc.message
                self._try_record(run, lambda: run.mark_submit_failed(failure))
                raise
            except Exception as exc:
                failure = f"{type(exc).__name__}: {exc}"
                self._try_record(run, lambda: run.mark_submit_failed(failure))
                raise LaunchError(
                    f"{name} launcher failed to submit run {run_id}: {type(exc).__name__}: {exc}"
                ) from exc
            # The handle is saved before the stop request is looked at, and `stop` creates the request before it
            # looks for a handle: whichever comes second sees the other's write, so one of them stops the job.
            unsaved: OutputError | None = None
            try:
                run.save_handle(handle)
            except OutputError as exc:
                unsaved = exc
            if stop_requested(run.dir):
                result = plugin.stop(handle, run.dir)
                self._try_record(run, lambda: run.save_status(result))
                raise LaunchError(
                    f"run {run_id} was stopped by `rladapt stop` during its submission: {_describe(result)}"
                )
            if unsaved is not None:
                identity = json.dumps(intent, sort_keys=True)
                raise OutputError(
                    f"run {run_id} was submitted to {name}, but its handle could not be saved: {unsaved.message}; "
                    f"`rladapt status {run_id}` and `rladapt stop {run_id}` find the job by its identity {identity}"
                )
            return run

    @staticmethod
    def _try_record(run: Run, save: Callable[[], None]) -> None:
        """Record an outcome when the store lets us; the error being raised already says what went wrong."""
        with suppress(OutputError):
            save()

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
        """Ask the run's launcher for its state and record it; a run never submitted keeps its recorded state.

        A run left ``SUBMITTING`` is first settled (``_settle``): still being submitted, found by its identity,
        or known never to have reached the launcher.
        """
        with self._progress(f"asking {run.launcher} about {run.id}"):
            if run.submitting:
                unsettled = self._settle(run)
                if unsettled is not None:
                    return unsettled
            if run.handle is None:
                return run.recorded_status()
            return self._ask(run)

    def _ask(self, run: Run) -> RunStatus:
        handle = run.handle
        if handle is None:
            return run.recorded_status()
        current = self.launcher_for(run).status(handle, run.dir)
        run.save_status(current)
        return current

    def _settle(self, run: Run, *, stopping: bool = False) -> RunStatus | None:
        """Resolve a run whose record says ``SUBMITTING``: None once its handle is in the record, else its status.

        - the submitter (same host, same pid and start time) is alive: the run is PENDING, being submitted; with
          ``stopping``, the stop request is created first, so the submitter does not start the job;
        - it is dead: the launcher looks the job up by the recorded intent (``Launcher.find``). A handle found is
          saved, completing the record. None means the job never reached the launcher: the stop request is
          created (so that a job about to start sees it and does not start), the launcher is asked once more
          (the job may have recorded itself in between), and the run is recorded FAILED;
        - the launcher cannot look jobs up (``NotImplementedError``): UNKNOWN, with the intent to look for;
        - it cannot tell now (``LaunchError``, an engine unreachable): raised as it is.
        """
        submitter = run.submitter or {}
        pid = int(submitter.get("pid", 0))
        host = submitter.get("host")
        who = f"pid {pid}" + (f" on {host}" if host else "")
        if host and host != socket.gethostname():
            if stopping:
                run.request_stop()
            return RunStatus("UNKNOWN", None, f"being submitted by {who}; ask there")
        # The submission lock says whether the submission is still under way (its holder alive and not done);
        # a record without one (an older rladapt) falls back to whether the submitting process lives.
        busy = run.being_submitted()
        if busy is None:
            busy = alive(pid, submitter.get("start_time"))
        if busy:
            if not stopping:
                return RunStatus("PENDING", None, f"being submitted by {who}")
            run.request_stop()
            # The submitter saves the handle before it looks for the request: it may have done both already.
            if run.refresh().handle is not None:
                return None
            return RunStatus(
                "STOPPED",
                None,
                f"stop requested while {who} submits it: the submission will not start the job",
            )
        launcher = self.launcher_for(run)
        intent = run.intent or {}
        try:
            handle = launcher.find(intent, run.dir)
            if handle is None:
                run.request_stop()
                handle = launcher.find(intent, run.dir)
        except NotImplementedError:
            if stopping:
                run.request_stop()
            return RunStatus(
                "UNKNOWN",
                None,
                f"the submission by {who} was interrupted, and the {run.launcher} launcher cannot look its job "
                f"up; look for the job identified by {json.dumps(intent, sort_keys=True)}",
            )
        if handle is None:
            failed = RunStatus(
                "FAILED", None, f"the submission was interrupted before the job reached {run.launcher}"
            )
            run.save_status(failed)
            return failed
        run.save_handle(handle)
        return None

    def refresh(self, run: Run, *, remote: bool = False) -> RunStatus:
        """Bring the record up to date where that is cheap, or wherever asked (``remote``).

        A run known to have ended, or never submitted, keeps its recorded state. Otherwise a launcher whose
        status reads local state only (``LOCAL_STATUS``) is always asked; one that must reach an engine (Ray,
        Slurm, Kubernetes) only when ``remote`` is true. Errors from the launcher are raised, so a caller going
        through many runs can report one unreachable engine and go on.
        """
        if run.state in TERMINAL_STATES or (run.handle is None and not run.submitting):
            return run.recorded_status()
        if not remote:
            known = self.registry.launchers.get(run.launcher)
            if known is None or not known.obj.LOCAL_STATUS:
                return run.recorded_status()
        if run.submitting:
            unsettled = self._settle(run)
            if unsettled is not None:
                return unsettled
        return self._ask(run)

    def logs(self, run: Run, *, follow: bool = False) -> Iterator[str]:
        """The run's output, line by line with line ends; with ``follow``, until the run ends.

        A run never submitted, or still being submitted, is a ``LaunchError`` here, before any line is read.
        """
        if run.submitting:
            unsettled = self._settle(run)
            if unsettled is not None:
                raise LaunchError(f"run {run.id} has no output: {unsettled.message}")
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

        Stopping a run that has ended changes nothing: the launcher says so in the returned message, as the runner
        does for a run whose submission ended without a job (``None`` is only for a run never handed to its
        launcher). A run still
        being submitted is asked not to start (``_settle``); one whose submission was interrupted is looked up
        by its identity and stopped, or recorded as never having reached its launcher.
        """
        with self._progress(f"stopping {run.id}"):
            if run.submitting:
                unsettled = self._settle(run, stopping=True)
                if unsettled is not None:
                    return unsettled
            handle = run.handle
            if handle is None:
                if run.intent is None:
                    return None
                # Its submission began, ended without a job (stopped, interrupted, failed): say how it ended.
                known = run.recorded_status()
                return RunStatus(known.state, known.exit_code, f"{known.message}; nothing to stop")
            result = self.launcher_for(run).stop(handle, run.dir)
        run.save_status(result)
        return result


def _describe(status: RunStatus) -> str:
    code = f" (exit code {status.exit_code})" if status.exit_code is not None else ""
    return f"{status.state}{code}" + (f": {status.message}" if status.message else "")
