"""NeMo-RL import: CPU offload and sequence packing land in ``training.offload`` and ``training.pack_sequences``
(issue 12), and the round trip gives the launch's effective config back (the tag's real example configs)."""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.plugins import Registry, load_registry

from ..adapters.nemo_rl.conftest import tag
from .test_nemo_rl_import import _imported, _round_trip, _spec


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"nemo-rl": "rladapt.adapters.nemo_rl"}, use_entry_points=False)


CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "dtensor_offload": (
        "0.7.0",
        "policy.dtensor_cfg.cpu_offload=true",
        {"training.offload.actor": {"params": True, "optimizer": True}},
    ),
    "no_packing": ("0.5.0", "policy.sequence_packing.enabled=false", {"training.pack_sequences": False}),
    "megatron_optimizer_offload": (
        "0.7.0",
        "--config examples/configs/grpo_math_1B_megatron.yaml cluster.gpus_per_node=8 "
        "policy.megatron_cfg.optimizer.optimizer_cpu_offload=true "
        "policy.megatron_cfg.optimizer.optimizer_offload_fraction=1.0",
        {"training.offload.actor.optimizer": True},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_offload_and_packing_import_as_fields(
    name: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    version, items, expected = CASES[name]
    monkeypatch.chdir(tag(version).root)
    imported = _imported(registry, version, f"uv run python examples/run_grpo.py {items}\n")
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    for path, value in expected.items():
        node: Any = spec
        for part in path.split("."):
            node = node[part]
        assert node == value, path
    # the mapped settings are fields now, not native items
    native = spec.get("native", {}).get("nemo-rl", [])
    for item in items.split():
        if "offload" in item or "sequence_packing" in item:
            assert not [n for n in native if n.split("=")[0] == item.split("=")[0]], (item, native)
