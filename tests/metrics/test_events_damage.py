"""A damaged event file is read past, and the damage is named: never a silently short read-back.

The files are written by torch's own SummaryWriter (the writer the frameworks use); the damage is one flipped byte,
as a bad disk block or a torn copy leaves it. TensorBoard's accumulator alone stops at the damaged record and reads
a third of the steps without a word.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.metrics.events import check_records, read_events, read_scalars, read_timed_scalars

tensorboard = pytest.importorskip("torch.utils.tensorboard")

STEPS = 30
TAGS = ("train/reward", "train/loss", "train/kl")


def _write(directory: Path) -> Path:
    writer = tensorboard.SummaryWriter(log_dir=str(directory))
    for step in range(1, STEPS + 1):
        for index, tag in enumerate(TAGS):
            writer.add_scalar(tag, step + index / 10, step)
    writer.close()
    (path,) = directory.glob("events.out.tfevents.*")
    return path


def _flip(path: Path, record: int, into: str) -> int:
    """Flip one byte of record number ``record`` (0-based; 0 is the file-version event), in its length or its data;
    the byte offset of the record."""
    good, damage = check_records(path)
    assert not damage
    start, end = good[record]
    where = start + 2 if into == "length" else (start + 12 + end - 4) // 2
    data = bytearray(path.read_bytes())
    data[where] ^= 0x40
    path.write_bytes(bytes(data))
    return start


@pytest.mark.parametrize("into", ["length", "data"])
def test_a_flipped_byte_is_skipped_the_rest_is_read_and_the_damage_named(tmp_path: Path, into: str) -> None:
    path = _write(tmp_path / "exp")
    # record 1 + 3 * 9 + 1: the first tag of step 10
    offset = _flip(path, 1 + 3 * 9, into)
    found = read_events(tmp_path)
    assert len(found.damage) == 1
    damage = found.damage[0]
    assert damage.file == path and damage.offset == offset and damage.resumed_at is not None
    assert (damage.step_before, damage.step_after) == (9, 10)
    assert found.warnings == [
        f"{path}: damaged record at byte {offset} ({damage.resumed_at - offset} bytes skipped, read on from "
        f"byte {damage.resumed_at}): values logged between step 9 and step 10 are lost"
    ]
    # every step after the damage is still read; only the damaged record's value is gone
    assert sorted(found.scalars["train/loss"]) == list(range(1, STEPS + 1))
    assert sorted(found.scalars["train/reward"]) == [s for s in range(1, STEPS + 1) if s != 10]
    assert sorted(found.wall) == list(range(1, STEPS + 1))
    # the old functions read the same, past the damage
    assert read_scalars(tmp_path) == found.scalars
    assert read_timed_scalars(tmp_path)[0] == found.scalars


def test_a_cut_file_names_the_steps_after_the_last_valid_record(tmp_path: Path) -> None:
    path = _write(tmp_path / "exp")
    good, _ = check_records(path)
    start, end = good[1 + 3 * 20]
    path.write_bytes(path.read_bytes()[: (start + end) // 2])
    found = read_events(tmp_path)
    assert [d.message for d in found.damage] == [
        f"{path}: damaged record at byte {start}, nothing valid after it: steps after 20 in this file are missing "
        "(file cut or overwritten)"
    ]
    assert max(found.scalars["train/reward"]) == 20


def test_an_intact_file_has_no_warning(tmp_path: Path) -> None:
    _write(tmp_path / "exp")
    found = read_events(tmp_path)
    assert found.damage == () and found.warnings == []
    assert len(found.scalars["train/kl"]) == STEPS


def test_the_run_metrics_carry_the_warning_for_metrics_and_status(tmp_path: Path) -> None:
    from rladapt.metrics import read_metrics_dir

    path = _write(tmp_path / "exp")
    offset = _flip(path, 1 + 3 * 9, "data")
    read = read_metrics_dir(tmp_path, "trl", None, "r1")
    assert len(read.warnings) == 1 and f"{path}: damaged record at byte {offset}" in read.warnings[0]
    assert read.last_step() == STEPS
