"""verl: per-role batch budgets, never-saving checkpoints and the rollout engine settings reach the keys each
pinned version's own code reads.

Every launch is composed with the real wheel's Hydra config; which key a version reads is checked in the wheel's
source, so a verl release that renames one fails here instead of running with its default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .test_verl_honest_defaults import ARR, composed, render, select

ROLLOUT_CODE = ("workers/rollout/**/*.py", "workers/sharding_manager/*.py")
PPO_TRAINING = {"steps": 10, "global_batch": 64, "mini_batch": 16, "micro_batch_per_gpu": 2}


def _reads(
    package: Path, text: str, where: tuple[str, ...] = ("workers/**/*.py", "trainer/ppo/*.py")
) -> bool:
    return any(
        text in path.read_text(encoding="utf-8") for pattern in where for path in package.glob(pattern)
    )


def test_every_pass_gets_its_own_budget(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    budgets = {
        "old_log_prob": {"micro_batch_per_gpu": 8, "max_tokens_per_gpu": 24000},
        "ref_log_prob": {"micro_batch_per_gpu": 16, "max_tokens_per_gpu": 32000},
        "critic_update": {"micro_batch_per_gpu": 4, "max_tokens_per_gpu": 12000},
        "critic_values": {"micro_batch_per_gpu": 32, "max_tokens_per_gpu": 48000},
    }
    training = {
        **PPO_TRAINING,
        "dynamic_batch": {"enabled": True, "max_tokens_per_gpu": 6000},
        "budgets": budgets,
    }
    cfg = composed(render(registry, version, algorithm={"name": "ppo"}, training=training), version)
    expected = {
        f"{ARR}.actor.ppo_micro_batch_size_per_gpu": 2,
        f"{ARR}.actor.ppo_max_token_len_per_gpu": 6000,
        f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu": 8,
        f"{ARR}.rollout.log_prob_max_token_len_per_gpu": 24000,
        f"{ARR}.ref.log_prob_micro_batch_size_per_gpu": 16,
        f"{ARR}.ref.log_prob_max_token_len_per_gpu": 32000,
        "critic.ppo_micro_batch_size_per_gpu": 4,
        "critic.ppo_max_token_len_per_gpu": 12000,
        "critic.forward_micro_batch_size_per_gpu": 32,
        "critic.forward_max_token_len_per_gpu": 48000,
    }
    assert {key: select(cfg, key) for key in expected} == expected
    # the workers read these per-role keys (fsdp_workers.py / dp_critic.py of the wheel)
    for attribute in (
        "log_prob_micro_batch_size_per_gpu",
        "log_prob_max_token_len_per_gpu",
        "forward_micro_batch_size_per_gpu",
        "forward_max_token_len_per_gpu",
    ):
        assert _reads(package, attribute), f"verl {version} reads no {attribute}"


def test_unset_budgets_follow_the_actor_and_each_other(pinned: tuple[str, Path], registry: Registry) -> None:
    version, _ = pinned
    training = {
        **PPO_TRAINING,
        "dynamic_batch": {"enabled": True, "max_tokens_per_gpu": 6000},
        "budgets": {"old_log_prob": {"micro_batch_per_gpu": 8, "max_tokens_per_gpu": 24000}},
    }
    cfg = composed(render(registry, version, algorithm={"name": "ppo"}, training=training), version)
    # the reference follows old_log_prob; the critic's values follow its update (verl's own ${.ppo_*})
    assert select(cfg, f"{ARR}.ref.log_prob_micro_batch_size_per_gpu") == 8
    assert select(cfg, f"{ARR}.ref.log_prob_max_token_len_per_gpu") == 24000
    assert select(cfg, "critic.ppo_micro_batch_size_per_gpu") == 2
    assert select(cfg, "critic.ppo_max_token_len_per_gpu") == 12000
    assert select(cfg, "critic.forward_micro_batch_size_per_gpu") == 2
    assert select(cfg, "critic.forward_max_token_len_per_gpu") == 12000


def test_a_token_cap_without_dynamic_batching_is_an_error(registry: Registry) -> None:
    with pytest.raises(
        SpecError, match="budgets.ref_log_prob.max_tokens_per_gpu needs dynamic_batch.enabled"
    ):
        render(
            registry,
            "0.9.1",
            training={**PPO_TRAINING, "budgets": {"ref_log_prob": {"max_tokens_per_gpu": 9}}},
        )


def test_a_critic_budget_without_a_critic_is_an_error(registry: Registry) -> None:
    with pytest.raises(SpecError, match="algorithm grpo has no critic"):
        render(
            registry,
            "0.9.1",
            training={**PPO_TRAINING, "budgets": {"critic_values": {"micro_batch_per_gpu": 4}}},
        )


ENGINE = {
    "enforce_eager": True,
    "chunked_prefill": False,
    "max_batched_tokens": 12288,
    "free_cache_between_phases": False,
    "load_weights_from_disk": True,
    "layered_weight_sync": True,
}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engine_settings_reach_the_rollout_config(
    pinned: tuple[str, Path], registry: Registry, engine: str
) -> None:
    version, package = pinned
    cfg = composed(render(registry, version, rollout={"engine": engine, "engine_settings": ENGINE}), version)
    r = f"{ARR}.rollout"
    assert select(cfg, f"{r}.enforce_eager") is True
    assert select(cfg, f"{r}.enable_chunked_prefill") is False
    assert select(cfg, f"{r}.max_num_batched_tokens") == 12288
    assert select(cfg, f"{r}.free_cache_engine") is False
    assert select(cfg, f"{r}.load_format") == "safetensors"
    assert select(cfg, f"{r}.layered_summon") is True
    for attribute in (
        "enforce_eager",
        "enable_chunked_prefill",
        "max_num_batched_tokens",
        "free_cache_engine",
    ):
        # read as self.config.<key> or config.get("<key>") by the rollouts and sharding managers
        assert _reads(package, attribute, ROLLOUT_CODE), f"verl {version} reads no rollout.{attribute}"
    assert _reads(package, "load_format") and _reads(package, '"layered_summon"')


# 0.5.0 spells its placeholder per backend (dummy_dtensor / dummy_megatron), 0.6.1+ one "dummy"
@pytest.mark.parametrize(("version", "backend"), [("0.5.0", None), ("0.5.0", "megatron"), ("0.9.1", None)])
def test_placeholder_weights_use_the_versions_own_dummy_format(
    registry: Registry, version: str, backend: str | None
) -> None:
    """false is verl's own behaviour, spelt as the version's default of the config this job composes."""
    training = {
        "steps": 10,
        "global_batch": 64,
        "mini_batch": 16,
        **({"backend": backend} if backend else {}),
    }
    own = select(
        composed(render(registry, version, training=training), version), f"{ARR}.rollout.load_format"
    )
    native = render(
        registry, version, training=training, rollout={"engine_settings": {"load_weights_from_disk": False}}
    )
    assert f"{ARR}.rollout.load_format={own}" in native.argv
    assert own.startswith("dummy")


def test_engine_settings_with_the_hf_rollout_are_refused(registry: Registry) -> None:
    with pytest.raises(SpecError, match="spec.rollout.engine_settings.enforce_eager"):
        render(registry, "0.5.0", rollout={"engine": "hf", "engine_settings": {"enforce_eager": True}})


def test_never_saving_is_save_freq_minus_one(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    cfg = composed(render(registry, version, checkpoint={"enabled": False}), version)
    assert select(cfg, "trainer.save_freq") == -1
    assert _reads(package, "self.config.trainer.save_freq > 0", ("trainer/ppo/ray_trainer.py",))


def test_keep_best_is_refused_with_the_reason(registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, "0.9.1", checkpoint={"keep_best": {"metric": "val-core/acc", "count": 2}})
    assert "spec.checkpoint.keep_best" in str(err.value) and "use checkpoint.keep_last" in str(err.value)


@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
def test_import_maps_budgets_engine_settings_and_never_saving(registry: Registry, version: str) -> None:
    r = f"{ARR}.rollout"
    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {r}.n=4 {ARR}.model.path=m "
        f"data.train_files=t {ARR}.actor.ppo_micro_batch_size_per_gpu=2 {r}.log_prob_micro_batch_size_per_gpu=8 "
        f"{ARR}.ref.log_prob_micro_batch_size_per_gpu=16 {r}.max_num_batched_tokens=12288 "
        f"{r}.layered_summon=true {r}.load_format=safetensors trainer.save_freq=-1"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    spec = imported.job.spec
    assert spec.training.budgets.old_log_prob.micro_batch_per_gpu == 8
    assert spec.training.budgets.ref_log_prob.micro_batch_per_gpu == 16
    eng = spec.rollout.engine_settings
    assert (eng.max_batched_tokens, eng.layered_weight_sync, eng.load_weights_from_disk) == (
        12288,
        True,
        True,
    )
    assert spec.checkpoint.enabled is False
    residue = " ".join(spec.native.get("verl", []))
    for key in ("log_prob_micro", "max_num_batched", "layered_summon", "load_format", "save_freq"):
        assert key not in residue, residue
