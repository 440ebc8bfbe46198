"""On the real Ray head (the ``ray_head`` fixture): a TRL job killed inside a checkpoint save comes back by itself.

Ray's Job Submission API has no retry of its own, so the job's bootstrap runs the attempts and restarts a failed
one (``lifecycle.max_restarts: 1``), resuming from the newest complete checkpoint. The kill is the fault injected in
transformers' own save (``tests/support/kill_in_save``); the training is real TRL 1.16.0 on the CPU. The model is
given by absolute path: the Ray upload of the working directory leaves weights out (``*.safetensors``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from rladapt.launch import Runner
from rladapt.plugins.checkpoints import ASIDE_DIR
from rladapt.resume import read_attempts

REPO = Path(__file__).resolve().parents[2]
KILL_IN_SAVE = REPO / "tests" / "support" / "kill_in_save"


def _per_step(ck: Path) -> dict[int, tuple[float, float]]:
    import json

    out = {}
    for line in (ck / "rladapt-metrics.jsonl").read_text().splitlines():
        entry = json.loads(line)
        out[int(entry["step"])] = (float(entry["loss"]), float(entry["reward"]))
    return out


@pytest.mark.xdist_group("ray")
@pytest.mark.engine
def test_on_ray_a_kill_in_a_save_is_restarted_by_the_bootstrap_and_resumes(
    ray_head: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    runner = Runner()
    common = [
        "spec.training.steps=4",
        "spec.checkpoint.every_steps=2",
        "spec.checkpoint.keep_last=3",
        "spec.checkpoint.resume=auto",
        f"spec.model.path={REPO / 'examples' / 'tiny' / 'model'}",
        f"spec.runtime.python={sys.executable}",
    ]
    # the reference: the same job on the local launcher, never interrupted
    plain = tmp_path / "plain"
    reference = runner.launch(
        "examples/grpo-tiny-trl.yaml", [*common, f"spec.checkpoint.dir={plain}"], framework="trl==1.16.0"
    )
    assert runner.wait(reference, interval=0.2, timeout=600).state == "SUCCEEDED"

    ck, mark = tmp_path / "ck", tmp_path / "killed-once"
    run = runner.launch(
        "examples/grpo-tiny-trl.yaml",
        [
            *common,
            f"spec.checkpoint.dir={ck}",
            "spec.lifecycle.max_restarts=1",
            f"spec.env.PYTHONPATH={KILL_IN_SAVE}",
            f"spec.env.RLADAPT_TEST_KILL_MARK={mark}",
            "spec.env.RLADAPT_TEST_KILL_STEP='4'",
        ],
        framework="trl==1.16.0",
        launcher="ray",
        # the test's head runs on this machine: every absolute path the job reads is where the nodes see it
        options={"address": ray_head["address"], "shared": "/"},
    )
    final = runner.wait(run, interval=0.5, timeout=600)
    output = "".join(runner.logs(run))
    assert final.state == "SUCCEEDED", output[-3000:]
    assert mark.exists() and "the attempt exited with 137; restart 1 of 1" in output
    assert "resuming from step 2" in output
    assert [p.name.split(".")[0] for p in (ck / ASIDE_DIR).iterdir()] == ["checkpoint-4"]
    assert _per_step(ck) == _per_step(plain)
    assert (
        read_attempts(run.dir) == []
    )  # on Ray the starts are in the job's log: its file system is the cluster's
