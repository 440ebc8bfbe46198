"""A step that failed to load is marked bad by the start that failed, so that a restart the launcher makes (a
Kubernetes pod retry under the Job's or RayJob's ``backoffLimit``, a Slurm requeue) or a later ``rladapt resume``
never takes it again.

A Kubernetes API server cannot run here, so these tests do what a pod retry does to the job, for real: the same
``python -m rladapt.bootstrap`` command started twice in the same working directory, with the environment the pod
template gives every pod (the run, the attempt, the resume settings with ``max_restarts`` 0, since the Job restarts,
not the bootstrap; no attempts file, which lives in the run directory on the submitter's side). Nothing tells the
second start how the first ended. The checkpoint directory is TRL's real layout (``tests.adapters.checkpoint_builders``);
the trainer is a stand-in that fails to load ``checkpoint-2`` as a ``load_state_dict`` mismatch would, because what
is tested is the decision, not TRL's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rladapt.plugins.checkpoints import ASIDE_DIR, read_bad
from rladapt.plugins.job import RUN_ATTEMPT_ENV, RUN_ID_ENV
from rladapt.resume import ATTEMPTS_ENV, SETTINGS_ENV, Settings
from rladapt.runs.owner import HEARTBEAT_ENV
from tests.adapters.checkpoint_builders import trl_step

TRL = Settings("trl", "0.29.1", "ckpt")  # max_restarts 0: the launcher restarts the job, not the bootstrap
RUN = "grpo-0a1b2c3d"

#: Fails to load checkpoint-2 (in process: the bootstrap runs a Python trainer of its own interpreter with runpy).
PY_TRAINER = (
    "import json, sys; args = sys.argv[1:]; print('trainer argv: ' + json.dumps(args), flush=True)\n"
    "if args[-1].endswith('checkpoint-2'):\n"
    "    raise RuntimeError('Error(s) in loading state_dict for checkpoint-2')\n"
)
#: The same as a program the bootstrap cannot run in process (it used to exec it, and nothing saw its exit).
SH_TRAINER = (
    'echo "trainer argv: $*"; case "$*" in *checkpoint-2) echo "cannot load checkpoint-2" >&2; exit 3;; esac'
)


def _pod(tmp_path: Path, trainer: list[str], attempt: str = RUN) -> subprocess.CompletedProcess[str]:
    """One pod of the job: a fresh bootstrap with the pod template's environment."""
    env = {
        **{k: v for k, v in os.environ.items() if k != ATTEMPTS_ENV},
        SETTINGS_ENV: json.dumps(TRL.to_json()),
        RUN_ID_ENV: RUN,
        RUN_ATTEMPT_ENV: attempt,
        HEARTBEAT_ENV: "0.2",
    }
    return subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", *trainer, "--max-steps", "4"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _argv(result: subprocess.CompletedProcess[str]) -> str:
    return next(x for x in result.stdout.splitlines() if x.startswith("trainer argv: "))


def _steps(root: Path) -> tuple[Path, Path]:
    return trl_step(root, 1), trl_step(root, 2)


def test_a_pod_retry_run_as_two_bootstraps_continues_from_the_step_before_the_one_the_failed_pod_could_not_load(
    tmp_path: Path,
) -> None:
    """Before: the first pod exited 1 and marked nothing (only the bootstrap's own restart loop and Slurm's marked),
    so every retry under the backoffLimit took checkpoint-2 again and failed the same way, and the Job ended Failed
    with checkpoint-1 never tried. Now the failing pod marks checkpoint-2 and the retry continues from checkpoint-1."""
    root = tmp_path / "ckpt"
    one, two = _steps(root)
    first = _pod(tmp_path, [sys.executable, "-c", PY_TRAINER])
    assert first.returncode == 1, first.stderr
    assert json.loads(_argv(first).removeprefix("trainer argv: "))[-1] == str(two)
    reason = "the first start resumed from it and exited with 1 before committing a later step"
    assert f"step 2 ({two}) is marked bad, never chosen again: {reason}" in first.stderr
    assert "RuntimeError: Error(s) in loading state_dict" in first.stderr  # the training's own error is kept
    assert [(m["step"], m["path"], m["reason"], m["attempt"]) for m in read_bad(root)] == [
        (2, "checkpoint-2", reason, RUN)
    ]
    retry = _pod(tmp_path, [sys.executable, "-c", PY_TRAINER])
    assert retry.returncode == 0, retry.stderr
    assert f"a restart of {RUN}" in retry.stderr
    assert json.loads(_argv(retry).removeprefix("trainer argv: "))[-1] == str(one)
    # moved aside, never deleted
    assert [p.name.split(".")[0] for p in (root / ASIDE_DIR).iterdir()] == ["checkpoint-2"]
    assert len(read_bad(root)) == 1


