"""The frameworks' own "not found" failures, each triaged on the output the real code prints here.

A model path that is no directory (transformers and huggingface_hub take it for a Hub id), a model directory
without weights, and a job interpreter that does not exist (dash, which runs a Ray entrypoint, and bash, which
runs the local and Slurm scripts).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.triage import triage
from rladapt.triage.catalogue import BUILTIN
from tests.conftest import REPO

TINY_MODEL = REPO / "examples" / "tiny" / "model"


def matched(output: str) -> list[str]:
    return [m.signature for m in triage(output.splitlines(), BUILTIN, "trl", None)]


def load(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_misspelt_model_directory_is_the_hub_id_refusal(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the trl extra (the dev extra installs it)")
    res = load(
        "from transformers import AutoTokenizer; AutoTokenizer.from_pretrained('examples/tiny/modell')",
        tmp_path,
    )
    assert res.returncode == 1
    assert matched(res.stderr) == ["model-path-not-found"]


def test_a_model_directory_without_weights(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the trl extra (the dev extra installs it)")
    model = tmp_path / "model"
    model.mkdir()
    for path in TINY_MODEL.glob("*.json"):  # what a working-dir upload excluding *.safetensors leaves
        shutil.copy(path, model / path.name)
    res = load(
        "from transformers import AutoModelForCausalLM; AutoModelForCausalLM.from_pretrained('model')",
        tmp_path,
    )
    assert res.returncode == 1
    assert "model.safetensors" in res.stderr
    assert matched(res.stderr) == ["model-weights-missing"]


@pytest.mark.parametrize("shell", ["/bin/sh", "bash"])
def test_a_missing_relative_interpreter_exits_127(shell: str, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    res = subprocess.run(
        [shell, "-c", ".venv/bin/python -m rladapt.bootstrap -- python3 -c pass"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 127
    found = triage(res.stderr.splitlines(), BUILTIN, "trl", None)
    assert [m.signature for m in found] == ["interpreter-not-found"]
    assert "spec.runtime.python" in found[0].cause


def test_an_unrelated_missing_file_is_not_the_interpreter() -> None:
    log = "cat: data/x.jsonl: No such file or directory\nFileNotFoundError: [Errno 2] No such file: 'python.txt'\n"
    assert matched(log) == []


def test_a_missing_data_file_is_the_datasets_refusal(tmp_path: Path) -> None:
    """datasets' own message for a data file that is not there (how the frameworks read their data files)."""
    pytest.importorskip("datasets", reason="the trl extra (the dev extra installs it)")
    res = load(
        "import datasets; datasets.load_dataset('json', data_files=['data/trainn.jsonl'], split='train')",
        tmp_path,
    )
    assert res.returncode == 1
    assert "Unable to find" in res.stderr
    assert matched(res.stderr) == ["data-file-not-found"]


def test_the_trl_driver_s_missing_data_file(tmp_path: Path) -> None:
    """The TRL driver's own check, run as the launchers run it (its rendered argv and config) on a data file
    removed after the launch was checked."""
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    from rladapt.pipeline import render_native
    from rladapt.plugins import load_registry
    from rladapt.primitives import load_job

    tiny = REPO / "examples" / "tiny"
    job = load_job(
        REPO / "examples" / "grpo-tiny-trl.yaml",
        [f"spec.model.path={tiny / 'model'}", f"spec.data.train=[{tmp_path / 'gone.jsonl'}]",
         f"spec.reward.function.path={tiny / 'reward.py'}", f"spec.checkpoint.dir={tmp_path / 'ck'}",
         f"spec.runtime.python={sys.executable}"],
    )  # fmt: skip
    native = render_native(job, "trl", load_registry()).native
    for rel, text in native.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's driver
    res = subprocess.run(
        list(native.argv), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 2, res.stderr[-2000:]
    assert matched(res.stderr) == ["data-file-not-found"]
