"""The runner: spec -> native launch -> launcher artifacts -> run record -> submission -> the run's life.

Modelled on TorchX's ``Runner`` (``torchx/runner/api.py``): ``dryrun`` is pure and returns what would be
submitted (``Planned``, TorchX's ``AppDryRunInfo``), ``schedule`` submits it and records the run, and
``status``/``logs``/``stop`` act on a recorded run through the launcher that started it. The CLI verbs in
``rladapt.cli.runs`` only parse arguments and print; everything that decides something lives here, so the
library, the tests and the CLI launch the same way.

Resume and restarts will extend this module rather than the CLI:

- resume: a new run started from an old run's record (``Run.record.spec_path``, its options, its
  checkpoint directory) goes through ``dryrun`` with the resume settings as overrides, then ``schedule``;
- restarts: ``follow``/``wait`` are where a run is seen to end, so a restart policy will decide there whether
  to ``schedule`` the same ``Planned`` again as a new attempt, recording the attempt in the run store.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from rladapt.pipeline import render_spec
from rladapt.plugins.checkpoints import read_bad
from rladapt.plugins.job import resume_settings, run_env, trained_world_size
from rladapt.plugins.launcher import (
    RUN_ID_OPTION,
    STOP_REQUEST_FILE,
    TERMINAL_STATES,
    Artifacts,
    Command,
    Launcher,
    RunState,
    RunStatus,
    ServiceStatus,
    render_artifacts,
    stop_requested,
)
from rladapt.plugins.native import Resume
from rladapt.primitives import read_spec_text
from rladapt.primitives.errors import LaunchError, OutputError, RladaptError, SpecError, UsageError
from rladapt.processes import alive, this_process
from rladapt.resume import decide, save_spec_values, unhonoured_changes
from rladapt.runs import BadStep, CheckpointFacts, Run, RunStore, ServiceRecord, new_run_id, spec_hash
from rladapt.runs.owner import check_free

if TYPE_CHECKING:
    from rladapt.pipeline import Rendered
    from rladapt.plugins import NativeLaunch, Registry
    from rladapt.plugins.checkpoints import Checkpoint

__all__ = ["Planned", "Runner", "render_spec"]

_STOPPED_BEFORE = "stopped by `rladapt stop` during its submission, before the job started"

#: Wraps a call that waits on a launcher; gets a message saying what is awaited (the CLI shows a spinner).
Progress = Callable[[str], AbstractContextManager[object]]


@dataclass(frozen=True)
class Planned:
    """What a launch would submit, computed without side effects and without a run id.

    ``command`` (what the job runs) is built once, when first needed. ``artifacts`` are the dry run's, rendered
    only when asked (``describe()`` is exactly what ``rladapt launch --dry-run`` prints): ``schedule`` renders
    the run's own once, with its run id (launchers name jobs and objects after it), so a run is rendered once.
    """

    spec_path: str
    overrides: tuple[str, ...]
    spec_hash: str
    rendered: Rendered
    launcher_name: str
    launcher: Launcher
    #: ``spec.launcher.<name>`` overridden by the caller's options, as recorded with the run.
    options: dict[str, Any]

    @property
    def native(self) -> NativeLaunch:
        return self.rendered.native

    @cached_property
    def command(self) -> Command:
        return self.launcher.command(self.native)

    @cached_property
    def artifacts(self) -> Artifacts:
        """The dry run's artifacts (no run id)."""
        return self.render(None)

    def render(self, run_id: str | None) -> Artifacts:
        """The launcher's artifacts for ``run_id`` (None: a dry run), from the command built once."""
        return render_artifacts(self.launcher, self.native, self.options, run_id=run_id, command=self.command)

    def describe(self) -> str:
        return self.artifacts.describe()


