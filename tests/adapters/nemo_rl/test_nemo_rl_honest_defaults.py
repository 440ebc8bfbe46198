"""NeMo-RL: an unset spec field keeps the tag's own example config, and a native deletion is judged as Hydra does.

The merged config is the tag's real grpo_math_1B.yaml with the generated file over it (``merged``); native
overrides are applied by Hydra's own override machinery, the grammar NeMo-RL's run scripts use.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry
from rladapt.primitives import SpecError, validate_data

from .conftest import Tag, tag
from .test_nemo_rl_conformance import generated, merged

BASE: dict[str, Any] = {
    "apiVersion": "rladapt/v1alpha1",
    "kind": "RLJob",
    "metadata": {"name": "honest"},
    "spec": {
        "model": {"path": "Qwen/Qwen2.5-1.5B"},
        "algorithm": {"name": "grpo", "group_size": 4},
        "data": {"train": ["data/train.jsonl"]},
        "training": {"steps": 10, "global_batch": 32, "mini_batch": 8},
        "reward": {"model": {"path": "Skywork/Skywork-Reward-V2-Qwen3-0.6B"}},
        "placement": {
            "pools": [
                {"name": "main", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout"]},
                {"name": "rm", "nodes": 1, "gpus_per_node": 8, "roles": ["reward"]},
            ]
        },
    },
}


def render(registry: Registry, version: str, **spec: Any) -> NativeLaunch:
    data = copy.deepcopy(BASE)
    data["spec"].update(copy.deepcopy(spec))
    return render_native(validate_data(data, "<test>"), f"nemo-rl=={version}", registry).native


def base_value(t: Tag, key: str) -> Any:
    return OmegaConf.select(OmegaConf.create(t.base()), key)


@pytest.mark.parametrize("version", ["0.4.0", "0.5.0", "0.7.0"])
def test_unset_fields_keep_nemo_rl_s_own_config(version: str, registry: Registry) -> None:
    """Before: leave-one-out off, checkpointing.metric_name null (latest instead of best), max_input_seq_length
    at the prompt share, val_at_start, scheduler and weight decay all written for fields the user never set."""
    t = tag(version)
    native = render(registry, version)
    child = OmegaConf.create(generated(native))
    cfg = merged(native, t)
    for key in (
        "grpo.use_leave_one_out_baseline",
        "grpo.normalize_rewards",
        "checkpointing.metric_name",
        "checkpointing.keep_top_k",
        "grpo.val_at_start",
        "grpo.seed",
        "policy.scheduler",
        "policy.optimizer.kwargs.weight_decay",
        "policy.dtensor_cfg.activation_checkpointing",
    ):
        assert OmegaConf.select(child, key) is None, f"{key} written for an unset field"
        assert OmegaConf.select(cfg, key) == base_value(t, key), key
    assert OmegaConf.select(cfg, "grpo.use_leave_one_out_baseline") is True
    assert OmegaConf.select(cfg, "checkpointing.metric_name") not in (None, "")
    # the prompt filter is the whole sequence length (an interpolation upstream), as its launches have it
    assert OmegaConf.select(child, "data.max_input_seq_length") is None
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict)
    assert resolved["data"]["max_input_seq_length"] == resolved["policy"]["max_total_sequence_length"]


def test_explicit_values_still_reach_nemo_rl(registry: Registry) -> None:
    t = tag("0.5.0")
    native = render(
        registry,
        "0.5.0",
        algorithm={"name": "rloo", "group_size": 4},
        data={"train": ["data/train.jsonl"], "max_prompt_length": 256, "seed": 3},
        checkpoint={"keep_last": 2},
        eval={"before_training": False},
    )
    cfg = merged(native, t)
    assert OmegaConf.select(cfg, "grpo.use_leave_one_out_baseline") is True
    assert OmegaConf.select(cfg, "grpo.normalize_rewards") is False
    assert OmegaConf.select(cfg, "data.max_input_seq_length") == 256
    assert OmegaConf.select(cfg, "grpo.seed") == 3
    assert OmegaConf.select(cfg, "checkpointing.keep_top_k") == 2
    assert OmegaConf.select(cfg, "checkpointing.metric_name") is None  # keep_last: the newest, not the best
    assert OmegaConf.select(cfg, "grpo.val_at_start") is False


# --- bug: NeMo-RL 0.4.0 `~data.val_data_path` rendered, then refused by NeMo-RL's own loader -----------------


def hydra_apply(cfg: Any, override: str) -> None:
    """Apply one override as Hydra does (NeMo-RL's run scripts go through this grammar)."""
    parsed = OverridesParser.create().parse_overrides([override])
    ConfigLoaderImpl._apply_overrides_to_config(parsed, cfg)


def test_deleting_a_key_rladapt_writes_as_null_is_refused_like_hydra_does(registry: Registry) -> None:
    """Before: the render validated, and NeMo-RL failed at start with "Could not delete from config"."""
    t = tag("0.4.0")
    plain = render(registry, "0.4.0")
    assert generated(plain)["data"]["val_data_path"] is None
    with pytest.raises(ConfigCompositionException, match="Could not delete from config"):
        hydra_apply(merged(plain, t), "~data.val_data_path")
    with pytest.raises(SpecError) as info:
        render(registry, "0.4.0", native={"nemo-rl": ["~data.val_data_path"]})
    (problem,) = info.value.problems
    assert problem.path == "spec.native.nemo-rl[0]"
    assert "Could not delete from config" in problem.message
    assert "data.val_data_path: null" in problem.message
    assert problem.found == "~data.val_data_path"


def test_deleting_a_key_with_a_value_is_accepted_like_hydra_does(registry: Registry) -> None:
    t = tag("0.4.0")
    plain = render(registry, "0.4.0")
    cfg = merged(plain, t)
    hydra_apply(cfg, "~logger.tensorboard_enabled")  # Hydra deletes it
    assert "tensorboard_enabled" not in cfg.logger
    native = render(registry, "0.4.0", native={"nemo-rl": ["~logger.tensorboard_enabled"]})
    assert native.argv[-1] == "~logger.tensorboard_enabled"
    # `~key=value` deletes only when the value matches, in Hydra and in the check alike (rladapt renders true)
    with pytest.raises(ConfigCompositionException, match="Could not delete from config"):
        hydra_apply(merged(plain, t), "~logger.tensorboard_enabled=false")
    with pytest.raises(SpecError, match="Could not delete from config"):
        render(registry, "0.4.0", native={"nemo-rl": ["~logger.tensorboard_enabled=false"]})
