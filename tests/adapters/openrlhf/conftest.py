"""Fixtures of the OpenRLHF conformance suite: every pinned version's real wheel and its real argparse parser."""

from __future__ import annotations

import argparse
import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pytest

from rladapt import compat
from rladapt.adapters.openrlhf.parser import build_parser, parse, source_from_wheel
from rladapt.pipeline import DEEP_CHECK_ENV, Rendered, render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import RLJob, load_job, validate_data
from tests.support.wheels import REPO, download_wheel

PINNED: list[str] = [entry.version for entry in compat.pinned("openrlhf")]
RESEARCH = REPO / ".." / "shared" / "research"
EXAMPLES = REPO / "examples"


@cache
def wheel(version: str) -> Path:
    return download_wheel("openrlhf", version)


@cache
def source(version: str) -> str:
    return source_from_wheel(wheel(version))


@cache
def real_parser(version: str) -> argparse.ArgumentParser:
    """The parser of ``version`` built from its own train_ppo_ray.py (parsing never changes it, so it is shared)."""
    return build_parser(source(version), f"openrlhf-{version}/openrlhf/cli/train_ppo_ray.py")


def flags(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset({opt for action in parser._actions for opt in action.option_strings})


def parse_ok(version: str, args: list[str] | tuple[str, ...]) -> argparse.Namespace:
    """Parse with the real parser; fail the test on any unknown argument or rejected value."""
    result = parse(real_parser(version), list(args))
    assert result.error is None, f"openrlhf {version} rejects the argv: {result.error}"
    assert not result.unknown, f"openrlhf {version} does not know {list(result.unknown)}"
    return result.namespace


@lru_cache(maxsize=1)
def rename_map() -> dict[str, Any]:
    """The research notes' independent old -> new flag map of 0.10.1.post2 -> 0.10.2."""
    data: dict[str, Any] = json.loads(
        (RESEARCH / "openrlhf-flags" / "rename_0.10.1.post2_to_0.10.2.json").read_text()
    )
    return data


def dest_in(version: str, flat_dest: str) -> str:
    """The dest of the flat flag ``flat_dest`` in ``version``, by the research notes' map (actor side if split)."""
    if f"--{flat_dest}" in flags(real_parser(version)):
        return flat_dest
    new = rename_map()["map"].get(f"--{flat_dest}")
    if isinstance(new, list):
        new = new[0]
    assert new, f"--{flat_dest} has no counterpart in the rename map"
    return str(new)[2:]


@pytest.fixture(scope="session")
def registry() -> Registry:
    # verl is registered too: the examples carry native.verl entries, which the pipeline checks by name.
    reg = load_registry(
        builtins={"openrlhf": "rladapt.adapters.openrlhf", "verl": "rladapt.adapters.verl"},
        use_entry_points=False,
    )
    assert not reg.broken, reg.broken
    return reg


@pytest.fixture
def real_source(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the adapter's validate_native at the downloaded wheel of a version (the pipeline then uses it)."""

    def use(version: str) -> None:
        monkeypatch.setenv("RLADAPT_OPENRLHF_SOURCE", str(wheel(version)))

    return use


def render(job: RLJob, version: str, registry: Registry) -> Rendered:
    return render_native(job, f"openrlhf=={version}", registry)


def example(name: str, overrides: list[str] | None = None) -> RLJob:
    return load_job(EXAMPLES / f"{name}.yaml", overrides or [])


def job(**spec: Any) -> RLJob:
    """A valid job: a small GRPO spec with ``spec`` merged over it (one level deep; reward and placement replace)."""
    base: dict[str, Any] = {
        "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
        "algorithm": {"name": "grpo", "group_size": 4, "kl": {"coef": 0.001, "in": "loss"}},
        "data": {
            "train": ["data/train.jsonl"],
            "val": ["data/val.jsonl"],
            "max_prompt_length": 256,
            "max_response_length": 512,
        },
        "training": {
            "steps": 10,
            "global_batch": 32,
            "mini_batch": 16,
            "micro_batch_per_gpu": 2,
            "backend": "deepspeed",
        },
        "rollout": {"tensor_parallel": 2},
        "reward": {"function": {"path": "rewards/score.py", "name": "reward_func"}},
        "placement": {
            "pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout", "ref"]}]
        },
        "checkpoint": {"dir": "/ckpt/t", "every_steps": 5, "keep_last": 2},
    }
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and key not in ("reward", "placement"):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return validate_data(
        {"apiVersion": "rladapt/v1alpha1", "kind": "RLJob", "metadata": {"name": "t"}, "spec": base}
    )


@pytest.fixture(autouse=True)
def deep_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The conformance suite judges launches with the framework's own schema too (``render --deep-check``)."""
    monkeypatch.setenv(DEEP_CHECK_ENV, "1")
