"""OpenRLHF: GRPO's advantage variants, DAPO's switches, the loss aggregation and the dual clip parse to the flags
each pinned version's code reads; what a version lacks is refused naming the field and the first version that can.

Parsed by each version's REAL parser (built from its train_ppo_ray.py); what the code does with a flag is checked
in the wheel's source, so a release that moves the read fails here.
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

DAPO = {"name": "dapo", "group_size": 4, "clip": {"low": 0.2, "high": 0.28}}


def _ns(version: str, registry: Registry, **spec: Any) -> Any:
    return parse_ok(version, render(job(**spec), version, registry).native.argv[3:])


def _wheel_text(version: str, suffix: str) -> str:
    with zipfile.ZipFile(wheel(version)) as whl:
        return "".join(
            whl.read(name).decode("utf-8", "replace") for name in whl.namelist() if name.endswith(suffix)
        )


def _refused(version: str, registry: Registry, **spec: Any) -> str:
    with pytest.raises(SpecError) as err:
        render(job(**spec), version, registry)
    return str(err.value)


@pytest.mark.parametrize("version", PINNED)
def test_std_normalisation_off_is_dr_grpo(version: str, registry: Registry) -> None:
    spec = {"algorithm": {"normalize_by_group_std": False}}
    if "dr_grpo" not in _wheel_text(version, "cli/train_ppo_ray.py"):
        assert "advantage.no_std" in _refused(version, registry, **spec)
        return
    ns = _ns(version, registry, **spec)
    assert getattr(ns, dest(version, "advantage_estimator")) == "dr_grpo"
    # dr_grpo subtracts the group mean and does not divide by the std (experience_maker.py)
    maker = _wheel_text(version, "ppo_utils/experience_maker.py")
    assert '"dr_grpo"]' in maker and "rewards - rewards.mean(-1, keepdim=True)" in maker


@pytest.mark.parametrize("version", ["0.8.11", "0.11.2"])
def test_leave_one_out_without_std_is_rloo_and_with_std_is_refused(version: str, registry: Registry) -> None:
    ns = _ns(version, registry, algorithm={"baseline": "leave_one_out", "normalize_by_group_std": False})
    assert getattr(ns, dest(version, "advantage_estimator")) == "rloo"
    text = _refused(version, registry, algorithm={"baseline": "leave_one_out"})
    assert "spec.algorithm.baseline" in text and "no OpenRLHF estimator divides a leave-one-out" in text


@pytest.mark.parametrize("version", PINNED)
def test_dual_clip(version: str, registry: Registry) -> None:
    spec = {"algorithm": {"clip": {"low": 0.2, "high": 0.2, "dual": 10.0}}}
    if not has_flag(version, "dual_clip"):
        text = _refused(version, registry, **spec)
        assert "spec.algorithm.clip.dual" in text and "first supported in openrlhf 0.8.11" in text
        return
    assert getattr(_ns(version, registry, **spec), dest(version, "dual_clip")) == 10.0
    assert "dual_clip=self.args" in _wheel_text(version, "trainer/ray/ppo_actor.py")
    # unset: OpenRLHF's own, off
    assert getattr(_ns(version, registry), dest(version, "dual_clip")) is None


@pytest.mark.parametrize("version", PINNED)
def test_dapo_dynamic_sampling_and_overlong_penalty(version: str, registry: Registry) -> None:
    if Version(version) < Version("0.8.11"):
        assert "algorithm.dapo" in _refused(version, registry, algorithm=DAPO)
        return
    on = _ns(version, registry, algorithm=DAPO)
    assert getattr(on, dest(version, "dynamic_filtering")) is True
    off = _ns(version, registry, algorithm={**DAPO, "dynamic_sampling": False})
    assert getattr(off, dest(version, "dynamic_filtering")) is False
    assert tuple(getattr(off, dest(version, "eps_clip_low_high"))) == (0.2, 0.28)
    shaped = _ns(
        version,
        registry,
        algorithm={**DAPO, "dynamic_sampling": False},
        reward={
            "function": {"path": "rewards/r.py"},
            "overlong_penalty": {"buffer_tokens": 64, "max_penalty": 0.5},
        },
    )
    assert getattr(shaped, dest(version, "overlong_buffer_len")) == 64
    assert getattr(shaped, dest(version, "overlong_penalty_factor")) == 0.5
    if has_flag(version, "max_new_tokens"):
        # the penalty counts from max_new_tokens, else from max_len (prompt + response): set to the response budget
        assert getattr(shaped, dest(version, "max_new_tokens")) == job().spec.data.max_response_length
        assert "or args.max_len" in _wheel_text(version, "ppo_utils/length_penalty.py") or (
            "or args.data.max_len" in _wheel_text(version, "ppo_utils/length_penalty.py")
        )
    else:
        assert "args.generate_max_len - overlong_buffer_len" in _wheel_text(
            version, "ppo_utils/experience_maker.py"
        )


@pytest.mark.parametrize("version", PINNED)
def test_loss_aggregation(version: str, registry: Registry) -> None:
    seq = {"algorithm": {"loss_aggregation": "seq_mean_token_mean"}}
    token = {"algorithm": {"loss_aggregation": "token_mean"}}
    if has_flag(version, "loss_agg_mode"):
        assert getattr(_ns(version, registry, **seq), dest(version, "loss_agg_mode")) == "seq-mean-token-mean"
        assert getattr(_ns(version, registry, **token), dest(version, "loss_agg_mode")) == "token-mean"
        assert 'token_level_loss=self.args.actor.loss_agg_mode == "token-mean"' in _wheel_text(
            version, "trainer/ray/ppo_actor.py"
        )
    elif Version(version) < Version("0.7.5"):
        # 0.5.9.post1's policy loss is a mean of sequence means, and nothing else
        assert "masked_mean(loss, action_mask, dim=-1).mean()" in _wheel_text(version, "models/loss.py")
        assert "loss_aggregation.token_mean" in _refused(
            version, registry, algorithm={"name": "rloo", **token["algorithm"]}
        )
    else:
        # a token mean, fixed: the PolicyLoss of the trainer keeps token_level_loss's default, True
        assert "token_level_loss: bool = True" in _wheel_text(version, "models/loss.py")
        _ns(version, registry, **token)
        text = _refused(version, registry, **seq)
        assert "spec.algorithm.loss_aggregation" in text and "first supported in openrlhf 0.11.2" in text
    text = _refused(version, registry, algorithm={"loss_aggregation": "seq_mean_token_sum"})
    assert "never a mean of token sums" in text
