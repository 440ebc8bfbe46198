"""OpenRLHF: the rollout IS correction and partial rollouts parse to the flags each pinned version's code reads;
what a version lacks is refused naming the field and the first version that can.

Parsed by each version's REAL parser (built from its train_ppo_ray.py, post-parse rules included); what PolicyLoss
does with the flags is checked in the wheel's source, so a release that moves the read fails here.
"""

from __future__ import annotations

import zipfile
from typing import Any

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf.versions import dest, has_flag
from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import PINNED, job, parse_ok, render, wheel

TIS = {"level": "token", "mode": "truncate", "max_ratio": 2.0}
ICEPOP = {"level": "token", "mode": "mask", "min_ratio": 0.5, "max_ratio": 5.0}
SEQ_MASK = {"level": "sequence_geometric_mean", "mode": "mask", "min_ratio": 0.99, "max_ratio": 1.01}
ASYNC = {
    "rollout": {"tensor_parallel": 4, "mode": "async"},
    "weight_sync": {"max_staleness": 2},
    "placement": {
        "pools": [
            {"name": "train", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "ref"]},
            {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
        ]
    },
}


def _ns(version: str, registry: Registry, **spec: Any) -> Any:
    return parse_ok(version, render(job(**spec), version, registry).native.argv[3:])


def _get(ns: Any, version: str, flat: str) -> Any:
    return getattr(ns, dest(version, flat))


def _wheel_text(version: str, suffix: str) -> str:
    with zipfile.ZipFile(wheel(version)) as whl:
        return "".join(
            whl.read(name).decode("utf-8", "replace") for name in whl.namelist() if name.endswith(suffix)
        )


def _loss(version: str) -> str:
    """PolicyLoss, after checking that the actor builds it from the flags rladapt writes."""
    actor = _wheel_text(version, "openrlhf/trainer/ray/ppo_actor.py")
    flats = ["vllm_is_truncated_threshold"]
    flats += ["is_correction_level", "is_correction_mode"] if has_flag(version, "is_correction_level") else []
    flats += ["enable_vllm_is_correction"] if has_flag(version, "enable_vllm_is_correction") else []
    flats += ["vllm_is_correction_type"] if has_flag(version, "vllm_is_correction_type") else []
    for flat in flats:
        assert f"self.args.{dest(version, flat)}" in actor, flat
    return _wheel_text(version, "openrlhf/models/loss.py")


def _refused(version: str, registry: Registry, **spec: Any) -> str:
    with pytest.raises(SpecError) as err:
        render(job(**spec), version, registry)
    return str(err.value)


def _correction(corr: dict[str, Any]) -> dict[str, Any]:
    return {"algorithm": {"name": "grpo", "group_size": 4, "off_policy_correction": corr}}


@pytest.mark.parametrize("version", PINNED)
def test_truncated_token_correction(version: str, registry: Registry) -> None:
    if Version(version) < Version("0.8.11"):
        text = _refused(version, registry, **_correction(TIS))
        assert "spec.algorithm.off_policy_correction" in text and "first supported in openrlhf 0.8.11" in text
        return
    ns = _ns(version, registry, **_correction(TIS))
    loss = _loss(version)
    if has_flag(version, "is_correction_level"):  # 0.11.2
        assert _get(ns, version, "is_correction_level") == "token"
        assert _get(ns, version, "is_correction_mode") == "clip"
        assert _get(ns, version, "is_correction_gating") == "ratio"
        assert _get(ns, version, "vllm_is_truncated_threshold") == [0.0, 2.0]
        assert "coef = stat.clamp(min=low, max=high)" in loss
    elif has_flag(version, "vllm_is_correction_type"):  # 0.9.10 to 0.10.2: tis clamps into [low, high]
        assert _get(ns, version, "enable_vllm_is_correction") is True
        assert _get(ns, version, "vllm_is_correction_type") == "tis"
        assert _get(ns, version, "vllm_is_truncated_threshold") == [0.0, 2.0]
        assert ".clamp(min=low_threshold, max=high_threshold)" in loss
    else:  # 0.8.11: one upper bound
        assert _get(ns, version, "enable_vllm_is_correction") is True
        assert _get(ns, version, "vllm_is_truncated_threshold") == 2.0
        assert ".clamp(max=self.vllm_is_truncated_threshold)" in loss


