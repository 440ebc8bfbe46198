"""OpenRLHF: an agent function reaches the flag each pinned version parses and hands to its vLLM actor; multi-turn
settings OpenRLHF has no flag for are refused with the reason.

Parsed by each version's REAL parser (built from its train_ppo_ray.py); where the flag is read is checked in the
wheel's source, so a release that moves the read fails here.
"""

from __future__ import annotations

import zipfile
from typing import Any

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf.versions import dest, has_flag
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import SpecError, validate_data

from .conftest import PINNED, parse_ok, wheel

AGENT = [v for v in PINNED if has_flag(v, "agent_func_path")]
BEFORE = [v for v in PINNED if v not in AGENT]


def _job(reward: dict[str, Any] | None = None, **rollout: Any) -> Any:
    data = {
        "apiVersion": "rladapt/v1alpha1",
        "kind": "RLJob",
        "metadata": {"name": "agent"},
        "spec": {
            "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
            "algorithm": {"name": "grpo", "group_size": 4},
            "data": {"train": ["data/train.jsonl"]},
            "training": {"steps": 10, "global_batch": 64, "mini_batch": 16},
            "rollout": rollout,
            "reward": reward or {},
        },
    }
    return validate_data(data, "<test>")


def _source(version: str, suffix: str) -> str:
    with zipfile.ZipFile(wheel(version)) as whl:
        return "".join(whl.read(n).decode("utf-8", "replace") for n in whl.namelist() if n.endswith(suffix))


def test_the_pinned_versions_with_an_agent_function() -> None:
    assert AGENT == ["0.8.11", "0.9.10", "0.10.1.post2", "0.10.2", "0.11.2"]


@pytest.mark.parametrize("version", AGENT)
def test_the_agent_function_is_the_agent_flag(version: str, registry: Registry) -> None:
    native = render_native(_job(agent={"path": "agents/env.py"}), f"openrlhf=={version}", registry).native
    ns = parse_ok(version, native.argv[3:])
    assert getattr(ns, dest(version, "agent_func_path")) == "agents/env.py"
    assert any("AgentExecutor" in note for note in native.notes)
    cli = _source(version, "openrlhf/cli/train_ppo_ray.py")
    # after parsing, the agent replaces the reward source, and the path goes to the vLLM engines
    assert f"if args.{dest(version, 'agent_func_path')}:" in cli
    assert f"agent_func_path=args.{dest(version, 'agent_func_path')}" in cli or (
        f"args.{dest(version, 'agent_func_path')},\n" in cli
    )
    engine = "vllm_engine_async.py" if Version(version) < Version("0.9.10") else "vllm_engine.py"
    loader = _source(version, f"openrlhf/trainer/ray/{engine}")
    assert "spec_from_file_location" in loader and 'hasattr(agent_module, "AgentExecutor")' in loader


@pytest.mark.parametrize("version", BEFORE)
def test_versions_before_the_agent_refuse_it(version: str, registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render_native(_job(agent={"path": "agents/env.py"}), f"openrlhf=={version}", registry)
    text = str(err.value)
    assert "spec.rollout.agent.path" in text and "first supported in openrlhf 0.8.11" in text
    assert "agent_func_path" not in _source(version, "openrlhf/cli/train_ppo_ray.py")


def test_multi_turn_settings_are_refused_with_the_reason(registry: Registry) -> None:
    job = _job(
        reward={"remote": {"url": "http://rm/score"}},
        multi_turn={"max_assistant_turns": 4, "tool_config": "tools.yaml"},
    )
    with pytest.raises(SpecError) as err:
        render_native(job, "openrlhf==0.11.2", registry)
    text = str(err.value)
    assert "spec.rollout.multi_turn: openrlhf 0.11.2 cannot express multi_turn" in text
    assert "use rollout.agent" in text and "spec.rollout.multi_turn.tool_config" in text
    assert "max_turns" not in _source("0.11.2", "openrlhf/cli/train_ppo_ray.py")


def test_a_reward_source_beside_the_agent_is_an_error() -> None:
    with pytest.raises(SpecError, match="spec.reward: rollout.agent .* returns the rewards"):
        _job(reward={"remote": {"url": "http://rm/score"}}, agent={"path": "agents/env.py"})
    with pytest.raises(SpecError, match="spec.reward: no reward source"):
        _job()
