"""Scalars read back from TensorBoard event files: rladapt's own reader, tensorboard's accumulator the reference.

Every launch rladapt renders writes TensorBoard events into ``<checkpoint dir>/rladapt-metrics``
(``rladapt.metrics.store``); each framework version's logger writes there, in subdirectories of its own choice
(a run name, an experiment counter). A run that was resumed writes a new event file beside the first and logs the
redone steps again: the value written last wins, as the run went on from it.

``read_events`` reads the records itself (``rladapt.metrics.records``: the framing and every CRC-32C checked in
numpy, a window at a time) and decodes the plain scalar events of a window at once, in numpy; any other record is
parsed by protobuf with tensorboard's ``Event`` class. It keeps only the tags asked for. Tensorboard's reader, which
runs a pure-Python CRC on every byte and keeps every event (78 s and 457 MiB for 100,000 steps of 8 tags), stays
the reference: the tests compare the two on the same files, and a directory whose events ask for tensorboard's
purge of orphaned steps (a file version before 2, a ``SessionLog.START`` a restart with ``purge_step`` writes) is
read by the accumulator itself, so that both give the same values.

A damaged record is skipped and reading resyncs at the next record that passes both checks (where the damaged
record's length says it ends when that length's own CRC holds, else the first following byte that starts a valid
record); the damage is returned (``read_events``) with the file, the byte offset and the steps around it, for
``rladapt metrics`` and ``status`` to say. The accumulator alone stops reading a file at its first damaged record
and says nothing (one flipped byte in record 243 of 729 gave 10 of 30 steps): for the reference path, every file
is first checked record by record (``check_records``) and the accumulator reads a copy without the damaged bytes.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rladapt.primitives.errors import UsageError

from .records import HEADER


def _numpy() -> Any:
    """numpy, which the reader decodes records with (tensorboard's own dependency, the metrics extra)."""
    try:
        import numpy
    except ImportError:
        raise UsageError(
            "reading metrics needs numpy and tensorboard: pip install 'rladapt[metrics]'"
        ) from None
    return numpy


def _event_class() -> Any:
    try:
        from tensorboard.compat.proto.event_pb2 import Event
    except ImportError:
        raise UsageError(
            "reading metrics needs numpy and tensorboard: pip install 'rladapt[metrics]'"
        ) from None
    return Event


#: What TensorBoard names its event files (``tensorboard/summary/writer/event_file_writer.py``).
EVENT_FILE_GLOB = "events.out.tfevents.*"
_EVENT_PREFIX = "events.out.tfevents."


def event_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (``root`` included) holding an event file, sorted.

    ``os.walk`` (scandir) rather than ``Path.rglob``, which costs several times more: ``runs`` asks it of every
    run."""
    if not root.is_dir():
        return []
    found = set()
    for directory, _, names in os.walk(root):
        if any(n.startswith(_EVENT_PREFIX) and os.path.isfile(os.path.join(directory, n)) for n in names):
            found.add(Path(directory))
    return sorted(found)


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


def read_events(root: Path, tags: Collection[str] | None = None) -> EventsRead:
    """The scalars and wall times of every event file under ``root`` (only the ``tags`` named, when given),
    reading past damaged records, and the damage (file, byte offset, the steps around it) for the caller to warn
    about.

    Read by rladapt's own record reader (``rladapt.metrics.records``); a directory whose files ask for
    TensorBoard's purge of orphaned steps (an old file version, a ``SessionLog.START``) is read by tensorboard's
    accumulator instead, so that both read the same values."""
    reader = EventsReader(tags)
    for directory in event_dirs(root):
        reader.read_directory(directory)
    return reader.result()


class NeedsReference(Exception):
    """The directory's events ask for TensorBoard's purge logic: read it with tensorboard's accumulator."""


def event_files(directory: Path) -> list[Path]:
    """The event files of ``directory``, in the order tensorboard's directory loader reads them (sorted paths;
    ``tfevents`` in the name: ``tensorboard/backend/event_processing/io_wrapper.py``)."""
    return sorted(p for p in directory.iterdir() if "tfevents" in p.name and p.is_file())


class EventsReader:
    """Scalars gathered from event files, the value written last winning (the newest wall time; on a tie the one
    read later), as ``read_events`` returns them. ``read_file`` reads a file from an offset, so that a caller that
    kept the offset reads only what was appended since (``rladapt.metrics.summary``).

    Points are kept as numpy arrays per tag (step, wall time, value, read order: 28 bytes a point) until
    ``result`` resolves them into dictionaries."""

    def __init__(self, tags: Collection[str] | None = None) -> None:
        self.tags = None if tags is None else frozenset(tags)
        self._needles = None if tags is None else tuple(t.encode() for t in tags)
        self.chunks: dict[str, list[tuple[Any, Any, Any, Any]]] = {}
        #: ``resolved()`` while no point was added since (a summary asks it three times of one read)
        self._resolved: dict[str, tuple[Any, Any, Any]] | None = None
        self.damage: list[Damage] = []
        #: the read order of the next file: files read later win ties of wall time
        self.files_read = 0

    def want(self, data: bytes) -> bool:
        return self._needles is None or any(n in data for n in self._needles)

    def read_directory(self, directory: Path) -> None:
        try:
            from tensorboard.compat.proto.event_pb2 import Event  # noqa: F401
        except ImportError:
            raise UsageError(
                "reading metrics needs the tensorboard package: pip install 'rladapt[metrics]'"
            ) from None
        staged = EventsReader(self.tags)
        staged.files_read = self.files_read
        try:
            version: float | None = None
            for path in event_files(directory):
                _, version = staged.read_file(path, 0, version)
        except NeedsReference:
            staged = EventsReader(self.tags)
            staged.files_read = self.files_read
            staged.read_reference(directory)
        self.merge(staged)

    def merge(self, other: EventsReader) -> None:
        self._resolved = None
        for tag, chunks in other.chunks.items():
            self.chunks.setdefault(tag, []).extend(chunks)
        self.damage += other.damage
        self.files_read = max(self.files_read, other.files_read)

    def _add(self, tag: str, steps: Any, walls: Any, values: Any, order: Any) -> None:
        self._resolved = None
        self.chunks.setdefault(tag, []).append((steps, walls, values, order))

    def read_file(self, path: Path, start: int = 0, version: float | None = None) -> tuple[int, float | None]:
        """Read ``path`` from byte ``start``; the offset to go on from next time and the file version seen (the
        directory's so far: ``version``). NeedsReference when the events ask for TensorBoard's purge logic."""
        np = _numpy()

        from .records import Scan, batches

        scan = Scan()
        base_order = self.files_read << 40  # a file's offsets stay below 1 TiB
        self.files_read += 1
        summary_at: list[Any] = []  # offsets and steps of the summary records, for the damage messages
        summary_steps: list[Any] = []
        size = path.stat().st_size
        with path.open("rb") as f:
            for batch in batches(f, size, start, scan, self.want if self.tags is not None else None):
                version = self._read_batch(np, batch, base_order, version, summary_at, summary_steps)
        if scan.damage:
            at = np.concatenate(summary_at) if summary_at else np.zeros(0, dtype=np.int64)
            steps = np.concatenate(summary_steps) if summary_steps else np.zeros(0, dtype=np.int64)
            sort = np.argsort(at, kind="stable")
            at, steps = at[sort], steps[sort]
            for offset, resumed in scan.damage:
                i = int(np.searchsorted(at, offset)) - 1
                before = int(steps[i]) if i >= 0 else None
                after = None
                if resumed is not None:
                    j = int(np.searchsorted(at, resumed))
                    after = int(steps[j]) if j < len(at) else None
                self.damage.append(Damage(path, offset, resumed, before, after))
        return scan.end, version

    def _read_batch(
        self, np: Any, batch: Any, base_order: int, version: float | None, at: list[Any], at_steps: list[Any]
    ) -> float | None:
        arr = np.frombuffer(batch.buf, dtype=np.uint8)
        offs, lens = batch.offsets, batch.lengths
        matched = np.zeros(len(offs), dtype=bool)
        for length in np.unique(lens).tolist():
            if length < 23 or length > 160:
                continue
            pick = np.flatnonzero(lens == length)
            rows = arr[(offs[pick] + HEADER)[:, None] + np.arange(length)]
            for tag, index, steps, walls, values in _simple_scalars(np, rows, length):
                rows_at = pick[index]
                matched[rows_at] = True
                at.append(batch.base + offs[rows_at])
                at_steps.append(steps)
                if self.tags is not None and tag not in self.tags:
                    continue
                self._add(tag, steps, walls, values, base_order + batch.base + offs[rows_at])
        rest = np.flatnonzero(~matched)
        first_summary = None
        if len(rest) < len(offs):
            first_summary = int(np.flatnonzero(matched)[0])
        if len(rest):
            version = self._read_events_one_by_one(
                np, batch, rest, base_order, version, first_summary, at, at_steps
            )
        elif version is None and first_summary is not None:
            raise NeedsReference()  # a summary before any file version: the out-of-order purge applies
        return version

    def _read_events_one_by_one(
        self,
        np: Any,
        batch: Any,
        rest: Any,
        base_order: int,
        version: float | None,
        first_summary: int | None,
        at: list[Any],
        at_steps: list[Any],
    ) -> float | None:
        """The records that are not a plain scalar event, each parsed by protobuf."""
        Event = _event_class()

        offsets: list[int] = []
        steps: list[int] = []
        points: dict[str, list[tuple[int, float, float, int]]] = {}
        for i in rest.tolist():
            if version is None and first_summary is not None and i > first_summary:
                raise NeedsReference()
            o = int(batch.offsets[i])
            data = batch.buf[o + HEADER : o + HEADER + int(batch.lengths[i])]
            # neither a wanted tag nor a file version nor a session log (a START purges): nothing to parse
            if (
                self.tags is not None
                and not self.want(data)
                and b"brain.Event" not in data
                and b"\x32" not in data
            ):
                continue
            try:
                event = Event.FromString(data)
            except Exception:  # a record whose CRC holds but that does not parse: tensorboard skips it too
                continue
            if event.HasField("file_version"):
                version = _file_version(event.file_version)
                if version < 2:
                    raise NeedsReference()
                continue
            if event.HasField("session_log") and event.session_log.status == 1:  # START: a purge
                raise NeedsReference()
            if not event.HasField("summary"):
                continue
            if version is None:
                raise NeedsReference()  # no file version: the out-of-order purge applies
            step = int(event.step)
            offsets.append(batch.base + o)
            steps.append(step)
            for value in event.summary.value:
                if not value.HasField("simple_value"):
                    continue
                if self.tags is not None and value.tag not in self.tags:
                    continue
                order = base_order + batch.base + o
                points.setdefault(value.tag, []).append((step, event.wall_time, value.simple_value, order))
        if offsets:
            at.append(np.array(offsets, dtype=np.int64))
            at_steps.append(np.array(steps, dtype=np.int64))
        for tag, rows in points.items():
            self._add(
                tag,
                np.array([r[0] for r in rows], dtype=np.int64),
                np.array([r[1] for r in rows], dtype=np.float64),
                np.array([r[2] for r in rows], dtype=np.float64),
                np.array([r[3] for r in rows], dtype=np.int64),
            )
        return version

    def read_reference(self, directory: Path) -> None:
        """Read ``directory`` with tensorboard's accumulator (past damaged records, as ``check_records`` finds them)."""
        np = _numpy()

        base_order = self.files_read << 40
        self.files_read += 1
        with tempfile.TemporaryDirectory(prefix="rladapt-events-") as scratch:
            copy = Path(scratch) / "copy"
            found = _repaired(directory, copy)
            self.damage += found
            acc = _accumulator(copy if found else directory)
            acc.Reload()
            for tag in acc.Tags().get("scalars", []):
                if self.tags is not None and tag not in self.tags:
                    continue
                events = acc.Scalars(tag)
                self._add(
                    tag,
                    np.array([int(e.step) for e in events], dtype=np.int64),
                    np.array([e.wall_time for e in events], dtype=np.float64),
                    np.array([float(e.value) for e in events], dtype=np.float64),
                    base_order + np.arange(len(events), dtype=np.int64),
                )

    def resolved(self) -> dict[str, tuple[Any, Any, Any]]:
        """Per tag, ``(steps, walls, values)`` with one point per step (the one written last), steps ascending;
        computed once until more points are read (the arrays are shared: callers do not change them)."""
        if self._resolved is None:
            self._resolved = {tag: self._resolve(chunks) for tag, chunks in self.chunks.items()}
        return self._resolved

    @staticmethod
    def _resolve(chunks: list[tuple[Any, Any, Any, Any]]) -> tuple[Any, Any, Any]:
        np = _numpy()
        steps = np.concatenate([c[0] for c in chunks])
        walls = np.concatenate([c[1] for c in chunks])
        values = np.concatenate([c[2] for c in chunks])
        order = np.concatenate([c[3] for c in chunks])
        sort = np.lexsort((order, walls, steps))
        steps, walls, values = steps[sort], walls[sort], values[sort]
        last = np.ones(len(steps), dtype=bool)
        last[:-1] = steps[1:] != steps[:-1]
        return steps[last], walls[last], values[last]

    def result(self) -> EventsRead:
        """The points as dictionaries. The reader is emptied as they are built (each tag's arrays dropped once its
        dictionary is made), and the step numbers are one Python int per step shared by every tag, not one per
        point: a 100,000-step run of 8 tags peaks lower by tens of MiB."""
        np = _numpy()

        self._resolved = None  # the chunks are dropped below
        scalars: dict[str, dict[int, float]] = {}
        all_steps, all_walls = [], []
        resolved = {}
        for tag in list(self.chunks):
            resolved[tag] = self._resolve(self.chunks.pop(tag))
        every = np.unique(np.concatenate([r[0] for r in resolved.values()])) if resolved else None
        shared = every.tolist() if every is not None else []
        for tag in list(resolved):
            steps, walls, values = resolved.pop(tag)
            keys = [shared[i] for i in np.searchsorted(every, steps).tolist()]
            scalars[tag] = dict(zip(keys, values.tolist(), strict=True))
            all_steps.append(steps)
            all_walls.append(walls)
        wall: dict[int, float] = {}
        if all_steps:
            steps = np.concatenate(all_steps)
            walls = np.concatenate(all_walls)
            sort = np.lexsort((walls, steps))
            steps, walls = steps[sort], walls[sort]
            last = np.ones(len(steps), dtype=bool)
            last[:-1] = steps[1:] != steps[:-1]
            wall = dict(zip(shared, walls[last].tolist(), strict=True))
        return EventsRead(scalars, wall, tuple(self.damage))


def _simple_scalars(np: Any, rows: Any, length: int) -> Iterator[tuple[str, Any, Any, Any, Any]]:
    """The rows (records of data length ``length``) that are a plain scalar event as the frameworks' writers
    serialize it, decoded at once: ``(tag, row indexes, steps, wall times, values)`` per tag.

    The layout (torch's and tensorboardX's ``SummaryWriter.add_scalar``, tensorboard 2.21.0's ``event.proto`` and
    ``summary.proto``): ``09`` wall_time (double) ``10`` step (varint) ``2a`` len Summary {``0a`` len Value {``0a``
    len tag ``15`` simple_value (float)}}, every length one byte. Any other record is parsed by protobuf."""
    ok = (rows[:, 0] == 0x09) & (rows[:, 9] == 0x10)
    if not ok.any():
        return
    width = min(10, length - 10)
    cont = rows[:, 10 : 10 + width] >= 0x80
    # the varint's byte count: its first byte without the continuation bit
    k = np.argmin(cont, axis=1) + 1
    ok &= ~cont.all(axis=1)
    for kk in np.unique(k[ok]).tolist():
        taglen = length - 21 - kk
        if taglen < 1 or taglen > 118:
            continue
        sel = np.flatnonzero(ok & (k == kk))
        r = rows[sel]
        good = (
            (r[:, 10 + kk] == 0x2A)
            & (r[:, 11 + kk] == length - 12 - kk)
            & (r[:, 12 + kk] == 0x0A)
            & (r[:, 13 + kk] == length - 14 - kk)
            & (r[:, 14 + kk] == 0x0A)
            & (r[:, 15 + kk] == taglen)
            & (r[:, 16 + kk + taglen] == 0x15)
        )
        sel, r = sel[good], r[good]
        if not len(sel):
            continue
        step = np.zeros(len(sel), dtype=np.uint64)
        for j in range(kk):
            step |= (r[:, 10 + j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        steps = step.view(np.int64)
        walls = np.ascontiguousarray(r[:, 1:9]).view("<f8").ravel()
        values = np.ascontiguousarray(r[:, length - 4 : length]).view("<f4").ravel().astype(np.float64)
        names = np.ascontiguousarray(r[:, 16 + kk : 16 + kk + taglen]).view(f"S{taglen}").ravel()
        unique, inverse = np.unique(names, return_inverse=True)
        for t, name in enumerate(unique.tolist()):
            try:
                tag = name.decode("utf-8")
            except UnicodeDecodeError:
                continue  # protobuf would refuse the string: left to it
            these = np.flatnonzero(inverse == t)
            yield tag, sel[these], steps[these], walls[these], values[these]


def _file_version(text: str) -> float:
    """``tensorboard.backend.event_processing.event_util.ParseFileVersion``: -1 when it does not parse."""
    try:
        return float(text.split("brain.Event:")[-1])
    except ValueError:
        return -1.0


def read_events_reference(root: Path) -> EventsRead:
    """``read_events`` by tensorboard's own accumulator alone: the reference the tests compare with."""
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