@pytest.mark.parametrize("version", PINNED)
@pytest.mark.parametrize(
    ("corr", "old_type", "level"), [(ICEPOP, "icepop", "token"), (SEQ_MASK, "seq-mask-tis", "seq")]
)
def test_masked_corrections(
    version: str, corr: dict[str, Any], old_type: str, level: str, registry: Registry
) -> None:
    if Version(version) < Version("0.9.10"):
        text = _refused(version, registry, **_correction(corr))
        assert f"off_policy_correction.{corr['level']}.mask" in text
        assert "first supported in openrlhf 0.9.10" in text
        return
    ns = _ns(version, registry, **_correction(corr))
    loss = _loss(version)
    band = [corr["min_ratio"], corr["max_ratio"]]
    assert _get(ns, version, "vllm_is_truncated_threshold") == band
    if has_flag(version, "is_correction_level"):
        assert _get(ns, version, "is_correction_level") == level
        assert _get(ns, version, "is_correction_mode") == "mask"
        # survivors keep their untruncated token weight; seq: the ratio's geometric mean
        assert "coef = torch.where(keep, token_is, 0.0)" in loss
        assert "masked_mean(is_log_ratio, action_mask, dim=-1)" in loss
    else:
        assert _get(ns, version, "vllm_is_correction_type") == old_type
        assert f'self.vllm_is_correction_type == "{old_type}"' in loss


@pytest.mark.parametrize("version", ["0.8.11", "0.11.2"])
def test_what_openrlhf_cannot_weigh_is_refused(version: str, registry: Registry) -> None:
    seq = {**TIS, "level": "sequence"}
    assert "off_policy_correction.sequence.truncate" in _refused(version, registry, **_correction(seq))
    text = _refused(
        version, registry, algorithm={"name": "gspo", "group_size": 4, "off_policy_correction": TIS}
    )
    assert "spec.algorithm.off_policy_correction" in text and "GSPO" in text
    if version == "0.8.11":
        text = _refused(version, registry, **_correction({**TIS, "min_ratio": 0.5}))
        assert (
            "spec.algorithm.off_policy_correction.min_ratio" in text
            and "first supported in openrlhf 0.9.10" in text
        )


@pytest.mark.parametrize("version", [v for v in PINNED if Version(v) >= Version("0.7.5")])  # grpo from 0.7.5
def test_unset_correction_is_off(version: str, registry: Registry) -> None:
    argv = " ".join(render(job(), version, registry).native.argv)
    assert "is_correction" not in argv and "vllm_is" not in argv


@pytest.mark.parametrize("version", PINNED)
def test_partial_rollout(version: str, registry: Registry) -> None:
    spec = {**ASYNC, "weight_sync": {"max_staleness": 2, "partial_rollout": True}}
    if not has_flag(version, "async_queue_size"):
        return  # a queue of 2 is refused before 0.9.1 (test_openrlhf_conformance)
    if Version(version) < Version("0.9.10"):
        text = _refused(version, registry, **spec)
        assert "spec.weight_sync.partial_rollout" in text and "first supported in openrlhf 0.9.10" in text
        return
    ns = _ns(version, registry, **spec)
    assert _get(ns, version, "partial_rollout") is True
    assert _get(ns, version, "async_train") is True
    # read by the async trainer: vLLM pause/resume around the weight sync instead of a lock
    trainer = _wheel_text(version, "openrlhf/trainer/ppo_trainer_async.py")
    assert f'"{dest(version, "partial_rollout").rsplit(".", 1)[-1]}", False)' in trainer
    assert "if not self._partial_rollout:" in trainer
    # false is OpenRLHF's own: nothing written
    off = {**ASYNC, "weight_sync": {"max_staleness": 2, "partial_rollout": False}}
    assert "partial_rollout" not in " ".join(render(job(**off), version, registry).native.argv)
