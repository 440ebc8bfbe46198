"""``rladapt runs`` lists ended runs from the store's index (``rladapt.runs.index``) without reading their records
again, and never trusts it blindly: a run whose record, checkpoints or events changed, a damaged index, a removed
run, a run still going are read from their files. Every listing is compared with one computed without an index."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rladapt.runs
from rladapt.plugins.launcher import Artifacts
from rladapt.runs import INDEX_FILE, RunStore
from rladapt.runs.record import CheckpointFacts

tensorboard = pytest.importorskip("torch.utils.tensorboard")

VAL = "val-core/openai/gsm8k/reward/mean@1"  # verl 0.9.1's validation score (its MetricMap)


def _run(
    home: Path,
    rid: str,
    state: str = "SUCCEEDED",
    scores: range = range(5, 31, 5),
    handle: dict[str, Any] | None = None,
) -> Path:
    store = RunStore(home)
    ck = home / "ck" / rid
    run = store.create(
        run_id=rid,
        launcher="local",
        framework="verl",
        version="0.9.1",
        job_name="t",
        spec_hash="0" * 16,
        artifacts=Artifacts(launcher="local", files={"run.sh": "#!/bin/sh\ntrue\n"}),
        checkpoint=CheckpointFacts(dir=str(ck)),
        total_steps=30,
    )
    record = json.loads((run.dir / "run.json").read_text())
    record["state"] = state
    record["handle"] = handle
    (run.dir / "run.json").write_text(json.dumps(record))
    _log(ck, scores)
    return ck


def _log(ck: Path, scores: range, name: str = "exp") -> None:
    writer = tensorboard.SummaryWriter(log_dir=str(ck / "rladapt-metrics" / name))
    for step in scores:
        writer.add_scalar(VAL, step / 100, step)
    writer.close()


def _list(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, str]:
    from rladapt.cli import cli

    monkeypatch.setenv("RLADAPT_HOME", str(home))
    res = CliRunner().invoke(cli, ["runs", *args], prog_name="rladapt")
    assert res.exit_code == 0, res.output
    return res.stdout, res.stderr


def _fresh(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, str]:
    """The listing computed from the files alone (no index), the index left as it was."""
    index = home / INDEX_FILE
    kept = index.read_bytes() if index.exists() else None
    index.unlink(missing_ok=True)
    try:
        return _list(home, monkeypatch, *args)
    finally:
        if kept is not None:
            index.write_bytes(kept)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run directories whose record ``runs`` reads."""
    seen: list[str] = []
    real = rladapt.runs.read_record

    def spy(run_dir: Path) -> object:
        seen.append(run_dir.name)
        return real(run_dir)

    monkeypatch.setattr(rladapt.runs, "read_record", spy)
    return seen


def test_ended_runs_are_listed_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]
) -> None:
    for n in range(3):
        _run(tmp_path, f"r-{n}")
    first = _list(tmp_path, monkeypatch)
    assert sorted(reads) == ["r-0", "r-1", "r-2"] and (tmp_path / INDEX_FILE).is_file()
    assert "0.3 (best 0.3@30, no ckpt)" in first[0]
    reads.clear()
    assert _list(tmp_path, monkeypatch) == first
    assert reads == []  # nothing changed: no record read
    assert _list(tmp_path, monkeypatch, "--json") == _fresh(tmp_path, monkeypatch, "--json")


def test_a_run_whose_files_changed_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]
) -> None:
    ck = _run(tmp_path, "r-0")
    _run(tmp_path, "r-1")
    _list(tmp_path, monkeypatch)
    reads.clear()
    _log(ck, range(35, 41, 5), name="exp2")  # a new events file: the latest score is now at step 40
    listed = _list(tmp_path, monkeypatch)
    assert reads == ["r-0"] and "0.4 (best 0.4@40, no ckpt)" in listed[0]
    assert listed == _fresh(tmp_path, monkeypatch)

    reads.clear()
    record_file = tmp_path / "runs" / "r-1" / "run.json"
    record = json.loads(record_file.read_text())
    record["state"] = "FAILED"
    record_file.write_text(json.dumps(record))  # rewritten in place: another size and time
    listed = _list(tmp_path, monkeypatch)
    assert reads == ["r-1"] and "FAILED" in listed[0]
    assert listed == _fresh(tmp_path, monkeypatch)


def test_a_damaged_index_is_rebuilt_and_a_removed_run_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]
) -> None:
    import shutil

    for n in range(2):
        _run(tmp_path, f"r-{n}")
    first = _list(tmp_path, monkeypatch)
    index = tmp_path / INDEX_FILE
    index.write_text(index.read_text()[:40])  # cut mid-write
    reads.clear()
    assert _list(tmp_path, monkeypatch) == first
    assert sorted(reads) == ["r-0", "r-1"]
    assert set(json.loads(index.read_text())["runs"]) == {"r-0", "r-1"}

    shutil.rmtree(tmp_path / "runs" / "r-1")
    listed = _list(tmp_path, monkeypatch)
    assert "r-1" not in listed[0] and set(json.loads(index.read_text())["runs"]) == {"r-0"}


def test_a_run_still_going_is_never_listed_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]
) -> None:
    # this very process is the run's (the local launcher asks whether the pid is alive): RUNNING
    alive = {"pid": os.getpid(), "pgid": os.getpgid(0), "start_time": None, "host": None}
    _run(tmp_path, "r-0", state="RUNNING", handle=alive)
    _run(tmp_path, "r-1")
    assert " RUNNING " in _list(tmp_path, monkeypatch)[0]
    assert set(json.loads((tmp_path / INDEX_FILE).read_text())["runs"]) == {"r-1"}
    reads.clear()
    _list(tmp_path, monkeypatch)
    assert reads == ["r-0"]


def test_a_first_listing_syncs_no_derived_file_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summaries and the index are derived (rebuilt when damaged): written atomically, never flushed to disk,
    so that a first listing of thousands of runs costs no two disk flushes each; a run record still is flushed."""
    for n in range(3):
        _run(tmp_path, f"r-{n}")
    synced: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    _list(tmp_path, monkeypatch)
    assert (tmp_path / INDEX_FILE).is_file()
    assert all((tmp_path / "runs" / f"r-{n}" / "metrics-summary.json").is_file() for n in range(3))
    assert synced == []
    RunStore(tmp_path).get("r-0").update(lambda record: record.touched())  # a record: written durably
    assert len(synced) == 2  # the file, then its directory's rename
