"""NeMo-RL import of the truncated IS correction (ClippedPGLossConfig) and of in-flight weight updates
(AsyncGRPOConfig): each launch round-trips (render(import(x)) has x's effective config) and lands in
spec.algorithm.off_policy_correction / spec.weight_sync.partial_rollout, not in native.

The tag's configs are the real upstream files, as in test_nemo_rl_import.
"""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.plugins import Registry, load_registry
from tests.adapters.nemo_rl.conftest import tag

from . import test_nemo_rl_import as imports

IS = "loss_fn.use_importance_sampling_correction=true loss_fn.truncated_importance_sampling"
#: name -> (tag, overrides on the tag's grpo_math_1B.yaml, the imported correction)
CORRECTIONS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "tis-0.4.0": ("0.4.0", f"{IS}_ratio=2.0", {"level": "token", "mode": "truncate", "max_ratio": 2.0}),
    "icepop-0.6.0": (
        "0.6.0",
        f"{IS}_ratio=5.0 loss_fn.truncated_importance_sampling_type=icepop "
        "loss_fn.truncated_importance_sampling_ratio_min=0.5",
        {"level": "token", "mode": "mask", "min_ratio": 0.5, "max_ratio": 5.0},
    ),
    "seq-mask-0.7.0": (
        "0.7.0",
        f"{IS}_ratio=1.002 loss_fn.truncated_importance_sampling_type=seq-mask-tis "
        "loss_fn.truncated_importance_sampling_ratio_min=0.999",
        {"level": "sequence_geometric_mean", "mode": "mask", "min_ratio": 0.999, "max_ratio": 1.002},
    ),
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"nemo-rl": "rladapt.adapters.nemo_rl"}, use_entry_points=False)


def _script(version: str) -> str:
    return "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"


@pytest.mark.parametrize("name", list(CORRECTIONS))
def test_correction_round_trips_into_its_field(
    name: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    version, items, want = CORRECTIONS[name]
    monkeypatch.chdir(tag(version).root)
    imported = imports._imported(registry, version, f"uv run python {_script(version)} {items}\n")
    assert imports._round_trip(registry, version, imported) == []
    spec = imports._spec(imported)
    assert spec["algorithm"]["off_policy_correction"] == want
    native = " ".join(spec.get("native", {}).get("nemo-rl", []))
    assert "importance_sampling" not in native, native


@pytest.mark.parametrize("version", ["0.4.0", "0.7.0"])
def test_in_flight_weight_updates_are_partial_rollout(
    version: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tag(version).root)
    text = (
        f"uv run python {_script(version)} cluster.num_nodes=3 cluster.gpus_per_node=8 "
        "policy.generation.colocated.enabled=false policy.generation.colocated.resources.num_nodes=1 "
        "policy.generation.colocated.resources.gpus_per_node=8 policy.generation.vllm_cfg.async_engine=true "
        "grpo.async_grpo.enabled=true grpo.async_grpo.max_trajectory_age_steps=2 "
        "grpo.async_grpo.in_flight_weight_updates=true loss_fn.use_importance_sampling_correction=true\n"
    )
    imported = imports._imported(registry, version, text)
    assert imports._round_trip(registry, version, imported) == []
    spec = imports._spec(imported)
    assert spec["weight_sync"] == {"max_staleness": 2, "partial_rollout": True}
    assert "in_flight" not in " ".join(spec.get("native", {}).get("nemo-rl", []))
