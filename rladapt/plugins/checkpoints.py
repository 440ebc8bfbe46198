"""Checkpoint records: what an adapter's ``scan_checkpoints`` finds in a checkpoint directory.

Every framework writes a step in its own layout and commits it its own way (a marker file, a rename, a tag
file). An adapter's ``checkpoints.py`` knows, per version and from the framework's save and load code, which
files make a step complete; it returns one ``Checkpoint`` per step found, complete or not, with the reason
when not. ``CheckpointScan.resume_from`` is the step a resume uses: the newest complete one. A step that is
still being written, was cut off, or whose files do not match the layout is never picked.

The helpers here are the checks every layout shares, so that a reason reads the same on every framework.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Where partial steps are moved (never deleted) so that a framework's own resume cannot pick them. A hidden
#: name inside the checkpoint directory: no framework's step pattern matches it (``global_step_*``,
#: ``step_*``, ``checkpoint-*``, a DeepSpeed tag named in ``latest``), and it stays on the same file system.
ASIDE_DIR = ".rladapt-aside"
#: The steps a start failed to load (``mark_bad``), in the checkpoint directory: every later start, restart, requeue
#: and ``rladapt resume`` of any host reads it, so a step that failed once is never chosen again.
BAD_FILE = ".rladapt-bad-steps.json"


@dataclass(frozen=True)
class Checkpoint:
    """One step found in a checkpoint directory."""

    step: int
    path: Path
    complete: bool
    #: What is missing or wrong in a partial step; None when complete.
    reason: str | None = None
    #: The processes whose per-rank files the step holds, as far as its files tell (TRL's ``rng_state_R.pth``,
    #: verl's ``*_world_size_W_rank_R.pt`` without an ``fsdp_config.json``); None when the layout records its world
    #: size itself or reshards. ``CheckpointScan.judged`` compares it with the run's.
    world_size: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"step": self.step, "path": str(self.path), "complete": self.complete, "reason": self.reason}


@dataclass(frozen=True)
class CheckpointScan:
    """Every step found under ``root``, oldest first, and what the framework itself would load."""

    root: Path
    checkpoints: tuple[Checkpoint, ...] = ()
    #: The step the framework's own resume would load from ``root`` (its marker, its newest directory), complete
    #: or not; None when it would start fresh. A partial one is what must be moved aside before it starts.
    native_pick: Checkpoint | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> list[Checkpoint]:
        return [c for c in self.checkpoints if c.complete]

    @property
    def resume_from(self) -> Checkpoint | None:
        """The newest complete step, or None."""
        done = self.complete
        return max(done, key=lambda c: c.step) if done else None

    def step(self, number: int) -> Checkpoint | None:
        return next((c for c in self.checkpoints if c.step == number), None)

    def judged(self, world_size: int | None = None) -> CheckpointScan:
        """This scan with what the files alone cannot say: a step with fewer ranks' files than the run's
        ``world_size`` processes (its last ranks' files are missing), and a step a start failed to load
        (``mark_bad``), are partial, with the reason."""
        bad = read_bad(self.root)

        def judge(c: Checkpoint) -> Checkpoint:
            mark = _mark_of(self.root, c, bad)
            if mark is not None:
                return dataclasses.replace(c, complete=False, reason=f"failed to load on a start: {mark}")
            if not (c.complete and world_size and c.world_size is not None and c.world_size != world_size):
                return c
            held = f"the step holds the files of {c.world_size} process{'es' if c.world_size > 1 else ''}"
            if c.world_size < world_size:
                ranks = (
                    f"rank {c.world_size}"
                    if world_size - c.world_size == 1
                    else f"ranks {c.world_size}-{world_size - 1}"
                )
                why = f"{ranks} of {world_size} missing ({held}, the run has {world_size})"
            else:
                why = f"{held}, the run has {world_size}: another run's files"
            return dataclasses.replace(c, complete=False, reason=why)

        if not bad and not world_size:
            return self
        found = tuple(judge(c) for c in self.checkpoints)
        pick = self.native_pick
        if pick is not None:
            pick = next((c for c in found if c.step == pick.step and c.path == pick.path), judge(pick))
        return dataclasses.replace(self, checkpoints=found, native_pick=pick)

    def to_json(self) -> dict[str, object]:
        chosen = self.resume_from
        return {
            "checkpoints": [c.to_json() for c in self.checkpoints],
            "resume_from": None if chosen is None else {"step": chosen.step, "path": str(chosen.path)},
        }


def numbered_dirs(root: Path, pattern: str) -> Iterator[tuple[int, Path]]:
    """``(step, path)`` of each entry of ``root`` whose whole name matches ``pattern`` (one ``(\\d+)`` group)."""
    regex = re.compile(pattern)
    try:
        entries = list(root.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in sorted(entries):
        found = regex.fullmatch(entry.name)
        if found:
            yield int(found.group(1)), entry


def missing(folder: Path, names: Iterable[str]) -> list[str]:
    """The names (relative to ``folder``) that are absent or empty: a file of 0 bytes, a directory with nothing.

    A save cut off by SIGKILL leaves exactly these: the file opened and never written, the directory made and
    never filled.
    """
    out = []
    for name in names:
        path = folder / name
        if path.is_dir():
            if not any(path.iterdir()):
                out.append(f"{name}/ (empty)")
        elif not path.is_file():
            out.append(name)
        elif path.stat().st_size == 0:
            out.append(f"{name} (empty)")
    return out


def missing_reason(names: list[str]) -> str | None:
    if not names:
        return None
    return "missing " + ", ".join(names)


def read_marker(path: Path) -> str | None:
    """The stripped text of a marker file (``latest``, ``latest_checkpointed_iteration.txt``), None if absent."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def move_aside(root: Path, path: Path) -> Path:
    """Rename ``path`` into ``root/ASIDE_DIR/`` under a name with the time: never deleted, never overwritten."""
    aside = root / ASIDE_DIR
    aside.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = aside / f"{path.name}.{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = aside / f"{path.name}.{stamp}.{n}"
    os.rename(path, target)
    return target


@dataclass(frozen=True)
class ResumePlan:
    """What a job does before it starts, to resume from a chosen step (or start fresh) in its framework's way.

    ``argv`` is the native command with the framework's own resume arguments; ``move_aside`` the steps to
    rename into ``ASIDE_DIR`` first (never deleted); ``rewrite`` marker files to replace (the old one is moved
    aside too), e.g. DeepSpeed's ``latest``. The bootstrap carries it out and logs each move.
    """

    argv: tuple[str, ...]
    move_aside: tuple[Path, ...] = ()
    rewrite: dict[Path, str] = field(default_factory=dict)


def partial_after(scan: CheckpointScan, chosen: Checkpoint | None) -> list[Path]:
    """Partial steps newer than ``chosen`` (all of them without one) that exist on disk.

    A framework that resumes from its newest directory would pick them, and one that saves the same step
    again would mix its new files with their old ones.
    """
    floor = -1 if chosen is None else chosen.step
    return [c.path for c in scan.checkpoints if not c.complete and c.step > floor and c.path.exists()]


def problems_reason(problems: Iterable[str]) -> str | None:
    """One reason from a step's problems: ``missing a, b`` for absent files, then each content problem as it is
    (``"optimizer.pt: zip central directory missing (file cut?)"``), separated by ``; ``."""
    absent: list[str] = []
    broken: list[str] = []
    for item in problems:
        (broken if ": " in item else absent).append(item)
    # a file already named missing or empty is not named again for its content
    named = {a.removesuffix(" (empty)") for a in absent}
    broken = [b for b in broken if b.split(": ", 1)[0] not in named]
    parts = ([missing_reason(absent) or ""] if absent else []) + broken
    return "; ".join(parts) if parts else None


def _identity(path: Path) -> int | None:
    """What tells this step's directory from one saved again under the same name after it was moved aside."""
    try:
        return path.stat().st_ino
    except OSError:
        return None


def read_bad(root: Path) -> list[dict[str, object]]:
    """The marks of ``BAD_FILE`` in the checkpoint directory ``root``; an unreadable file marks nothing."""
    try:
        data = json.loads((root / BAD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []


def _mark_of(root: Path, c: Checkpoint, marks: list[dict[str, object]]) -> str | None:
    where = _relative(root, c.path)
    for mark in marks:
        if mark.get("step") == c.step and mark.get("path") == where and mark.get("id") == _identity(c.path):
            return str(mark.get("reason") or "no reason recorded")
    return None


def bad_reason(root: Path, c: Checkpoint) -> str | None:
    """Why ``c`` is marked bad in ``root/BAD_FILE`` (``mark_bad``); None when it is not."""
    return _mark_of(root, c, read_bad(root))


def _relative(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def mark_bad(root: Path, chosen: Checkpoint, reason: str, attempt: str | None = None) -> dict[str, object]:
    """Record in ``root/BAD_FILE`` that a start failed to load ``chosen``: later scans (``judged``) report it
    partial with ``reason``, so no restart or resume picks it again, and the next start moves it aside. The file is
    replaced whole (one writer per checkpoint directory); the mark is returned for the job's log and attempts.

    A step already marked keeps its first mark (returned as it is): the start that failed and the start after it
    may both judge the same failure (a Slurm restart loop after a start that marked its own step)."""
    marks = read_bad(root)
    where, ident = _relative(root, chosen.path), _identity(chosen.path)
    for known in marks:
        if (known.get("step"), known.get("path"), known.get("id")) == (chosen.step, where, ident):
            return known
    mark: dict[str, object] = {
        "step": chosen.step,
        "path": where,
        "id": ident,
        "reason": reason,
        "marked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "attempt": attempt,
    }
    marks = [*marks, mark]
    tmp = root / f".{BAD_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(marks, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, root / BAD_FILE)
    return mark
