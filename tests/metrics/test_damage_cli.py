"""`rladapt status` and `rladapt metrics` of a finished run whose event file has one flipped byte: every step after
the damage is still there, and both commands say which file and where (issue 23: "`status` says so").

The events are written by torch's own SummaryWriter with TRL's tags, into the run's metrics directory; the run is a
local run recorded as ended, as `rladapt launch` leaves one. Before, `status` printed "step 10 / 30 (33%)" with no
word of the damage.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rladapt.cli import cli
from rladapt.metrics.events import check_records
from rladapt.plugins import Artifacts
from rladapt.runs import CheckpointFacts, RunStore, spec_hash

tensorboard = pytest.importorskip("torch.utils.tensorboard")

STEPS = 30
RUN = "grpo-dddd4444"


def _finished_run(home: Path, ckpt: Path) -> Path:
    store = RunStore(home)
    run = store.create(
        run_id=RUN, launcher="local", framework="trl", version="1.16.0", job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=Artifacts(launcher="local", files={"run.sh": "echo hi\n"}),
        checkpoint=CheckpointFacts(dir=str(ckpt), model="m", world_size=1),
    )  # fmt: skip
    run.save_handle({"pid": 2**22 + 7, "pgid": 2**22 + 7, "start_time": 1, "host": None, "log": "output.log"})
    (run.dir / "exit_code").write_text("0\n")
    (run.dir / "output.log").write_text("done\n")
    return run.dir


def _damaged_events(directory: Path) -> tuple[Path, int]:
    """30 steps of TRL's reward, loss and KL; one byte of the reward record of step 10 flipped."""
    writer = tensorboard.SummaryWriter(log_dir=str(directory))
    for step in range(1, STEPS + 1):
        for tag, value in (("train/reward", step / 100), ("train/loss", 1 / step), ("train/kl", 0.01)):
            writer.add_scalar(tag, value, step)
    writer.close()
    (path,) = directory.glob("events.out.tfevents.*")
    good, _ = check_records(path)
    start, end = good[1 + 3 * 9]
    data = bytearray(path.read_bytes())
    data[(start + 12 + end - 4) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    return path, start


def test_status_and_metrics_of_a_run_with_a_damaged_event_record_show_every_step_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, ckpt = tmp_path / "home", tmp_path / "ckpt"
    monkeypatch.setenv("RLADAPT_HOME", str(home))
    _finished_run(home, ckpt)
    path, offset = _damaged_events(ckpt / "rladapt-metrics")
    runner = CliRunner()
    status = runner.invoke(cli, ["status", RUN], prog_name="rladapt")
    assert status.exit_code == 0, status.output
    assert f"\nstep:      {STEPS}\n" in status.output, (
        status.output
    )  # not step 9: every step after the damage
    assert f"metrics:   warning: {path}: damaged record at byte {offset}" in status.output, status.output
    metrics = runner.invoke(cli, ["metrics", RUN, "-m", "reward_mean"], prog_name="rladapt")
    assert metrics.exit_code == 0, metrics.output
    assert f"warning: {path}: damaged record at byte {offset}" in metrics.output, metrics.output
    # the damaged record's value (step 10's reward) is gone, every other step is read
    rows = {
        line.split()[0]: line.split()[1] for line in metrics.output.splitlines() if line.strip()[:1].isdigit()
    }
    assert len(rows) == STEPS and rows["10"] == "-" and rows["11"] == "0.11" and rows[str(STEPS)] == "0.3"
