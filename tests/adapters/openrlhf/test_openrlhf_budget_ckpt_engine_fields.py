"""OpenRLHF: per-role batch budgets, best-checkpoint retention and the rollout engine settings parse to the flags
each pinned version's code reads, and what OpenRLHF cannot split or choose is refused.

Parsed by each version's REAL parser (built from its train_ppo_ray.py); where the flag is read is checked in the
wheel's source, so a release that moves the read fails here.
"""

from __future__ import annotations

import copy
import zipfile
from typing import Any

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf.versions import dest, has_flag
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import SpecError, validate_data

from .conftest import PINNED, parse_ok, wheel
from .test_openrlhf_honest_defaults import PPO

DYNAMIC = [v for v in PINNED if has_flag(v, "use_dynamic_batch")]


def _job(**spec: Any) -> Any:
    data = copy.deepcopy(PPO)
    for section, value in spec.items():  # training and checkpoint are added to, other sections replaced
        if section in ("training", "checkpoint"):
            data["spec"].setdefault(section, {}).update(value)
        else:
            data["spec"][section] = value
    return validate_data(data, "<test>")


def _render(version: str, registry: Registry, **spec: Any) -> Any:
    return render_native(_job(**spec), f"openrlhf=={version}", registry).native


def _source(version: str, suffix: str) -> str:
    with zipfile.ZipFile(wheel(version)) as whl:
        return "".join(whl.read(n).decode("utf-8", "replace") for n in whl.namelist() if n.endswith(suffix))


@pytest.mark.parametrize("version", DYNAMIC)
def test_forward_budgets_are_the_rollout_micro_batch_and_token_cap(version: str, registry: Registry) -> None:
    training = {
        "dynamic_batch": {"enabled": True, "max_tokens_per_gpu": 6000},
        "budgets": {
            "old_log_prob": {"micro_batch_per_gpu": 8, "max_tokens_per_gpu": 24000},
            "ref_log_prob": {"micro_batch_per_gpu": 8},  # agrees: one flag serves both
        },
    }
    ns = parse_ok(version, _render(version, registry, training=training).argv[3:])
    assert getattr(ns, dest(version, "micro_rollout_batch_size")) == 8
    assert getattr(ns, dest(version, "rollout_max_tokens_per_gpu")) == 24000
    assert getattr(ns, dest(version, "micro_train_batch_size")) == 2  # the actor update keeps its own
    assert getattr(ns, dest(version, "train_max_tokens_per_gpu")) == 6000
    # experience making splits every model's forward by these two (trainer/ppo_utils/experience_maker.py)
    maker = _source(version, "trainer/ppo_utils/experience_maker.py")
    assert dest(version, "micro_rollout_batch_size") in maker
    assert dest(version, "rollout_max_tokens_per_gpu") in maker


@pytest.mark.parametrize(
    ("budgets", "field"),
    [
        (
            {"ref_log_prob": {"micro_batch_per_gpu": 16}},
            "spec.training.budgets.ref_log_prob.micro_batch_per_gpu",
        ),
        (
            {"critic_values": {"micro_batch_per_gpu": 4}},
            "spec.training.budgets.critic_values.micro_batch_per_gpu",
        ),
        (
            {"critic_update": {"micro_batch_per_gpu": 4}},
            "spec.training.budgets.critic_update.micro_batch_per_gpu",
        ),
    ],
)
def test_a_budget_openrlhf_shares_cannot_differ(
    budgets: dict[str, Any], field: str, registry: Registry
) -> None:
    with pytest.raises(SpecError) as err:
        _render("0.11.2", registry, training={"budgets": budgets})
    assert field in str(err.value) and "serve" in str(err.value)


@pytest.mark.parametrize("version", PINNED)
def test_engine_settings_reach_the_vllm_flags(version: str, registry: Registry) -> None:
    engine = {"enforce_eager": True, "free_cache_between_phases": True, "load_weights_from_disk": True}
    native = _render(version, registry, rollout={"engine_settings": engine})
    ns = parse_ok(version, native.argv[3:])
    assert getattr(ns, dest(version, "enforce_eager")) is True
    assert getattr(ns, dest(version, "vllm_enable_sleep")) is True
    assert any("always load the model from disk" in note for note in native.notes)
    engine_code = _source(version, "trainer/ray/vllm_engine.py")
    assert "enforce_eager" in engine_code and "enable_sleep_mode" in engine_code
    assert "load_format" not in engine_code  # vLLM's own "auto": the weights come from disk


def test_free_cache_false_turns_the_hybrid_engines_sleep_off(registry: Registry) -> None:
    colocated = {"pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout"]}]}
    spec: dict[str, Any] = {
        "placement": colocated,
        "algorithm": {"name": "grpo", "group_size": 4},
        "reward": {"function": {"path": "rewards/score.py"}},
    }
    assert (
        getattr(parse_ok("0.11.2", _render("0.11.2", registry, **spec).argv[3:]), "vllm.enable_sleep") is True
    )
    spec["rollout"] = {"engine_settings": {"free_cache_between_phases": False}}
    assert (
        getattr(parse_ok("0.11.2", _render("0.11.2", registry, **spec).argv[3:]), "vllm.enable_sleep")
        is False
    )


@pytest.mark.parametrize(
    ("engine", "reason"),
    [
        ({"chunked_prefill": True}, "no chunked-prefill setting"),
        ({"max_batched_tokens": 8192}, "no max_num_batched_tokens"),
        ({"layered_weight_sync": True}, "no layered mode"),
        ({"load_weights_from_disk": False}, "always load the model"),
    ],
)
def test_engine_settings_openrlhf_lacks_are_refused(
    engine: dict[str, Any], reason: str, registry: Registry
) -> None:
    with pytest.raises(SpecError, match=reason):
        _render("0.11.2", registry, rollout={"engine_settings": engine})


@pytest.mark.parametrize("version", PINNED)
def test_keep_best_is_the_best_metric_key(version: str, registry: Registry) -> None:
    checkpoint = {"keep_best": {"metric": "eval_math_pass1"}}
    if Version(version) < Version("0.9.10"):
        with pytest.raises(SpecError, match="0.9.10"):
            _render(version, registry, checkpoint=checkpoint)
        return
    native = _render(version, registry, checkpoint=checkpoint)
    assert getattr(parse_ok(version, native.argv[3:]), dest(version, "best_metric_key")) == "eval_math_pass1"
    trainer = _source(version, "trainer/ppo_trainer.py")
    assert "best_metric_key" in trainer and "current_value > self.best_eval_metric_value" in trainer


@pytest.mark.parametrize(
    ("best", "field"),
    [({"count": 2}, "keep_best.count"), ({"higher_is_better": False}, "keep_best.higher_is_better")],
)
def test_keep_best_beyond_one_higher_checkpoint_is_refused(
    best: dict[str, Any], field: str, registry: Registry
) -> None:
    with pytest.raises(SpecError, match=field):
        _render("0.11.2", registry, checkpoint={"keep_best": {"metric": "eval_math_pass1", **best}})


def test_never_saving_is_refused_because_the_final_model_is_always_saved(registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        _render("0.11.2", registry, checkpoint={"enabled": False})
    assert "spec.checkpoint.enabled" in str(err.value) and "always saves the final model" in str(err.value)
    assert "async_save_model()" in _source("0.11.2", "cli/train_ppo_ray.py")


def test_critic_values_following_old_log_prob_is_noted(registry: Registry) -> None:
    native = _render("0.11.2", registry, training={"budgets": {"old_log_prob": {"micro_batch_per_gpu": 8}}})
    assert any("critic's values in old_log_prob's micro batches" in note for note in native.notes)
