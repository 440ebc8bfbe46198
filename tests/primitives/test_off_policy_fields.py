"""The spec rules of the rollout IS correction and partial rollouts (issue 12, item 11)."""

from __future__ import annotations

from rladapt.primitives import load_job_text

from .test_loading import MINIMAL, problems


def test_correction_defaults_to_a_truncated_token_weight() -> None:
    job = load_job_text(MINIMAL, ["spec.algorithm.off_policy_correction={max_ratio: 2.0}"])
    corr = job.spec.algorithm.off_policy_correction
    assert corr is not None and corr.model_dump() == {
        "level": "token",
        "mode": "truncate",
        "max_ratio": 2.0,
        "min_ratio": None,
    }
    assert load_job_text(MINIMAL, []).spec.algorithm.off_policy_correction is None


def test_mask_needs_a_band_and_the_band_an_order() -> None:
    (problem,) = problems(MINIMAL, ["spec.algorithm.off_policy_correction={mode: mask, max_ratio: 5.0}"])
    assert problem.startswith("spec.algorithm.off_policy_correction: ") and "set min_ratio" in problem
    (problem,) = problems(
        MINIMAL, ["spec.algorithm.off_policy_correction={mode: mask, min_ratio: 3.0, max_ratio: 2.0}"]
    )
    assert "min_ratio (3.0) above max_ratio (2.0)" in problem
    (problem,) = problems(MINIMAL, ["spec.algorithm.off_policy_correction={max_ratio: 0}"])
    assert problem.startswith("spec.algorithm.off_policy_correction.max_ratio: ")
    (problem,) = problems(MINIMAL, ["spec.algorithm.off_policy_correction={level: seq, max_ratio: 2.0}"])
    assert problem.startswith("spec.algorithm.off_policy_correction.level: ")


def test_partial_rollout_needs_staleness() -> None:
    assert problems(MINIMAL, ["spec.weight_sync.partial_rollout=true"]) == [
        "spec.weight_sync.partial_rollout: partial rollout lets generation run on across a weight update, which "
        "an on-policy rollout never does; expected spec.weight_sync.max_staleness >= 1, found max_staleness: 0"
    ]
    # false is every framework's on-policy behaviour: no error
    assert (
        load_job_text(MINIMAL, ["spec.weight_sync.partial_rollout=false"]).spec.weight_sync.partial_rollout
        is False
    )


def test_run_ahead_fraction_stays_within_max_staleness() -> None:
    async_ = ["spec.weight_sync.max_staleness=2"]
    assert problems(MINIMAL, [*async_, "spec.weight_sync.run_ahead_fraction=1.5"])[-1] == (
        "spec.weight_sync.run_ahead_fraction: samples generated that far ahead would lag more policy versions than "
        "max_staleness allows; expected at most max_staleness - 1 = 1, found 1.5"
    )
    found = problems(MINIMAL, ["spec.weight_sync.run_ahead_fraction=0"])
    assert any(p.startswith("spec.weight_sync.run_ahead_fraction: an on-policy rollout") for p in found)
