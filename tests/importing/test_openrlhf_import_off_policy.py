"""rladapt import of OpenRLHF's rollout IS correction and partial rollout flags: each pinned spelling lands in
spec.algorithm.off_policy_correction / spec.weight_sync.partial_rollout, nothing of it is left native, and the
imported spec renders the launch's own namespace back (rladapt's model and OpenRLHF's own parser)."""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.adapters.openrlhf.versions import option
from rladapt.plugins import Registry, load_registry

from . import test_openrlhf_import as imports


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"openrlhf": "rladapt.adapters.openrlhf"}, use_entry_points=False)


#: version -> (flags after the PPO launch, the correction they import as)
CASES: dict[str, tuple[list[tuple[str, str | None]], dict[str, Any]]] = {
    "0.8.11": (
        [("enable_vllm_is_correction", None), ("vllm_is_truncated_threshold", "3.0")],
        {"level": "token", "mode": "truncate", "min_ratio": None, "max_ratio": 3.0},
    ),
    "0.9.10": (
        [("enable_vllm_is_correction", None), ("vllm_is_correction_type", "icepop")],  # default band 0.5 5.0
        {"level": "token", "mode": "mask", "min_ratio": 0.5, "max_ratio": 5.0},
    ),
    "0.10.2": (
        [
            ("enable_vllm_is_correction", None),
            ("vllm_is_correction_type", "tis"),
            ("vllm_is_truncated_threshold", "0.8 2.0"),
        ],
        {"level": "token", "mode": "truncate", "min_ratio": 0.8, "max_ratio": 2.0},
    ),
    "0.11.2": (
        [
            ("is_correction_level", "seq"),
            ("is_correction_mode", "mask"),
            ("vllm_is_truncated_threshold", "0.9 1.1"),
        ],
        {"level": "sequence_geometric_mean", "mode": "mask", "min_ratio": 0.9, "max_ratio": 1.1},
    ),
}


def _launch(version: str, extra: list[tuple[str, str | None]]) -> str:
    base = (
        (imports.PPO_DOTTED if version in ("0.10.2", "0.11.2") else imports.PPO)
        .rstrip()
        .rstrip("\\")
        .rstrip()
    )
    if version == "0.8.11":  # no queue depth before 0.9.1, no --param_dtype before 0.9.2
        base = base.replace(" --async_queue_size 2", "").replace("--param_dtype bf16", "--bf16")
    flags = " ".join(
        f"{option(version, flat)}{'' if value is None else ' ' + value}" for flat, value in extra
    )
    return f"{base} {flags}\n"


@pytest.mark.parametrize("version", sorted(CASES))
def test_correction_imports_and_round_trips(registry: Registry, version: str) -> None:
    extra, want = CASES[version]
    text = _launch(version, extra)
    imports.test_offline_namespace_is_openrlhfs_own(text, version)
    imports.test_round_trip_gives_the_launchs_namespace(registry, text, version)
    _, imported = imports._imported(registry, text, version)
    corr = imported.job.spec.algorithm.off_policy_correction
    assert corr is not None and corr.model_dump() == want
    native = " ".join(imported.job.spec.native.get("openrlhf", []))
    assert "is_correction" not in native and "vllm_is" not in native


@pytest.mark.parametrize("version", ["0.9.10", "0.11.2"])
def test_partial_rollout_imports_and_round_trips(registry: Registry, version: str) -> None:
    text = _launch(version, [("partial_rollout", None)])
    imports.test_round_trip_gives_the_launchs_namespace(registry, text, version)
    _, imported = imports._imported(registry, text, version)
    ws = imported.job.spec.weight_sync
    assert (ws.max_staleness, ws.partial_rollout) == (2, True)
    assert "partial_rollout" not in " ".join(imported.job.spec.native.get("openrlhf", []))
