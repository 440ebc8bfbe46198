"""NeMo-RL imports of configs as upstream runs them (issue 22): the run script the checkout runs a config with is
part of the import and of the render; configs the base config cannot be turned into by a plain override (a key
it has that the launch lacks, a block where the launch has a list) round-trip; a launch the default placement's
batch checks would refuse still imports.

The configs are the tag's real ``grpo_math_1B.yaml`` (``tests/adapters/nemo_rl/conftest.py``), copied into a
checkout-shaped folder; the run scripts there hold only the line that names their default config (rladapt reads
them, never runs them) and a test-suite script names the script of a recipe, as upstream's
``tests/test_suites/llm/*.sh`` do.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.adapters.nemo_rl import importer as fw
from rladapt.adapters.nemo_rl.run_script import run_script
from rladapt.importing.importer import Imported, build, differences, launch_effective, read_native
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import UsageError, load_job_text
from tests.adapters.nemo_rl.conftest import tag


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"nemo-rl": "rladapt.adapters.nemo_rl"}, use_entry_points=False)


def _script(root: Path, name: str, config: str) -> None:
    (root / "examples" / name).write_text(
        f'config = os.path.join(os.path.dirname(__file__), "configs", "{config}")\n'
    )


def _checkout(tmp_path: Path, version: str) -> Path:
    """A folder shaped as a checkout of ``version``: its configs, run scripts of 0.5.0, one recipe's suite."""
    root = tmp_path / f"v{version}"
    shutil.copytree(tag(version).root / "examples" / "configs", root / "examples" / "configs")
    _script(root, "run_grpo.py", "grpo_math_1B.yaml")
    _script(root, "run_grpo_math.py", "grpo_math_1B.yaml")
    _script(root, "run_vlm_grpo.py", "vlm_grpo_3B.yaml")
    recipes = root / "examples" / "configs" / "recipes" / "llm"
    recipes.mkdir(parents=True)
    (recipes / "grpo-qwen-1n8g.yaml").write_text(
        "defaults: ../../grpo_math_1B.yaml\ngrpo:\n  max_num_steps: 20\n"
    )
    suites = root / "tests" / "test_suites" / "llm"
    suites.mkdir(parents=True)
    (suites / "grpo-qwen-1n8g.sh").write_text(
        "uv run examples/run_grpo_math.py --config $CONFIG_PATH grpo.max_num_steps=$MAX_STEPS\n"
    )
    return root


def _import(registry: Registry, version: str, config: str) -> tuple[Imported, list[str], tuple[str, ...]]:
    text = Path(config).read_text()
    launch = read_native(fw, text, config, {}, version)
    imported = build(fw, version, list(launch.argv), source=config, registry=registry, header="h")
    job = load_job_text(imported.text, [], "imported.yaml")
    native = render_native(job, f"nemo-rl=={version}", registry).native
    return imported, differences(imported.target, launch_effective(fw, native)), native.argv


def _spec(imported: Imported) -> dict[str, Any]:
    return dict(yaml.safe_load(imported.text)["spec"])


