"""verl: an unset spec field leaves verl's own default, and the two launch bugs found on real runs stay fixed.

Every launch is composed with the real verl wheel's Hydra config of its version (``verl_validate.compose``).
"""

from __future__ import annotations

import copy
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from rladapt.adapters.verl import validate as verl_validate
from rladapt.explain import explain_render
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry
from rladapt.primitives import SpecError, validate_data
from tests.support.wheels import download_wheel

from .conftest import verl_package

ARR = "actor_rollout_ref"
BASE: dict[str, Any] = {
    "apiVersion": "rladapt/v1alpha1",
    "kind": "RLJob",
    "metadata": {"name": "honest"},
    "spec": {
        "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
        "algorithm": {"name": "grpo", "group_size": 4},
        "data": {"train": ["data/train.parquet"]},
        "training": {"steps": 10, "global_batch": 64, "mini_batch": 16},
        "reward": {"function": {"path": "rewards/score.py"}},
    },
}


def job(**spec: Any) -> Any:
    data = copy.deepcopy(BASE)
    for path, value in spec.items():  # dotted paths below spec, e.g. training__backend
        node = data["spec"]
        *parents, leaf = path.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return validate_data(data, "<test>")


def composed(native: NativeLaunch, version: str) -> Any:
    return verl_validate.compose(verl_package(version), verl_validate.parse_argv(native.argv))


def select(cfg: Any, key: str) -> Any:
    value = OmegaConf.select(cfg, key, throw_on_missing=True)
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def render(registry: Registry, version: str, **spec: Any) -> NativeLaunch:
    return render_native(job(**spec), f"verl=={version}", registry).native


def test_unset_fields_leave_verl_s_own_defaults(pinned: tuple[str, Path], registry: Registry) -> None:
    """Before the policy: strategy fsdp2, data.seed 42, val_before_train false, lr_warmup_steps 0, rollout.mode
    async (on 0.5.0 and 0.6.1) were emitted for fields the user never wrote."""
    version, _ = pinned
    native = render(registry, version)
    cfg = composed(native, version)
    emitted = {item.split("=", 1)[0] for item in verl_validate.parse_argv(native.argv).overrides}
    own = {
        f"{ARR}.actor.strategy": "fsdp",
        "trainer.val_before_train": True,
        f"{ARR}.actor.optim.lr_warmup_steps": -1,
        f"{ARR}.actor.optim.weight_decay": 0.01,
        f"{ARR}.actor.entropy_coeff": 0,
        f"{ARR}.rollout.mode": "sync" if version in ("0.5.0", "0.6.1") else "async",
    }
    if version != "0.5.0":
        own["data.seed"] = None
    for key, value in own.items():
        assert key not in emitted, f"{key} emitted for an unset field"
        assert select(cfg, key) == value, key


def test_megatron_recompute_only_when_asked(registry: Registry) -> None:
    version = "0.7.1"
    unset = composed(render(registry, version, training__backend="megatron"), version)
    otc = f"{ARR}.actor.megatron.override_transformer_config"
    assert select(unset, otc).get("recompute_granularity") is None
    asked = composed(
        render(registry, version, training__backend="megatron", model__gradient_checkpointing=True), version
    )
    assert select(asked, f"{otc}.recompute_granularity") == "full"


def test_explicit_values_still_reach_verl(registry: Registry) -> None:
    version = "0.7.1"
    native = render(
        registry,
        version,
        training__backend="fsdp2",
        data__seed=7,
        eval__before_training=False,
        training__optimizer={"warmup_steps": 5, "weight_decay": 0.0},
        rollout__mode="async",
        algorithm={"name": "grpo", "group_size": 4, "entropy_coef": 0.001},
    )
    cfg = composed(native, version)
    assert select(cfg, f"{ARR}.actor.strategy") == "fsdp2"
    assert select(cfg, "data.seed") == 7
    assert select(cfg, "trainer.val_before_train") is False
    assert select(cfg, f"{ARR}.actor.optim.lr_warmup_steps") == 5
    assert select(cfg, f"{ARR}.actor.optim.weight_decay") == 0.0
    assert f"{ARR}.rollout.mode=async" in native.argv
    assert select(cfg, f"{ARR}.actor.entropy_coeff") == pytest.approx(0.001)


