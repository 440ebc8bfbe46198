"""NeMo-RL import of the log-prob budget, best-checkpoint retention, never saving and the vLLM engine settings:
the launch script of test_nemo_rl_import with these keys set lands in the spec fields and round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.plugins import Registry

from .test_nemo_rl_import import _imported, _round_trip, _spec, checkout, registry, script

__all__ = ["checkout", "registry"]  # fixtures, used by name

EXTRA = (
    "policy.logprob_batch_size=8 checkpointing.metric_name=val:accuracy checkpointing.keep_top_k=4 "
    "checkpointing.higher_is_better=false policy.generation.vllm_cfg.enforce_eager=true "
    "++policy.generation.vllm_kwargs.max_num_batched_tokens=12288 "
    "++policy.generation.vllm_kwargs.enable_chunked_prefill=false"
)


@pytest.mark.parametrize("checkout", ["0.4.0", "0.7.0"], indirect=True)
def test_budget_keep_best_and_engine_settings_land_in_spec_fields(checkout: Path, registry: Registry) -> None:
    version = checkout.name.removeprefix("v")
    imported = _imported(registry, version, script(version, EXTRA))
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    assert spec["training"]["budgets"] == {"old_log_prob": {"micro_batch_per_gpu": 8}}
    ck = spec["checkpoint"]
    assert ck["keep_best"] == {"metric": "val:accuracy", "higher_is_better": False, "count": 4}
    assert "keep_last" not in ck
    assert spec["rollout"]["engine_settings"] == {
        "enforce_eager": True,
        "chunked_prefill": False,
        "max_batched_tokens": 12288,
    }
    residue = " ".join(spec.get("native", {}).get("nemo-rl", []))
    for key in ("logprob_batch_size", "metric_name", "keep_top_k", "enforce_eager", "vllm_kwargs"):
        assert key not in residue, residue


@pytest.mark.parametrize("checkout", ["0.7.0"], indirect=True)
def test_checkpointing_disabled_imports_as_never_saving(checkout: Path, registry: Registry) -> None:
    imported = _imported(registry, "0.7.0", script("0.7.0", "checkpointing.enabled=false"))
    assert _round_trip(registry, "0.7.0", imported) == []
    ck = _spec(imported)["checkpoint"]
    assert ck["enabled"] is False
    assert not {"every_steps", "keep_last", "save_hf"} & set(ck)


@pytest.mark.parametrize("checkout", ["0.4.0", "0.7.0"], indirect=True)
def test_a_turn_cap_lands_in_multi_turn(checkout: Path, registry: Registry) -> None:
    version = checkout.name.removeprefix("v")
    imported = _imported(registry, version, script(version, "grpo.max_rollout_turns=4"))
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    assert spec["rollout"]["multi_turn"] == {"max_assistant_turns": 4}
    assert "max_rollout_turns" not in " ".join(spec.get("native", {}).get("nemo-rl", []))
