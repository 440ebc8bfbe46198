"""Each framework's ``weight_files`` on checkpoint directories laid out as its pinned versions write them: the model
folder a complete step holds, or the reason it holds none with the setting or converter that makes one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rladapt.plugins import get_registry
from rladapt.plugins.weights import NoWeights
from tests.adapters.checkpoint_builders import deepspeed_tag, nemo_step, trl_step, verl_step

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny" / "model"


def model_into(folder: Path, *, tokenizer: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in TINY.iterdir():
        if tokenizer or not path.name.startswith(("tokenizer", "special_tokens")):
            shutil.copy(path, folder / path.name)


def files_of(framework: str, version: str, root: Path) -> dict[str, Path]:
    adapter = get_registry().framework(framework)
    scan = adapter.scan_checkpoints(root, version)
    assert scan is not None and scan.resume_from is not None, scan
    found = adapter.weight_files(root, scan.resume_from, version)
    assert found is not None
    return dict(found)


def test_trl_checkpoint_is_the_model_folder_without_the_trainer_state(tmp_path: Path) -> None:
    step = trl_step(tmp_path, 4)
    shutil.copy(TINY / "tokenizer.json", step / "tokenizer.json")
    found = files_of("trl", "1.16.0", tmp_path)
    assert sorted(found) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert found["model.safetensors"] == step / "model.safetensors"


@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
def test_verl_needs_hf_model_in_save_contents(tmp_path: Path, version: str) -> None:
    step = verl_step(tmp_path, 10)
    with pytest.raises(
        NoWeights,
        match="set spec.checkpoint.save_hf: true .hf_model in actor_rollout_ref.actor.checkpoint.save_contents",
    ):
        files_of("verl", version, tmp_path)
    model_into(step / "actor" / "huggingface")
    found = files_of("verl", version, tmp_path)
    assert found["model.safetensors"] == step / "actor" / "huggingface" / "model.safetensors"
    assert "tokenizer.json" in found


def test_openrlhf_reads_the_tag_hf_folder_of_save_hf_ckpt(tmp_path: Path) -> None:
    deepspeed_tag(tmp_path, 20)
    with pytest.raises(NoWeights, match="set spec.checkpoint.save_hf: true .--save_hf_ckpt."):
        files_of("openrlhf", "0.9.9", tmp_path)
    model_into(tmp_path / "global_step20_hf")
    found = files_of("openrlhf", "0.9.9", tmp_path)
    assert found["config.json"] == tmp_path / "global_step20_hf" / "config.json"


def test_nemo_rl_takes_the_consolidated_bundle_and_the_tokenizer_beside_it(tmp_path: Path) -> None:
    step = nemo_step(tmp_path, 30)
    with pytest.raises(NoWeights, match="set spec.checkpoint.save_hf: true .checkpointing.save_consolidated"):
        files_of("nemo-rl", "0.7.0", tmp_path)
    model_into(step / "policy" / "weights" / "model" / "consolidated", tokenizer=False)
    model_into(step / "policy" / "tokenizer")
    found = files_of("nemo-rl", "0.7.0", tmp_path)
    assert found["model.safetensors"].parent.name == "consolidated"
    assert found["tokenizer.json"] == step / "policy" / "tokenizer" / "tokenizer.json"
