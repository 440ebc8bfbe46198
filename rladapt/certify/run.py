"""Run a job three times and certify its resumes: uninterrupted, then SIGKILLed once a checkpoint is complete and
at a random moment, each resumed as ``rladapt resume`` does (``Runner.resume``) and compared with the first.

Everything is real: the runner, the local launcher (a SIGKILL of the job's whole process group, as a lost node
would), the bootstrap's resume decision and the framework. Only adapters that read a run's per-step trace back
(``FrameworkAdapter.resume_trace``) can be certified; the others are refused before anything runs.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rladapt.launch import Runner
from rladapt.pipeline import parse_framework
from rladapt.plugins import FrameworkAdapter
from rladapt.plugins.resumes import ResumeTrace
from rladapt.primitives.errors import LaunchError, RladaptError, UsageError
from rladapt.runs import Run

from .certificate import Certificate, Check, Interruption, compare

#: The launcher every run of a certificate uses: the one whose job rladapt can SIGKILL as a whole from here.
LAUNCHER = "local"


@dataclass(frozen=True)
class Options:
    workdir: Path
    seed: int
    timeout: float = 3600.0
    rtol: float = 0.0
    interval: float = 0.2


def _overrides(given: Sequence[str], ck: Path) -> list[str]:
    # the user's overrides first: the certificate's own placement of the checkpoints and its resume rule win
    return [
        *given,
        f"spec.checkpoint.dir={ck}",
        "spec.checkpoint.resume=auto",
        "spec.lifecycle.max_restarts=0",
    ]


def _kill(run: Run) -> None:
    handle = run.refresh().handle
    if handle is None or "pgid" not in handle:
        raise LaunchError(f"run {run.id}: no process group to kill (handle {handle})")
    os.killpg(int(handle["pgid"]), signal.SIGKILL)  # the whole job, wrapper included: a lost node


def certify(
    spec: str,
    overrides: Sequence[str],
    framework: str,
    options: Options,
    *,
    runner: Runner | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> Certificate:
    """The certificate of SPEC (with OVERRIDES) on FRAMEWORK: three real runs under ``options.workdir``.

    Refused (``UsageError``, before any run) when the adapter cannot read a run's trace back, when the spec has
    no finite number of steps or saves no checkpoint before its last step, and for everything a launch refuses.
    """
    runner = runner or Runner()
    name, wanted = parse_framework(framework)
    adapter = runner.registry.framework(name)
    entry = adapter.resolve_version(wanted)
    framework = f"{name}=={entry.version}"
    if adapter.resume_trace(options.workdir / "none", entry.version) is None:
        raise UsageError(
            f"rladapt certify cannot certify {name} runs here: {name} needs a GPU to run, and its adapter reads "
            "no per-step samples back from a run (certify a TRL job, which runs on the CPU)"
        )
    planned = runner.dryrun(spec, _overrides(overrides, options.workdir / "check"), framework=framework)
    job = planned.rendered.job.spec
    steps, every = job.training.steps, job.checkpoint.every_steps
    if steps is None or every is None or every >= steps:
        raise UsageError(
            "spec.checkpoint.every_steps: a certificate kills a run once a checkpoint is complete, so the job "
            f"must save one before its last step (expected every_steps < training.steps; found every_steps={every}, "
            f"steps={steps})"
        )
    options.workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(options.seed)

    def launch(label: str) -> tuple[Run, Path]:
        ck = options.workdir / label
        run = runner.launch(spec, _overrides(overrides, ck), framework=framework, launcher=LAUNCHER)
        say(f"{label}: run {run.id} (checkpoints in {ck})")
        return run, ck

    def finish(run: Run, what: str) -> None:
        final = runner.wait(run, interval=options.interval, timeout=options.timeout)
        if final.state != "SUCCEEDED":
            raise LaunchError(
                f"{what}: run {run.id} ended {final.state}"
                + (f": {final.message}" if final.message else "")
                + f" (its output: rladapt logs {run.id})"
            )

    baseline, base_ck = launch("uninterrupted")
    finish(baseline, "the uninterrupted run")
    interruptions, checks = [], []
    traces: dict[str, ResumeTrace] = {}
    for label in ("killed-at-checkpoint", "killed-at-random"):
        run, ck = launch(label)
        killed = False
        deadline = time.monotonic() + options.timeout
        if label == "killed-at-checkpoint":
            how = f"SIGKILL once its first checkpoint (step {every}) was complete"
            while not killed and time.monotonic() < deadline:
                scan = adapter.scan_checkpoints(ck, entry.version)
                if scan is not None and any(c.complete for c in scan.checkpoints):
                    _kill(run)
                    killed = True
                elif runner.status(run).terminal:
                    break
                else:
                    time.sleep(0.05)
        else:
            # A moment inside the training, whatever the machine's speed: after a random step has been logged
            # (not the last), then a random part (under half) of the time that step took in this very run, as
            # seen from here. A moment in wall time (or a part of the uninterrupted run's time per step, which
            # counts its start-up) can fall after a faster run has ended.
            after = rng.randint(min(2, steps - 1), max(1, steps - 1))
            part = rng.uniform(0.0, 0.5)
            how = f"SIGKILL {part:.0%} of a step's time after step {after} was logged (seed {options.seed})"
            seen: dict[int, float] = {}
            while time.monotonic() < deadline and not runner.status(run).terminal:
                try:
                    logged = max(adapter_trace_steps(adapter, ck, entry.version), default=0)
                except (RladaptError, OSError, ValueError):
                    logged = 0  # a metrics line being written: look again
                now = time.monotonic()
                for step in range(1, logged + 1):
                    seen.setdefault(step, now)
                if logged >= after:
                    step_time = seen[after] - seen.get(after - 1, seen[after])
                    time.sleep(part * step_time)
                    break
                time.sleep(0.02)
            if not runner.status(run).terminal:
                _kill(run)
                killed = True
        runner.wait(run, interval=options.interval, timeout=options.timeout)
        resumed_from = None
        if killed:
            _, chosen = runner.resume(run, force=not _has_complete(adapter, ck, entry.version))
            resumed_from = None if chosen is None else chosen.step
            finish(run, f"the resume of {label}")
        checks.append(
            Check(
                f"{label}: killed and resumed",
                killed,
                how,
                "killed, then resumed" if killed else "the run ended before the kill",
            )
        )
        interruptions.append(Interruption(label, run.id, how, killed, resumed_from, str(ck)))
        traces[label] = _trace(adapter, ck, entry.version)
    base = _trace(adapter, base_ck, entry.version)
    for label, trace in traces.items():
        checks.extend(compare(label, base, trace, rtol=options.rtol))
    notes = [*base.notes, *(n for t in traces.values() for n in t.notes)]
    return Certificate(
        framework=name,
        version=entry.version,
        spec=str(spec),
        overrides=tuple(overrides),
        baseline_run=baseline.id,
        interruptions=tuple(interruptions),
        checks=tuple(checks),
        notes=tuple(notes),
    )


def adapter_trace_steps(adapter: FrameworkAdapter, ck: Path, version: str) -> list[int]:
    """The steps a running job has logged so far (its trace read back while it runs)."""
    trace = adapter.resume_trace(ck, version)
    return [] if trace is None else list(trace.metrics)


def _has_complete(adapter: FrameworkAdapter, ck: Path, version: str) -> bool:
    scan = adapter.scan_checkpoints(ck, version)
    return scan is not None and scan.resume_from is not None


def _trace(adapter: FrameworkAdapter, ck: Path, version: str) -> ResumeTrace:
    trace = adapter.resume_trace(ck, version)
    if trace is None:  # checked before any run
        raise UsageError(f"the {adapter.PLUGIN_NAME} adapter reads no trace of a run")
    return trace
