"""``rladapt pool`` end to end in a subprocess-free CLI call: exit codes, JSON, publishing from a recorded run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rladapt.plugins import Artifacts
from rladapt.runs import CheckpointFacts, RunStore, spec_hash
from tests.adapters.checkpoint_builders import trl_step
from tests.cli.test_help import cli_run

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny" / "model"


def rladapt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process with main()'s exit-code policy: (exit code, stdout, stderr)."""
    return cli_run(*args, capsys=capsys)


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RLADAPT_POOL", str(tmp_path / "pool"))
    return tmp_path / "pool"


def a_trl_run(tmp_path: Path) -> str:
    """A recorded TRL run whose checkpoint directory holds steps 2 and 4 as transformers' Trainer writes them,
    and a step 6 cut short (no trainer_state.json)."""
    ckpt = tmp_path / "ckpt"
    for step in (2, 4, 6):
        step_dir = trl_step(ckpt, step)
        shutil.copy(TINY / "tokenizer.json", step_dir / "tokenizer.json")
    (ckpt / "checkpoint-6" / "trainer_state.json").unlink()
    RunStore().create(
        run_id="grpo-00000001", launcher="local", framework="trl", version="1.16.0", job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=Artifacts(launcher="local", files={"run.sh": "true\n"}),
        checkpoint=CheckpointFacts(dir=str(ckpt)),
    )  # fmt: skip
    return "grpo-00000001"


def test_publish_a_run_takes_its_newest_complete_step_once(
    pool: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = a_trl_run(tmp_path)
    code, out, err = rladapt(capsys, "pool", "publish", run, "--format", "json")
    assert code == 0, err
    published = json.loads(out)
    assert (published["version"], published["new"]) == ("v00000001", True)
    assert published["source"]["run_id"] == run and published["source"]["step"] == 4
    assert published["source"]["framework"] == "trl" and published["source"]["spec_hash"] == spec_hash("spec")
    assert sorted(published["files"]) == ["config.json", "model.safetensors", "tokenizer.json"]
    code, out, err = rladapt(capsys, "pool", "publish", run)
    assert (code, out.strip()) == (0, "already published as v00000001"), err
    code, out, err = rladapt(capsys, "pool", "publish", run, "--step", "2", "--alias", "candidate")
    assert (code, out.strip()) == (0, "published v00000002 (alias candidate)"), err
    code, out, err = rladapt(capsys, "pool", "publish", run, "--step", "6")
    assert (
        code == 2 and "step 6 of run grpo-00000001 is not complete" in err and "complete steps: 2, 4" in err
    )
    code, out, err = rladapt(capsys, "pool", "list")
    assert out.splitlines()[1].endswith("run grpo-00000001 step 2  [candidate]"), out


def test_verify_exits_1_naming_the_damaged_file(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = rladapt(capsys, "pool", "publish", str(TINY))
    assert (code, out.strip()) == (0, "published v00000001"), err
    (pool / "versions" / "v00000001" / "tokenizer.json").write_text("{}")
    code, out, err = rladapt(capsys, "pool", "verify", "1", "--format", "json")
    assert code == 1
    assert json.loads(out)["problems"][0].startswith("tokenizer.json: ")


def test_alias_compare_and_swap_loses_with_exit_1(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rladapt(capsys, "pool", "publish", str(TINY))
    rladapt(capsys, "pool", "publish", str(TINY))  # no run, no step: a second, distinct version
    assert rladapt(capsys, "pool", "alias", "serving", "1")[0] == 0
    code, _, err = rladapt(capsys, "pool", "alias", "serving", "2", "--if-current", "2")
    assert code == 1 and "alias 'serving' names v00000001, not v00000002" in err
    assert (
        rladapt(capsys, "pool", "alias", "serving", "2", "--if-current", "1")[1].strip()
        == "serving -> v00000002"
    )
    assert rladapt(capsys, "pool", "rollback", "serving")[1].strip() == "serving -> v00000001"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("pool", "list", "--store", ""), "no pool given"),
        (("pool", "show", "7"), "has no version v00000007"),
        (("pool", "alias", "serving", "nope"), "has no alias 'nope'"),
        (("pool", "gc", "--keep-last", "0"), "--keep-last must be at least 1"),
        (("pool", "lease", "1", "--holder", "x y", "--ttl", "5"), "lease holder 'x y'"),
        (("pool", "publish", "no/such/dir"), "no directory 'no/such/dir'"),
        (("pool", "publish", "nosuchrun"), "no run"),
    ],
)
def test_mistakes_exit_2_naming_what_is_wrong(
    pool: Path, args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rladapt(capsys, "pool", "publish", str(TINY))
    code, _, err = rladapt(capsys, *args)
    assert code == 2 and message in err, err
    assert "Traceback" not in err


def test_gc_dry_run_then_for_real(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(3):
        rladapt(capsys, "pool", "publish", str(TINY))
    rladapt(capsys, "pool", "lease", "1", "--holder", "evaluator", "--ttl", "600")
    code, out, _ = rladapt(capsys, "pool", "gc", "--keep-last", "1", "--dry-run")
    assert code == 0 and "would delete v00000002" in out and "kept v00000001: leased by evaluator" in out
    code, out, _ = rladapt(capsys, "pool", "gc", "--keep-last", "1", "--format", "json")
    assert json.loads(out)["deleted"] == ["v00000002"]
    assert sorted(p.name for p in (pool / "versions").iterdir()) == ["v00000001", "v00000003"]


def test_publish_a_verl_run_without_hf_weights_says_which_setting_writes_them(
    pool: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.adapters.checkpoint_builders import verl_step

    verl_step(tmp_path / "ckpt", 10)
    RunStore().create(
        run_id="verl-00000001", launcher="local", framework="verl", version="0.9.1", job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=Artifacts(launcher="local", files={"run.sh": "true\n"}),
        checkpoint=CheckpointFacts(dir=str(tmp_path / "ckpt")),
    )  # fmt: skip
    code, _, err = rladapt(capsys, "pool", "publish", "verl-00000001")
    assert code == 2, err
    assert "verl 0.9.1 saved step 10 without Hugging Face weights" in err and "save_contents" in err
    assert not (pool / "versions").exists()


def test_status_shows_what_the_run_published_and_which_alias_names_it(
    pool: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = a_trl_run(tmp_path)
    assert rladapt(capsys, "pool", "publish", run, "--step", "2")[0] == 0
    assert rladapt(capsys, "pool", "publish", run, "--alias", "serving")[0] == 0
    code, out, err = rladapt(capsys, "status", run)
    assert code == 0, err
    assert "pool:      v00000002 (step 4) [serving], v00000001 (step 2)" in out.splitlines()
    code, out, err = rladapt(capsys, "status", run, "--format", "json")
    assert json.loads(out)["pool"] == [
        {"version": "v00000001", "step": 2, "aliases": []},
        {"version": "v00000002", "step": 4, "aliases": ["serving"]},
    ]
