"""verl launches whose values verl's own loading takes although the snapshot types them otherwise (Hydra's empty
``key=`` on a flag, ``test_freq=False``, ``null`` on a YAML-only key): they import and render back as written, the
native check is never stricter than verl; an empty number, on which verl's run fails, is refused by name; grpo and
rloo with one response per prompt (verl runs them) import, while the frameworks that cannot run them refuse the
render.
"""

from __future__ import annotations

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl.validate import loader_takes
from rladapt.importing.importer import build, differences
from rladapt.importing.script import read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.plugins.snapshots import snapshot
from rladapt.primitives import SpecError, UnsupportedError, UsageError, load_job, load_job_text
from tests.conftest import REPO

HEAD = (
    "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t data.val_files=v "
    "trainer.project_name=p "
)
#: what verl's own scripts give (v0.5.0 and v0.6.1: examples/ppo_trainer/run_qwen2-7b_seq_balance.sh with its
#: variable unset, tests/special_e2e/ppo_trainer/run_model_reward.sh and run_function_reward.sh,
#: tests/special_e2e/run_ppo_trainer_megatron.sh)
LOOSE = [
    "data.return_raw_chat=",
    "actor_rollout_ref.actor.use_kl_loss=",
    "trainer.test_freq=False",
    "custom_reward_function.name=null",
]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(
        builtins={
            "verl": "rladapt.adapters.verl",
            "nemo-rl": "rladapt.adapters.nemo_rl",
            "openrlhf": "rladapt.adapters.openrlhf",
            "trl": "rladapt.adapters.trl",
        },
        use_entry_points=False,
    )


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_values_verls_loading_takes_import_and_render_back_as_written(
    registry: Registry, version: str
) -> None:
    text = HEAD + " ".join(LOOSE)
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    job = load_job_text(imported.text, [], "job.yaml")
    rendered = render_native(job, f"verl=={version}", registry).native
    for item in LOOSE:  # kept as given, not "corrected": the run is the launch's
        assert item in rendered.argv, (item, rendered.argv)
    assert (
        differences(fw.effective(list(launch.argv), version), fw.effective(list(rendered.argv), version))
        == []
    )


def test_the_megatron_config_takes_null_where_its_yaml_declares_it(registry: Registry) -> None:
    """verl 0.5.0's ppo_megatron_trainer has ``lr_warmup_steps: null`` and megatron_ref.yaml
    ``expert_tensor_parallel_size: None`` (a string): verl's CI passes null to both."""
    text = (
        HEAD.replace("main_ppo ", "main_ppo --config-name=ppo_megatron_trainer ")
        + "actor_rollout_ref.actor.optim.lr_warmup_steps=null "
        "actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=null"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.5.0", list(launch.argv), source="cmd", registry=registry)
    rendered = render_native(load_job_text(imported.text, [], "j"), "verl==0.5.0", registry).native
    assert "actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=null" in rendered.argv


def test_what_verl_converts_or_cannot_run_stays_refused() -> None:
    snap = snapshot("verl", "0.6.1")
    flag = snap.keys["actor_rollout_ref.actor.use_kl_loss"]
    assert loader_takes("actor_rollout_ref.actor.use_kl_loss", flag, "")
    assert not loader_takes("actor_rollout_ref.actor.use_kl_loss", flag, "maybe")
    # the model node is merged into HFModelConfig by OmegaConf, which enforces its types
    model = snap.keys["actor_rollout_ref.model.enable_gradient_checkpointing"]
    assert not loader_takes("actor_rollout_ref.model.enable_gradient_checkpointing", model, "")
    number = snap.keys["trainer.total_epochs"]
    assert not loader_takes("trainer.total_epochs", number, "")
    assert not loader_takes("trainer.total_epochs", number, "abc")


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_an_empty_number_is_refused_naming_the_item(version: str) -> None:
    argv = read_launch(HEAD + "trainer.n_gpus_per_node= trainer.nnodes=1", "cmd", fw.match).argv
    with pytest.raises(
        UsageError, match=r"^trainer\.n_gpus_per_node=: the launch leaves trainer\.n_gpus_per_node"
    ):
        fw.effective(list(argv), version)


def test_grpo_with_one_response_per_prompt_imports_for_verl(registry: Registry) -> None:
    """verl runs it (a group of one: mean 0, std 1, the advantage is the score; core_algos.py 0.6.1), as its own
    examples/tuning/0.5b/qwen2-0.5b_grpo-lora_1_h100_fsdp_vllm.sh does."""
    text = HEAD + "algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=1"
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.6.1", list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.algorithm.group_size == 1
    rendered = render_native(load_job_text(imported.text, [], "j"), "verl==0.6.1", registry).native
    assert "actor_rollout_ref.rollout.n=1" in rendered.argv


@pytest.mark.parametrize(
    ("target", "example", "batch"),
    [
        ("nemo-rl==0.6.0", "grpo-math-nemo-rl.yaml", []),
        ("trl==0.29.1", "grpo-tiny-trl.yaml", ["spec.training.micro_batch_per_gpu=2"]),
        ("openrlhf==0.9.10", "grpo-gsm8k.yaml", []),
    ],
)
def test_frameworks_that_cannot_run_a_group_of_one_refuse_it(
    registry: Registry, target: str, example: str, batch: list[str]
) -> None:
    job = load_job(REPO / "examples" / example, ["spec.algorithm.group_size=1", *batch])
    # the example renders with its own group size: the refusal below is the group of one's
    render_native(load_job(REPO / "examples" / example), target, registry, deep_check=False)
    with pytest.raises((UnsupportedError, SpecError)) as err:
        render_native(job, target, registry, deep_check=False)
    assert any("group_size" in p.path or "n_samples_per_prompt" in p.path for p in err.value.problems)


def test_dynamic_sampling_with_groups_of_one_is_refused_by_the_spec() -> None:
    with pytest.raises(SpecError) as err:
        load_job(REPO / "examples" / "dapo-math.yaml", ["spec.algorithm.group_size=1"])
    assert [p.path for p in err.value.problems] == ["spec.algorithm.group_size"]
