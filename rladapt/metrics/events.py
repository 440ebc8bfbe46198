"""Scalars read back from TensorBoard event files, with the ``tensorboard`` package's own reader.

Every launch rladapt renders writes TensorBoard events into ``<checkpoint dir>/rladapt-metrics``
(``rladapt.metrics.store``); each framework version's logger writes there, in subdirectories of its own choice
(a run name, an experiment counter). A run that was resumed writes a new event file beside the first and logs the
redone steps again: the value written last wins, as the run went on from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rladapt.primitives.errors import UsageError

#: What TensorBoard names its event files (``tensorboard/summary/writer/event_file_writer.py``).
EVENT_FILE_GLOB = "events.out.tfevents.*"


def event_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (``root`` included) holding an event file, sorted."""
    if not root.is_dir():
        return []
    return sorted({p.parent for p in root.rglob(EVENT_FILE_GLOB) if p.is_file()})


def _accumulator(directory: Path) -> Any:
    try:
        from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator
    except ImportError:
        raise UsageError(
            "reading metrics needs the tensorboard package: pip install 'rladapt[metrics]'"
        ) from None
    # size 0: keep every scalar (the default keeps a sample of 10,000 per tag)
    return EventAccumulator(str(directory), size_guidance={SCALARS: 0})


def read_scalars(root: Path) -> dict[str, dict[int, float]]:
    """``{tag: {step: value}}`` of every scalar in the event files under ``root`` (a NaN loss stays NaN)."""
    return read_timed_scalars(root)[0]


def read_timed_scalars(root: Path) -> tuple[dict[str, dict[int, float]], dict[int, float]]:
    """``read_scalars`` and ``{step: wall time}``, the newest event of each step (seconds since the epoch)."""
    points: list[tuple[float, int, str, int, float]] = []
    order = 0
    for directory in event_dirs(root):
        acc = _accumulator(directory)
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            for event in acc.Scalars(tag):
                order += 1
                points.append((event.wall_time, order, tag, int(event.step), float(event.value)))
    out: dict[str, dict[int, float]] = {}
    wall: dict[int, float] = {}
    for when, _, tag, step, value in sorted(points):
        out.setdefault(tag, {})[step] = value
        wall[step] = when
    return out, wall