# --- bug: verl 0.7.1 native lr_warmup_steps_ratio silently ignored ------------------------------------------

RATIO = f"{ARR}.actor.optim.lr_warmup_steps_ratio=0.1"


def test_native_warmup_ratio_applies_when_warmup_is_unset(registry: Registry) -> None:
    """Before: rladapt emitted lr_warmup_steps=0, and verl reads the ratio only while the steps are < 0."""
    version = "0.7.1"
    cfg = composed(render(registry, version, native={"verl": [RATIO]}), version)
    assert select(cfg, f"{ARR}.actor.optim.lr_warmup_steps") == -1
    assert select(cfg, f"{ARR}.actor.optim.lr_warmup_steps_ratio") == pytest.approx(0.1)


def test_native_warmup_ratio_beside_warmup_steps_is_refused(registry: Registry) -> None:
    with pytest.raises(SpecError) as info:
        render(registry, "0.7.1", training__optimizer={"warmup_steps": 0}, native={"verl": [RATIO]})
    (problem,) = info.value.problems
    assert problem.path == "spec.native.verl[0]"
    assert "silently ignored" in problem.message and "lr_warmup_steps < 0" in problem.message
    assert "spec.training.optimizer.warmup_steps" in problem.message and problem.found == RATIO
    # a native lr_warmup_steps < 0 given with it makes the ratio live again
    native = render(
        registry,
        "0.7.1",
        training__optimizer={"warmup_steps": 0},
        native={"verl": [f"{ARR}.actor.optim.lr_warmup_steps=-1", RATIO]},
    )
    assert RATIO in native.argv


def test_the_ratio_rule_is_verl_s_own() -> None:
    """The rule cited beside READ_ONLY_WHEN, read in each wheel: the ratio is used only under ``< 0``."""
    for version in ("0.5.0", "0.6.1", "0.7.1"):
        with zipfile.ZipFile(download_wheel("verl", version)) as wheel:
            source = wheel.read("verl/workers/fsdp_workers.py").decode()
        guarded = re.findall(r"if num_warmup_steps < 0:\n\s+num_warmup_steps_ratio = ", source)
        assert len(guarded) == 2, version  # actor and critic


# --- bug: verl 0.5.0 / 0.6.1 async rollout without data.return_raw_chat ---------------------------------------


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_async_rollout_gets_the_raw_chat_its_agent_loop_reads(version: str, registry: Registry) -> None:
    """Before: mode async was emitted alone; verl's dataset then has no raw_prompt and the agent loop fails."""
    native = render(registry, version, rollout__mode="async")
    cfg = composed(native, version)
    assert select(cfg, f"{ARR}.rollout.mode") == "async"
    assert select(cfg, "data.return_raw_chat") is True
    explained = {
        e.key: e
        for e in explain_render(render_native(job(rollout__mode="async"), f"verl=={version}", registry))
    }
    assert explained["data.return_raw_chat"].origin == "spec.rollout.mode"


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_the_raw_chat_fact_is_in_the_wheel(version: str) -> None:
    with zipfile.ZipFile(download_wheel("verl", version)) as wheel:
        names = set(wheel.namelist())
        dataset = wheel.read("verl/utils/dataset/rl_dataset.py").decode()
        loops = [
            wheel.read(n).decode()
            for n in names
            if n.startswith("verl/experimental/agent_loop/") and n.endswith(".py")
        ]
    assert 'config.get("return_raw_chat", False)' in dataset
    assert re.search(r"if self\.return_raw_chat:\n\s+row_dict\[\"raw_prompt\"\]", dataset)
    assert any('["raw_prompt"]' in text for text in loops)


def test_sync_or_unset_rollout_on_0_6_1_does_not_ask_for_raw_chat(registry: Registry) -> None:
    for spec in ({}, {"rollout__mode": "sync"}):
        overrides = verl_validate.parse_argv(render(registry, "0.6.1", **spec).argv).overrides
        assert not any(item.startswith("data.return_raw_chat") for item in overrides)
    # from 0.7.1 verl's own default is true: nothing to add
    overrides = verl_validate.parse_argv(render(registry, "0.7.1", rollout__mode="async").argv).overrides
    assert not any(item.startswith("data.return_raw_chat") for item in overrides)
