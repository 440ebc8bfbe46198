"""NeMo-RL: ``training.offload`` reaches ``dtensor_cfg.cpu_offload`` or Megatron's optimizer offload,
``training.pack_sequences`` reaches ``policy.sequence_packing``, and ``data.overlong_prompts`` is refused (its
data processors keep an overlong prompt as a masked stub).

The merged config is each tag's real grpo_math_1B.yaml with the generated file over it; every key rladapt writes
must be one the tag's typed MasterConfig declares (its key tree).
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import tag
from .test_nemo_rl_conformance import merged
from .test_nemo_rl_honest_defaults import base_value, render

TRAIN = {"steps": 10, "global_batch": 32, "mini_batch": 8}
KL = {"name": "grpo", "group_size": 4, "kl": {"coef": 0.01}}
WITH_REF = {
    "pools": [
        {"name": "main", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout", "ref"]},
        {"name": "rm", "nodes": 1, "gpus_per_node": 8, "roles": ["reward"]},
    ]
}
VERSIONS = ["0.4.0", "0.5.0", "0.6.0", "0.7.0"]


@pytest.mark.parametrize("version", VERSIONS)
def test_actor_offload_is_the_dtensor_cpu_offload(version: str, registry: Registry) -> None:
    t = tag(version)
    offload = {"actor": {"params": True, "optimizer": True}, "ref": {"params": True}}
    native = render(
        registry, version, algorithm=KL, placement=WITH_REF, training={**TRAIN, "offload": offload}
    )
    cfg = merged(native, t)
    assert OmegaConf.select(cfg, "policy.dtensor_cfg.cpu_offload") is True
    assert t.allows("policy.dtensor_cfg.cpu_offload")
    assert any("reference weights in CPU memory" in note for note in native.notes)
    # the example config's own is off, and an unset field keeps it
    assert OmegaConf.select(merged(render(registry, version), t), "policy.dtensor_cfg.cpu_offload") is False
    with pytest.raises(SpecError, match="moves both"):
        render(
            registry, version, training={**TRAIN, "offload": {"actor": {"params": True, "optimizer": False}}}
        )
    with pytest.raises(SpecError, match="keep them as a CPU state dict"):
        render(
            registry,
            version,
            algorithm=KL,
            placement=WITH_REF,
            training={**TRAIN, "offload": {"ref": {"params": False}}},
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_megatron_offloads_only_its_optimizer(version: str, registry: Registry) -> None:
    t = tag(version)
    native = render(
        registry,
        version,
        training={**TRAIN, "backend": "megatron", "offload": {"actor": {"optimizer": True}}},
    )
    cfg = merged(native, t)
    assert OmegaConf.select(cfg, "policy.megatron_cfg.optimizer.optimizer_cpu_offload") is True
    assert OmegaConf.select(cfg, "policy.megatron_cfg.optimizer.optimizer_offload_fraction") == 1.0
    assert t.allows("policy.megatron_cfg.optimizer.optimizer_cpu_offload")
    with pytest.raises(SpecError, match="only its optimizer offloads"):
        render(
            registry,
            version,
            training={**TRAIN, "backend": "megatron", "offload": {"actor": {"params": True}}},
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_pack_sequences_is_sequence_packing(version: str, registry: Registry) -> None:
    t = tag(version)
    assert t.allows("policy.sequence_packing.enabled")
    off = merged(render(registry, version, training={**TRAIN, "pack_sequences": False}), t)
    assert OmegaConf.select(off, "policy.sequence_packing.enabled") is False
    # unset: the example config's own, on
    own = merged(render(registry, version, training=TRAIN), t)
    assert OmegaConf.select(own, "policy.sequence_packing.enabled") is True
    with pytest.raises(SpecError, match="exclude each other"):
        render(
            registry,
            version,
            training={**TRAIN, "pack_sequences": True, "dynamic_batch": {"enabled": True}},
        )


def test_pack_sequences_before_0_4_0_is_refused(registry: Registry) -> None:
    with pytest.raises(SpecError, match="pack_sequences"):
        render(registry, "0.2.1", training={**TRAIN, "pack_sequences": True})


@pytest.mark.parametrize("how", ["drop", "truncate_left", "truncate_right", "truncate_middle"])
def test_overlong_prompts_are_refused_with_the_reason(how: str, registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, "0.7.0", data={"train": ["data/train.jsonl"], "overlong_prompts": how})
    text = str(err.value)
    assert "spec.data.overlong_prompts" in text and "masked out of the loss" in text


BUILTIN = {"name": "OpenMathInstruct-2", "options": {"split_validation_size": 0.05}}


@pytest.mark.parametrize("version", ["0.6.0", "0.7.0"])
def test_a_builtin_dataset_is_named_and_formatted_as_the_config_says(
    version: str, registry: Registry
) -> None:
    """spec.data.builtin renders data.train.dataset_name and its options, and nothing of a file: no data_path,
    input_key or output_key, and the config's own prompt file stays (a file dataset nulls it)."""
    t = tag(version)
    native = render(registry, version, data={"builtin": BUILTIN})
    cfg = merged(native, t)
    assert OmegaConf.select(cfg, "data.train.dataset_name") == "OpenMathInstruct-2"
    assert OmegaConf.select(cfg, "data.train.split_validation_size") == 0.05
    for key in ("data_path", "input_key", "output_key"):
        assert OmegaConf.select(cfg, f"data.train.{key}") is None
    assert OmegaConf.select(cfg, "data.default.prompt_file") == base_value(t, "data.default.prompt_file")
    assert base_value(t, "data.default.prompt_file") is not None
    files = merged(render(registry, version, data={"train": ["data/train.jsonl"]}), t)
    assert OmegaConf.select(files, "data.default.prompt_file") is None


def test_a_spec_names_files_or_a_builtin_dataset_never_both_nor_neither(registry: Registry) -> None:
    with pytest.raises(SpecError, match=r"spec\.data\.train: no training data"):
        render(registry, "0.7.0", data={"train": []})
    with pytest.raises(
        SpecError, match=r"spec\.data\.builtin: a built-in dataset replaces the training files"
    ):
        render(registry, "0.7.0", data={"train": ["data/train.jsonl"], "builtin": BUILTIN})
