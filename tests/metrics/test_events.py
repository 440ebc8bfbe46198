"""The TensorBoard reader and the renaming, on event files written by torch's own SummaryWriter (the writer verl,
OpenRLHF, NeMo-RL and transformers use): a resumed run's redone steps, a NaN, run subdirectories."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from rladapt.metrics import Absent, Logged, MetricMap, read_metrics_dir
from rladapt.metrics.events import read_scalars
from rladapt.metrics.mapping import neutral_series

tensorboard = pytest.importorskip("torch.utils.tensorboard")


def write(directory: Path, points: dict[str, dict[int, float]]) -> None:
    writer = tensorboard.SummaryWriter(log_dir=str(directory))
    for tag, values in points.items():
        for step, value in values.items():
            writer.add_scalar(tag, value, step)
    writer.close()


def test_a_resumed_run_reads_the_redone_steps_as_written_last(tmp_path: Path) -> None:
    root = tmp_path / "rladapt-metrics"
    write(root / "exp_001", {"train/reward": {1: 0.1, 2: 0.2, 3: 0.3}})
    time.sleep(1.1)  # a new event file name (its timestamp) and later wall times, as a restart writes
    write(root / "exp_002", {"train/reward": {3: 0.35, 4: 0.4}, "train/loss": {3: math.nan}})
    scalars = read_scalars(root)
    assert scalars["train/reward"] == pytest.approx({1: 0.1, 2: 0.2, 3: 0.35, 4: 0.4})
    assert math.isnan(scalars["train/loss"][3])  # a diverged loss stays visible
    assert read_scalars(tmp_path / "nowhere") == {}
    # TRL resumes into the same directory: a second event file beside the first
    time.sleep(1.1)
    write(root / "exp_002", {"train/reward": {4: 0.45}})
    assert read_scalars(root)["train/reward"] == pytest.approx({1: 0.1, 2: 0.2, 3: 0.35, 4: 0.45})


def test_a_verl_runs_tags_become_neutral_names(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "critic/score/mean": {1: 0.5, 2: 0.6},
            "actor/reward_kl_penalty": {1: 0.01},
            "val-core/openai/gsm8k/reward/mean@1": {2: 0.7},
            "perf/max_memory_allocated_gb": {1: 10.0},
        },
    )
    m = read_metrics_dir(tmp_path, "verl", "0.9.1", run_id="r")
    assert m.series["reward_mean"] == pytest.approx({1: 0.5, 2: 0.6})
    assert m.series["kl"] == pytest.approx({1: 0.01})  # no actor/kl_loss: the KL is in the reward
    assert m.series["val_score"] == pytest.approx({2: 0.7})
    assert m.native["val_score"] == "val-core/openai/gsm8k/reward/mean@1"
    assert "perf/max_memory_allocated_gb" in m.series and "critic/score/mean" not in m.series


def test_a_mapping_names_only_neutral_quantities() -> None:
    with pytest.raises(ValueError, match="not neutral metric names: \\['reward'\\]"):
        MetricMap("x", "1", {"reward": Absent("no")})
    mapping = MetricMap(
        "x",
        "1",
        {
            "reward_mean": (
                Logged("train/rollout/reward_mean", "rollout/reward_mean", "f.py"),
                Logged("train/reward", "reward", "f.py"),
            ),
            "entropy": Absent("not logged"),
        },
    )
    # the first candidate present wins; the other keeps its native name
    series, chosen = neutral_series(
        {"train/reward": {1: 1.0}, "train/rollout/reward_mean": {1: 2.0}}, mapping
    )
    assert chosen == {"reward_mean": "train/rollout/reward_mean"}
    assert series == {"reward_mean": {1: 2.0}, "train/reward": {1: 1.0}}
    assert mapping.absent() == {"entropy": "not logged"}
    # the second candidate when the first is not there
    _, chosen = neutral_series({"train/reward": {1: 1.0}}, mapping)
    assert chosen == {"reward_mean": "train/reward"}


def test_the_trl_driver_refuses_to_start_without_a_tensorboard_writer() -> None:
    from rladapt.adapters.trl.driver import DriverError, require_tensorboard

    require_tensorboard(["tensorboard"])  # this interpreter has it (the trl extra)
    require_tensorboard("none", modules=("no_such_module",))  # not asked for: nothing to check
    with pytest.raises(DriverError, match=r"has none of no_such_module: pip install tensorboard"):
        require_tensorboard(["wandb", "tensorboard"], modules=("no_such_module",))
