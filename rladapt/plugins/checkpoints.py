"""Checkpoint records: what an adapter's ``scan_checkpoints`` finds in a checkpoint directory.

Every framework writes a step in its own layout and commits it its own way (a marker file, a rename, a tag
file). An adapter's ``checkpoints.py`` knows, per version and from the framework's save and load code, which
files make a step complete; it returns one ``Checkpoint`` per step found, complete or not, with the reason
when not. ``CheckpointScan.resume_from`` is the step a resume uses: the newest complete one. A step that is
still being written, was cut off, or whose files do not match the layout is never picked.

The helpers here are the checks every layout shares, so that a reason reads the same on every framework.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Checkpoint:
    """One step found in a checkpoint directory."""

    step: int
    path: Path
    complete: bool
    #: What is missing or wrong in a partial step; None when complete.
    reason: str | None = None

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
