"""NeMo-RL: a multi-turn rollout's turn cap is grpo.max_rollout_turns of each pinned tag; the tool, interaction
and agent files NeMo-RL has no config for are refused with the reason.

The merged config is each tag's real grpo_math_1B.yaml with the generated file over it; the key is checked against
the tag's typed key tree (GRPOConfig, ``Tag.allows``).
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import tag
from .test_nemo_rl_budget_ckpt_engine_fields import TAGS, _emitted_keys_are_the_tags
from .test_nemo_rl_conformance import merged
from .test_nemo_rl_honest_defaults import render


@pytest.mark.parametrize("version", TAGS)
def test_the_turn_cap_is_max_rollout_turns(version: str, registry: Registry) -> None:
    t = tag(version)
    # the shipped config runs one turn ("Math Environments just have 1 turn")
    assert OmegaConf.select(OmegaConf.create(t.base()), "grpo.max_rollout_turns") == 1
    native = render(registry, version, rollout={"multi_turn": {"max_assistant_turns": 6}})
    assert OmegaConf.select(merged(native, t), "grpo.max_rollout_turns") == 6
    assert t.allows("grpo.max_rollout_turns")
    _emitted_keys_are_the_tags(native, version)
    assert any("environment ends the episode" in note for note in native.notes)
    # unset: nothing emitted, the tag's own single turn
    assert "max_rollout_turns" not in str(render(registry, version).files)


def test_multi_turn_without_a_cap_is_refused(registry: Registry) -> None:
    with pytest.raises(SpecError, match=r"spec.rollout.multi_turn.max_assistant_turns: nemo-rl 0.7.0 cannot"):
        render(registry, "0.7.0", rollout={"multi_turn": {}})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_user_turns", 3),
        ("tool_config", "tools.yaml"),
        ("interaction_config", "user.yaml"),
        ("tool_call_format", "hermes"),
    ],
)
def test_what_nemo_rl_has_no_config_for_is_refused(field: str, value: object, registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, "0.7.0", rollout={"multi_turn": {"max_assistant_turns": 4, field: value}})
    assert f"spec.rollout.multi_turn.{field}: nemo-rl 0.7.0 cannot express" in str(err.value)
    assert "no nemo-rl version supports it" in str(err.value)


def test_an_agent_function_is_refused(registry: Registry) -> None:
    with pytest.raises(SpecError, match=r"spec.rollout.agent.path: .*environment classes"):
        render(registry, "0.7.0", rollout={"agent": {"path": "agents/env.py"}}, reward={}, placement=None)
