"""The resume decision: which checkpoint a job starts from, taken where the job runs, before each attempt.

The bootstrap (``rladapt.bootstrap``) runs first on every launcher, so the same rule holds for a first start, a
restart after a failure (``lifecycle.max_restarts``), a Slurm requeue, a Kubernetes retry and ``rladapt
resume``: scan the checkpoint directory with the framework's own layout (the adapter's ``scan_checkpoints``),
take the newest complete step (or the one asked for), move aside the partial steps the framework could pick
by itself, and give the framework its own resume arguments for that step (``plan_resume``).

``RLADAPT_CHECKPOINTS`` carries the settings to the job (JSON, see ``settings_env``); ``RLADAPT_ATTEMPTS``,
when set, names a file where each start is appended as a JSON line (the local and Slurm launchers point it
into the run directory, so ``rladapt status`` shows each attempt and the step it started from).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rladapt.files import read_json_lines
from rladapt.plugins.checkpoints import ASIDE_DIR, Checkpoint, CheckpointScan, ResumePlan, move_aside
from rladapt.plugins.job import (
    ATTEMPTS_ENV,
    ATTEMPTS_FILE,
    SETTINGS_ENV,
    ResumeSettings,
    resume_settings,
)
from rladapt.primitives.errors import UsageError

if TYPE_CHECKING:
    from rladapt.plugins.adapter import FrameworkAdapter

#: The resume settings the job reads (``SETTINGS_ENV``) and the attempts it writes are part of the launcher contract
#: (``rladapt.plugins.job``), which builds the command before any job runs; the names stay importable from here.
Settings = ResumeSettings
settings_for = resume_settings


class ResumeRefused(UsageError):
    """The checkpoint directory and the resume rule disagree: the job must not start (exit 2)."""


@dataclass(frozen=True)
class Decision:
    scan: CheckpointScan
    chosen: Checkpoint | None
    plan: ResumePlan
    log: list[str] = field(default_factory=list)


def _steps(scan: CheckpointScan) -> str:
    shown = [f"{c.step}{'' if c.complete else ' (partial)'}" for c in scan.checkpoints[:8]]
    return ", ".join(shown) + (", ..." if len(scan.checkpoints) > 8 else "")


def decide(
    adapter: FrameworkAdapter, settings: Settings, argv: Sequence[str], *, base: Path | None = None
) -> Decision | None:
    """What this start resumes from, and how; None when the adapter does not know its checkpoints.

    ``resume: never`` with steps in the directory is refused: a new run never continues an old one silently.
    ``resume: path`` names a step that must be complete. ``auto`` takes the newest complete step.
    """
    root = (base or Path.cwd()) / settings.dir
    scan = adapter.scan_checkpoints(root, settings.version)
    if scan is None:
        return None
    # what the files cannot say alone: the run's own number of processes, and the steps a start failed to load
    scan = scan.judged(settings.world_size)
    if settings.resume == "never":
        if scan.checkpoints:
            raise ResumeRefused(
                f"spec.checkpoint.resume is never, but the checkpoint directory {str(root)!r} already holds "
                f"steps {_steps(scan)}: set spec.checkpoint.resume to auto (continue from the newest complete "
                "step) or path, or use a new spec.checkpoint.dir"
            )
        return Decision(scan, None, ResumePlan(tuple(argv)))
    chosen: Checkpoint | None
    if settings.resume == "path":
        wanted = Path(settings.path or "")
        wanted = wanted if wanted.is_absolute() else (base or Path.cwd()) / wanted
        chosen = next((c for c in scan.checkpoints if _same(c.path, wanted)), None)
        if chosen is None:
            raise ResumeRefused(
                f"spec.checkpoint.resume_path {settings.path!r} is not a step of {str(root)!r}"
                + (f" (steps: {_steps(scan)})" if scan.checkpoints else " (it holds no steps)")
            )
        if not chosen.complete:
            raise ResumeRefused(
                f"spec.checkpoint.resume_path {settings.path!r} is a partial checkpoint: {chosen.reason}"
            )
    else:
        chosen = scan.resume_from
    return Decision(scan, chosen, adapter.plan_resume(argv, settings.version, scan, chosen))


def restarted(settings: Settings) -> Settings:
    """The settings a restart of the same attempt decides with: the newest complete step, whatever the first start
    was told.

    ``resume: path`` (``rladapt resume --from-step N``) chose where this attempt began; going back there after a
    fault would throw away every step the attempt committed since. ``resume: never`` refuses steps written before
    the run started; the steps a restart finds are the failed attempt's own, which it must continue.
    """
    if settings.resume == "auto":
        return settings
    return dataclasses.replace(settings, resume="auto", path=None)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def carry_out(decision: Decision, say: Callable[[str], None]) -> None:
    """Move the plan's steps aside and rewrite its markers, saying each change (nothing is deleted)."""
    root = decision.scan.root
    for path in decision.plan.move_aside:
        if not path.exists():
            continue
        target = move_aside(root, path)
        why = next((c.reason for c in decision.scan.checkpoints if c.path == path), None)
        say(f"moved {path} aside to {target}" + (f" ({why})" if why else ""))
    for path, text in decision.plan.rewrite.items():
        if path.exists():
            target = move_aside(root, path)
            say(f"moved {path} aside to {target}")
        tmp = path.with_name(f".{path.name}.rladapt-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        say(f"wrote {path}: {text}")


def describe(decision: Decision) -> str:
    chosen = decision.chosen
    if chosen is None:
        return f"starting fresh: no complete checkpoint in {decision.scan.root}"
    return f"resuming from step {chosen.step} ({chosen.path})"


def record_attempt(decision: Decision | None, restart: int, max_restarts: int) -> None:
    """Append this start to ``$RLADAPT_ATTEMPTS`` when set; a failure to write must not stop the job."""
    target = os.environ.get(ATTEMPTS_ENV)
    if not target:
        return
    chosen = decision.chosen if decision is not None else None
    entry = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "from_step": None if chosen is None else chosen.step,
        "path": None if chosen is None else str(chosen.path),
        "restart": restart,
        "max_restarts": max_restarts,
    }
    try:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry, sort_keys=True) + "\n")
    except OSError:
        pass


