"""rladapt's own event-file reader against tensorboard's accumulator, the reference: same tags, same steps, same
values, same wall times, the same damage named; the numpy CRC-32C against tensorboard's own.

Files are written by torch's SummaryWriter (the writer the frameworks use), resumed runs, restarts that purge
(``purge_step``: a ``SessionLog.START``), non-scalar events, tags too long for the vector decoding, and windows
small enough that records straddle them.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import pytest

from rladapt.metrics import records
from rladapt.metrics.events import EventsRead, EventsReader, check_records, read_events, read_events_reference

tensorboard = pytest.importorskip("torch.utils.tensorboard")
np = pytest.importorskip("numpy")


def _same(fast: EventsRead, reference: EventsRead) -> None:
    assert fast.scalars.keys() == reference.scalars.keys()
    for tag, points in reference.scalars.items():
        got = fast.scalars[tag]
        assert list(got) == list(points) or sorted(got) == sorted(points), tag
        for step, value in points.items():
            assert (math.isnan(value) and math.isnan(got[step])) or got[step] == value, (tag, step)
    assert fast.wall == reference.wall
    assert [d.message for d in fast.damage] == [d.message for d in reference.damage]


def _fast_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the reader hands a directory to tensorboard's accumulator: the comparison must test our reader."""

    def refuse(self: EventsReader, directory: Path) -> None:
        raise AssertionError(f"{directory} was read by the reference reader")

    monkeypatch.setattr(EventsReader, "read_reference", refuse)


def _write(directory: Path, points: dict[str, dict[int, float]], purge_step: int | None = None) -> None:
    writer = tensorboard.SummaryWriter(log_dir=str(directory), purge_step=purge_step)
    steps = sorted({s for values in points.values() for s in values})
    for step in steps:
        for tag, values in points.items():
            if step in values:
                writer.add_scalar(tag, values[step], step)
    writer.close()


def _run(root: Path) -> None:
    long_tag = "val-core/" + "x" * 130 + "/reward/mean@1"
    _write(
        root / "exp_001", {"train/reward": {s: s / 10 for s in range(1, 40)}, long_tag: {10: 0.5, 20: 0.7}}
    )
    time.sleep(1.05)  # a new event file name and later wall times, as a restart writes
    writer = tensorboard.SummaryWriter(log_dir=str(root / "exp_002"))
    for step in range(30, 60):
        writer.add_scalar("train/reward", step / 7, step)
        writer.add_scalar("train/loss", math.nan if step == 33 else -step, step)
        writer.add_histogram(
            "weights", np.array([0.1 * step, 0.2, 0.3]), step
        )  # not a scalar: left out by both
        writer.add_text("note", "t" * 5000, step)  # a record longer than the vector decoding takes
        writer.add_scalar("s/" + "é" * 3, 2.0**-step, step)
    writer.close()


@pytest.mark.parametrize("window", [records.WINDOW, 97, 1024])
def test_the_fast_reader_reads_what_tensorboard_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    _run(tmp_path)
    monkeypatch.setattr(
        records, "WINDOW", window
    )  # records straddle windows; long ones are read on their own
    reference = read_events_reference(tmp_path)
    assert len(reference.scalars["train/reward"]) == 59
    _fast_only(monkeypatch)
    _same(read_events(tmp_path), reference)


def test_only_the_tags_asked_for_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tmp_path)
    reference = read_events_reference(tmp_path)
    _fast_only(monkeypatch)
    fast = read_events(tmp_path, tags={"train/loss", "nowhere"})
    assert fast.scalars == {"train/loss": reference.scalars["train/loss"]} or (
        fast.scalars.keys() == {"train/loss"}
        and all(
            math.isnan(v) or v == reference.scalars["train/loss"][s]
            for s, v in fast.scalars["train/loss"].items()
        )
    )
    assert sorted(fast.wall) == sorted(reference.scalars["train/loss"])


def test_a_restart_that_purges_is_read_as_tensorboard_reads_it(tmp_path: Path) -> None:
    # purge_step writes a SessionLog.START: tensorboard drops the steps after it that were logged before it
    _write(tmp_path / "exp", {"train/reward": {s: float(s) for s in range(1, 21)}})
    time.sleep(1.05)
    _write(tmp_path / "exp", {"train/reward": {s: -float(s) for s in range(10, 15)}}, purge_step=10)
    reference = read_events_reference(tmp_path)
    assert max(reference.scalars["train/reward"]) == 14  # 15..20 purged by the reference
    _same(read_events(tmp_path), reference)


@pytest.mark.parametrize("into", ["length", "data"])
@pytest.mark.parametrize("window", [records.WINDOW, 200])
def test_damage_is_skipped_and_named_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, into: str, window: int
) -> None:
    _write(
        tmp_path / "exp", {t: {s: s + i / 10 for s in range(1, 31)} for i, t in enumerate(("a", "b", "c"))}
    )
    (path,) = (tmp_path / "exp").glob("events.out.tfevents.*")
    good, _ = check_records(path)
    for record in (1 + 3 * 9, 1 + 3 * 20 + 1):
        start, end = good[record]
        where = start + 2 if into == "length" else (start + 12 + end - 4) // 2
        data = bytearray(path.read_bytes())
        data[where] ^= 0x40
        path.write_bytes(bytes(data))
    monkeypatch.setattr(records, "WINDOW", window)
    reference = read_events_reference(tmp_path)
    assert len(reference.damage) == 2
    _fast_only(monkeypatch)
    _same(read_events(tmp_path), reference)


def test_a_cut_file_is_named_and_the_offset_to_go_on_from_is_the_cut(tmp_path: Path) -> None:
    _write(tmp_path / "exp", {"a": {s: float(s) for s in range(1, 31)}})
    (path,) = (tmp_path / "exp").glob("events.out.tfevents.*")
    good, _ = check_records(path)
    start, end = good[20]
    path.write_bytes(path.read_bytes()[: (start + end) // 2])
    _same(read_events(tmp_path), read_events_reference(tmp_path))
    scan = records.Scan()
    with path.open("rb") as f:
        list(records.records(f, path.stat().st_size, 0, scan))
    assert scan.end == start  # a poll goes on where the record the writer was writing begins


def test_the_vector_crc_is_tensorboards_crc() -> None:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    rng = random.Random(7)
    for length in (0, 1, 7, 8, 45, 300):
        rows = [bytes(rng.randrange(256) for _ in range(length)) for _ in range(5)]
        expected = [masked_crc32c(r) for r in rows]
        assert [records.masked_crc32c(r) for r in rows] == expected
        matrix = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(5, length)
        assert records.masked_crc32c_rows(matrix).tolist() == expected


def test_the_ragged_crc_of_records_of_many_lengths_is_tensorboards_crc() -> None:
    """Records of different lengths checked in one array, the shorter ones padded in front with zero bytes and
    started from the state those zeros lead to the initial one: every length from 0 past a few buckets and past a
    multiple of 4, in shuffled order, each the CRC tensorboard computes."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    rng = random.Random(11)
    lengths = [*range(0, 140), 300, 4096] * 2
    rng.shuffle(lengths)
    starts, at = [], 0
    for length in lengths:
        starts.append(at)
        at += length + rng.randrange(3)  # gaps between records, as the framing bytes are
    data = bytes(rng.randrange(256) for _ in range(at))
    got = records.masked_crc32c_ragged(
        np.frombuffer(data, dtype=np.uint8),
        np.array(starts, dtype=np.int64),
        np.array(lengths, dtype=np.int64),
    )
    assert got.tolist() == [masked_crc32c(data[s : s + n]) for s, n in zip(starts, lengths, strict=True)]
