"""Restarts and the resume decision in the job's own bootstrap, with real processes.

The trainer here is a stand-in (``FAKE_TRAINER``): a Python program that writes NeMo-RL's checkpoint layout
(``tmp_step_N`` renamed to ``step_N``, as ``CheckpointManager`` does) and dies with SIGKILL on its first attempt,
because NeMo-RL cannot run on this machine. Everything else is real: ``python -m rladapt.bootstrap``, its
``RLADAPT_CHECKPOINTS`` settings, the NeMo-RL adapter's scan, the restart loop and the attempts file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rladapt.plugins.checkpoints import ASIDE_DIR
from rladapt.resume import ATTEMPTS_ENV, SETTINGS_ENV, Settings, read_attempts

#: Resumes from the highest step_N (as NeMo-RL does), trains to step 4, checkpoints every step; the first attempt
#: leaves a half-written tmp_step_3 and kills itself with SIGKILL.
FAKE_TRAINER = r"""
import json, os, signal, sys
from pathlib import Path
root = Path("ckpt")
done = sorted(int(p.name[5:]) for p in root.glob("step_*")) if root.exists() else []
start = done[-1] if done else 0
print(f"trainer: starting at step {start}", flush=True)
for step in range(start + 1, 5):
    tmp = root / f"tmp_step_{step}"
    (tmp / "policy" / "weights").mkdir(parents=True, exist_ok=True)
    (tmp / "training_info.json").write_text(json.dumps({"step": step}))
    if step == 3 and not Path("killed-once").exists():
        Path("killed-once").write_text("")
        os.kill(os.getpid(), signal.SIGKILL)
    (tmp / "config.yaml").write_text("a: 1\n")
    for sub in ("policy/weights/w.safetensors", "policy/tokenizer/t.json", "train_dataloader.pt"):
        (tmp / sub).parent.mkdir(parents=True, exist_ok=True)
        (tmp / sub).write_text("x")
    tmp.rename(root / f"step_{step}")
print("trainer: done", flush=True)
"""


def _bootstrap(tmp_path: Path, settings: Settings) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        SETTINGS_ENV: json.dumps(settings.to_json()),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
    }
    return subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", FAKE_TRAINER],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_failed_attempt_comes_back_from_the_newest_complete_step(tmp_path: Path) -> None:
    result = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt", max_restarts=1))
    assert result.returncode == 0, result.stderr
    assert "the attempt exited with 137; restart 1 of 1" in result.stderr
    assert "trainer: starting at step 2" in result.stdout
    # the half-written tmp_step_3 was moved aside, not deleted, and the move was logged
    moved = list((tmp_path / "ckpt" / ASIDE_DIR).iterdir())
    assert [p.name.split(".")[0] for p in moved] == ["tmp_step_3"]
    assert f"moved {tmp_path / 'ckpt' / 'tmp_step_3'} aside" in result.stderr
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("step_*")) == [
        "step_1",
        "step_2",
        "step_3",
        "step_4",
    ]
    starts = read_attempts(tmp_path)
    assert [(s["restart"], s["from_step"]) for s in starts] == [(0, None), (1, 2)]


def test_without_restarts_a_failure_is_final(tmp_path: Path) -> None:
    result = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt"))
    assert result.returncode == -9  # exec'd/in-process: the trainer's own death is the job's
    assert "trainer: done" not in result.stdout
    again = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt"))  # a requeue: decided again at start
    assert again.returncode == 0, again.stderr
    assert "resuming from step 2" in again.stderr


def test_resume_never_on_a_directory_with_steps_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "ckpt" / "global_step_1").mkdir(parents=True)  # even an empty step counts
    result = _bootstrap(tmp_path, Settings("verl", "0.9.1", "ckpt", resume="never"))
    assert result.returncode == 2
    assert "spec.checkpoint.resume is never" in result.stderr and "Traceback" not in result.stderr


def _complete_step(root: Path, step: int) -> None:
    """A step as FAKE_TRAINER commits it (NeMo-RL's layout)."""
    tmp = root / f"step_{step}"
    (tmp / "policy" / "weights").mkdir(parents=True, exist_ok=True)
    (tmp / "training_info.json").write_text(json.dumps({"step": step}))
    (tmp / "config.yaml").write_text("a: 1\n")
    for sub in ("policy/weights/w.safetensors", "policy/tokenizer/t.json", "train_dataloader.pt"):
        (tmp / sub).parent.mkdir(parents=True, exist_ok=True)
        (tmp / sub).write_text("x")


def test_a_resume_path_applies_to_the_first_start_only_a_restart_keeps_its_progress(tmp_path: Path) -> None:
    """`rladapt resume --from-step 1` is `resume: path` on step 1: the restart after the fault continues from
    step 2, which the failed attempt committed, not from step 1 again."""
    _complete_step(tmp_path / "ckpt", 1)
    settings = Settings("nemo-rl", "0.7.0", "ckpt", resume="path", path="ckpt/step_1", max_restarts=2)
    result = _bootstrap(tmp_path, settings)
    assert result.returncode == 0, result.stderr
    starts = read_attempts(tmp_path)
    assert [(s["restart"], s["from_step"]) for s in starts] == [(0, 1), (1, 2)]
    assert "trainer: starting at step 2" in result.stdout


def test_max_restarts_with_resume_never_continues_the_attempts_own_checkpoints(tmp_path: Path) -> None:
    """`resume: never` refuses steps written before the run started; the restart continues its own steps."""
    result = _bootstrap(tmp_path, Settings("nemo-rl", "0.7.0", "ckpt", resume="never", max_restarts=1))
    assert result.returncode == 0, result.stderr
    assert "spec.checkpoint.resume is never" not in result.stderr
    starts = read_attempts(tmp_path)
    assert [(s["restart"], s["from_step"]) for s in starts] == [(0, None), (1, 2)]


def test_a_run_whose_restarts_fail_ends_with_the_attempts_code_never_the_usage_code(tmp_path: Path) -> None:
    """A fault in every attempt of a `resume: never` run is an infrastructure failure: the job ends with the
    last attempt's code (137, SIGKILL), not with 2 from the never-check refusing its own steps."""
    # each attempt leaves a step behind and dies
    trainer = (
        "import os, pathlib, signal; p = pathlib.Path('ckpt'); p.mkdir(exist_ok=True); "
        "(p / 'step_1').write_text('not a directory'); os.kill(os.getpid(), signal.SIGKILL)"
    )
    env = {
        **os.environ,
        SETTINGS_ENV: json.dumps(
            Settings("nemo-rl", "0.7.0", "ckpt", resume="never", max_restarts=1).to_json()
        ),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", trainer],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 137, result.stderr
    assert "no restart left" in result.stderr and "Traceback" not in result.stderr
