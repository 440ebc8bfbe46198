"""NeMo-RL: GRPO's baseline and std, DAPO's dynamic sampling and overlong shaping, the loss aggregation and the
dual clip reach the keys of each tag's typed config; the merged config is each tag's real grpo_math_1B.yaml with the
generated file over it, and every key written is one the tag's key tree declares (GRPOConfig, ClippedPGLossConfig,
RewardShapingConfig).
"""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import tag
from .test_nemo_rl_conformance import merged
from .test_nemo_rl_honest_defaults import render

# 0.2.1 reads no local data files (its built-in datasets only), so no job of this shape renders there
RENDERING = ["0.4.0", "0.5.0", "0.6.0", "0.7.0"]
DAPO = {"name": "dapo", "group_size": 4, "clip": {"low": 0.2, "high": 0.28}}


def _cfg(registry: Registry, version: str, **spec: Any) -> Any:
    cfg = merged(render(registry, version, **spec), tag(version))
    return cfg


def _select(cfg: Any, key: str) -> Any:
    return OmegaConf.select(cfg, key, throw_on_missing=True)


@pytest.mark.parametrize("version", RENDERING)
@pytest.mark.parametrize(
    ("baseline", "std"), [("group_mean", True), ("group_mean", False), ("leave_one_out", False)]
)
def test_baseline_and_std_reach_the_grpo_keys(
    version: str, baseline: str, std: bool, registry: Registry
) -> None:
    cfg = _cfg(
        registry,
        version,
        algorithm={"name": "grpo", "group_size": 4, "baseline": baseline, "normalize_by_group_std": std},
    )
    assert _select(cfg, "grpo.use_leave_one_out_baseline") is (baseline == "leave_one_out")
    assert _select(cfg, "grpo.normalize_rewards") is std
    t = tag(version)
    assert t.allows("grpo.use_leave_one_out_baseline") and t.allows("grpo.normalize_rewards")
    if t.allows("grpo.adv_estimator.normalize_rewards"):
        # 0.6.0+: the estimator block follows the grpo keys through the tag's own interpolation
        assert _select(cfg, "grpo.adv_estimator.normalize_rewards") is std
        assert _select(cfg, "grpo.adv_estimator.use_leave_one_out_baseline") is (baseline == "leave_one_out")


@pytest.mark.parametrize("version", RENDERING)
def test_unset_fields_keep_the_tags_own(version: str, registry: Registry) -> None:
    cfg = _cfg(registry, version)
    base = OmegaConf.create(tag(version).base())
    for key in (
        "grpo.use_leave_one_out_baseline",
        "grpo.normalize_rewards",
        "loss_fn.ratio_clip_c",
        "loss_fn.token_level_loss",
        "grpo.reward_shaping.enabled",
    ):
        assert _select(cfg, key) == OmegaConf.select(base, key), key
    assert _select(cfg, "grpo.use_dynamic_sampling") is False


@pytest.mark.parametrize("version", RENDERING)
def test_dapo_switches_and_shaping(version: str, registry: Registry) -> None:
    cfg = _cfg(registry, version, algorithm=DAPO)
    assert _select(cfg, "grpo.use_dynamic_sampling") is True
    assert _select(cfg, "loss_fn.token_level_loss") is True
    off = _cfg(
        registry,
        version,
        algorithm={**DAPO, "dynamic_sampling": False, "clip": {"low": 0.2, "high": 0.28, "dual": 10.0}},
        data={"train": ["data/train.jsonl"], "max_response_length": 2048},
        reward={
            "model": {"path": "Skywork/Skywork-Reward-V2-Qwen3-0.6B"},
            "overlong_penalty": {"buffer_tokens": 512, "max_penalty": 0.5},
        },
    )
    assert _select(off, "grpo.use_dynamic_sampling") is False
    assert _select(off, "loss_fn.ratio_clip_c") == 10.0
    assert _select(off, "loss_fn.ratio_clip_max") == 0.28
    shaping = {k: _select(off, f"grpo.reward_shaping.{k}") for k in ("enabled", "overlong_buffer_length")}
    assert shaping == {"enabled": True, "overlong_buffer_length": 512}
    assert _select(off, "grpo.reward_shaping.overlong_buffer_penalty") == 0.5
    # the response budget, not the example config's ${policy.max_total_sequence_length} (prompt + response)
    assert _select(off, "grpo.reward_shaping.max_response_length") == 2048
    t = tag(version)
    for key in ("enabled", "overlong_buffer_length", "overlong_buffer_penalty", "max_response_length"):
        assert t.allows(f"grpo.reward_shaping.{key}")
    assert t.allows("loss_fn.ratio_clip_c")


@pytest.mark.parametrize("version", RENDERING)
def test_loss_aggregation(version: str, registry: Registry) -> None:
    seq = _cfg(
        registry,
        version,
        algorithm={"name": "grpo", "group_size": 4, "loss_aggregation": "seq_mean_token_mean"},
    )
    assert _select(seq, "loss_fn.token_level_loss") is False
    with pytest.raises(SpecError) as err:
        render(
            registry,
            version,
            algorithm={"name": "grpo", "group_size": 4, "loss_aggregation": "seq_mean_token_sum"},
        )
    assert "spec.algorithm.loss_aggregation" in str(err.value) and "never a mean of token sums" in str(
        err.value
    )


def test_dapo_on_0_2_1_needs_dynamic_sampling_off() -> None:
    """0.2.1 has no dynamic sampling: a dapo that leaves it on is refused naming the switch."""
    from rladapt.adapters.nemo_rl.versions import capabilities
    from rladapt.plugins.capabilities import job_requirements
    from rladapt.primitives import validate_data

    from .test_nemo_rl_honest_defaults import BASE

    data = {**BASE, "spec": {**BASE["spec"], "algorithm": DAPO}}
    missing = [
        r for r in job_requirements(validate_data(data, "<t>")) if r.capability not in capabilities("0.2.1")
    ]
    assert [(r.capability, r.field) for r in missing if r.field.startswith("spec.algorithm")] == [
        ("algorithm.dynamic_sampling", "spec.algorithm.dynamic_sampling")
    ]
    data["spec"]["algorithm"] = {**DAPO, "dynamic_sampling": False}
    assert "algorithm.dapo" in capabilities("0.2.1")
    assert all(
        r.capability in capabilities("0.2.1")
        for r in job_requirements(validate_data(data, "<t>"))
        if r.field.startswith("spec.algorithm")
    )