class Runner:
    """Launches specs and acts on recorded runs, through a plugin registry and a run store.

    ``registry`` defaults to the installed plugins (``rladapt.plugins.get_registry()``, looked up when first
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
            # looked up when called, so that a registry a test installs applies
            from rladapt.plugins import get_registry

            self._registry = get_registry()
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
        )

    def schedule(self, planned: Planned, *, take_over: bool = False) -> Run:
        """Make a run id, render with it, record the run, submit it and save the launcher's handle.

        The record exists before the submission, and says ``SUBMITTING`` with the launcher's ``intent`` (what
        will identify the job) and this process as the submitter before ``submit`` is called: a submission cut
        short (``kill -9``, a full disk when the handle is saved) leaves a run that ``status``/``stop`` find
        by that identity. A stop requested meanwhile (``Run.request_stop``) is honoured before ``submit`` (it
        is not called) and after it (the job is stopped at once); either way this raises a ``LaunchError``.
        A submission that fails leaves a run marked FAILED with the reason (and no handle). A launcher's own
        ``RladaptError`` is raised as it is; anything else becomes a ``LaunchError`` naming the launcher and
        the run id. A checkpoint directory held by another run is refused before anything is recorded, unless
        ``take_over`` (``rladapt.runs.owner``).
        """
        native = planned.native
        name = planned.launcher_name
        plugin = planned.launcher
        self._check_resume_rule(planned)
        self._check_owner(planned, None, take_over)
        run_id = new_run_id(native.job_name)
        planned = _for_job(planned, run_id, run_id, take_over)
        artifacts = planned.render(run_id)
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
            overrides=planned.overrides,
            checkpoint=checkpoint_facts(planned),
            metrics_dir=metrics_location(planned.native),
            # what `status` and `watch` judge the run's progress and health by (rladapt.metrics.progress)
            total_steps=planned.rendered.job.spec.training.steps,
            health=planned.rendered.job.spec.health.model_dump(mode="json"),
        )
        with run.submission():
            try:
                save_spec_values(run.dir, planned.rendered.job.spec)
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
            handle = self._submit(
                plugin, artifacts, run, f"submitting {run_id} to {name}", "submit", self._stopped_meanwhile
            )
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
    def _check_resume_rule(planned: Planned) -> None:
        """Refuse here, before anything is recorded, what the job's bootstrap would refuse at its start
        (``resume: never`` on a directory holding steps, ``resume: path`` naming a partial step) when the
        checkpoint directory is visible from here; the job checks again where it runs."""
        settings = resume_settings(planned.native, restarts_in_job=False)
        if settings is None:
            return
        base = Path.cwd() / planned.native.working_dir
        if not (base / settings.dir).is_dir():
            return
        decide(planned.rendered.adapter, settings, planned.native.argv, base=base)

    def _check_owner(self, planned: Planned, run_id: str | None, take_over: bool) -> None:
        """Refuse a checkpoint directory that another run holds, as seen from here (the job takes it at its start,
        where it runs, and refuses it there too)."""
        ck = planned.native.checkpoint_dir
        if not ck:
            return
        check_free(
            Path.cwd() / planned.native.working_dir / ck, run_id, take_over=take_over, ended=self._run_ended
        )

    def _run_ended(self, run_id: str) -> bool:
        """Whether this store records ``run_id`` as ended (a holder of another store, or none, is not known here)."""
        try:
            return self.store.get(run_id).record.state in TERMINAL_STATES
        except RladaptError:
            return False

    def _submit(
        self,
        plugin: Launcher,
        artifacts: Artifacts,
        run: Run,
        progress: str,
        verb: str,
        on_refusal: Callable[[Run], None] | None = None,
    ) -> dict[str, Any]:
        """``plugin.submit``, with a failure recorded on the run before it propagates: a launcher's own
        ``RladaptError`` as it is (after ``on_refusal``, which may raise instead), anything else as a
        ``LaunchError`` naming the launcher and the run."""
        try:
            with self._progress(progress):
                return plugin.submit(artifacts, run.dir)
        except RladaptError as exc:
            if on_refusal is not None:
                on_refusal(run)
            failure = exc.message
            self._try_record(run, lambda: run.mark_submit_failed(failure))
            raise
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
            self._try_record(run, lambda: run.mark_submit_failed(failure))
            raise LaunchError(f"{run.launcher} launcher failed to {verb} run {run.id}: {failure}") from exc

    def _stopped_meanwhile(self, run: Run) -> None:
        """A launcher that refused because a stop was requested started nothing: the run is STOPPED, not FAILED."""
        if stop_requested(run.dir):
            self._try_record(run, lambda: run.save_not_submitted(RunStatus("STOPPED", None, _STOPPED_BEFORE)))
            raise LaunchError(f"run {run.id}: {_STOPPED_BEFORE}") from None

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
        take_over: bool = False,
    ) -> Run:
        """``schedule(dryrun(...))``: the recorded, submitted run."""
        return self.schedule(
            self.dryrun(spec, overrides, framework=framework, launcher=launcher, options=options),
            take_over=take_over,
        )

    # --- resuming ------------------------------------------------------------------------------------------

    def resume(
        self, run: Run, *, from_step: int | None = None, force: bool = False, take_over: bool = False
    ) -> tuple[int, Checkpoint | None]:
        """Submit ``run`` again, from its newest complete checkpoint (or ``from_step``), as its next attempt.

        The recorded spec file, overrides, framework version, launcher and options are rendered again; the
        job's bootstrap then resumes with the framework's own arguments (``rladapt.resume``). Refused (a
        ``UsageError``, unless ``force``) when the run has not ended, when the spec now names another model or
        checkpoint directory, or another world size for a framework that cannot reshard, and when another run
        holds its checkpoint directory (unless ``take_over``). Returns the attempt number and the checkpoint it
        starts from.
        """
        self._check_ended(run, self.refresh(run))
        # Decided again under the run's submission lock, held until the new attempt is submitted: two `resume`s
        # that both saw the run ended before either took the lock must not both submit a job.
        with run.submission():
            self._check_ended(run, run.refresh().recorded_status())
            return self._resume_locked(run, from_step=from_step, force=force, take_over=take_over)

    @staticmethod
    def _check_ended(run: Run, current: RunStatus) -> None:
        if not current.terminal:
            raise UsageError(
                f"run {run.id} is {current.state}: only a run that has ended can be resumed "
                f"(stop it first: rladapt stop {run.id})"
            )

    def _resume_locked(
        self, run: Run, *, from_step: int | None, force: bool, take_over: bool
    ) -> tuple[int, Checkpoint | None]:
        rec = run.record
        spec_path = rec.spec_path
        if not spec_path or spec_path.startswith("/dev/fd/"):
            raise UsageError(
                f"run {run.id} has no spec file to render again (it was read from {spec_path!r})"
            )
        if not Path(spec_path).is_file():
            raise UsageError(f"the spec of run {run.id}, {spec_path!r}, is gone: cannot render the run again")
        options = {k: str(v) for k, v in rec.options.items()}
        planned = self.dryrun(
            spec_path,
            rec.overrides,
            framework=rec.framework_version,
            launcher=run.launcher,
            options=options,
        )
        adapter = planned.rendered.adapter
        root = rec.checkpoint_root()
        self._check_survives(run, planned, adapter.can_reshard, force)
        check_free(root, run.id, take_over=take_over, ended=self._run_ended)
        note_bad_steps(run)
        scan = adapter.scan_checkpoints(root, planned.native.version)
        if scan is None:
            raise UsageError(
                f"the {rec.framework} adapter does not know how its framework writes checkpoints"
            )
        # as the job's bootstrap judges it: the run's number of processes, the steps a start failed to load
        scan = scan.judged(trained_world_size(planned.native))
        chosen: Checkpoint | None
        if from_step is not None:
            chosen = scan.step(from_step)
            if chosen is None:
                listed = ", ".join(str(c.step) for c in scan.checkpoints) or "none"
                raise UsageError(f"--from-step {from_step}: no such step in {root} (steps: {listed})")
            if not chosen.complete:
                raise UsageError(f"--from-step {from_step}: step {from_step} is partial: {chosen.reason}")
            resume_to = Resume(mode="path", path=str(chosen.path))
        else:
            chosen = scan.resume_from
            if chosen is None and not force:
                raise UsageError(
                    f"run {run.id} has no complete checkpoint in {root}: nothing to resume from "
                    "(start over with `rladapt launch`, or --force to start this run from the beginning)"
                )
            resume_to = Resume(mode="auto")
        native = planned.native.model_copy(update={"resume": resume_to})
        hazards = [] if force else adapter.resume_hazards(native)
        if hazards:
            raise SpecError(
                hazards,
                f"{rec.framework} {native.version} resumes run {run.id} wrongly (--force to resume anyway)",
            )
        # a new Planned: its command and artifacts are those of the resumed launch, built when first needed
        planned = dataclasses.replace(planned, rendered=dataclasses.replace(planned.rendered, native=native))
        return self._resubmit(run, planned, chosen, take_over), chosen

    def _check_survives(self, run: Run, planned: Planned, can_reshard: bool, force: bool) -> None:
        before = run.record.checkpoint
        if before is None or force:
            return
        now = checkpoint_facts(planned)
        problems = []
        if before.model != now.model:
            problems.append(
                f"spec.model.path is now {now.model!r}, but its checkpoints were written for {before.model!r}"
            )
        if before.dir != now.dir:
            problems.append(f"spec.checkpoint.dir now leads to {now.dir!r}, not {before.dir!r}")
        if before.world_size != now.world_size and not can_reshard:
            problems.append(
                f"the world size is now {now.world_size}, but the checkpoints were written by "
                f"{before.world_size} processes and {run.record.framework} cannot reshard them"
            )
        problems += unhonoured_changes(
            planned.rendered.adapter, planned.native.version, run.dir, planned.rendered.job.spec
        )
        if problems:
            raise UsageError(
                f"run {run.id} cannot resume from its checkpoints: "
                + "; ".join(problems)
                + " (--force to try anyway)"
            )

    def _resubmit(self, run: Run, planned: Planned, chosen: Checkpoint | None, take_over: bool) -> int:
        """Submit ``planned`` into ``run``'s directory as its next attempt, recording it first."""
        plugin = planned.launcher
        number = len(run.record.attempts) + 1
        # Launchers name the job after this id (the Ray submission id, the RayJob, the Slurm job): a new attempt
        # needs a name of its own, since the old job may still be known to the engine. At most 49 + 4 characters.
        job_id = f"{run.id}-a{number}"
        planned = _for_job(planned, run.id, job_id, take_over)
        artifacts = planned.render(job_id)
        intent = plugin.intent(artifacts, job_id)
        # A stop of an earlier attempt must not keep this one from starting: the user asked for it now.
        (run.dir / STOP_REQUEST_FILE).unlink(missing_ok=True)
        run.save_attempt(artifacts, from_step=None if chosen is None else chosen.step, job=job_id)
        # the caller (`resume`) holds the run's submission lock
        run.save_submitting(intent, this_process())
        handle = self._submit(
            plugin,
            artifacts,
            run,
            f"submitting attempt {number} of {run.id} to {run.launcher}",
            "resubmit",
        )
        run.save_handle(handle)
        return number

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
        note_bad_steps(run)
        self._note_services(run, handle)
        return current

    def services(self, run: Run) -> tuple[ServiceStatus, ...]:
        """The state of each service role of the run now (as last recorded when it has no handle)."""
        if run.handle is None:
            return tuple(ServiceStatus(s.name, _service_state(s.state), s.restarts, s.unit, s.message)
                         for s in run.record.services)  # fmt: skip
        return self._note_services(run, run.handle)

    def _note_services(self, run: Run, handle: dict[str, Any]) -> tuple[ServiceStatus, ...]:
        found = self.launcher_for(run).services(handle, run.dir)
        run.save_services(
            [
                ServiceRecord(name=s.name, state=s.state, restarts=s.restarts, unit=s.unit, message=s.message)
                for s in found
            ]
        )
        return found

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
        submitter = run.submitter
        pid = 0 if submitter is None else submitter.pid
        host = None if submitter is None else submitter.host
        who = f"pid {pid}" + (f" on {host}" if host else "")
        if host and host != socket.gethostname():
            if stopping:
                run.request_stop()
            return RunStatus("UNKNOWN", None, f"being submitted by {who}; ask there")
        # The submission lock says whether the submission is still under way (its holder alive and not done);
        # a record without one (an older rladapt) falls back to whether the submitting process lives.
        busy = run.being_submitted()
        if busy is None:
            busy = alive(pid, None if submitter is None else submitter.start_time)
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
            raise LaunchError(f"run {run.id} was never submitted ({run.record.message or run.state})")
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
        self._note_services(run, handle)
        return result


