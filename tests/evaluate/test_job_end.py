"""The evaluator ends by itself once the training job has ended and every version it left is measured, with no
known last step (a run counted in epochs): the job's end marker is its owner file in the checkpoint directory,
which the real bootstrap holds (``tests.launchers.owner_job``). The marker itself: this attempt's end, not another
attempt's or run's; an end that a restart of the attempt undoes does not stand."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rladapt.evaluate import EvalSettings, read_results
from rladapt.pool import Source, VersionStore
from rladapt.primitives.spec import ContinuousEval
from rladapt.runs.owner import OWNER_FILE, ended_for_good, job_ended, take
from tests.conftest import REPO
from tests.launchers.owner_job import ATTEMPT, CHECKPOINT_DIR, RUN, end_job, job_env, start_job


def test_the_end_marker_is_this_attempts_end_and_stands_unless_a_restart_takes_the_directory_again(
    tmp_path: Path,
) -> None:
    root, go = tmp_path / CHECKPOINT_DIR, tmp_path / "go"
    assert job_ended(root, RUN, ATTEMPT) is None  # not started yet: no owner file
    job = start_job(tmp_path, go, code=3)
    assert job_ended(root, RUN, ATTEMPT) is None  # it runs
    assert end_job(job, tmp_path, go) == 3
    seen = job_ended(root, RUN, ATTEMPT)
    assert seen is not None and seen.ended is not None
    assert job_ended(root, RUN) is not None  # any attempt of the run
    assert job_ended(root, RUN, f"{RUN}-a1") is None  # a resume's attempt that has not started yet
    assert job_ended(root, "other-0a1b2c3d") is None  # another run, still to take the directory
    assert ended_for_good(root, seen, sleep=lambda _: None)

    # a restart of the attempt (the job script's loop, a requeue) takes the directory again meanwhile
    restarted: list[subprocess.Popen[bytes]] = []
    go2 = tmp_path / "go2"
    assert not ended_for_good(root, seen, sleep=lambda _: restarted.append(start_job(tmp_path, go2)))
    assert job_ended(root, RUN, ATTEMPT) is None
    end_job(restarted[0], tmp_path, go2)
    again = job_ended(root, RUN, ATTEMPT)
    assert again is not None and again.token != seen.token

    # a resume (another attempt) or another run took it over: this attempt's end stands
    moved = tmp_path / "moved"
    moved.mkdir()
    end_job(start_job(moved, moved / "go", attempt=f"{RUN}-a1"), moved, moved / "go")

    def resumed(_: float) -> None:
        (root / OWNER_FILE).write_bytes((moved / CHECKPOINT_DIR / OWNER_FILE).read_bytes())

    assert ended_for_good(root, again, sleep=resumed)


def test_a_job_killed_with_its_heartbeat_has_ended_once_the_heartbeat_is_stale(tmp_path: Path) -> None:
    root = tmp_path / CHECKPOINT_DIR
    mine, _ = take(root, RUN, ATTEMPT)  # held, and no heartbeat process: as after a SIGKILL of both
    assert job_ended(root, RUN, ATTEMPT) is None
    later = time.time() + 5 * mine.interval
    stale = job_ended(root, RUN, ATTEMPT, now=later)
    assert stale is not None and stale.ended is None
    assert stale.token == mine.token


SUITE = ContinuousEval.model_validate(
    {
        "follow": "pool",
        "suites": [
            {
                "name": "share-of-a",
                "data": [str(REPO / "examples/tiny/val.jsonl")],
                "scorer": {"function": {"path": str(REPO / "examples/tiny/reward.py"), "name": "share_of_a"}},
                "generation": {"max_new_tokens": 4, "temperature": 0.0},
            }
        ],
    }
)


def test_the_evaluator_of_a_run_without_a_known_last_step_exits_once_the_job_ended_and_all_is_measured(
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch", reason="the evaluator loads the weights with torch")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors.torch")
    from tests.pool.test_serve import weights_of

    store = VersionStore(tmp_path / "pool")
    store.publish(weights_of(11, tmp_path / "w2"), source=Source(run_id=RUN, step=2, framework="trl"))
    go = tmp_path / "go"
    job = start_job(tmp_path, go)
    # no final_step: the run counts epochs, its last step is not known before it ends
    settings = EvalSettings(SUITE, CHECKPOINT_DIR, store=str(store.root), final_step=None)
    evaluator = subprocess.Popen(
        [sys.executable, "-m", "rladapt.evaluate", "--settings", settings.text(), "--interval", "0.2"],
        cwd=tmp_path, env=job_env(), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    results = tmp_path / CHECKPOINT_DIR / "rladapt-eval"
    try:
        deadline = time.monotonic() + 300
        while not (results / "v00000001" / "share-of-a.json").exists():
            assert evaluator.poll() is None, evaluator.communicate()[1]
            assert time.monotonic() < deadline, "the first version was not measured"
            time.sleep(0.1)
        assert evaluator.poll() is None  # the job runs: the evaluator follows it
        # the last version is published as the training ends (the bootstrap's last publishing pass), then the end
        store.publish(weights_of(22, tmp_path / "w4"), source=Source(run_id=RUN, step=4, framework="trl"))
        assert end_job(job, tmp_path, go) == 0
        _, err = evaluator.communicate(timeout=300)
    finally:
        for proc in (job, evaluator):
            if proc.poll() is None:
                proc.kill()
    assert evaluator.returncode == 0, err
    assert "the training ended (it exited) and every version it left is measured: done" in err, err
    found, warnings = read_results(results, RUN)
    assert warnings == [] and sorted((r.version, r.step) for r in found) == [
        ("v00000001", 2),
        ("v00000002", 4),
    ]
