"""``rladapt matrix onboard`` on real releases, offline: two pinned versions, the newer one treated as new.

The wheels are the cached real ones (``tests.support.wheels``); the report must find the changes the adapters
already know about: verl's ``reward_model.*`` -> ``reward.*`` at 0.7.1 and OpenRLHF's flag renames at 0.10.2
(``rladapt.adapters.openrlhf.versions.DOTTED``). Before this change there was no ``matrix onboard``: every test here
fails on the code before it (click: "No such command 'onboard'", exit 2, no JSON).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from rladapt import compat
from rladapt.adapters.openrlhf.versions import DOTTED
from tests.support.wheels import REPO, download_wheel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUNDLED = REPO / "rladapt" / "compat" / "matrix" / "snapshots"


def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def onboard(framework: str, new: str, old: str, out: Path, *extra: str) -> dict[str, Any]:
    res = rladapt(
        "matrix",
        "onboard",
        "-f",
        f"{framework}=={new}",
        "--source",
        str(download_wheel(framework, new)),
        "--against-source",
        str(download_wheel(framework, old)),
        "-o",
        str(out),
        "--format",
        "json",
        *extra,
    )
    assert res.returncode == 0, res.stderr
    report: dict[str, Any] = json.loads(res.stdout)
    return report


def matrix_pins(framework: str, version: str) -> dict[str, str]:
    entry = next(e for e in compat.pinned(framework) if e.version == version)
    return dict(entry.tested_with)


@pytest.mark.conformance
def test_verl_0_7_1_against_0_6_1_finds_reward_model_moved_to_reward(tmp_path: Path) -> None:
    report = onboard("verl", "0.7.1", "0.6.1", tmp_path)
    assert report["against"] == "0.6.1"  # the newest pinned version older than 0.7.1
    schema = report["schema"]
    assert {"old": "reward_model", "new": "reward", "keys": 3} in schema["moved_sections"]
    assert {
        "old": "reward_model.sandbox_fusion.url",
        "new": "reward.sandbox_fusion.url",
        "why": "moved",
    } in schema["renamed"]
    assert "reward_model.micro_batch_size_per_gpu" in schema["removed"]
    assert "reward.reward_model.enable" in schema["added"]
    # what the adapter emits for the shipped examples on 0.6.1 that 0.7.1 no longer has
    gone = {g["key"]: g for g in report["emitted_keys_gone"]}
    assert gone["reward_model.micro_batch_size_per_gpu"]["where"] == "spec.reward.model.micro_batch_per_gpu"
    assert gone["reward_model.micro_batch_size_per_gpu"]["examples"] == ["ppo-critic-rm.yaml"]
    # the separate-pool example cannot render on 0.6.1 at all: said, not silently dropped
    assert "async-grpo-separate.yaml" in report["examples_skipped"]
    assert "placement.separate" in report["examples_skipped"]["async-grpo-separate.yaml"] or (
        "weight_sync.off_policy" in report["examples_skipped"]["async-grpo-separate.yaml"]
    )
    # configs and entrypoints: the experimental configs appear, the reward_model config group goes
    assert "one_step_off_ppo_trainer" in schema["configs_added"]
    assert "reward_model/reward_model" in report["entrypoints_removed"]
    assert "reward/reward" in report["entrypoints_added"]
    # the snapshot written is the committed one, byte for byte
    written = (tmp_path / "verl" / "0.7.1.json").read_text(encoding="utf-8")
    assert written == (BUNDLED / "verl" / "0.7.1.json").read_text(encoding="utf-8")


@pytest.mark.conformance
def test_openrlhf_0_10_2_against_0_10_1_post2_finds_the_dotted_renames(tmp_path: Path) -> None:
    report = onboard("openrlhf", "0.10.2", "0.10.1.post2", tmp_path)
    renamed = {r["old"]: r["new"] for r in report["schema"]["renamed"]}
    known = {f"--{flat}": f"--{dotted}" for flat, dotted in DOTTED.items()}
    # a heuristic, but never wrong where the adapter knows the answer
    wrong = {old: new for old, new in renamed.items() if old in known and known[old] != new}
    assert not wrong
    for old, new in [
        ("--actor_num_nodes", "--actor.num_nodes"),
        ("--micro_train_batch_size", "--train.micro_batch_size"),
        ("--seed", "--train.seed"),
        ("--colocate_all_models", "--train.colocate_all"),
    ]:
        assert renamed[old] == new
    hits = sum(1 for old in known if renamed.get(old) == known[old])
    assert hits >= 60, hits  # of the 80 renames the adapter spells; the rest changed their words
    gone = {g["key"]: g for g in report["emitted_keys_gone"]}
    # every flat flag the examples emit on 0.10.1.post2 is gone in 0.10.2
    assert gone["--actor_num_nodes"]["renamed_to"] == "--actor.num_nodes"
    assert gone["--actor_num_nodes"]["where"] == "spec.placement"
    assert gone["--pretrain"]["renamed_to"] is None  # a new name with other words: reported as gone
    assert set(gone["--pretrain"]["examples"]) == {
        "async-grpo-separate.yaml",
        "dapo-math.yaml",
        "grpo-gsm8k.yaml",
        "ppo-critic-rm.yaml",
    }
    assert all(not key.startswith("--") or "." not in key for key in gone)
    assert report["entrypoints_added"] == [] and report["entrypoints_removed"] == []


@pytest.mark.conformance
@pytest.mark.parametrize(
    ("framework", "new", "old"), [("verl", "0.9.1", "0.8.0"), ("openrlhf", "0.10.2", "0.9.10")]
)
def test_pins_from_the_wheel_metadata_are_the_matrix_entry(
    framework: str, new: str, old: str, tmp_path: Path
) -> None:
    report = onboard(framework, new, old, tmp_path, "--against", old)
    assert report["against"] == old
    assert report["pins"] == matrix_pins(framework, new)
    entry = tomllib.loads(report["matrix_entry"])["versions"][0]
    assert entry["version"] == new and entry["tested_with"] == matrix_pins(framework, new)
    pinned = next(e for e in compat.pinned(framework) if e.version == new)
    assert pinned.python is not None
    assert SpecifierSet(entry["python"]) == SpecifierSet(pinned.python)


@pytest.mark.conformance
def test_onboard_text_report_lists_the_work(tmp_path: Path) -> None:
    res = rladapt(
        "matrix",
        "onboard",
        "-f",
        "openrlhf==0.10.2",
        "--source",
        str(download_wheel("openrlhf", "0.10.2")),
        "--against-source",
        str(download_wheel("openrlhf", "0.10.1.post2")),
        "-o",
        str(tmp_path),
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "native keys the adapter emits for the examples that 0.10.2 no longer has:" in out
    assert "  --actor_num_nodes -> --actor.num_nodes (renamed?)   [spec.placement;" in out
    assert "renamed (a heuristic" in out
    assert '[versions.tested_with]\nvllm = "0.19.1"' in out
    assert f"wrote {tmp_path / 'openrlhf' / '0.10.2.json'}" in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "verl"], "--framework 'verl': expected NAME==VERSION, e.g. verl==0.10.0"),
        (
            ["-f", "verl==0.9.2", "--against", "0.3.0"],
            "--against '0.3.0': verl 0.3.0 has no bundled snapshot",
        ),
        (["-f", "verl==0.5.0"], "no pinned verl version older than 0.5.0 to compare with; pass --against"),
        (["-f", "verl==latest"], "'latest' is not a version"),
        (
            ["-f", "nemo-rl==0.8.0"],
            "--source: nemo-rl snapshots are built from a checkout of the NeMo-RL tag",
        ),
        (["-f", "nemo-rl==0.8.0", "--source", "examples"], "is not a NeMo-RL checkout"),
    ],
)
def test_onboard_usage_errors_exit_2_and_write_nothing(args: list[str], message: str, tmp_path: Path) -> None:
    res = rladapt("matrix", "onboard", *args, "-o", str(tmp_path))
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not any(tmp_path.iterdir())
