"""OpenRLHF: an unset spec field leaves OpenRLHF's own default, read by each pinned version's REAL parser."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rladapt.adapters.openrlhf.versions import dest, has_flag
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import validate_data

from .conftest import PINNED, parse_ok, real_parser

PPO: dict[str, Any] = {
    "apiVersion": "rladapt/v1alpha1",
    "kind": "RLJob",
    "metadata": {"name": "honest"},
    "spec": {
        "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
        "algorithm": {"name": "ppo", "kl": {"coef": 0.01, "in": "reward"}},
        "data": {"train": ["data/train.jsonl"]},
        "training": {"steps": 10, "global_batch": 64, "mini_batch": 16},
        "reward": {"model": {"path": "OpenRLHF/Llama-3-8b-rm-mixture"}},
        "placement": {
            "pools": [
                {"name": "main", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout", "ref"]},
                {"name": "side", "nodes": 1, "gpus_per_node": 8, "roles": ["critic", "reward"]},
            ]
        },
    },
}


def namespace(registry: Registry, version: str, **spec: Any) -> Any:
    data = copy.deepcopy(PPO)
    data["spec"].update(spec)
    native = render_native(validate_data(data, "<test>"), f"openrlhf=={version}", registry).native
    return parse_ok(version, native.argv[3:]), native


@pytest.mark.parametrize("version", PINNED)
def test_unset_fields_leave_openrlhf_s_own_defaults(version: str, registry: Registry) -> None:
    """Before the policy: k3 (k1 is OpenRLHF's), critic from the policy, l2 0.01, warmup ratio 0, entropy 0.0,
    max_new_tokens fixed, gradient checkpointing on, seed 42 were emitted for fields the user never wrote."""
    ns, native = namespace(registry, version)
    parser = real_parser(version)
    flats = ["l2", "lr_warmup_ratio", "critic_pretrain", "seed", "gradient_checkpointing"]
    flats += [f for f in ("kl_estimator", "use_kl_estimator_k3", "entropy_loss_coef", "max_new_tokens")]
    checked = 0
    for flat in flats:
        if not has_flag(version, flat):
            continue
        name = dest(version, flat)
        assert getattr(ns, name) == parser.get_default(name), f"{version} {name}"
        assert not any(token.split("=", 1)[0] == f"--{name}" for token in native.argv), name
        checked += 1
    assert checked >= 6
    # what those defaults are, where the issue measured them changing
    if has_flag(version, "kl_estimator"):
        assert getattr(ns, dest(version, "kl_estimator")) == "k1"
    assert getattr(ns, dest(version, "l2")) == 0.0
    assert getattr(ns, dest(version, "lr_warmup_ratio")) == pytest.approx(0.03)
    # critic_pretrain None: OpenRLHF itself then starts the critic from the reward model (after parsing)
    assert getattr(ns, dest(version, "critic_pretrain")) is None


@pytest.mark.parametrize("version", ["0.9.10", "0.11.2"])
def test_explicit_values_still_reach_openrlhf(version: str, registry: Registry) -> None:
    ns, _ = namespace(
        registry,
        version,
        model={
            "path": "Qwen/Qwen2.5-0.5B-Instruct",
            "critic_path": "Qwen/critic",
            "gradient_checkpointing": True,
        },
        algorithm={
            "name": "ppo",
            "kl": {"coef": 0.01, "in": "reward", "estimator": "k3"},
            "entropy_coef": 0.01,
        },
        data={"train": ["data/train.jsonl"], "seed": 7},
        training={
            "steps": 10,
            "global_batch": 64,
            "mini_batch": 16,
            "optimizer": {"warmup_steps": 0, "weight_decay": 0.01},
        },
        rollout={"max_tokens": 512},
    )
    assert getattr(ns, dest(version, "kl_estimator")) == "k3"
    assert getattr(ns, dest(version, "critic_pretrain")) == "Qwen/critic"
    assert getattr(ns, dest(version, "l2")) == pytest.approx(0.01)
    assert getattr(ns, dest(version, "lr_warmup_ratio")) == 0.0
    assert getattr(ns, dest(version, "entropy_loss_coef")) == pytest.approx(0.01)
    assert getattr(ns, dest(version, "max_new_tokens")) == 512
    assert getattr(ns, dest(version, "seed")) == 7
    assert getattr(ns, dest(version, "gradient_checkpointing")) is True