def test_a_recipe_runs_with_the_script_its_test_suite_names(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _checkout(tmp_path, "0.5.0")
    monkeypatch.chdir(root)
    recipe = "examples/configs/recipes/llm/grpo-qwen-1n8g.yaml"
    imported, left, argv = _import(registry, "0.5.0", recipe)
    assert left == []
    # 0.5.0's own GRPO script would be run_grpo.py: the recipe's is kept, and launched
    assert _spec(imported)["runtime"]["entrypoint"] == "examples/run_grpo_math.py"
    assert argv[3] == "examples/run_grpo_math.py"
    assert imported.target.values["(entrypoint)"] == "run_grpo_math.py"


def test_where_the_run_script_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _checkout(tmp_path, "0.5.0")
    monkeypatch.chdir(root)
    configs = root / "examples" / "configs"
    (configs / "vlm_grpo_3B.yaml").write_text("grpo:\n  num_prompts_per_step: 8\n")
    (configs / "vlm_grpo_3B_megatron.yaml").write_text("defaults: vlm_grpo_3B.yaml\n")
    script, why = run_script("examples/configs/vlm_grpo_3B_megatron.yaml", "0.5.0", "examples/run_grpo.py")
    assert script == "examples/run_vlm_grpo.py"
    assert (
        why
        == "vlm_grpo_3B.yaml is the default config of examples/run_vlm_grpo.py, which vlm_grpo_3B_megatron.yaml extends"
    )
    script, why = run_script(
        "examples/configs/recipes/llm/grpo-qwen-1n8g.yaml", "0.5.0", "examples/run_grpo.py"
    )
    assert (script, why) == (
        "examples/run_grpo_math.py",
        "tests/test_suites/llm/grpo-qwen-1n8g.sh runs grpo-qwen-1n8g.yaml with it",
    )
    # outside a checkout: what upstream's scripts load by default, by file name, where that script exists
    alone = tmp_path / "mine"
    alone.mkdir()
    (alone / "grpo_sliding_puzzle.yaml").write_text("grpo: {}\n")
    (alone / "grpo_rm_1B.yaml").write_text("grpo: {}\n")
    assert run_script(str(alone / "grpo_sliding_puzzle.yaml"), "0.7.0", "x")[0] == (
        "examples/run_grpo_sliding_puzzle.py"
    )
    assert run_script(str(alone / "grpo_rm_1B.yaml"), "0.5.0", "x")[0] == "examples/run_grpo_rm.py"
    assert run_script(str(alone / "grpo_rm_1B.yaml"), "0.6.0", "x") == (
        None,
        "no script names grpo_rm_1B.yaml: the tag's GRPO script x",
    )


def test_a_key_of_the_base_config_the_launch_lacks_stays_absent(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A standalone config (no defaults, as 0.5.0's vlm_grpo_3B.yaml) without the base's null
    policy.tokenizer.chat_template_kwargs: Hydra cannot delete a null key, so the render replaces the block."""
    monkeypatch.chdir(tag("0.5.0").root)
    base = yaml.safe_load((tag("0.5.0").root / "examples" / "configs" / "grpo_math_1B.yaml").read_text())
    assert "chat_template_kwargs" in base["policy"]["tokenizer"]
    del base["policy"]["tokenizer"]["chat_template_kwargs"]
    config = tmp_path / "standalone.yaml"
    config.write_text(yaml.safe_dump(base))
    imported, left, _ = _import(registry, "0.5.0", str(config))
    assert left == []
    assert "policy.tokenizer.chat_template_kwargs" not in imported.target.values
    # the render composes on the standalone file itself (spec.runtime.config): nothing of the base to delete
    assert _spec(imported)["runtime"]["config"] == str(config)
    assert not any(
        "policy.tokenizer" in item for item in _spec(imported).get("native", {}).get("nemo-rl", [])
    )


def test_a_list_of_dataset_blocks_replaces_the_base_block(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream's grpo_multiple_datasets.yaml (0.6.0+): its data section replaces the base's (``_override_``)
    and holds a list of blocks where the base has one block; a plain override merges into the block."""
    root = tag("0.7.0").root
    monkeypatch.chdir(root)
    base = yaml.safe_load((root / "examples" / "configs" / "grpo_math_1B.yaml").read_text())
    data = dict(base["data"], _override_=True)
    data["train"] = [
        {"dataset_name": "OpenMathInstruct-2", "split_validation_size": 0.05, "seed": "${grpo.seed}"},
        {"dataset_name": "DeepScaler"},
    ]
    config = tmp_path / "multiple.yaml"
    defaults = str(root / "examples" / "configs" / "grpo_math_1B.yaml")
    config.write_text(yaml.safe_dump({"defaults": defaults, "data": data}))
    imported, left, _ = _import(registry, "0.7.0", str(config))
    assert left == []
    assert imported.target.values["data.train"][0]["seed"] == base["grpo"]["seed"]
    # without the marker, upstream's loader cannot merge the list onto the block, nor can rladapt: a usage error
    del data["_override_"]
    config.write_text(yaml.safe_dump({"defaults": defaults, "data": data}))
    with pytest.raises(UsageError, match=r"multiple.yaml: NeMo-RL 0.7.0 cannot merge it onto its defaults"):
        _import(registry, "0.7.0", str(config))


def test_batches_the_default_placement_would_refuse_import(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream's grpo_smoke.yaml (0.7.0): 2 prompts x 4 answers on one node; the roles probe of the placement
    used to validate the batches against 8 GPUs and stop the import."""
    monkeypatch.chdir(tag("0.7.0").root)
    config = tmp_path / "smoke.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "defaults": str(tag("0.7.0").root / "examples" / "configs" / "grpo_math_1B.yaml"),
                "grpo": {"num_prompts_per_step": 2, "num_generations_per_prompt": 4, "max_num_steps": 10},
                "policy": {"train_global_batch_size": 8, "train_micro_batch_size": 8},
                "cluster": {"gpus_per_node": 1},
            }
        )
    )
    imported, left, _ = _import(registry, "0.7.0", str(config))
    assert left == []
    assert _spec(imported)["placement"]["pools"][0]["gpus_per_node"] == 1
