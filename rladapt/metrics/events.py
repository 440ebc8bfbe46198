"""Scalars read back from TensorBoard event files, with the ``tensorboard`` package's own reader.

Every launch rladapt renders writes TensorBoard events into ``<checkpoint dir>/rladapt-metrics``
(``rladapt.metrics.store``); each framework version's logger writes there, in subdirectories of its own choice
(a run name, an experiment counter). A run that was resumed writes a new event file beside the first and logs the
redone steps again: the value written last wins, as the run went on from it.

The accumulator stops reading a file at its first damaged record and says nothing (one flipped byte in record
243 of 729 gave 10 of 30 steps), so every file is first checked record by record (``check_records``): a
TFRecord is a little-endian uint64 length, the masked CRC-32C of those 8 bytes, the data and the masked CRC-32C of
the data (``tensorboard/summary/writer/record_writer.py``). A record that fails a check is skipped and reading
resyncs at the next record that passes both; the accumulator then reads a copy of the file without the damaged
bytes, and the damage is returned (``read_events``) with the file, the byte offset and the steps around it, for
``rladapt metrics`` and ``status`` to say. The CRC is tensorboard's own pure-Python CRC-32C
(``tensorboard.compat.tensorflow_stub.pywrap_tensorflow``, about 0.4 s per MB here), the one its reader already
runs on every record when TensorFlow is not installed: no C implementation (``google-crc32c``, ``crc32c``) is in
the environment, and the check reads each file once more, which stays small beside the accumulator's own pass.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Damage:
    """Bytes of an event file that are not a valid record: skipped, and the steps around them."""

    file: Path
    offset: int
    #: where reading went on (a valid record), None when nothing valid follows
    resumed_at: int | None
    #: the step of the last valid record before the damage and of the first one after it (None: none there)
    step_before: int | None = None
    step_after: int | None = None

    @property
    def message(self) -> str:
        where = f"{self.file}: damaged record at byte {self.offset}"
        if self.resumed_at is None:
            lost = (
                "every step after it is missing"
                if self.step_before is None
                else (f"steps after {self.step_before} in this file are missing")
            )
            return f"{where}, nothing valid after it: {lost} (file cut or overwritten)"
        skipped = f"{self.resumed_at - self.offset} bytes skipped, read on from byte {self.resumed_at}"
        if self.step_before is None and self.step_after is None:
            return f"{where} ({skipped}): the values in it are lost"
        around = f"between step {self.step_before} and step {self.step_after}"
        if self.step_before is None:
            around = f"before step {self.step_after}"
        elif self.step_after is None:
            around = f"after step {self.step_before}"
        return f"{where} ({skipped}): values logged {around} are lost"


@dataclass(frozen=True)
class EventsRead:
    """What ``read_events`` found: ``{tag: {step: value}}``, ``{step: wall time}`` and the damage skipped."""

    scalars: dict[str, dict[int, float]]
    wall: dict[int, float]
    damage: tuple[Damage, ...] = field(default_factory=tuple)

    @property
    def warnings(self) -> list[str]:
        return [d.message for d in self.damage]


_HEADER = 12  # uint64 length + uint32 masked crc of it
_FOOTER = 4  # uint32 masked crc of the data


def _crc() -> Callable[[bytes], int]:
    try:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    except ImportError:
        raise UsageError(
            "reading metrics needs the tensorboard package: pip install 'rladapt[metrics]'"
        ) from None
    return masked_crc32c


def _record_at(data: bytes, offset: int, crc: Callable[[bytes], int]) -> int | None:
    """The end of the valid record at ``offset``, or None (a wrong CRC, or it runs past the end)."""
    if offset + _HEADER > len(data):
        return None
    head = data[offset : offset + 8]
    (length,) = struct.unpack("<Q", head)
    end = offset + _HEADER + length + _FOOTER
    if end > len(data):  # checked first: cheap, and most bytes a resync tries fail it
        return None
    (head_crc,) = struct.unpack("<I", data[offset + 8 : offset + _HEADER])
    if crc(head) != head_crc:
        return None
    (data_crc,) = struct.unpack("<I", data[end - _FOOTER : end])
    if crc(data[offset + _HEADER : end - _FOOTER]) != data_crc:
        return None
    return end


def _step(record: bytes) -> int | None:
    try:
        from tensorboard.compat.proto.event_pb2 import Event
    except ImportError:
        raise UsageError(
            "reading metrics needs the tensorboard package: pip install 'rladapt[metrics]'"
        ) from None
    try:
        event = Event.FromString(record[_HEADER:-_FOOTER])
    except Exception:  # a proto that does not parse names no step: the warning says so
        return None
    return int(event.step) if event.HasField("summary") else None


def check_records(path: Path) -> tuple[list[tuple[int, int]], list[Damage]]:
    """The valid records of an event file (``(offset, end)``, in order) and the damaged stretches between them.

    After a record that fails, the next candidate is where its length says it ends when the length's own CRC
    holds (the damage is in the data), else every following byte until one starts a valid record.
    """
    crc = _crc()
    data = path.read_bytes()
    good: list[tuple[int, int]] = []
    bad: list[tuple[int, int | None]] = []
    offset = 0
    while offset < len(data):
        end = _record_at(data, offset, crc)
        if end is not None:
            good.append((offset, end))
            offset = end
            continue
        start = offset
        candidates: list[int] = []
        if offset + _HEADER <= len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            if crc(data[offset : offset + 8]) == struct.unpack("<I", data[offset + 8 : offset + _HEADER])[0]:
                candidates.append(offset + _HEADER + length + _FOOTER)
        resumed = next(
            (c for c in candidates if c < len(data) and _record_at(data, c, crc) is not None), None
        )
        if resumed is None:
            resumed = next(
                (
                    p
                    for p in range(start + 1, len(data) - _HEADER + 1)
                    if _record_at(data, p, crc) is not None
                ),
                None,
            )
        bad.append((start, resumed))
        if resumed is None:
            break
        offset = resumed
    damage = []
    for start, resumed in bad:
        before = [s for o, e in good if e <= start and (s := _step(data[o:e])) is not None]
        after = [
            s for o, e in good if resumed is not None and o >= resumed and (s := _step(data[o:e])) is not None
        ]
        damage.append(
            Damage(path, start, resumed, before[-1] if before else None, after[0] if after else None)
        )
    return good, damage


def _repaired(directory: Path, into: Path) -> list[Damage]:
    """Check every event file of ``directory``; a copy of the directory's files in ``into`` with the damaged
    bytes left out, and the damage found (nothing copied when there is none)."""
    found: list[Damage] = []
    repairs: dict[Path, list[tuple[int, int]]] = {}
    files = sorted(p for p in directory.glob(EVENT_FILE_GLOB) if p.is_file())
    for path in files:
        good, damage = check_records(path)
        if damage:
            found += damage
            repairs[path] = good
    if not found:
        return []
    into.mkdir(parents=True, exist_ok=True)
    for path in files:
        if path in repairs:
            data = path.read_bytes()
            (into / path.name).write_bytes(b"".join(data[o:e] for o, e in repairs[path]))
        else:
            shutil.copyfile(path, into / path.name)
    return found


def read_scalars(root: Path) -> dict[str, dict[int, float]]:
    """``{tag: {step: value}}`` of every scalar in the event files under ``root`` (a NaN loss stays NaN)."""
    return read_timed_scalars(root)[0]


def read_timed_scalars(root: Path) -> tuple[dict[str, dict[int, float]], dict[int, float]]:
    """``read_scalars`` and ``{step: wall time}``, the newest event of each step (seconds since the epoch).

    Damaged records are skipped (``read_events`` says where); this keeps the shape callers had before."""
    found = read_events(root)
    return found.scalars, found.wall


def read_events(root: Path) -> EventsRead:
    """The scalars and wall times of every event file under ``root``, reading past damaged records, and the damage
    (file, byte offset, the steps around it) for the caller to warn about."""
    points: list[tuple[float, int, str, int, float]] = []
    order = 0
    damage: list[Damage] = []
    with tempfile.TemporaryDirectory(prefix="rladapt-events-") as scratch:
        for index, directory in enumerate(event_dirs(root)):
            copy = Path(scratch) / str(index)
            found = _repaired(directory, copy)
            damage += found
            acc = _accumulator(copy if found else directory)
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
    return EventsRead(out, wall, tuple(damage))
