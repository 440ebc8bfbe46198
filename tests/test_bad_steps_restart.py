"""A step that failed to load is marked bad on a restart the job script makes itself (Slurm's restart loop).

There each start is a fresh ``python -m rladapt.bootstrap``: the loop tells it which restart it is and the exit code
of the start before it (``RESTART_ENV``, ``PREVIOUS_EXIT_ENV``), and the attempts file says which step that start
resumed from. The checkpoint directory is TRL's real layout (``tests.adapters.checkpoint_builders``); the trainer is
a stand-in that prints the argv the bootstrap hands it (TRL's ``--resume-from`` names the step chosen), because
what is tested is the decision, not TRL's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rladapt.plugins.checkpoints import ASIDE_DIR, read_bad
from rladapt.plugins.job import PREVIOUS_EXIT_ENV, RESTART_ENV, RUN_ATTEMPT_ENV
from rladapt.resume import ATTEMPTS_ENV, SETTINGS_ENV, Settings, read_attempts
from tests.adapters.checkpoint_builders import trl_step

TRL = Settings("trl", "0.29.1", "ckpt")  # max_restarts 0: the Slurm loop restarts, not the bootstrap
TRAINER = (
    "import json, os, sys; print('trainer argv: ' + json.dumps(sys.argv[1:]), flush=True); "
    f"print('trainer sees: ' + json.dumps([os.environ.get(n) for n in {[RESTART_ENV, PREVIOUS_EXIT_ENV]!r}]))"
)


def _previous_start(tmp_path: Path, step: int, restart: int = 0) -> None:
    """The attempts line a start that resumed from ``step`` wrote (``rladapt.resume.record_attempt``)."""
    entry = {
        "started": "2026-01-01T00:00:00Z",
        "from_step": step,
        "path": str(tmp_path / "ckpt" / f"checkpoint-{step}"),
        "restart": restart,
        "max_restarts": 0,
    }
    with (tmp_path / "attempts.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def _start(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    full = {
        **{k: v for k, v in os.environ.items() if k not in (RESTART_ENV, PREVIOUS_EXIT_ENV)},
        SETTINGS_ENV: json.dumps(TRL.to_json()),
        ATTEMPTS_ENV: str(tmp_path / "attempts.jsonl"),
        RUN_ATTEMPT_ENV: "grpo-0a1b2c3d",
        **env,
    }
    result = subprocess.run(
        [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", TRAINER, "--max-steps", "4"],
        cwd=tmp_path, env=full, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("trainer argv: "))
    return result, json.loads(line.removeprefix("trainer argv: "))


def test_a_restart_marks_the_step_the_failed_start_could_not_load_and_resumes_from_the_one_before(
    tmp_path: Path,
) -> None:
    """Before: the restart took checkpoint-2 again (each start is a fresh bootstrap that knew nothing of the last
    one's exit), failed the same way, up to max_restarts. Now it marks checkpoint-2 and resumes from checkpoint-1."""
    root = tmp_path / "ckpt"
    trl_step(root, 1)
    trl_step(root, 2)
    _previous_start(tmp_path, 2)
    result, argv = _start(tmp_path, **{RESTART_ENV: "1", PREVIOUS_EXIT_ENV: "1"})
    assert argv == ["--max-steps", "4", "--resume-from", str(root / "checkpoint-1")]
    reason = "the first start resumed from it and exited with 1 before committing a later step"
    assert f"step 2 ({root / 'checkpoint-2'}) is marked bad, never chosen again: {reason}" in result.stderr
    marks = read_bad(root)
    assert [(m["step"], m["path"], m["reason"], m["attempt"]) for m in marks] == [
        (2, "checkpoint-2", reason, "grpo-0a1b2c3d")
    ]
    # TRL would take the highest checkpoint-N by itself: the marked step is moved aside, never deleted
    assert [p.name.split(".")[0] for p in (root / ASIDE_DIR).iterdir()] == ["checkpoint-2"]
    # this start is recorded as the job's restart 1 (what `rladapt status` shows), from step 1
    assert [(s["restart"], s["from_step"]) for s in read_attempts(tmp_path)] == [(0, 2), (1, 1)]
    # the variables describe this start only: the framework does not see them
    assert "trainer sees: [null, null]" in result.stdout


def test_a_second_restart_names_which_restart_failed(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    trl_step(root, 1)
    trl_step(root, 2)
    trl_step(root, 3)
    _previous_start(tmp_path, 3)  # the first start, killed (a signal) after loading step 3: not marked
    _previous_start(tmp_path, 3, restart=1)
    _, argv = _start(tmp_path, **{RESTART_ENV: "2", PREVIOUS_EXIT_ENV: "2"})
    assert argv[-1] == str(root / "checkpoint-2")
    assert [m["reason"] for m in read_bad(root)] == [
        "restart 1 resumed from it and exited with 2 before committing a later step"
    ]


def test_nothing_is_marked_when_the_previous_start_says_nothing_about_its_step(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    trl_step(root, 1)
    trl_step(root, 2)
    _previous_start(tmp_path, 2)
    # a signal (a kill, an OOM, a preemption) says nothing about the step
    result, argv = _start(tmp_path, **{RESTART_ENV: "1", PREVIOUS_EXIT_ENV: "137"})
    assert argv[-1] == str(root / "checkpoint-2") and read_bad(root) == []
    # a start that failed before it recorded itself (a patch that did not import) loaded no step: the last line
    # is an older start's (restart 1), and its step is not blamed for restart 2's failure
    result, argv = _start(tmp_path, **{RESTART_ENV: "3", PREVIOUS_EXIT_ENV: "1"})
    assert argv[-1] == str(root / "checkpoint-2") and read_bad(root) == [], result.stderr
    # the first start of the job: whatever the environment the job was submitted from holds, nothing to judge
    result, argv = _start(tmp_path, **{PREVIOUS_EXIT_ENV: "1"})
    assert argv[-1] == str(root / "checkpoint-2") and read_bad(root) == []


def test_a_start_that_went_past_its_step_marks_nothing(tmp_path: Path) -> None:
    """It committed checkpoint-3 after resuming from checkpoint-2: the step loaded, whatever failed later."""
    root = tmp_path / "ckpt"
    trl_step(root, 1)
    trl_step(root, 2)
    _previous_start(tmp_path, 2)
    trl_step(root, 3)
    result, argv = _start(tmp_path, **{RESTART_ENV: "1", PREVIOUS_EXIT_ENV: "1"})
    assert argv[-1] == str(root / "checkpoint-3") and read_bad(root) == [], result.stderr


def test_malformed_values_are_ignored_and_said(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    trl_step(root, 1)
    trl_step(root, 2)
    _previous_start(tmp_path, 2)
    result, argv = _start(tmp_path, **{RESTART_ENV: "one", PREVIOUS_EXIT_ENV: "1"})
    assert argv[-1] == str(root / "checkpoint-2") and read_bad(root) == []
    assert f"ignoring ${RESTART_ENV}='one' ${PREVIOUS_EXIT_ENV}='1': expected integers" in result.stderr
