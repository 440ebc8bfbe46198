"""The evaluator: each version of the run that has no result for a suite is measured, once.

A pass lists the run's versions (``follow: pool``: what the job published, ``VersionStore.of_run``; ``follow:
checkpoints``: each complete step, by the framework adapter's own scan and ``weight_files``), and for each (version,
suite) without a result file it leases the version (so pool GC keeps it while it is read), generates the suite's
answers, scores them and writes the result in one rename (``rladapt.evaluate.results``). Then the gate: a version
whose gate suite passed moves the alias by compare-and-swap, never over a newer version.

Nothing here touches the training: it reads what the job wrote, so training never waits for it, and a restart
after a crash or a stop evaluates only what has no result yet.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rladapt.plugins.job import RUN_ATTEMPT_ENV, RUN_ID_ENV
from rladapt.pool import AliasMoved, move_alias, open_store
from rladapt.primitives.errors import RladaptError, UsageError
from rladapt.primitives.spec import EvalSuite
from rladapt.runs import Run
from rladapt.runs.owner import Owner, ended_for_good, job_ended

from .results import (
    EvalResult,
    read_gate,
    read_results,
    read_state,
    result_path,
    results_root,
    write_gate,
    write_result,
    write_state,
)
from .settings import EvalSettings

__all__ = ["HOLDER", "Evaluator", "Progress", "Target", "evaluator_of_run"]

#: The lease holder name in the pool (``rladapt pool gc`` reports "leased by evaluator").
HOLDER = "evaluator"
#: A lease outlives one suite's evaluation by far; it is renewed before each suite and released after.
LEASE_TTL = 3600.0
#: Passes that fail after the training ended before the evaluator gives up (exit 1): nothing new will come to
#: make a failing pass work, and a role that never exits would hold its allocation (Slurm) for good.
MAX_FAILED_AFTER_END = 3


@dataclass(frozen=True)
class Target:
    """One version to measure: its name (a pool version, or ``step-N`` for a checkpoint), step and weights."""

    version: str
    step: int
    files: Path | Mapping[str, Path]
    pooled: bool


@dataclass(frozen=True)
class Progress:
    """How far behind the evaluator is: versions found, and those with a result for every suite."""

    versions: list[str]
    evaluated: list[str]
    suites: list[str]

    @property
    def behind(self) -> int:
        return len(self.versions) - len(self.evaluated)

    def summary(self) -> str:
        """``2 of 3 versions evaluated on share-of-a (1 behind: v00000003)``."""
        pending = [v for v in self.versions if v not in self.evaluated]
        behind = f" ({len(pending)} behind: {', '.join(pending)})" if pending else " (up to date)"
        return (f"{len(self.evaluated)} of {len(self.versions)} versions evaluated on "
                f"{', '.join(self.suites)}{behind}")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"versions": len(self.versions), "evaluated": len(self.evaluated), "behind": self.behind,
                "pending": [v for v in self.versions if v not in self.evaluated], "suites": self.suites}  # fmt: skip


def _say(message: str) -> None:
    print(f"rladapt.evaluate: {message}", file=sys.stderr, flush=True)


class Evaluator:
    def __init__(self, settings: EvalSettings, *, run_id: str | None = None,
                 say: Callable[[str], None] = _say) -> None:  # fmt: skip
        self.settings = settings
        self.run_id = run_id or settings.run_id or os.environ.get(RUN_ID_ENV) or None
        self.root = results_root(settings.checkpoint_dir)
        self.say = say
        self.store = open_store(settings.store) if settings.store else None
        if settings.continuous.follow == "pool":
            if self.store is None:
                raise UsageError("spec.eval.continuous.follow: pool needs spec.pool.store")
            if not self.run_id:
                raise UsageError(f"follow: pool needs the run id (--run-id, or ${RUN_ID_ENV} in the job)")
        self._loaded: dict[str, tuple[list[dict[str, Any]], Any]] = {}

    # --- what there is to do -------------------------------------------------------------------------------

    def targets(self) -> list[Target]:
        """The run's versions, oldest first."""
        if self.settings.continuous.follow == "pool":
            assert self.store is not None and self.run_id
            return [Target(m.version, m.source.step or 0, self.store.root / "versions" / m.version, True)
                    for m, _ in self.store.of_run(self.run_id)]  # fmt: skip
        from rladapt.plugins import get_registry

        adapter = get_registry().framework(self.settings.framework)
        root = Path(self.settings.checkpoint_dir)
        scan = adapter.scan_checkpoints(root, self.settings.version)
        if scan is None:
            raise UsageError(f"the {self.settings.framework} adapter cannot read its checkpoints")
        out = []
        for step in scan.complete:
            try:
                files = adapter.weight_files(root, step, self.settings.version)
            except RladaptError:
                continue  # a step without weights is not a version to measure
            if files is not None:
                out.append(Target(f"step-{step.step}", step.step, files, False))
        return out

    def suites(self, names: Iterable[str] | None = None) -> list[EvalSuite]:
        suites = self.settings.continuous.suites
        if names is None:
            return list(suites)
        wanted = list(names)
        known = [s.name for s in suites]
        for name in wanted:
            if name not in known:
                raise UsageError(f"--suite {name!r}: the run has no such suite (suites: {', '.join(known)})")
        return [s for s in suites if s.name in wanted]

    def missing(self, target: Target, suites: list[EvalSuite]) -> list[EvalSuite]:
        return [s for s in suites if not result_path(self.root, target.version, s.name).is_file()]

    def progress(self) -> Progress:
        names = [s.name for s in self.settings.continuous.suites]
        versions = [t.version for t in self.targets()]
        suites = self.suites()
        done = [v for v in versions if not self.missing(Target(v, 0, {}, False), suites)]
        return Progress(versions, done, names)

    # --- one pass -------------------------------------------------------------------------------------------

    def run_pass(self, *, suites: Iterable[str] | None = None, select: Callable[[Target], bool] | None = None,
                 force: bool = False) -> list[EvalResult]:  # fmt: skip
        """Evaluate every (version, suite) without a result (``force``: again, replacing it); then the gate."""
        chosen = self.suites(suites)
        made = []
        self._record_state()
        for target in self.targets():
            if select is not None and not select(target):
                continue
            todo = chosen if force else self.missing(target, chosen)
            if todo:
                made += self._evaluate(target, todo)
        self.gate_pass()
        self._record_state()
        return made

    def _record_state(self) -> None:
        settings = dataclasses.replace(self.settings, run_id=self.run_id)
        write_state(self.root, {"settings": settings.to_json(), "pid": os.getpid(), "host": socket.gethostname(),
                                "updated": datetime.now(timezone.utc).isoformat(timespec="seconds")})  # fmt: skip

    def _evaluate(self, target: Target, suites: list[EvalSuite]) -> list[EvalResult]:
        made = []
        if target.pooled and self.store is not None:
            try:
                self.store.lease(target.version, HOLDER, LEASE_TTL)
            except UsageError:
                return []  # collected between the listing and the lease: nothing to measure any more
        try:
            with _folder(target.files) as folder:
                from .generate import EngineModel, NotServed, load_model

                engine = self._engine(target)
                model: Any = None
                for suite in suites:
                    if target.pooled and self.store is not None:
                        self.store.lease(target.version, HOLDER, LEASE_TTL)
                    result = None
                    if engine is not None:
                        try:
                            result = self._suite(EngineModel(engine, target.version), target, suite, engine)
                        except NotServed as exc:
                            self.say(
                                f"{target.version}: not through {engine} ({exc.message}): loading it here"
                            )
                            engine = None
                    if result is None:
                        model = model or load_model(folder)
                        result = self._suite(model, target, suite, "transformers")
                    write_result(self.root, result)
                    self.say(f"{target.version} (step {target.step}) {suite.name}: score {result.score:.4f} "
                             f"over {len(result.samples)} answers in {result.seconds:.1f}s")  # fmt: skip
                    made.append(result)
        finally:
            if target.pooled and self.store is not None:
                with contextlib.suppress(RladaptError):  # gone already: its lease went with it
                    self.store.release(target.version, HOLDER)
        return made

    def _engine(self, target: Target) -> str | None:
        """A serving replica of the pool that serves ``target`` now (a group following an alias naming it)."""
        if not target.pooled or self.store is None:
            return None
        from rladapt.pool import read_group

        for alias, version in sorted(self.store.aliases().items()):
            group = read_group(self.store, alias) if version == target.version else None
            if group is not None and group.replicas:
                return group.replicas[0]
        return None

    def _suite(self, model: Any, target: Target, suite: EvalSuite, engine: str) -> EvalResult:
        from .scorers import score

        rows, scorer = self._inputs(suite)
        started = time.monotonic()
        prompts: list[Any] = []
        completions: list[str] = []
        expanded: list[dict[str, Any]] = []
        for i, row in enumerate(rows):
            for answer in model.answers(row["prompt"], suite.generation, seed=i * 1009):
                prompts.append(row["prompt"])
                completions.append(answer)
                expanded.append(row)
        scores = score(scorer, prompts, completions, expanded)
        metrics = {"score": statistics.fmean(scores), "min": min(scores), "max": max(scores)}
        return EvalResult(
            version=target.version,
            suite=suite.name,
            step=target.step,
            score=metrics["score"],
            metrics=metrics,
            run_id=self.run_id,
            samples=[
                {"prompt": p, "completion": c, "score": s}
                for p, c, s in zip(prompts, completions, scores, strict=True)
            ],
            evaluated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            seconds=round(time.monotonic() - started, 3),
            generation=suite.generation.model_dump(mode="json"),
            engine=engine,
        )

    def _inputs(self, suite: EvalSuite) -> tuple[list[dict[str, Any]], Any]:
        if suite.name not in self._loaded:
            from .data import load_rows
            from .scorers import load_scorer

            at = f"spec.eval.continuous.suites[{self.settings.continuous.suites.index(suite)}]"
            self._loaded[suite.name] = (load_rows(suite.data, field=f"{at}.data"),
                                        load_scorer(suite.scorer, f"{at}.scorer"))  # fmt: skip
        return self._loaded[suite.name]

    # --- the gate -------------------------------------------------------------------------------------------

    def gate_pass(self) -> list[dict[str, Any]]:
        """Decide every version with a gate-suite result and no decision yet, oldest first."""
        gate = self.settings.continuous.gate
        if gate is None or self.store is None:
            return []
        decided = []
        results, _ = read_results(self.root, self.run_id)
        for result in results:
            if result.suite != gate.suite or read_gate(self.root, result.version) is not None:
                continue
            value = result.metrics.get(gate.metric)
            passed = value is not None and value >= gate.min
            decision: dict[str, Any] = {"version": result.version, "step": result.step, "suite": gate.suite,
                                        "metric": gate.metric, "min": gate.min, "value": value, "passed": passed,
                                        "alias": gate.promote, "promoted": False, "reason": ""}  # fmt: skip
            if passed:
                decision["promoted"], decision["reason"] = self._promote(result.version, gate.promote)
            else:
                decision["reason"] = f"{gate.metric} {value} is below {gate.min}"
            write_gate(self.root, result.version, decision)
            self.say(f"{result.version} gate {gate.suite}.{gate.metric} >= {gate.min}: "
                     f"{'promoted to ' + gate.promote if decision['promoted'] else decision['reason']}")  # fmt: skip
            decided.append(decision)
        return decided

    def _promote(self, version: str, alias: str) -> tuple[bool, str]:
        assert self.store is not None
        for _ in range(3):  # a lost compare-and-swap is looked at again: it may have been an older version
            current = self.store.aliases().get(alias)
            if current is not None and int(current[1:]) >= int(version[1:]):
                return False, f"{alias} already names {current}, not older than {version}"
            try:
                move_alias(self.store, alias, version, if_current=current or "none", by=HOLDER)
                return True, f"{alias} moved from {current or 'nothing'}"
            except AliasMoved:
                continue
            except RladaptError as exc:
                return False, exc.message
        return False, f"{alias} kept moving under the evaluator"

    # --- following ------------------------------------------------------------------------------------------

    def follow(self, *, interval: float = 10.0, max_passes: int | None = None) -> int:
        """Pass after pass until the training has ended and every version it left is measured; returns 0 (1 when
        the passes after the end keep failing).

        The end is the job's own marker (``rladapt.runs.owner.job_ended``: its owner file in the checkpoint
        directory says ended, or its heartbeat went stale), so a run counted in epochs, whose last step nobody
        knows, ends its evaluator too. It is read before a pass: a pass that starts after the end sees every
        version the job published or checkpointed. A known last step (``final_step``) ends it as soon as that
        step is measured.
        """
        passes = failed_after_end = 0
        while True:
            ended = self._job_end()  # before the pass: the pass then sees everything the training left
            try:
                self.run_pass()
                failed = False
            except UsageError:
                raise
            except (
                RladaptError,
                OSError,
            ) as exc:  # a pass that failed now (a checkpoint rotated away) may work next
                self.say(f"pass failed: {exc.message if isinstance(exc, RladaptError) else exc}")
                failed = True
            passes += 1
            if self._finished():
                return 0
            if ended is not None:
                failed_after_end += failed
                if failed_after_end >= MAX_FAILED_AFTER_END:
                    self.say(f"the training ended and {failed_after_end} passes since failed: giving up")
                    return 1
                if not failed and self._ended_for_good(ended):
                    return 0
            if max_passes is not None and passes >= max_passes:
                return 0
            time.sleep(interval)

    def _job_end(self) -> Owner | None:
        """The owner record saying this run's training job has ended (None: it runs, or has not started)."""
        if not self.run_id:
            return None  # a job started by hand holds no directory: only ``final_step`` or a stop ends this
        return job_ended(
            Path(self.settings.checkpoint_dir), self.run_id, os.environ.get(RUN_ATTEMPT_ENV) or None
        )

    def _ended_for_good(self, ended: Owner) -> bool:
        """The end stands (no restart of the attempt took the directory again within a few heartbeats)."""
        if not ended_for_good(Path(self.settings.checkpoint_dir), ended):
            self.say("the training started again: following it")
            return False
        self.say(f"the training ended ({'its heartbeat stopped' if ended.ended is None else 'it exited'}) and "
                 f"every version it left is measured: done")  # fmt: skip
        return True

    def _finished(self) -> bool:
        final = self.settings.final_step
        if final is None:
            return False
        targets = self.targets()
        suites = self.suites()
        return any(t.step >= final for t in targets) and not any(self.missing(t, suites) for t in targets)


class _folder:
    """The weights as one folder transformers can load: the folder itself, or links to the files in a temporary
    one (a checkpoint whose model files are spread over several folders)."""

    def __init__(self, files: Path | Mapping[str, Path]) -> None:
        self.files = files
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        if isinstance(self.files, Path):
            return self.files
        parents = {p.parent for p in self.files.values()}
        if len(parents) == 1 and all(p.name == n for n, p in self.files.items()):
            return parents.pop()
        self.tmp = Path(tempfile.mkdtemp(prefix="rladapt-eval-"))
        for name, path in self.files.items():
            link = self.tmp / name
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path.resolve(), link)
        return self.tmp

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def evaluator_of_run(run: Run) -> Evaluator | None:
    """The evaluator of a recorded run as it last ran (its state file in the run's checkpoint directory, seen from
    here), or None when it never ran."""
    root = results_root(run.record.checkpoint_root())
    state = read_state(root)
    if state is None:
        return None
    try:
        settings = EvalSettings.from_json(state.get("settings"))
    except ValueError:
        return None
    settings = dataclasses.replace(settings, checkpoint_dir=str(run.record.checkpoint_root()))
    return Evaluator(settings, run_id=run.id, say=lambda _: None)
