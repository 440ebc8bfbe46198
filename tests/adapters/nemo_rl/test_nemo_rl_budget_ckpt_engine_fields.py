"""NeMo-RL: the log-prob budget, checkpoint retention by a metric, never saving and the vLLM engine settings reach
the keys of each pinned tag; what NeMo-RL decides itself is refused with the reason.

The merged config is each tag's real grpo_math_1B.yaml with the generated file over it; every emitted key is
checked against the tag's typed key tree (``Tag.allows``).
"""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import flatten, tag
from .test_nemo_rl_conformance import generated, merged
from .test_nemo_rl_honest_defaults import render

TRAINING = {"steps": 10, "global_batch": 32, "mini_batch": 8, "micro_batch_per_gpu": 2}
# 0.2.1 reads no local data files (its built-in datasets only), so no job of this shape renders there
TAGS = ["0.4.0", "0.5.0", "0.6.0", "0.7.0"]


def _emitted_keys_are_the_tags(native: Any, version: str) -> None:
    t = tag(version)
    unknown = [key for key in flatten(generated(native)) if not t.allows(key)]
    assert not unknown, f"nemo-rl {version} has no {unknown}"


@pytest.mark.parametrize("version", TAGS)
def test_the_log_prob_budget_is_the_policys(version: str, registry: Registry) -> None:
    training = {
        **TRAINING,
        "dynamic_batch": {"enabled": True, "max_tokens_per_gpu": 4096},
        "budgets": {
            "old_log_prob": {"micro_batch_per_gpu": 8, "max_tokens_per_gpu": 16384},
            "ref_log_prob": {"micro_batch_per_gpu": 8},
        },
    }
    native = render(registry, version, training=training)
    cfg = merged(native, tag(version))
    assert OmegaConf.select(cfg, "policy.logprob_batch_size") == 8
    assert OmegaConf.select(cfg, "policy.train_micro_batch_size") == 2
    assert OmegaConf.select(cfg, "policy.dynamic_batching.logprob_mb_tokens") == 16384
    assert OmegaConf.select(cfg, "policy.dynamic_batching.train_mb_tokens") == 4096
    _emitted_keys_are_the_tags(native, version)


def test_a_reference_budget_of_its_own_is_refused(registry: Registry) -> None:
    training = {**TRAINING, "budgets": {"ref_log_prob": {"micro_batch_per_gpu": 16}}}
    with pytest.raises(SpecError) as err:
        render(registry, "0.7.0", training=training)
    assert "spec.training.budgets.ref_log_prob.micro_batch_per_gpu" in str(err.value)
    assert "one policy worker computes both" in str(err.value)


def test_tp4_needs_equal_micro_batches_from_0_6_0(registry: Registry) -> None:
    training = {
        **TRAINING,
        "backend": "megatron",
        "parallel": {"tp": 4},
        "budgets": {"old_log_prob": {"micro_batch_per_gpu": 8}},
    }
    with pytest.raises(SpecError, match="TP>=4 accuracy check"):
        render(registry, "0.6.0", training=training)
    cfg = merged(render(registry, "0.5.0", training=training), tag("0.5.0"))
    assert OmegaConf.select(cfg, "policy.logprob_batch_size") == 8


@pytest.mark.parametrize("version", TAGS)
def test_keep_best_is_the_checkpoint_managers_top_k(version: str, registry: Registry) -> None:
    best = {"metric": "val:accuracy", "higher_is_better": False, "count": 5}
    native = render(registry, version, checkpoint={"keep_best": best})
    cfg = merged(native, tag(version))
    assert OmegaConf.select(cfg, "checkpointing.metric_name") == "val:accuracy"
    assert OmegaConf.select(cfg, "checkpointing.higher_is_better") is False
    assert OmegaConf.select(cfg, "checkpointing.keep_top_k") == 5
    _emitted_keys_are_the_tags(native, version)


def test_keep_best_and_keep_last_together_are_refused(registry: Registry) -> None:
    with pytest.raises(SpecError, match="one checkpointing.keep_top_k"):
        render(registry, "0.7.0", checkpoint={"keep_last": 2, "keep_best": {"metric": "val:accuracy"}})


@pytest.mark.parametrize("version", TAGS)
def test_never_saving_disables_checkpointing(version: str, registry: Registry) -> None:
    cfg = merged(render(registry, version, checkpoint={"enabled": False}), tag(version))
    assert OmegaConf.select(cfg, "checkpointing.enabled") is False
    assert OmegaConf.select(merged(render(registry, version), tag(version)), "checkpointing.enabled") is True


@pytest.mark.parametrize("version", TAGS)
def test_engine_settings_reach_vllm(version: str, registry: Registry) -> None:
    engine = {"enforce_eager": True, "chunked_prefill": False, "max_batched_tokens": 12288}
    native = render(registry, version, rollout={"engine_settings": engine})
    cfg = merged(native, tag(version))
    gen = "policy.generation"
    assert OmegaConf.select(cfg, f"{gen}.vllm_cfg.enforce_eager") is True
    assert OmegaConf.select(cfg, f"{gen}.vllm_kwargs") == {
        "enable_chunked_prefill": False,
        "max_num_batched_tokens": 12288,
    }
    _emitted_keys_are_the_tags(native, version)


@pytest.mark.parametrize(
    ("engine", "reason"),
    [
        ({"free_cache_between_phases": False}, "a colocated vLLM always sleeps"),
        ({"load_weights_from_disk": True}, "sets vllm_cfg.load_format itself"),
        ({"layered_weight_sync": True}, "no layer-by-layer mode"),
    ],
)
def test_what_nemo_rl_decides_itself_is_refused(
    engine: dict[str, Any], reason: str, registry: Registry
) -> None:
    with pytest.raises(SpecError, match=reason):
        render(registry, "0.7.0", rollout={"engine_settings": engine})


def test_vllm_settings_with_sglang_are_refused(registry: Registry) -> None:
    with pytest.raises(SpecError, match="enforce_eager with the SGLang rollout"):
        render(registry, "0.7.0", rollout={"engine": "sglang", "engine_settings": {"enforce_eager": True}})
