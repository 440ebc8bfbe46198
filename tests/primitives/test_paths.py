"""The local paths a job reads (``rladapt.primitives.paths``) and ``rladapt validate`` refusing missing ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rladapt.primitives import job_inputs, load_job, missing_inputs
from tests.cli.test_cli import rladapt
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"


def test_the_tiny_example_reads_its_interpreter_model_data_and_reward() -> None:
    job = load_job(EXAMPLE, [])
    inputs = {i.field: (i.path, i.kind) for i in job_inputs(job, REPO)}
    assert inputs == {
        "spec.runtime.python": (".venv/bin/python", "interpreter"),
        "spec.model.path": ("examples/tiny/model", "model"),
        "spec.data.train[0]": ("examples/tiny/prompts.jsonl", "data"),
        "spec.reward.function.path": ("examples/tiny/reward.py", "file"),
    }


@pytest.mark.parametrize(
    ("override", "local"),
    [
        ("spec.model.path=Qwen/Qwen2.5-0.5B-Instruct", False),  # a Hub id
        ("spec.model.path=gpt2", False),  # a Hub id without namespace
        ("spec.model.path=s3://bucket/model", False),
        ("spec.model.path=hf://Qwen/Qwen2.5-0.5B", False),
        ("spec.model.path=examples/tiny/modell", True),  # two slashes: never a Hub id
        ("spec.model.path=./modell", True),
        ("spec.model.path=/abs/model", True),
        ("spec.model.path=examples/tiny", True),  # could be a Hub id, but it is a directory here
    ],
)
def test_hub_ids_and_urls_are_not_local_paths(override: str, local: bool) -> None:
    job = load_job(EXAMPLE, [override])
    fields = {i.field for i in job_inputs(job, REPO)}
    assert ("spec.model.path" in fields) is local


def test_a_data_file_name_is_local_even_where_it_could_be_a_hub_id() -> None:
    job = load_job(EXAMPLE, ["spec.data.train=[data/train.parquet,openai/gsm8k]"])
    fields = {i.field: i.path for i in job_inputs(job, REPO)}
    assert fields["spec.data.train[0]"] == "data/train.parquet"
    assert "spec.data.train[1]" not in fields


def test_a_bare_interpreter_name_is_looked_up_on_path_not_checked() -> None:
    job = load_job(EXAMPLE, ["spec.runtime.python=python3"])
    assert "spec.runtime.python" not in {i.field for i in job_inputs(job, REPO)}


def test_missing_inputs_names_field_path_and_what_was_expected(tmp_path: Path) -> None:
    (tmp_path / "reward.py").mkdir()  # a directory where a file is read
    (tmp_path / "python").write_text("")  # not executable
    job = load_job(
        EXAMPLE,
        ["spec.model.path=./nope", "spec.reward.function.path=reward.py", "spec.runtime.python=./python"],
    )
    problems = {p.path: str(p) for p in missing_inputs(job_inputs(job, tmp_path), tmp_path)}
    assert problems["spec.model.path"] == (
        "spec.model.path: no such file or directory (relative to the job's working directory); expected a model "
        "directory, or a Hugging Face Hub id (org/name), found './nope'"
    )
    assert "not a file" in problems["spec.reward.function.path"]
    assert "not an executable file" in problems["spec.runtime.python"]
    assert "spec.data.train[0]" in problems


def test_validate_refuses_a_misspelt_model_directory_with_exit_2() -> None:
    res = rladapt("validate", str(EXAMPLE), "spec.model.path=examples/tiny/modell", cwd=REPO)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert "spec.model.path: no such file or directory" in res.stderr
    assert "found 'examples/tiny/modell'" in res.stderr


def test_validate_refuses_a_missing_reward_file_and_skips_the_check_on_request() -> None:
    args = ("validate", str(EXAMPLE), "spec.reward.function.path=examples/tiny/rewards.py")
    res = rladapt(*args, cwd=REPO)
    assert res.returncode == 2
    assert "spec.reward.function.path: no such file or directory" in res.stderr
    assert "found 'examples/tiny/rewards.py'" in res.stderr
    assert rladapt(*args, "--no-path-check", cwd=REPO).returncode == 0


def test_validate_resolves_relative_paths_in_the_working_directory(tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["runtime"] = {"python": "/bin/sh", "working_dir": str(REPO)}
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(data))
    res = rladapt("validate", str(spec), cwd=tmp_path)  # the files are in the working dir, not in cwd
    assert res.returncode == 0, res.stderr
