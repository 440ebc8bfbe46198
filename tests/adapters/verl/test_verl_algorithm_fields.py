"""verl: GRPO's advantage variants, DAPO's switches, the loss aggregation and the dual clip reach the keys each
pinned version's code reads, and what no version computes is refused.

Every launch is composed with the real wheel's Hydra config; the key each value lands in is checked in the wheel's
source, so a verl release that stops reading one fails here instead of running with its default.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .test_verl_honest_defaults import ARR, composed, render, select


def _source(package: Path, relative: str) -> str:
    return (package / relative).read_text(encoding="utf-8")


def _reads(package: Path, text: str, *globs: str) -> bool:
    return any(text in path.read_text(encoding="utf-8") for g in globs for path in package.glob(g))


def test_std_dual_clip_and_loss_aggregation(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    native = render(
        registry,
        version,
        algorithm={
            "name": "grpo",
            "group_size": 4,
            "normalize_by_group_std": False,
            "loss_aggregation": "seq_mean_token_sum_norm",
            "clip": {"low": 0.2, "high": 0.28, "dual": 10.0},
        },
    )
    cfg = composed(native, version)
    assert select(cfg, "algorithm.adv_estimator") == "grpo"
    assert select(cfg, "algorithm.norm_adv_by_std_in_grpo") is False
    assert select(cfg, f"{ARR}.actor.clip_ratio_c") == 10.0
    assert select(cfg, f"{ARR}.actor.loss_agg_mode") == "seq-mean-token-sum-norm"
    # where the wheel reads them: the trainer passes the std switch to the grpo estimator, the actor the clip,
    # core_algos.agg_loss knows the mode by this spelling
    assert '"norm_adv_by_std_in_grpo", True' in _source(package, "trainer/ppo/ray_trainer.py")
    assert _reads(package, "clip_ratio_c", "workers/actor/dp_actor.py", "trainer/ppo/core_algos.py")
    assert 'loss_agg_mode == "seq-mean-token-sum-norm"' in _source(package, "trainer/ppo/core_algos.py")


def test_unset_fields_keep_verl_s_own(pinned: tuple[str, Path], registry: Registry) -> None:
    version, _ = pinned
    native = render(registry, version)
    emitted = " ".join(native.argv)
    for key in ("norm_adv_by_std_in_grpo", "clip_ratio_c", "loss_agg_mode", "filter_groups"):
        assert key not in emitted
    cfg = composed(native, version)
    assert select(cfg, f"{ARR}.actor.clip_ratio_c") == 3.0  # verl's dual clip is always on
    assert select(cfg, "algorithm.norm_adv_by_std_in_grpo") is True


def test_leave_one_out_without_std_is_verl_s_rloo(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    native = render(
        registry,
        version,
        algorithm={
            "name": "gspo" if Version(version) >= Version("0.6.1") else "grpo",
            "group_size": 4,
            "baseline": "leave_one_out",
            "normalize_by_group_std": False,
        },
    )
    cfg = composed(native, version)
    assert select(cfg, "algorithm.adv_estimator") == "rloo"
    assert native.origins["algorithm.adv_estimator"] == "spec.algorithm.baseline"
    # score minus the mean of the others' scores: the estimator registered as "rloo"
    core = _source(package, "trainer/ppo/core_algos.py")
    assert "def compute_rloo_outcome_advantage" in core
    assert "response_num / (response_num - 1)" in core


def test_leave_one_out_with_std_is_refused_with_the_reason(registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, "0.9.1", algorithm={"name": "grpo", "group_size": 4, "baseline": "leave_one_out"})
    text = str(err.value)
    assert "spec.algorithm.baseline" in text and "advantage.leave_one_out_std" in text
    assert "no verl estimator divides a leave-one-out advantage by the group std" in text


def test_dapo_dynamic_sampling_is_a_switch(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    dapo = {"name": "dapo", "group_size": 4, "clip": {"low": 0.2, "high": 0.28}}
    if Version(version) < Version("0.9.0"):
        with pytest.raises(SpecError) as err:
            render(registry, version, algorithm=dapo)
        text = str(err.value)
        assert "spec.algorithm.dynamic_sampling" in text and "first supported in verl 0.9.1" in text
        assert "false turns it off" in text
    else:
        cfg = composed(render(registry, version, algorithm=dapo), version)
        assert select(cfg, "algorithm.filter_groups.enable") is True
        # 0.9.1's default trainer (trainer.use_v1: true) reads algorithm.filter_groups
        assert select(cfg, "trainer.use_v1") is True
        assert 'self.config.algorithm.get("filter_groups"' in _source(
            package, "trainer/ppo/v1/trainer_base.py"
        )
    # an upstream DAPO without dynamic sampling: every version, the loss still DAPO's token mean
    native = render(registry, version, algorithm={**dapo, "dynamic_sampling": False})
    cfg = composed(native, version)
    assert select(cfg, f"{ARR}.actor.loss_agg_mode") == "token-mean"
    assert select(cfg, f"{ARR}.actor.clip_ratio_high") == 0.28
    if Version(version) >= Version("0.9.0"):
        assert select(cfg, "algorithm.filter_groups.enable") is False
    else:
        assert "filter_groups" not in " ".join(native.argv)


def test_dynamic_sampling_on_grpo(registry: Registry) -> None:
    native = render(registry, "0.9.1", algorithm={"name": "grpo", "group_size": 4, "dynamic_sampling": True})
    cfg = composed(native, "0.9.1")
    assert select(cfg, "algorithm.filter_groups.enable") is True
    assert native.origins["algorithm.filter_groups.enable"] == "spec.algorithm.dynamic_sampling"


@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
def test_import_maps_the_variants_to_spec_fields(registry: Registry, version: str) -> None:
    from rladapt.adapters.verl import importer as fw
    from rladapt.importing.importer import build
    from rladapt.importing.script import read_launch

    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
        f"data.train_files=t algorithm.norm_adv_by_std_in_grpo=false {ARR}.actor.clip_ratio_c=10.0 "
        f"{ARR}.actor.loss_agg_mode=seq-mean-token-sum-norm"
    )
    imported = build(
        fw, version, list(read_launch(text, "cmd", fw.match).argv), source="cmd", registry=registry
    )
    alg = imported.job.spec.algorithm
    assert (alg.name, alg.normalize_by_group_std, alg.clip.dual, alg.loss_aggregation) == (
        "grpo",
        False,
        10.0,
        "seq_mean_token_sum_norm",
    )
    mine = ("norm_adv_by_std", "clip_ratio_c", "loss_agg_mode")
    assert not any(key in item for item in imported.job.spec.native.get("verl", []) for key in mine)
    # verl's own values import as nothing (the spec stays null, the framework's own), except a loss aggregation
    # the launch writes out itself: the field holds it and renders it back, no spec.native item (issue 22)
    plain = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
        f"data.train_files=t {ARR}.actor.clip_ratio_c=3.0 {ARR}.actor.loss_agg_mode=token-mean"
    )
    own = build(fw, version, list(read_launch(plain, "cmd", fw.match).argv), source="cmd", registry=registry)
    alg = own.job.spec.algorithm
    assert (alg.normalize_by_group_std, alg.clip.dual, alg.loss_aggregation) == (None, None, "token_mean")
    assert not any("loss_agg_mode" in item for item in own.job.spec.native.get("verl", []))
