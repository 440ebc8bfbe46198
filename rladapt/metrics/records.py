"""The record framing of TensorBoard event files, read in windows, every CRC-32C computed in numpy's C loops.

An event file is a sequence of TFRecords (``tensorboard/summary/writer/record_writer.py``, tensorboard 2.21.0): a
little-endian uint64 length, the masked CRC-32C of those 8 bytes, the data and the masked CRC-32C of the data; the
mask is ``((crc >> 15) | (crc << 17)) + 0xA282EAD8`` (``tensorboard/compat/tensorflow_stub/pywrap_tensorflow.py``).

Why a reader of our own: tensorboard's reader runs its pure-Python CRC-32C on every byte (about 0.4 s per MB here)
and keeps every event of every tag; no C CRC-32C (``google-crc32c``, ``crc32c``) is a dependency of rladapt. numpy,
which tensorboard (the ``metrics`` extra) already installs, computes the table-driven CRC of many records at once:
the records of a window are grouped by length and each group is one array, so the Python loop runs once per byte
*column*, not per byte. A record longer than ``_LONG`` bytes (an image, a histogram: never a scalar event of the
frameworks' loggers) is checked byte by byte only when the caller will parse it (``want``); one it skips needs only
a valid length to be stepped over, and damage inside it loses nothing the caller reads.

The window is bounded (``WINDOW``), so memory does not grow with the file; a record longer than the window is read
on its own.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from rladapt.primitives.errors import UsageError

HEADER = 12  # uint64 length + uint32 masked crc of it
FOOTER = 4  # uint32 masked crc of the data
#: bytes read at a time
WINDOW = 4 << 20
#: records longer than this are checked one by one, and only when the caller parses them
_LONG = 4096
_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_MASK_DELTA = 0xA282EAD8

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def _make_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()
_np_table: Any = None


def load_numpy() -> Any:
    """numpy, which the metrics compute with (tensorboard's own dependency, the ``metrics`` extra); a UsageError
    naming the extra to install when it is missing."""
    global _np_table
    try:
        import numpy as np
    except ImportError:  # tensorboard's own dependency: the metrics extra brings it
        raise UsageError("reading metrics needs numpy: pip install 'rladapt[metrics]'") from None

    if _np_table is None:
        _np_table = np.array(_TABLE, dtype=np.uint32)
    return np


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The masked CRC-32C of ``data``, one byte at a time (a long record, a resync): the reference the vector form
    is tested against."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return _mask(crc ^ 0xFFFFFFFF)


def masked_crc32c_rows(rows: Any) -> Any:
    """The masked CRC-32C of each row of ``rows`` (a 2-D uint8 array, rows of one length), as a uint32 array."""
    np = load_numpy()
    columns = np.ascontiguousarray(rows.T)
    crc = np.full(columns.shape[1], 0xFFFFFFFF, dtype=np.uint32)
    table = _np_table
    for column in columns:
        crc = table[(crc ^ column) & 0xFF] ^ (crc >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


#: records are checked in buckets of lengths within this many bytes of each other (``masked_crc32c_ragged``)
_BUCKET = 32
#: ``_UNZERO[k]``: the CRC state that ``k`` zero bytes take to the initial state (grown on demand)
_UNZERO: list[int] = [0xFFFFFFFF]
#: the index of each table entry by its top byte: the high bytes of a CRC table are all distinct
_BY_TOP = {c >> 24: n for n, c in enumerate(_TABLE)}
_np_tables4: Any = None


def _before_zeros(count: int) -> int:
    """The CRC state from which ``count`` zero bytes lead to the initial state 0xFFFFFFFF: one step back per byte
    (a step ``s -> T[s & 0xFF] ^ (s >> 8)`` is undone from its top byte, which only ``T[s & 0xFF]`` sets)."""
    while len(_UNZERO) <= count:
        after = _UNZERO[-1]
        n = _BY_TOP[after >> 24]
        _UNZERO.append((((after ^ _TABLE[n]) << 8) | n) & 0xFFFFFFFF)
    return _UNZERO[count]


def _tables4(np: Any) -> Any:
    """The four tables of the slicing-by-4 CRC: ``T[k][n]`` is the table step of ``n`` followed by k zero bytes."""
    global _np_tables4
    if _np_tables4 is None:
        tables = [list(_TABLE)]
        for _ in range(3):
            tables.append([(c >> 8) ^ _TABLE[c & 0xFF] for c in tables[-1]])
        _np_tables4 = np.array(tables, dtype=np.uint32)
    return _np_tables4


def masked_crc32c_ragged(arr: Any, starts: Any, lengths: Any) -> Any:
    """The masked CRC-32C of ``arr[starts[i] : starts[i] + lengths[i]]`` for each i, as a uint32 array (``arr``: a
    1-D uint8 array).

    ``masked_crc32c_rows`` loops once per byte column of one length, so a window of records of many lengths (a
    small events file: each tag's records have their own length) costs a loop per length. Here records of lengths
    within ``_BUCKET`` bytes of each other form one array, the shorter ones padded in front with zero bytes (to a
    multiple of 4) and started from the state those zeros lead to the initial one (``_before_zeros``), so padding
    changes no CRC; each array is read 4 bytes a column (slicing-by-4 tables)."""
    np = load_numpy()
    t0, t1, t2, t3 = _tables4(np)
    out = np.zeros(len(starts), dtype=np.uint32)
    bucket = (lengths + (_BUCKET - 1)) // _BUCKET
    for b in np.unique(bucket).tolist():
        pick = np.flatnonzero(bucket == b)
        lens = lengths[pick]
        width = -(-int(lens.max()) // 4) * 4
        if width == 0:
            out[pick] = 0xFFFFFFFF
            continue
        pad = width - lens
        columns = np.arange(width)
        at = starts[pick][:, None] - pad[:, None] + columns
        rows = np.where(columns >= pad[:, None], arr[np.clip(at, 0, len(arr) - 1)], 0).astype(np.uint8)
        _before_zeros(int(pad.max()))
        crc = np.array(_UNZERO, dtype=np.uint32)[pad]
        words = np.ascontiguousarray(rows).view("<u4").T.copy()
        for word in words:
            crc ^= word
            crc = t3[crc & 0xFF] ^ t2[(crc >> 8) & 0xFF] ^ t1[(crc >> 16) & 0xFF] ^ t0[crc >> 24]
        out[pick] = crc
    out ^= np.uint32(0xFFFFFFFF)
    return ((out >> np.uint32(15)) | (out << np.uint32(17))) + np.uint32(_MASK_DELTA)


@dataclass
class Scan:
    """What one pass over a file found besides its records."""

    #: where a later pass goes on: after the last valid record read (at a damaged tail, so that a record the writer
    #: was still writing is read once complete)
    end: int = 0
    #: ``(offset, resumed_at)`` of each damaged stretch; ``resumed_at`` None when nothing valid follows
    damage: list[tuple[int, int | None]] = field(default_factory=list)


def _valid_at(f: BinaryIO, offset: int, size: int) -> int | None:
    """The end of the valid record at ``offset`` (both CRCs checked), or None."""
    if offset + HEADER > size:
        return None
    f.seek(offset)
    head = f.read(HEADER)
    (length,) = _U64.unpack_from(head)
    end = offset + HEADER + length + FOOTER
    if end > size:  # checked first: cheap, and most bytes a resync tries fail it
        return None
    if masked_crc32c(head[:8]) != _U32.unpack_from(head, 8)[0]:
        return None
    body = f.read(length + FOOTER)
    if masked_crc32c(body[:length]) != _U32.unpack_from(body, length)[0]:
        return None
    return end


def _resync(f: BinaryIO, offset: int, size: int) -> int | None:
    """Where reading goes on after the bad record at ``offset``: where its length says it ends when the length's
    own CRC holds and a valid record starts there (the damage is in the data), else the first following byte that
    starts a valid record; None when none does."""
    if offset + HEADER <= size:
        f.seek(offset)
        head = f.read(HEADER)
        (length,) = _U64.unpack_from(head)
        if masked_crc32c(head[:8]) == _U32.unpack_from(head, 8)[0]:
            candidate = offset + HEADER + length + FOOTER
            if candidate < size and _valid_at(f, candidate, size) is not None:
                return candidate
    block = 1 << 16
    start = offset + 1
    while start + HEADER <= size:
        f.seek(start)
        buf = f.read(block + HEADER)
        for i in range(min(block, len(buf) - HEADER + 1)):
            (length,) = _U64.unpack_from(buf, i)
            if start + i + HEADER + length + FOOTER <= size and _valid_at(f, start + i, size) is not None:
                return start + i
        start += block
    return None


@dataclass(frozen=True)
class Batch:
    """Valid records of one window: ``buf[offsets[i] + HEADER :][: lengths[i]]`` is record i's data; ``base`` is
    the file offset of ``buf``."""

    base: int
    buf: bytes
    offsets: Any  # numpy int64, relative to buf
    lengths: Any  # numpy int64


def records(
    f: BinaryIO, size: int, start: int, scan: Scan, want: Callable[[bytes], bool] | None = None
) -> Iterator[tuple[int, bytes]]:
    """``(offset, data)`` of every valid record from ``start`` (``batches`` one record at a time)."""
    for batch in batches(f, size, start, scan, want):
        for o, length in zip(batch.offsets.tolist(), batch.lengths.tolist(), strict=True):
            yield batch.base + o, batch.buf[o + HEADER : o + HEADER + length]


def batches(
    f: BinaryIO, size: int, start: int, scan: Scan, want: Callable[[bytes], bool] | None = None
) -> Iterator[Batch]:
    """The valid records of the open file ``f`` (``size`` bytes) from ``start``, a window at a time; damaged
    stretches are skipped and noted in ``scan``, and ``scan.end`` set. ``want(data)``: whether the caller will parse
    a long record (short ones are all checked at once, which is cheaper than asking)."""
    np = load_numpy()
    pos = start
    scan.end = start
    while pos < size:
        f.seek(pos)
        buf = f.read(min(WINDOW, size - pos))
        offsets, lengths, p = _walk(np, buf)
        if not len(offsets):
            # the record at pos does not fit the window: a long one, or a damaged length or tail
            end_at = _long_record(f, pos, size, want)
            if end_at is not None:
                f.seek(pos)
                one = f.read(end_at - pos)
                yield Batch(pos, one, np.zeros(1, dtype=np.int64), np.array([end_at - pos - HEADER - FOOTER]))
                pos = scan.end = end_at
                continue
            next_pos = _damaged(f, pos, size, scan)
            if next_pos is None:
                return
            pos = next_pos
            continue
        offs, lens = offsets, lengths
        bad = _first_bad(np, buf, offs, lens, want)
        good = len(offsets) if bad is None else bad
        if good:
            yield Batch(pos, buf, offs[:good], lens[:good])
            scan.end = pos + int(offsets[good - 1] + lengths[good - 1]) + HEADER + FOOTER
        if bad is None:
            pos += p
            continue
        next_pos = _damaged(f, pos + offsets[bad], size, scan)
        if next_pos is None:
            return
        pos = next_pos


def _walk(np: Any, buf: bytes) -> tuple[Any, Any, int]:
    """The records of ``buf`` by their lengths (CRCs unchecked): offsets, lengths, and where the first record that
    does not fit the window starts.

    Following lengths is a chain, one record at a time; in numpy, the records that look like an event record
    (a length under 64 KiB: its bytes 2 to 7 zero; data starting with ``09``, the wall time every writer writes
    first) are found at once, and each run of them whose lengths lead from one to the next is taken whole. Anything
    else (the file version record, a long record, a byte that only looks like a start) is stepped over one record
    at a time, as the chain says."""
    n = len(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)
    starts = np.zeros(0, dtype=np.int64)
    if n > HEADER + 1:
        zero = arr == 0
        m = arr[HEADER:n] == 0x09
        span = n - HEADER
        for j in range(2, 8):
            m &= zero[j : j + span]
        starts = np.flatnonzero(m).astype(np.int64)
    if len(starts):
        lens_at = arr[starts].astype(np.int64) | (arr[starts + 1].astype(np.int64) << 8)
        ends = starts + HEADER + lens_at + FOOTER
        fits = ends <= n
        starts, lens_at, ends = starts[fits], lens_at[fits], ends[fits]
    else:
        lens_at = ends = starts
    # j where the run breaks: the record at starts[j] does not lead to starts[j + 1]
    breaks = np.flatnonzero(ends[:-1] != starts[1:])
    pieces_o: list[Any] = []
    pieces_l: list[Any] = []
    p = 0
    unpack = _U64.unpack_from
    count = len(starts)
    while p + HEADER <= n:
        i = int(np.searchsorted(starts, p)) if count else 0
        if i < count and starts[i] == p:
            b = int(np.searchsorted(breaks, i))
            last = int(breaks[b]) if b < len(breaks) else count - 1
            pieces_o.append(starts[i : last + 1])
            pieces_l.append(lens_at[i : last + 1])
            p = int(ends[last])
            continue
        (length,) = unpack(buf, p)
        end = p + HEADER + length + FOOTER
        if end > n:
            break
        pieces_o.append(np.array([p], dtype=np.int64))
        pieces_l.append(np.array([length], dtype=np.int64))
        p = end
    if not pieces_o:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), p
    return np.concatenate(pieces_o), np.concatenate(pieces_l), p


def _damaged(f: BinaryIO, offset: int, size: int, scan: Scan) -> int | None:
    resumed = _resync(f, offset, size)
    scan.damage.append((offset, resumed))
    if resumed is None:
        scan.end = offset
    return resumed


def _long_record(f: BinaryIO, pos: int, size: int, want: Callable[[bytes], bool] | None) -> int | None:
    """The end of the record at ``pos`` read on its own (longer than the window), or None when it is not valid."""
    if pos + HEADER > size:
        return None
    f.seek(pos)
    head = f.read(HEADER)
    (length,) = _U64.unpack_from(head)
    end = pos + HEADER + length + FOOTER
    if end > size or masked_crc32c(head[:8]) != _U32.unpack_from(head, 8)[0]:
        return None
    body = f.read(length + FOOTER)
    data = body[:length]
    if want is not None and not want(data):
        return end
    return end if masked_crc32c(data) == _U32.unpack_from(body, length)[0] else None


def _first_bad(np: Any, buf: bytes, offs: Any, lens: Any, want: Callable[[bytes], bool] | None) -> int | None:
    """The index of the first record of the window whose length or data CRC fails, None when all hold."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    failed = np.zeros(len(offs), dtype=bool)
    heads = arr[offs[:, None] + np.arange(8)]
    stored = arr[offs[:, None] + np.arange(8, 12)].copy().view("<u4").ravel()
    failed |= masked_crc32c_rows(heads) != stored
    crc_at = offs + HEADER + lens
    data_crc = arr[crc_at[:, None] + np.arange(4)].copy().view("<u4").ravel()
    short = np.flatnonzero(lens <= _LONG)
    failed[short] |= masked_crc32c_ragged(arr, offs[short] + HEADER, lens[short]) != data_crc[short]
    for i in np.flatnonzero(lens > _LONG).tolist():
        o, length = int(offs[i]), int(lens[i])
        data = buf[o + HEADER : o + HEADER + length]
        if (want is None or want(data)) and masked_crc32c(data) != int(data_crc[i]):
            failed[i] = True
    bad = np.flatnonzero(failed)
    return int(bad[0]) if len(bad) else None
