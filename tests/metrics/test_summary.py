"""The per-run validation summary: read once, then only what was appended; rebuilt, never trusted, when damaged,
stale, or its files were replaced. Files are written by torch's SummaryWriter; the values are compared with a
whole read of the same files (``read_metrics_dir``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rladapt.metrics import read_metrics_dir
from rladapt.metrics.events import EventsReader
from rladapt.metrics.summary import SUMMARY_FILE, read_summary

tensorboard = pytest.importorskip("torch.utils.tensorboard")

VAL = "val-core/openai/gsm8k/reward/mean@1"  # verl 0.9.1's validation score (its MetricMap)


def _log(writer: object, steps: range) -> None:
    for step in steps:
        writer.add_scalar("critic/score/mean", step / 100, step)  # type: ignore[attr-defined]
        if step % 5 == 0:
            writer.add_scalar(VAL, 1 - 1 / step, step)  # type: ignore[attr-defined]
    writer.flush()  # type: ignore[attr-defined]


def _expected(root: Path) -> dict[int, float]:
    return dict(read_metrics_dir(root, "verl", "0.9.1").series["val_score"])


def _val(summary: object) -> dict[int, float]:
    return dict(summary.metrics("r", "verl", "0.9.1").series.get("val_score", {}))  # type: ignore[attr-defined]


def test_a_poll_reads_only_what_was_appended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, run_dir = tmp_path / "rladapt-metrics", tmp_path / "run"
    writer = tensorboard.SummaryWriter(log_dir=str(root / "exp"))
    _log(writer, range(1, 21))
    first = read_summary(run_dir, root, "verl", "0.9.1")
    assert not first.incremental and first.val_tag == VAL
    assert _val(first) == _expected(root) and max(_val(first)) == 20
    assert (run_dir / SUMMARY_FILE).is_file()

    starts: list[int] = []
    real = EventsReader.read_file

    def spy(
        self: EventsReader, path: Path, start: int = 0, version: float | None = None
    ) -> tuple[int, float | None]:
        starts.append(start)
        return real(self, path, start, version)

    monkeypatch.setattr(EventsReader, "read_file", spy)
    _log(writer, range(21, 41))
    writer.close()
    second = read_summary(run_dir, root, "verl", "0.9.1")
    assert second.incremental and starts and all(s > 0 for s in starts)  # from the last offset, not from 0
    assert _val(second) == _expected(root) and max(_val(second)) == 40
    assert second.latest["critic/score/mean"][0] == 40
    starts.clear()
    third = read_summary(run_dir, root, "verl", "0.9.1")
    assert third.incremental and starts == []  # nothing new: no file read at all


def test_a_damaged_summary_is_rebuilt(tmp_path: Path) -> None:
    root, run_dir = tmp_path / "rladapt-metrics", tmp_path / "run"
    writer = tensorboard.SummaryWriter(log_dir=str(root / "exp"))
    _log(writer, range(1, 21))
    writer.close()
    read_summary(run_dir, root, "verl", "0.9.1")
    (run_dir / SUMMARY_FILE).write_text('{"format": 1, "root": "', encoding="utf-8")  # cut mid-write
    again = read_summary(run_dir, root, "verl", "0.9.1")
    assert not again.incremental and _val(again) == _expected(root)
    data = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    data["files"] = "nonsense"
    (run_dir / SUMMARY_FILE).write_text(json.dumps(data), encoding="utf-8")
    assert _val(read_summary(run_dir, root, "verl", "0.9.1")) == _expected(root)


@pytest.mark.parametrize("how", ["replaced", "rewritten", "shrunk", "removed"])
def test_a_stale_summary_is_rebuilt_not_trusted(tmp_path: Path, how: str) -> None:
    root, run_dir = tmp_path / "rladapt-metrics", tmp_path / "run"
    writer = tensorboard.SummaryWriter(log_dir=str(root / "exp"))
    _log(writer, range(1, 31))
    writer.close()
    (path,) = (root / "exp").glob("events.out.tfevents.*")
    read_summary(run_dir, root, "verl", "0.9.1")
    other = tmp_path / "other"
    writer = tensorboard.SummaryWriter(log_dir=str(other))
    for step in range(1, 31):  # the same steps and sizes, other values
        writer.add_scalar("critic/score/mean", step / 100, step)
        if step % 5 == 0:
            writer.add_scalar(VAL, 0.5 - 1 / step, step)
    writer.close()
    (fresh,) = other.glob("events.out.tfevents.*")
    if how == "replaced":  # another file under the same name (a new inode)
        path.unlink()
        shutil.copyfile(fresh, path)
    elif how == "rewritten":  # the same inode, other bytes before the recorded offset
        path.write_bytes(fresh.read_bytes())
    elif how == "shrunk":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.unlink()
    again = read_summary(run_dir, root, "verl", "0.9.1")
    assert not again.incremental
    assert _val(again) == (_expected(root) if how != "removed" else {})