def test_a_pod_retry_of_a_trainer_the_bootstrap_cannot_run_in_process_sees_the_failed_pods_mark(
    tmp_path: Path,
) -> None:
    """The bootstrap used to exec such a trainer, and so never saw its exit: it now runs it as its child, signals
    forwarded, when there is a step to judge, and ends with the trainer's own exit code."""
    root = tmp_path / "ckpt"
    one, two = _steps(root)
    first = _pod(tmp_path, ["sh", "-c", SH_TRAINER, "trainer"])
    assert first.returncode == 3, first.stderr
    assert _argv(first).endswith(str(two))
    assert f"step 2 ({two}) is marked bad" in first.stderr and [m["step"] for m in read_bad(root)] == [2]
    retry = _pod(tmp_path, ["sh", "-c", SH_TRAINER, "trainer"])
    assert retry.returncode == 0, retry.stderr
    assert _argv(retry).endswith(str(one))
    # the second pod judged its own start too: a retry that loaded its step and succeeded marks nothing more
    assert [m["step"] for m in read_bad(root)] == [2]


def test_a_pod_killed_after_loading_marks_nothing(tmp_path: Path) -> None:
    """A signal (an OOM kill, a preemption, a node lost) says nothing about the step the pod loaded."""
    root = tmp_path / "ckpt"
    _steps(root)
    killed = _pod(tmp_path, ["sh", "-c", 'echo "trainer argv: $*"; kill -9 $$', "trainer"])
    assert killed.returncode == 137, killed.stderr
    assert "marked bad" not in killed.stderr and read_bad(root) == []


def test_a_pod_that_fails_after_committing_a_later_step_marks_nothing(tmp_path: Path) -> None:
    """It loaded checkpoint-2 and went on to commit checkpoint-3: whatever failed afterwards, the step loaded."""
    root = tmp_path / "ckpt"
    _steps(root)
    trainer = (
        "import json, shutil, sys; shutil.copytree('ckpt/checkpoint-2', 'ckpt/checkpoint-3'); "
        "open('ckpt/checkpoint-3/trainer_state.json', 'w').write(json.dumps({'global_step': 3, 'log_history': []})); "
        "print('trainer argv: ' + ' '.join(sys.argv[1:]), flush=True); sys.exit(1)"
    )
    failed = _pod(tmp_path, [sys.executable, "-c", trainer])
    assert failed.returncode == 1, failed.stderr
    assert "marked bad" not in failed.stderr and read_bad(root) == []


def test_a_resume_that_fails_to_load_its_step_marks_it_for_the_next_resume(tmp_path: Path) -> None:
    """`rladapt resume` starts a new attempt of the run (a job of its own, without restarts here): when it fails to
    load the step it resumed from, the next `rladapt resume` continues from the complete step before it."""
    root = tmp_path / "ckpt"
    one, _ = _steps(root)
    failed = _pod(tmp_path, [sys.executable, "-c", PY_TRAINER], attempt=f"{RUN}-a1")
    assert failed.returncode == 1, failed.stderr
    assert [(m["step"], m["attempt"]) for m in read_bad(root)] == [(2, f"{RUN}-a1")]
    again = _pod(tmp_path, [sys.executable, "-c", PY_TRAINER], attempt=f"{RUN}-a2")
    assert again.returncode == 0, again.stderr
    assert json.loads(_argv(again).removeprefix("trainer argv: "))[-1] == str(one)