def _for_job(planned: Planned, run_id: str, attempt: str, take_over: bool) -> Planned:
    """``planned`` with the job told its run and attempt, so that its bootstrap holds the checkpoint directory
    for them (``rladapt.runs.owner``); unchanged without a checkpoint directory."""
    native = planned.native
    if not native.checkpoint_dir:
        return planned
    env = {**native.env, **run_env(run_id, attempt, take_over=take_over)}
    native = native.model_copy(update={"env": env})
    # a new Planned: its command and artifacts are built from this native when first needed
    return dataclasses.replace(planned, rendered=dataclasses.replace(planned.rendered, native=native))


def _service_state(state: str) -> RunState:
    return cast(RunState, state) if state in _RUN_STATES else "UNKNOWN"


_RUN_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"})


def _describe(status: RunStatus) -> str:
    code = f" (exit code {status.exit_code})" if status.exit_code is not None else ""
    return f"{status.state}{code}" + (f": {status.message}" if status.message else "")


def note_bad_steps(run: Run) -> None:
    """Copy the steps the run's jobs failed to load (their marks in its checkpoint directory, when it is visible
    from here) into its record; the record is left as it was when they are the ones it holds."""
    facts = run.record.checkpoint
    root = Path(facts.dir) if facts is not None and facts.dir else None
    if root is None or not root.is_dir():
        return
    marks = []
    for mark in read_bad(root):
        try:
            marks.append(BadStep.model_validate({k: v for k, v in mark.items() if k in BadStep.model_fields}))
        except ValidationError:
            continue  # a mark this rladapt cannot read: the job's scan skips it the same way
    run.save_bad_steps(marks)


def world_size(native: NativeLaunch) -> int:
    """Processes a checkpoint is sharded over: those of the pool that trains (``trained_world_size``), 1 without
    pools."""
    return trained_world_size(native) or 1


def metrics_location(native: NativeLaunch) -> str | None:
    """Where the job writes the TensorBoard events rladapt reads back when the launch names a location of its own
    (``NativeLaunch.metrics_dir``), absolute as seen from here as ``checkpoint_facts`` resolves the checkpoint
    directory; None for rladapt's own ``<checkpoint dir>/rladapt-metrics``."""
    if not native.metrics_dir:
        return None
    return str((Path.cwd() / native.working_dir / native.metrics_dir).resolve())


def checkpoint_facts(planned: Planned) -> CheckpointFacts:
    """What a checkpoint of this launch depends on, recorded so that ``resume`` can tell what changed since.

    ``dir`` is absolute as seen from here: the job runs from this directory, then its working directory.
    """
    native = planned.native
    ck = native.checkpoint_dir or ""
    where = Path.cwd() / native.working_dir / ck if ck else None
    return CheckpointFacts(
        dir=None if where is None else str(where.resolve()),
        model=planned.rendered.job.spec.model.path,
        world_size=world_size(native),
    )
