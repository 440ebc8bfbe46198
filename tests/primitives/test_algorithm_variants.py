"""The spec rules of GRPO's advantage variants, DAPO's switches and the overlong penalty (issue 12, item 7)."""

from __future__ import annotations

from rladapt.primitives import load_job_text

from .test_loading import MINIMAL, problems


def test_dapo_defaults_are_what_its_mapping_always_did() -> None:
    alg = load_job_text(MINIMAL, ["spec.algorithm.name=dapo"]).spec.algorithm
    assert (alg.dynamic_sampling, alg.dynamic_sampling_on, alg.effective_loss_aggregation) == (
        None,
        True,
        "token_mean",
    )
    off = load_job_text(MINIMAL, ["spec.algorithm.name=dapo", "spec.algorithm.dynamic_sampling=false"])
    assert off.spec.algorithm.dynamic_sampling_on is False
    grpo = load_job_text(MINIMAL, []).spec.algorithm
    assert (grpo.dynamic_sampling_on, grpo.effective_loss_aggregation) == (False, None)
    gspo = load_job_text(MINIMAL, ["spec.algorithm.name=gspo"]).spec.algorithm
    assert gspo.effective_loss_aggregation == "seq_mean_token_mean"


def test_grpo_advantage_fields_only_for_grpo_s_advantage() -> None:
    (problem,) = problems(MINIMAL, ["spec.algorithm.name=rloo", "spec.algorithm.normalize_by_group_std=true"])
    assert problem.startswith("spec.algorithm: ")
    assert "normalize_by_group_std shape GRPO's advantage (grpo, dapo, gspo); rloo defines its own" in problem


def test_dynamic_sampling_needs_groups() -> None:
    (problem,) = problems(
        MINIMAL,
        [
            "spec.algorithm.name=reinforce_pp",
            "spec.algorithm.group_size=1",
            "spec.algorithm.dynamic_sampling=true",
        ],
    )
    assert "dynamic_sampling drops groups of equal rewards: reinforce_pp samples no groups" in problem


def test_dual_clip_is_a_constant_above_one() -> None:
    (problem,) = problems(MINIMAL, ["spec.algorithm.clip.dual=0.5"])
    assert problem.startswith("spec.algorithm.clip.dual: ") and "greater than 1" in problem


def test_overlong_buffer_shorter_than_the_response_budget() -> None:
    overrides = ["spec.data.max_response_length=1024", "spec.reward.overlong_penalty={buffer_tokens: 1024}"]
    assert problems(MINIMAL, overrides) == [
        "spec.reward.overlong_penalty.buffer_tokens: the buffer is the end of the response length budget "
        "(rollout.max_tokens, else data.max_response_length) and must be shorter than it; expected less than "
        "1024, found 1024"
    ]
    # the budget is the rollout's when it sets one
    assert problems(
        MINIMAL,
        [*overrides[:1], "spec.rollout.max_tokens=512", "spec.reward.overlong_penalty={buffer_tokens: 600}"],
    )
    job = load_job_text(MINIMAL, [*overrides[:1], "spec.reward.overlong_penalty={buffer_tokens: 256}"])
    assert job.spec.reward.overlong_penalty is not None
    assert (job.spec.reward.overlong_penalty.buffer_tokens, job.spec.reward.overlong_penalty.max_penalty) == (
        256,
        1.0,
    )
