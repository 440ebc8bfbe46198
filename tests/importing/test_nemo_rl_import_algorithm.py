"""NeMo-RL import of GRPO's baseline and std, the loss aggregation, the dual clip and DAPO's overlong shaping:
each launch round-trips (render(import(x)) has x's effective config) and lands in the spec field, not in native.

The tag's configs are the real upstream files, as in test_nemo_rl_import.
"""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.plugins import Registry, load_registry
from tests.adapters.nemo_rl.conftest import tag

from .test_nemo_rl_import import _imported, _round_trip, _spec

#: name -> (tag, overrides on the tag's grpo_math_1B.yaml, expected spec values by dotted path)
VARIANTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "group_mean_no_std": (
        "0.7.0",
        "grpo.use_leave_one_out_baseline=false grpo.normalize_rewards=false",
        {"algorithm.baseline": "group_mean", "algorithm.normalize_by_group_std": False},
    ),
    "dual_clip_seq_mean": (
        "0.4.0",
        "loss_fn.ratio_clip_c=10.0 loss_fn.token_level_loss=false",
        {"algorithm.clip.dual": 10.0, "algorithm.loss_aggregation": "seq_mean_token_mean"},
    ),
    "dapo_with_shaping": (
        "0.7.0",
        "grpo.use_dynamic_sampling=true loss_fn.ratio_clip_max=0.28 grpo.reward_shaping.enabled=true "
        "grpo.reward_shaping.overlong_buffer_length=64 grpo.reward_shaping.overlong_buffer_penalty=0.5 "
        "grpo.reward_shaping.max_response_length=768 policy.max_total_sequence_length=1024 "
        "data.max_input_seq_length=256 policy.generation.max_new_tokens=768",
        {"algorithm.name": "dapo", "reward.overlong_penalty": {"buffer_tokens": 64, "max_penalty": 0.5}},
    ),
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"nemo-rl": "rladapt.adapters.nemo_rl"}, use_entry_points=False)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_round_trips_into_its_field(
    name: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    version, items, expected = VARIANTS[name]
    monkeypatch.chdir(tag(version).root)
    script = "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"
    imported = _imported(registry, version, f"uv run python {script} {items}\n")
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    for path, value in expected.items():
        node: Any = spec
        for part in path.split("."):
            node = node[part]
        assert node == value, path
    native = " ".join(spec.get("native", {}).get("nemo-rl", []))
    for key in ("leave_one_out", "normalize_rewards", "ratio_clip_c", "token_level_loss", "reward_shaping"):
        assert key not in native, (key, native)