def read_attempts(run_dir: Path) -> list[dict[str, Any]]:
    """The starts recorded in a run directory, oldest first; unreadable lines are skipped."""
    return read_json_lines(run_dir / ATTEMPTS_FILE)


def last_attempt() -> dict[str, Any] | None:
    """The start recorded last in ``$RLADAPT_ATTEMPTS`` (as ``record_attempt`` wrote it); None when unset or empty."""
    target = os.environ.get(ATTEMPTS_ENV)
    starts = read_json_lines(Path(target)) if target else []
    return starts[-1] if starts else None


__all__ = [
    "ASIDE_DIR",
    "ATTEMPTS_ENV",
    "ATTEMPTS_FILE",
    "SETTINGS_ENV",
    "Decision",
    "ResumeRefused",
    "Settings",
    "carry_out",
    "decide",
    "last_attempt",
    "restarted",
    "settings_for",
]


# --- what a resume cannot honour: spec changes the checkpoint overrides (``FrameworkAdapter.resume_restores``) -----

#: The run directory's copy of the spec values the run's checkpoints were written with (the spec file itself may be
#: edited before a resume, which is the point): written at the launch, read by every resume.
SPEC_VALUES_FILE = "checkpoint-spec.json"


def save_spec_values(run_dir: Path, spec: Any) -> None:
    """Keep ``spec`` (the rendered job's ``RLJob.spec``) as the values the run's checkpoints are written with."""
    from rladapt.files import write_text

    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True, indent=1) + "\n"
    write_text(run_dir / SPEC_VALUES_FILE, text, what="checkpoint spec values", private=True)


def _lookup(values: Any, dotted: str) -> tuple[bool, Any]:
    """(found, value) of ``spec.a.b`` in the dumped spec ``values`` (its keys start after ``spec.``)."""
    node = values
    for part in dotted.split(".")[1:]:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def unhonoured_changes(adapter: FrameworkAdapter, version: str, run_dir: Path, spec: Any) -> list[str]:
    """The spec fields ``spec`` (now) changes since the launch that a resume of ``version`` would not apply: one
    line each, with the value then and now, and why the checkpoint wins (the adapter's ``resume_restores``).

    Empty when nothing changed, when the adapter does not say what its resume restores, or when the run keeps no
    copy of its launch's values (a run launched before rladapt kept one).
    """
    restored = adapter.resume_restores(version)
    path = run_dir / SPEC_VALUES_FILE
    if not restored or not path.is_file():
        return []
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [f"{path} cannot be read, so what changed since the launch is unknown"]
    now = spec.model_dump(mode="json")
    out = []
    for item in restored:
        had, old = _lookup(before, item.field)
        has, new = _lookup(now, item.field)
        if had and has and old != new:
            out.append(
                f"{item.field} was {json.dumps(old)} and is now {json.dumps(new)}, but {item.why} ({item.source})"
            )
    return out
