"""``rladapt checkpoints`` and ``rladapt resume``: output formats, exit codes, and the refusals, through main().

The checkpoint directories are built with the file names verl writes (see
``tests/adapters/test_checkpoint_layouts.py``); the runs are records in the run store, as ``launch`` leaves them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rladapt.launch import Runner, checkpoint_facts
from rladapt.plugins import Artifacts, RunStatus
from rladapt.runs import CheckpointFacts, RunStore, spec_hash
from tests.adapters.test_checkpoint_layouts import verl_step

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from rladapt.cli import main as cli_main

    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def ended_run(run_id: str, *, framework: str, version: str, spec: str, checkpoint: dict[str, Any]) -> str:
    store = RunStore()
    run = store.create(
        run_id=run_id, launcher="local", framework=framework, version=version, job_name="job",
        spec_hash=spec_hash("x"), artifacts=Artifacts(launcher="local"), spec_path=spec,
        checkpoint=CheckpointFacts.model_validate(checkpoint),
    )  # fmt: skip
    run.save_status(RunStatus("FAILED", 1, "exited with code 1"))
    return run.id


def test_json_is_exactly_the_documented_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl_step(tmp_path, 2)
    partial = verl_step(tmp_path, 4, marker=False)
    code, out, err = cli("checkpoints", str(tmp_path), "-f", "verl==0.9.1", "--format", "json", capsys=capsys)
    assert code == 0, err
    assert json.loads(out) == {
        "checkpoints": [
            {"step": 2, "path": str(tmp_path / "global_step_2"), "complete": True, "reason": None},
            {
                "step": 4,
                "path": str(partial),
                "complete": False,
                "reason": "not committed: latest_checkpointed_iteration.txt names step 2",
            },
        ],
        "resume_from": {"step": 2, "path": str(tmp_path / "global_step_2")},
    }


def test_text_lists_each_step_with_its_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    step = verl_step(tmp_path, 3)
    (step / "data.pt").unlink()
    code, out, _ = cli("checkpoints", str(tmp_path), "-f", "verl==0.5.0", capsys=capsys)
    assert code == 0
    assert "step 3        partial: missing data.pt  (global_step_3)" in out
    assert out.rstrip().endswith("resume from: nothing (a resume starts fresh)")
    code, out, _ = cli("checkpoints", str(tmp_path / "empty"), "-f", "verl", capsys=capsys)
    assert code == 2  # not a directory, and not a run id either


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["DIR"], "is a directory: say which framework wrote it, e.g. -f verl==0.9.1"),
        (["DIR", "-f", "verl==9.9"], "verl==9.9 is outside the compatibility matrix"),
        (["DIR", "-f", "nosuch"], "nosuch"),
        (["DIR", "-f", "verl", "--format", "yaml"], "'yaml' is not one of 'text', 'json'"),
        (["no-such-run"], "no run 'no-such-run'"),
        (["./missing/dir"], "no directory './missing/dir'"),
    ],
)
def test_bad_input_is_exit_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    given = [str(tmp_path) if a == "DIR" else a for a in args]
    code, out, err = cli("checkpoints", *given, capsys=capsys)
    assert code == 2 and message in err and "Traceback" not in err and out == ""


def test_a_run_is_scanned_with_its_recorded_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verl_step(tmp_path, 6)
    run_id = ended_run(
        "job-00000001", framework="verl", version="0.9.1", spec=str(REPO / "examples" / "grpo-gsm8k.yaml"),
        checkpoint={"dir": str(tmp_path), "model": "Qwen/Qwen2.5-3B-Instruct", "world_size": 8},
    )  # fmt: skip
    code, out, _ = cli("checkpoints", run_id, "--format", "json", capsys=capsys)
    assert code == 0 and json.loads(out)["resume_from"] == {
        "step": 6,
        "path": str(tmp_path / "global_step_6"),
    }


def test_resume_refuses_another_model_and_another_world_size_for_verl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    spec = str(REPO / "examples" / "grpo-gsm8k.yaml")
    run_id = ended_run(
        "job-00000002", framework="verl", version="0.9.1", spec=spec,
        checkpoint={"dir": str(tmp_path), "model": "another/model", "world_size": 3},
    )  # fmt: skip
    code, _, err = cli("resume", run_id, capsys=capsys)
    assert code == 2 and "Traceback" not in err
    assert (
        "spec.model.path is now 'Qwen/Qwen2.5-3B-Instruct', but its checkpoints were written for 'another/model'"
        in err
    )
    assert (
        "the world size is now 8, but the checkpoints were written by 3 processes and verl cannot reshard"
        in err
    )
    assert "(--force to try anyway)" in err


def test_resume_needs_a_complete_step_and_an_ended_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    spec = str(REPO / "examples" / "grpo-gsm8k.yaml")
    facts: dict[str, Any] = {"dir": None, "model": "Qwen/Qwen2.5-3B-Instruct", "world_size": 8}
    # the recorded dir is the one this spec renders to, from here: nothing changed
    facts["dir"] = checkpoint_facts(Runner().dryrun(spec, framework="verl==0.9.1")).dir
    run_id = ended_run("job-00000003", framework="verl", version="0.9.1", spec=spec, checkpoint=facts)
    code, _, err = cli("resume", run_id, capsys=capsys)
    assert code == 2 and "has no complete checkpoint in" in err
    code, _, err = cli("resume", run_id, "--from-step", "7", capsys=capsys)
    assert code == 2 and "--from-step 7: no such step" in err
    run = RunStore().get(run_id)
    handle = {"pid": 1, "pgid": 1, "start_time": 0, "host": "elsewhere", "log": "output.log"}
    # as if it ran again elsewhere: a terminal state never goes back through the record's own methods
    run.update(lambda record: record.model_copy(update={"state": "RUNNING", "handle": handle}))
    code, _, err = cli("resume", run_id, capsys=capsys)
    assert code == 2 and "only a run that has ended can be resumed" in err


def test_launch_with_resume_never_on_a_directory_with_steps_is_refused_before_anything_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    verl_step(tmp_path, 2)
    spec = str(REPO / "examples" / "grpo-gsm8k.yaml")
    args = [
        "launch",
        "-f",
        "verl==0.9.1",
        spec,
        f"spec.checkpoint.dir={tmp_path}",
        "spec.checkpoint.resume=never",
    ]
    code, out, err = cli(*args, capsys=capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert (
        f"spec.checkpoint.resume is never, but the checkpoint directory {str(tmp_path)!r} already holds steps 2"
        in err
    )
    assert RunStore().list() == []
    step = tmp_path / "global_step_2"
    args = [
        "launch",
        "-f",
        "verl==0.9.1",
        spec,
        f"spec.checkpoint.dir={tmp_path}",
        "spec.checkpoint.resume=path",
    ]
    (step / "data.pt").unlink()
    code, _, err = cli(*args, f"spec.checkpoint.resume_path={step}", capsys=capsys)
    assert code == 2 and "is a partial checkpoint: missing data.pt" in err
    assert RunStore().list() == []


def test_launch_and_resume_into_a_directory_another_run_holds_are_exit_2_naming_the_holder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rladapt.runs.owner import take

    monkeypatch.chdir(REPO)
    verl_step(tmp_path, 2)
    holder, _ = take(tmp_path, "other-run-99999999", "other-run-99999999")  # a job of that run, still beating
    spec = str(REPO / "examples" / "grpo-gsm8k.yaml")
    code, out, err = cli(
        "launch", "-f", "verl==0.9.1", spec, f"spec.checkpoint.dir={tmp_path}", capsys=capsys
    )
    assert code == 2 and out == "" and "Traceback" not in err
    for part in ("held by run other-run-99999999", f"pid {holder.pid}", "last heartbeat", "--take-over"):
        assert part in err
    assert RunStore().list() == []
    facts = {"dir": str(tmp_path), "model": "Qwen/Qwen2.5-3B-Instruct", "world_size": 8}
    run_id = ended_run("job-00000004", framework="verl", version="0.9.1", spec=spec, checkpoint=facts)
    code, _, err = cli("resume", run_id, "--force", capsys=capsys)
    assert code == 2 and "held by run other-run-99999999" in err and "Traceback" not in err
    assert len(RunStore().get(run_id).record.attempts) == 1  # nothing submitted


def test_a_step_marked_bad_is_listed_partial_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rladapt.plugins.checkpoints import Checkpoint, mark_bad

    verl_step(tmp_path, 3)
    step = verl_step(tmp_path, 6)
    mark_bad(tmp_path, Checkpoint(6, step, True), "the first start resumed from it and exited with 1")
    code, out, _ = cli("checkpoints", str(tmp_path), "-f", "verl==0.9.1", capsys=capsys)
    assert code == 0
    assert (
        "step 6        partial: failed to load on a start: the first start resumed from it and exited with 1"
        in out
    )
    assert out.rstrip().endswith(f"resume from: step 3 ({tmp_path / 'global_step_3'})")
