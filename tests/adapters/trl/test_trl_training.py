"""Real GRPO training on the CPU through ``rladapt launch -f trl`` on the local launcher: the tiny model of
``examples/tiny`` (scripts/make_tiny_model.py), the installed TRL (the newest pinned), no stub anywhere.

Each run is a few optimizer steps (about 8 s on 2 cores, most of it importing torch and transformers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import rladapt
from tests.conftest import REPO

from .conftest import PINNED, job, render, trl_root

trl = pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
INSTALLED = trl.__version__

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"
TINY = REPO / "examples" / "tiny"
STEPS = 4


def launch(tmp_path: Path, name: str, *overrides: str) -> tuple[Any, Path]:
    """``rladapt launch --follow`` of the example for STEPS steps, everything written under ``tmp_path``."""
    ckpt = tmp_path / name
    res = rladapt(
        "launch",
        "-f",
        "trl",
        "--follow",
        str(EXAMPLE),
        f"spec.model.path={TINY / 'model'}",
        f"spec.data.train=[{TINY / 'prompts.jsonl'}]",
        f"spec.reward.function.path={TINY / 'reward.py'}",
        f"spec.checkpoint.dir={ckpt}",
        f"spec.training.steps={STEPS}",
        "spec.checkpoint.every_steps=2",
        f"spec.runtime.python={sys.executable}",
        f"spec.runtime.working_dir={tmp_path}",
        *overrides,
    )
    return res, ckpt


def metrics(ckpt: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ckpt / "rladapt-metrics.jsonl").read_text().splitlines()]


def test_grpo_trains_checkpoints_and_repeats_exactly(tmp_path: Path) -> None:
    first, ckpt_a = launch(tmp_path, "a")
    assert first.returncode == 0, first.stderr[-3000:] + first.stdout[-3000:]
    # the progress display: one line per step with step / total and the reward
    assert f"[rladapt] step {STEPS}/{STEPS}  reward " in first.stdout
    assert f"checkpoints in {ckpt_a}" in first.stdout
    assert "logs: rladapt logs " in first.stderr
    assert "metrics: rladapt metrics " in first.stderr
    # TRL's Trainer wrote checkpoint-N every 2 steps, each with the state a resume needs
    steps = sorted(int(p.name.split("-")[1]) for p in ckpt_a.glob("checkpoint-*"))
    assert steps == [2, 4]
    for step in steps:
        state = json.loads((ckpt_a / f"checkpoint-{step}" / "trainer_state.json").read_text())
        assert state["global_step"] == step
        for part in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
            assert (ckpt_a / f"checkpoint-{step}" / part).stat().st_size > 0, part
    rows = metrics(ckpt_a)
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert all(r["max_steps"] == STEPS and r["reward"] is not None for r in rows)

    # the same spec and seed: the same per-step losses and rewards
    second, ckpt_b = launch(tmp_path, "b")
    assert second.returncode == 0, second.stderr[-3000:]
    again = metrics(ckpt_b)
    assert [(r["loss"], r["reward"]) for r in again] == [(r["loss"], r["reward"]) for r in rows]
    assert any(r["loss"] != 0.0 for r in rows) or any(r["reward"] != rows[0]["reward"] for r in rows)


def test_a_missing_reward_file_fails_before_training(tmp_path: Path) -> None:
    res, ckpt = launch(tmp_path, "bad", f"spec.reward.function.path={tmp_path / 'nope.py'}")
    # the local launcher refuses it before the job starts (exit 2), as `rladapt validate` does
    assert res.returncode == 2
    assert "spec.reward.function.path: no such file or directory" in res.stderr
    assert f"found {str(tmp_path / 'nope.py')!r}" in res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert not list(ckpt.glob("checkpoint-*"))


@pytest.mark.conformance
@pytest.mark.parametrize("version", [v for v in PINNED if v != INSTALLED])
def test_the_driver_trains_on_the_other_pinned_versions(version: str, tmp_path: Path) -> None:
    """The older pinned versions import from their unzipped wheels (pure Python) over the same transformers: the
    rendered config really trains there too, 2 steps, with a checkpoint."""
    ckpt = tmp_path / "ckpt"
    native = render(
        job(
            f"spec.model.path={TINY / 'model'}",
            f"spec.data.train=[{TINY / 'prompts.jsonl'}]",
            f"spec.reward.function.path={TINY / 'reward.py'}",
            f"spec.checkpoint.dir={ckpt}",
            "spec.training.steps=2",
            "spec.checkpoint.every_steps=2",
        ),
        version,
    )
    for rel, text in native.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(trl_root(version))}
    res = subprocess.run(
        [sys.executable, *native.argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"[rladapt] TRL {version} GRPO" in res.stdout
    assert json.loads((ckpt / "checkpoint-2" / "trainer_state.json").read_text())["global_step"] == 2
    assert [r["step"] for r in metrics(ckpt)] == [1, 2]
