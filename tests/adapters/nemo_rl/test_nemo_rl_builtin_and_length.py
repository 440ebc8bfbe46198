"""NeMo-RL's own datasets by name at every tag, and its one length budget for prompt and response (issue 22).

Before 0.6.0 a built-in dataset is ``data.dataset_name`` beside the other data keys (0.2.1's
examples/run_grpo_math.py; load_response_dataset in nemo_rl/data/datasets/response_datasets/__init__.py at 0.4.0 and
0.5.0): spec.data.builtin renders there, and an import of upstream's example configs lands in it instead of leaving
the data section in spec.native. Every tag's example config gives the prompt and the response the whole
policy.max_total_sequence_length each: spec.data.max_length says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.adapters.nemo_rl import importer as fw
from rladapt.importing.importer import build, differences, launch_effective
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import SpecError, load_job_text
from tests.adapters.nemo_rl.conftest import tag
from tests.primitives.test_loading import MINIMAL, problems

#: the minimal spec with NeMo-RL's own scorer (it has no reward functions)
NEMO = MINIMAL.replace("reward: {function: {path: reward.py}}", "reward: {builtin: {name: math}}")
BUILTIN = ["spec.data.train=[]", "spec.data.builtin.name=DeepScaler"]
FLAT_TAGS = ["0.2.1", "0.4.0", "0.5.0"]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry()


def _values(overrides: list[str], version: str, registry: Registry) -> dict[str, Any]:
    job = load_job_text(NEMO, overrides)
    native = render_native(job, f"nemo-rl=={version}", registry).native
    (config,) = [text for name, text in native.files.items() if name.endswith(".yaml")]
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            out[prefix[:-1]] = node

    walk(yaml.safe_load(config), "")
    return out


@pytest.mark.parametrize("version", FLAT_TAGS)
def test_a_builtin_dataset_is_data_dataset_name_before_0_6_0(version: str, registry: Registry) -> None:
    values = _values(BUILTIN, version, registry)
    assert values["data.dataset_name"] == "DeepScaler"
    # the file layout's keys and the prompt files stay the inherited config's: none is written
    assert not {"data.train_data_path", "data.val_data_path", "data.input_key", "data.prompt_file"} & set(
        values
    )


@pytest.mark.parametrize("version", ["0.4.0", "0.5.0"])
def test_its_options_are_data_keys_of_their_own_before_0_6_0(version: str, registry: Registry) -> None:
    assert (
        _values([*BUILTIN, "spec.data.builtin.options.split=train"], version, registry)["data.split"]
        == "train"
    )


def test_an_option_the_tag_does_not_have_is_refused_by_name(registry: Registry) -> None:
    job = load_job_text(NEMO, [*BUILTIN, "spec.data.builtin.options.split=train"])
    with pytest.raises(SpecError) as err:
        render_native(job, "nemo-rl==0.2.1", registry)
    assert "spec.data.builtin.options.split" in str(err.value) and "no config key 'data.split'" in str(
        err.value
    )


def test_from_0_6_0_it_is_the_train_blocks_dataset_name(registry: Registry) -> None:
    values = _values(BUILTIN, "0.6.0", registry)
    assert values["data.train.dataset_name"] == "DeepScaler"
    assert "data.dataset_name" not in values


@pytest.mark.parametrize("version", ["0.4.0", "0.5.0"])
def test_before_0_6_0_no_validation_files_beside_it_nor_an_option_that_is_another_setting(
    version: str, registry: Registry
) -> None:
    with pytest.raises(SpecError) as err:
        render_native(
            load_job_text(NEMO, [*BUILTIN, "spec.data.val=[v.jsonl]"]), f"nemo-rl=={version}", registry
        )
    assert "spec.data.val" in str(err.value) and "its own validation split" in str(err.value)
    with pytest.raises(SpecError) as err:
        render_native(
            load_job_text(NEMO, [*BUILTIN, "spec.data.builtin.options.shuffle=false"]),
            f"nemo-rl=={version}",
            registry,
        )
    assert "spec.data.builtin.options.shuffle" in str(err.value)


def test_evaluation_on_a_builtin_datasets_own_validation_split_is_valid() -> None:
    job = load_job_text(MINIMAL, [*BUILTIN, "spec.eval.every_steps=5"])
    assert job.spec.eval.every_steps == 5
    (problem,) = problems(MINIMAL, ["spec.eval.every_steps=5"])
    assert problem.startswith("spec.eval: evaluation is requested but there is nothing to evaluate on")


def test_max_length_caps_prompt_and_response_together() -> None:
    job = load_job_text(MINIMAL, ["spec.data.max_prompt_length=512", "spec.data.max_response_length=512"])
    assert job.spec.data.total_length == 1024
    job = load_job_text(
        MINIMAL,
        ["spec.data.max_prompt_length=512", "spec.data.max_response_length=512", "spec.data.max_length=512"],
    )
    assert job.spec.data.total_length == 512
    (below,) = problems(MINIMAL, ["spec.data.max_prompt_length=512", "spec.data.max_length=256"])
    assert below.startswith("spec.data") and "below max_prompt_length" in below
    (above,) = problems(
        MINIMAL,
        ["spec.data.max_prompt_length=512", "spec.data.max_response_length=512", "spec.data.max_length=2048"],
    )
    assert "would cap nothing" in above


@pytest.mark.parametrize("version", ["0.2.1", "0.5.0", "0.7.0"])
def test_max_length_is_the_whole_sequence_length_on_nemo_rl(version: str, registry: Registry) -> None:
    lengths = [
        "spec.data.max_prompt_length=512",
        "spec.data.max_response_length=512",
        "spec.data.max_length=512",
    ]
    values = _values([*BUILTIN, *lengths], version, registry)
    assert values["policy.max_total_sequence_length"] == 512
    assert values["policy.generation.max_new_tokens"] == 512
    assert values["data.max_input_seq_length"] == 512
    assert values["policy.generation.vllm_cfg.max_model_len"] == 512


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "trl"])
def test_frameworks_without_a_shared_budget_refuse_it_naming_the_field(
    framework: str, registry: Registry
) -> None:
    # TRL: its own generation, one process on one GPU
    one_gpu = "spec.placement={pools: [{name: p, nodes: 1, gpus_per_node: 1, roles: [actor, rollout]}]}"
    engine = ["spec.rollout.engine=hf", one_gpu] if framework == "trl" else []
    shared = [
        *engine,
        "spec.data.max_prompt_length=512",
        "spec.data.max_response_length=512",
        "spec.data.max_length=768",
    ]
    with pytest.raises(SpecError) as err:
        render_native(load_job_text(MINIMAL, shared), framework, registry)
    assert "spec.data.max_length" in str(err.value)
    # a max_length that caps nothing is the same run as none
    render_native(load_job_text(MINIMAL, [*shared[:-1], "spec.data.max_length=1024"]), framework, registry)


@pytest.mark.parametrize("version", ["0.2.1", "0.4.0", "0.5.0", "0.6.0", "0.7.0"])
def test_the_example_config_imports_into_these_fields_and_round_trips(
    version: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    root: Path = tag(version).root
    monkeypatch.chdir(root)
    script = "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"
    argv = ["uv", "run", "python", script, "--config", "examples/configs/grpo_math_1B.yaml"]
    imported = build(fw, version, argv, source="examples/configs/grpo_math_1B.yaml", registry=registry)
    spec = yaml.safe_load(imported.text)["spec"]
    assert spec["data"]["builtin"]["name"] == "OpenMathInstruct-2"
    assert (
        spec["data"]["max_length"],
        spec["data"]["max_prompt_length"],
        spec["data"]["max_response_length"],
    ) == (
        512,
        512,
        512,
    )
    native = spec.get("native", {}).get("nemo-rl", [])
    left = [i for i in native if i.lstrip("~+").startswith(("data.", "policy.generation.max_new_tokens"))]
    assert left == []
    job = load_job_text(imported.text, [], "imported.yaml")
    final = launch_effective(fw, render_native(job, f"nemo-rl=={version}", registry).native)
    assert differences(imported.target, final) == []


@pytest.mark.parametrize("version", ["0.4.0", "0.7.0"])
def test_megatron_keeps_the_example_configs_schedule_shape_for_the_specs_lr(
    version: str, registry: Registry
) -> None:
    """grpo_math_1B.yaml warms up from, and floors at, a tenth of its lr (5e-7 of 5e-6): a null warmup_steps is
    that schedule for the spec's lr (its lr_warmup_iters inherited), never a flat start at lr."""
    megatron = ["spec.training.backend=megatron", "spec.training.optimizer.lr=3e-6"]
    values = _values([*BUILTIN, *megatron], version, registry)
    mc = "policy.megatron_cfg"
    assert values[f"{mc}.optimizer.lr"] == 3e-6
    assert (values[f"{mc}.optimizer.min_lr"], values[f"{mc}.scheduler.lr_warmup_init"]) == (3e-7, 3e-7)
    assert f"{mc}.scheduler.lr_warmup_iters" not in values


@pytest.mark.parametrize("version", ["0.4.0", "0.7.0"])
def test_the_megatron_example_imports_without_schedule_items(
    version: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tag(version).root)
    script = "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"
    config = "examples/configs/grpo_math_1B_megatron.yaml"
    imported = build(
        fw, version, ["uv", "run", "python", script, "--config", config], source=config, registry=registry
    )
    native = yaml.safe_load(imported.text)["spec"].get("native", {}).get("nemo-rl", [])
    assert not [item for item in native if "min_lr" in item or "lr_warmup_init" in item]
