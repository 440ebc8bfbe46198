"""``rladapt certify``: a real TRL job (the tiny model of ``examples/``, CPU torch, TRL 1.16.0) run uninterrupted,
then SIGKILLed once a checkpoint is complete and at a random moment, resumed and compared; the checks themselves
on traces that differ the way a wrong resume makes them differ; and the refusals, before anything runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rladapt.adapters.trl.driver import prompt_hash, traced_reward
from rladapt.adapters.trl.resumes import trace
from rladapt.certify import Check, compare
from rladapt.plugins import ResumeTrace
from rladapt.runs import RunStore
from tests.cli.test_checkpoints_cli import cli

REPO = Path(__file__).resolve().parents[1]
SPEC = "examples/grpo-tiny-trl.yaml"
SMALL = [
    "spec.training.steps=4",
    "spec.checkpoint.every_steps=2",
    "spec.checkpoint.keep_last=3",
    f"spec.runtime.python={sys.executable}",
]


def test_a_trl_job_killed_and_resumed_is_certified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    work = tmp_path / "work"
    code, out, err = cli(
        "certify",
        "-f",
        "trl==1.16.0",
        "--workdir",
        str(work),
        "--format",
        "json",
        SPEC,
        *SMALL,
        capsys=capsys,
    )
    assert code == 0, out + err
    cert = json.loads(out)
    assert cert["certified"] is True and cert["framework"] == "trl" and cert["version"] == "1.16.0"
    names = [c["name"] for c in cert["checks"]]
    for label in ("killed-at-checkpoint", "killed-at-random"):
        assert f"{label}: killed and resumed" in names
        assert f"{label}: samples consumed per step (no prompt skipped or repeated)" in names
        assert f"{label}: final weights" in names
    at_checkpoint = cert["interrupted_runs"][0]
    assert at_checkpoint["killed"] and at_checkpoint["resumed_from"] == 2
    # what was compared is on disk: 4 steps of 2 prompts each, the same in every run, and the final weights
    runs = [work / "uninterrupted", work / "killed-at-checkpoint", work / "killed-at-random"]
    traces = [trace(ck, "1.16.0") for ck in runs]
    assert sorted(traces[0].samples) == [1, 2, 3, 4] and all(len(p) == 2 for p in traces[0].samples.values())
    assert traces[0].samples == traces[1].samples == traces[2].samples
    assert traces[0].weights is not None and traces[0].weights == traces[1].weights == traces[2].weights
    # the killed run logged its steps before the kill under another start than after the resume
    starts = {
        json.loads(line)["start"] for line in (runs[1] / "rladapt-samples.jsonl").read_text().splitlines()
    }
    assert len(starts) == 2
    # the three runs are recorded runs, the killed ones with their resume as a second attempt
    store = RunStore()
    assert store.get(cert["uninterrupted_run"]).record.state == "SUCCEEDED"
    killed = store.get(at_checkpoint["run_id"]).record
    assert [a.kind for a in killed.attempts] == ["launch", "resume"]


BASE = ResumeTrace(
    metrics={
        1: {"loss": 0.5, "reward": 0.1},
        2: {"loss": 0.4, "reward": 0.2},
        3: {"loss": 0.3, "reward": 0.3},
    },
    samples={1: ("a", "b"), 2: ("c", "d"), 3: ("e", "f")},
    weights="w1",
    weights_from="checkpoint-3/model.safetensors",
)


def _failed(checks: list[Check]) -> list[str]:
    return [c.name for c in checks if not c.passed]


def test_the_same_trace_passes_every_check() -> None:
    assert _failed(compare("r", BASE, BASE)) == []


def test_a_prompt_trained_again_after_the_resume_fails_the_samples_check() -> None:
    repeated = ResumeTrace(
        BASE.metrics, {1: ("a", "b"), 2: ("c", "d"), 3: ("c", "d")}, "w1", BASE.weights_from
    )
    checks = compare("r", BASE, repeated)
    assert _failed(checks) == ["r: samples consumed per step (no prompt skipped or repeated)"]
    [samples] = [c for c in checks if not c.passed]
    assert samples.found == 'step 3: ["c", "d"] (2 prompt(s) already trained at an earlier step)'
    assert samples.expected.endswith('step 3: ["e", "f"]')


def test_other_metrics_a_missing_step_and_other_weights_fail_their_checks() -> None:
    other = ResumeTrace(
        {1: BASE.metrics[1], 2: {"loss": 0.41, "reward": 0.2}}, BASE.samples, "w2", BASE.weights_from
    )
    assert _failed(compare("r", BASE, other)) == [
        "r: the same steps logged",
        "r: per-step metrics (equal)",
        "r: final weights",
    ]
    # within a relative tolerance, other metrics pass
    close = ResumeTrace({**BASE.metrics, 2: {"loss": 0.40000001, "reward": 0.2}}, BASE.samples, "w1")
    assert _failed(compare("r", BASE, close, rtol=1e-6)) == []


def test_a_run_that_logged_no_samples_cannot_be_certified() -> None:
    bare = ResumeTrace(BASE.metrics, {}, "w1")
    assert "r: samples consumed per step" in _failed(compare("r", bare, bare))


def test_the_traced_reward_logs_each_prompt_once_per_group_with_the_step_it_trains(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    steps = iter([0, 1])

    def share(prompts: list[str], completions: list[str], **_: object) -> list[float]:
        return [1.0] * len(completions)

    traced = traced_reward(share, path, lambda: next(steps), group=2, rank=0)
    assert traced.__name__ == "share"  # TRL names the reward's metrics after it
    assert traced(prompts=["p", "p", "q", "q"], completions=["x"] * 4) == [1.0] * 4
    traced(prompts=["r", "r", "s", "s"], completions=["x"] * 4)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["step"], r["prompts"]) for r in rows] == [
        (1, [prompt_hash("p"), prompt_hash("q")]),
        (2, [prompt_hash("r"), prompt_hash("s")]),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-f", "verl==0.9.1", "examples/grpo-gsm8k.yaml"],
            "cannot certify verl runs here: verl needs a GPU",
        ),
        (["-f", "nemo-rl", "examples/grpo-math-nemo-rl.yaml"], "cannot certify nemo-rl runs here"),
        (["-f", "openrlhf", "examples/ppo-critic-rm.yaml"], "cannot certify openrlhf runs here"),
        (
            ["-f", "trl==1.16.0", SPEC, "spec.training.steps=4", "spec.checkpoint.every_steps=4"],
            "expected every_steps < training.steps; found every_steps=4, steps=4",
        ),
        (["-f", "trl==1.16.0", "examples/no-such.yaml"], "no-such.yaml"),
    ],
)
def test_what_cannot_be_certified_is_exit_2_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(REPO)
    code, out, err = cli("certify", "--workdir", str(tmp_path / "w"), *args, capsys=capsys)
    assert code == 2 and message in err and "Traceback" not in err and out == ""
    assert RunStore().list() == []


def test_a_trl_run_resumed_at_its_last_step_trains_no_step_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the certificate found: a run killed after its last checkpoint and resumed trained step max_steps + 1
    (transformers' loop checks the end only after a step), logged it and wrote checkpoint-<max_steps + 1>."""
    from rladapt.launch import Runner

    monkeypatch.chdir(REPO)
    ck = tmp_path / "ck"
    runner = Runner()
    overrides = [
        *SMALL[1:],
        "spec.training.steps=2",
        f"spec.checkpoint.dir={ck}",
        "spec.checkpoint.resume=auto",
    ]
    run = runner.launch(SPEC, overrides, framework="trl==1.16.0")
    assert runner.wait(run, interval=0.2, timeout=600).state == "SUCCEEDED", (
        run.dir / "output.log"
    ).read_text()
    _, chosen = runner.resume(run)  # as after a kill between the last save and the exit
    assert chosen is not None and chosen.step == 2
    assert runner.wait(run, interval=0.2, timeout=600).state == "SUCCEEDED", (
        run.dir / "output.log"
    ).read_text()
    assert "holds step 2 of 2: nothing left to train" in (run.dir / "output.log").read_text()
    assert sorted(p.name for p in ck.glob("checkpoint-*")) == ["checkpoint-2"]
    assert sorted(trace(ck, "1.16.0").samples) == [1, 2]


def test_trained_to_reads_the_step_a_checkpoint_recorded(tmp_path: Path) -> None:
    from rladapt.adapters.trl.driver import trained_to
    from tests.adapters.checkpoint_builders import trl_step

    assert trained_to(str(trl_step(tmp_path, 6))) == 6
    assert trained_to(None) is None and trained_to(str(tmp_path / "missing")) is None
