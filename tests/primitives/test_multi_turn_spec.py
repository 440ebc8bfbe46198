"""The spec rules of multi-turn rollouts and agent functions (issue 12, item 10)."""

from __future__ import annotations

from rladapt.primitives import load_job_text

from .test_loading import MINIMAL, problems

AGENT = "spec.rollout.agent.path=agents/env.py"


def test_multi_turn_is_off_unless_given_and_its_fields_are_null() -> None:
    assert load_job_text(MINIMAL, []).spec.rollout.multi_turn is None
    mt = load_job_text(MINIMAL, ["spec.rollout.multi_turn={}"]).spec.rollout.multi_turn
    assert mt is not None
    assert mt.model_dump() == dict.fromkeys(
        ("max_assistant_turns", "max_user_turns", "tool_config", "interaction_config", "tool_call_format")
    )


def test_an_agent_is_a_python_file() -> None:
    (problem,) = problems(MINIMAL, ["spec.rollout.agent.path=agents/env.sh"])
    assert (
        problem
        == "spec.rollout.agent.path: invalid value; expected a Python file (*.py), found 'agents/env.sh'"
    )


def test_the_agent_returns_the_rewards_so_no_source_beside_it() -> None:
    (problem,) = problems(MINIMAL, [AGENT])
    assert problem.startswith("spec.reward: rollout.agent ('agents/env.py') returns the rewards")
    assert load_job_text(MINIMAL, [AGENT, "spec.reward.function=null"]).spec.rollout.agent is not None


def test_without_an_agent_a_reward_source_is_required() -> None:
    (problem,) = problems(MINIMAL, ["spec.reward.function=null"])
    assert problem.startswith("spec.reward: no reward source; expected at least one of builtin, function")
