"""NeMo-RL: the rollout IS correction and partial rollouts (in-flight weight updates) reach the keys of each tag's
typed config (ClippedPGLossConfig, AsyncGRPOConfig); the merged config is the tag's real grpo_math_1B.yaml with
the generated file over it, and every key written is one the tag's key tree declares. The loss code that reads
them is cited in the adapter (algorithms/loss_functions.py 0.4.0, algorithms/loss/loss_functions.py 0.6.0+).
"""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf
from packaging.version import Version

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import tag
from .test_nemo_rl_conformance import merged
from .test_nemo_rl_honest_defaults import render

RENDERING = ["0.4.0", "0.5.0", "0.6.0", "0.7.0"]
GRPO = {"name": "grpo", "group_size": 4}
TIS = {"level": "token", "mode": "truncate", "max_ratio": 2.0}
ICEPOP = {"level": "token", "mode": "mask", "min_ratio": 0.5, "max_ratio": 5.0}
SEQ_MASK = {"level": "sequence_geometric_mean", "mode": "mask", "min_ratio": 0.999, "max_ratio": 1.002}
LOSS = "loss_fn.truncated_importance_sampling"


def _cfg(registry: Registry, version: str, **spec: Any) -> Any:
    return merged(render(registry, version, **spec), tag(version))


def _select(cfg: Any, key: str) -> Any:
    return OmegaConf.select(cfg, key, throw_on_missing=True)


def _refused(registry: Registry, version: str, **spec: Any) -> str:
    with pytest.raises(SpecError) as err:
        render(registry, version, **spec)
    return str(err.value)


@pytest.mark.parametrize("version", RENDERING)
def test_truncated_token_correction(version: str, registry: Registry) -> None:
    cfg = _cfg(registry, version, algorithm={**GRPO, "off_policy_correction": TIS})
    assert _select(cfg, "loss_fn.use_importance_sampling_correction") is True
    assert _select(cfg, f"{LOSS}_ratio") == 2.0
    t = tag(version)
    assert t.allows("loss_fn.use_importance_sampling_correction") and t.allows(f"{LOSS}_ratio")
    if Version(version) >= Version("0.6.0"):
        # asserted set whenever the ratio is (loss/loss_functions.py)
        assert _select(cfg, f"{LOSS}_type") == "tis" and t.allows(f"{LOSS}_type")


@pytest.mark.parametrize("version", RENDERING)
@pytest.mark.parametrize(("corr", "kind"), [(ICEPOP, "icepop"), (SEQ_MASK, "seq-mask-tis")])
def test_masked_corrections(version: str, corr: dict[str, Any], kind: str, registry: Registry) -> None:
    spec = {"algorithm": {**GRPO, "off_policy_correction": corr}}
    if Version(version) < Version("0.6.0"):
        text = _refused(registry, version, **spec)
        assert (
            f"off_policy_correction.{corr['level']}.mask" in text
            and "first supported in nemo-rl 0.6.0" in text
        )
        return
    cfg = _cfg(registry, version, **spec)
    assert _select(cfg, f"{LOSS}_type") == kind
    assert _select(cfg, f"{LOSS}_ratio") == corr["max_ratio"]
    assert _select(cfg, f"{LOSS}_ratio_min") == corr["min_ratio"]
    assert tag(version).allows(f"{LOSS}_ratio_min")


def test_lower_bound_on_truncation_from_0_7_0(registry: Registry) -> None:
    spec = {"algorithm": {**GRPO, "off_policy_correction": {**TIS, "min_ratio": 0.5}}}
    text = _refused(registry, "0.6.0", **spec)
    assert (
        "spec.algorithm.off_policy_correction.min_ratio" in text
        and "first supported in nemo-rl 0.7.0" in text
    )
    cfg = _cfg(registry, "0.7.0", **spec)
    assert (_select(cfg, f"{LOSS}_type"), _select(cfg, f"{LOSS}_ratio_min")) == ("tis", 0.5)


def test_what_nemo_rl_cannot_weigh_is_refused(registry: Registry) -> None:
    text = _refused(
        registry, "0.7.0", algorithm={**GRPO, "off_policy_correction": {**TIS, "level": "sequence"}}
    )
    assert "off_policy_correction.sequence.truncate" in text and "sequence_level_importance_ratios" in text
    text = _refused(
        registry, "0.7.0", algorithm={"name": "gspo", "group_size": 4, "off_policy_correction": TIS}
    )
    assert "spec.algorithm.off_policy_correction" in text and "GSPO" in text
    text = _refused(registry, "0.2.1", algorithm={**GRPO, "off_policy_correction": TIS})
    assert "first supported in nemo-rl 0.4.0" in text


@pytest.mark.parametrize("version", RENDERING)
def test_unset_correction_keeps_the_tags_own(version: str, registry: Registry) -> None:
    cfg = _cfg(registry, version)
    base = OmegaConf.create(tag(version).base())
    for key in ("loss_fn.use_importance_sampling_correction", f"{LOSS}_ratio"):
        assert _select(cfg, key) == OmegaConf.select(base, key), key


ASYNC = {
    "rollout": {"mode": "async"},
    "placement": {
        "pools": [
            {"name": "train", "nodes": 1, "gpus_per_node": 8, "roles": ["actor"]},
            {"name": "rm", "nodes": 1, "gpus_per_node": 8, "roles": ["reward"]},
            {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
        ]
    },
}


@pytest.mark.parametrize("version", RENDERING)
@pytest.mark.parametrize("partial", [True, False])
def test_partial_rollout_is_in_flight_weight_updates(version: str, partial: bool, registry: Registry) -> None:
    cfg = _cfg(registry, version, **ASYNC, weight_sync={"max_staleness": 2, "partial_rollout": partial})
    assert _select(cfg, "grpo.async_grpo.enabled") is True
    assert _select(cfg, "grpo.async_grpo.in_flight_weight_updates") is partial
    # the refit skips waiting for pending generations only with the async engine
    assert _select(cfg, "policy.generation.vllm_cfg.async_engine") is True
    assert tag(version).allows("grpo.async_grpo.in_flight_weight_updates")
