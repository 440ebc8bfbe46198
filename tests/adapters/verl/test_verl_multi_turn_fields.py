"""verl: multi-turn rollouts with tools and interactions reach the keys each pinned version's own code reads, on
the rollout path that reads them (the synchronous SGLang rollout before 0.7.1, the tool agent loop otherwise).

Every launch is composed with the real wheel's Hydra config; which key a version reads is checked in the wheel's
source, so a verl release that moves a read fails here instead of running single-turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from rladapt.adapters.verl import importer as fw
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .test_verl_honest_defaults import ARR, composed, render, select

MT = f"{ARR}.rollout.multi_turn"
TOOLS = {"max_assistant_turns": 5, "max_user_turns": 4, "tool_config": "tools/gsm8k.yaml"}
AGENT_LOOP = "experimental/agent_loop/*.py"
SGLANG = "workers/rollout/sglang_rollout/sglang_rollout.py"


def _source(package: Path, pattern: str) -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(package.glob(pattern)))


def test_the_tool_agent_loop_reads_the_turns_and_tools(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    rollout = {"mode": "async", "multi_turn": {**TOOLS, "tool_call_format": "llama3_json"}}
    if version == "0.5.0":
        # 0.5.0's agent loop is chosen by each sample's agent_name only (agent_loop.py: single_turn_agent else)
        with pytest.raises(SpecError) as err:
            render(registry, version, rollout=rollout)
        assert "spec.rollout.multi_turn: verl 0.5.0 cannot express" in str(err.value)
        assert "first supported in verl 0.6.1" in str(err.value)
        assert "default_agent_loop" not in _source(package, AGENT_LOOP)
        return
    native = render(registry, version, rollout=rollout)
    assert any("extra_info.tools_kwargs" in note for note in native.notes)
    assert "tools_kwargs" in _source(package, "utils/dataset/rl_dataset.py")
    cfg = composed(native, version)
    assert select(cfg, f"{ARR}.rollout.agent.default_agent_loop") == "tool_agent"
    assert select(cfg, f"{MT}.enable") is True
    assert select(cfg, f"{MT}.max_assistant_turns") == 5
    assert select(cfg, f"{MT}.max_user_turns") == 4
    assert select(cfg, f"{MT}.tool_config_path") == "tools/gsm8k.yaml"
    assert select(cfg, f"{MT}.format") == "llama3_json"
    assert select(cfg, "data.return_raw_chat") is True  # the agent loop reads raw_prompt
    loops = _source(package, AGENT_LOOP)
    assert '@register("tool_agent")' in loops and "config.agent.default_agent_loop" in loops
    for key in ("max_assistant_turns", "max_user_turns", "tool_config_path", "format"):
        assert f"multi_turn.{key}" in loops, f"verl {version}'s agent loop reads no multi_turn.{key}"
    assert "multi_turn.enable" in _source(package, "trainer/ppo/ray_trainer.py")


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_the_synchronous_sglang_rollout_runs_turns(version: str, registry: Registry) -> None:
    from .conftest import verl_package

    rollout = {"engine": "sglang", "multi_turn": {**TOOLS, "interaction_config": "interactions/user.yaml"}}
    cfg = composed(render(registry, version, rollout=rollout), version)
    assert select(cfg, f"{ARR}.rollout.mode") == "sync"
    assert select(cfg, f"{MT}.enable") is True
    assert select(cfg, f"{MT}.interaction_config_path") == "interactions/user.yaml"
    # sglang_rollout.py asserts "need data.return_raw_chat=True" on the multi-turn path
    assert select(cfg, "data.return_raw_chat") is True
    code = _source(verl_package(version), SGLANG)
    assert "if self.config.multi_turn.enable:" in code and "need data.return_raw_chat=True" in code
    for key in ("max_assistant_turns", "max_user_turns", "tool_config_path", "interaction_config_path"):
        assert f"multi_turn.{key}" in code
    # the parser comes from the tokenizer: a format would reach nothing
    assert "multi_turn.format" not in code
    with pytest.raises(SpecError, match=r"spec.rollout.multi_turn.tool_call_format: verl .* tokenizer"):
        render(registry, version, rollout={"engine": "sglang", "multi_turn": {"tool_call_format": "hermes"}})


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_the_synchronous_vllm_rollout_runs_no_turns(version: str, registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, version, rollout={"multi_turn": TOOLS})
    assert "spec.rollout.multi_turn: verl" in str(err.value) and "rollout.engine: sglang" in str(err.value)


def test_interactions_end_with_0_7_1(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    declared = "interaction_config_path" in (package / "trainer/config/rollout/rollout.yaml").read_text()
    if Version(version) < Version("0.8.0"):
        assert declared
        return
    assert not declared and not (package / "interactions").exists()
    with pytest.raises(SpecError) as err:
        render(registry, version, rollout={"multi_turn": {"interaction_config": "user.yaml"}})
    assert "spec.rollout.multi_turn.interaction_config" in str(err.value)
    assert "last supported in verl 0.7.1" in str(err.value)


def test_an_agent_function_is_refused_with_the_reason(registry: Registry) -> None:
    data = {"agent": {"path": "agents/env.py"}}
    with pytest.raises(SpecError) as err:
        render(registry, "0.9.1", rollout=data, reward={})
    assert "spec.rollout.agent.path" in str(err.value) and "agent_loop_config_path" in str(err.value)


@pytest.mark.parametrize(
    ("version", "rollout"),
    [
        ("0.6.1", f"{ARR}.rollout.name=sglang data.return_raw_chat=True"),
        ("0.9.1", f"{ARR}.rollout.name=vllm {ARR}.rollout.agent.default_agent_loop=tool_agent"),
    ],
)
def test_import_maps_a_multi_turn_launch(version: str, rollout: str, registry: Registry) -> None:
    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
        f"data.train_files=t {rollout} {MT}.enable=true {MT}.max_assistant_turns=5 {MT}.max_user_turns=3 "
        f"{MT}.tool_config_path=tools.yaml {MT}.format=llama3_json"
    )
    if version == "0.6.1":
        text = text.replace(f" {MT}.format=llama3_json", f" {MT}.interaction_config_path=user.yaml")
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    mt = imported.job.spec.rollout.multi_turn
    assert mt is not None
    assert (mt.max_assistant_turns, mt.max_user_turns, mt.tool_config) == (5, 3, "tools.yaml")
    if version == "0.6.1":
        assert mt.interaction_config == "user.yaml" and mt.tool_call_format is None
    else:
        assert mt.tool_call_format == "llama3_json"
    native = imported.job.spec.native.get("verl", [])
    assert not any("multi_turn" in item or "default_agent_loop" in item for item in native), native
