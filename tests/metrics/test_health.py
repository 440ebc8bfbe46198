"""Each health rule on constructed metrics, firing and not, with its thresholds from ``spec.health``; and the
progress (step / total, time per step, ETA) ``status`` and ``watch`` show."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rladapt.metrics import RunMetrics
from rladapt.metrics.health import RULES, check_health, seconds_per_step
from rladapt.metrics.progress import duration, progress
from rladapt.primitives import SpecError, validate_data
from rladapt.primitives.spec import Health
from tests.conftest import REPO


def run(wall: dict[int, float] | None = None, **series: list[float]) -> RunMetrics:
    return RunMetrics(
        run_id="r",
        framework="trl",
        version="1.16.0",
        series={name: {i + 1: v for i, v in enumerate(values)} for name, values in series.items()},
        wall_time=wall or {},
    )


def rules(m: RunMetrics, h: Health | None = None, now: float | None = None) -> list[str]:
    return [w.rule for w in check_health(m, h, now)]


def test_every_rule_names_real_thresholds() -> None:
    assert {r.id for r in RULES} == {
        "non_finite_loss",
        "reward_collapse",
        "kl_blow_up",
        "entropy_collapse",
        "length_limit",
        "throughput_falling",
        "stalled",
        "no_first_step",
    }
    for rule in RULES:
        assert set(rule.thresholds) <= set(Health.model_fields), rule.id


def test_a_healthy_run_has_no_warning() -> None:
    m = run(
        policy_loss=[0.1, -0.2, 0.05] * 5,
        reward_mean=[0.1 * i for i in range(15)],
        kl=[0.001 * i for i in range(15)],
        entropy=[2.0 - 0.05 * i for i in range(15)],
        response_clip_ratio=[0.05] * 15,
        throughput_tokens_per_s_per_gpu=[1000.0 + i for i in range(15)],
    )
    assert check_health(m) == []


def test_non_finite_loss() -> None:
    w = check_health(run(policy_loss=[0.1, math.nan, 0.2, math.inf]))
    assert [(x.rule, x.step) for x in w] == [("non_finite_loss", 4)]
    assert w[0].message == "policy_loss is inf at step 4 (first at step 2, 2 of 4 steps)"
    assert rules(run(policy_loss=[0.1, 0.2], reward_mean=[math.nan])) == []  # only the loss


def test_reward_collapse() -> None:
    rising = [0.1, 0.2, 0.4, 0.6, 0.8, 0.8, 0.8]
    assert rules(run(reward_mean=rising)) == []
    falling = [*rising, 0.1, 0.05, 0.0, 0.0, 0.0]
    w = check_health(run(reward_mean=falling))
    assert [(x.rule, x.metric, x.step) for x in w] == [("reward_collapse", "reward_mean", 12)]
    assert (
        "reward_mean over the last 5 steps is 0.03, down 0.65 from its best 0.68 (the 5 steps to 7)"
        in w[0].message
    )
    assert rules(run(reward_mean=falling), Health(reward_drop_fraction=None)) == []
    assert rules(run(reward_mean=falling), Health(reward_drop_fraction=1.0)) == []
    # a dip of a third, under the default half
    assert rules(run(reward_mean=[0.9] * 5 + [0.6] * 5)) == []


def test_kl_blow_up_by_bound_and_by_growth() -> None:
    w = check_health(run(kl=[0.5, 1.0, 1.5, 2.0, 2.5]))
    assert [x.rule for x in w] == ["kl_blow_up"] and "1.5 nats, above kl_max_nats 1" in w[0].message
    assert rules(run(kl=[0.5, 1.0, 1.5, 2.0, 2.5]), Health(kl_max_nats=2.0)) == []
    growth = [0.01] * 5 + [0.2] * 5
    w = check_health(run(kl=growth))
    assert [x.rule for x in w] == ["kl_blow_up"] and "20 times the 0.01 of the 5 before" in w[0].message
    # early growth from almost nothing is not a blow-up (kl_growth_min_nats)
    assert rules(run(kl=[0.0001] * 5 + [0.005] * 5)) == []
    assert rules(run(kl=growth), Health(kl_growth_factor=None)) == []
    assert rules(run(kl=[0.01] * 5 + [0.05] * 5)) == []  # 5 times, under 10


def test_entropy_collapse() -> None:
    collapsing = [2.0] * 5 + [1.0] * 5 + [0.1] * 5
    w = check_health(run(entropy=collapsing))
    assert [(x.rule, x.step) for x in w] == [("entropy_collapse", 15)]
    assert "5% of the first 5 steps' 2" in w[0].message
    assert rules(run(entropy=collapsing), Health(entropy_min_fraction=0.01)) == []
    assert rules(run(entropy=[2.0] * 5 + [1.0] * 5)) == []
    assert rules(run(entropy=[2.0, 0.01, 0.01])) == []  # too few steps to tell


def test_length_limit() -> None:
    w = check_health(run(response_clip_ratio=[0.0, 0.1, 0.5, 0.5, 0.6, 0.7]))
    assert [(x.rule, x.step) for x in w] == [("length_limit", 6)]
    assert w[0].message.startswith("48% of responses hit the length limit over the last 5 steps")
    assert rules(run(response_clip_ratio=[0.0, 0.1, 0.1, 0.2, 0.1])) == []
    assert rules(run(response_clip_ratio=[0.5]), Health(response_clip_ratio_max=0.6)) == []


def test_throughput_falling() -> None:
    steady = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]
    assert rules(run(throughput_tokens_per_s_per_gpu=steady)) == []
    w = check_health(run(throughput_tokens_per_s_per_gpu=[*steady, 300.0]))
    assert [(x.rule, x.step) for x in w] == [("throughput_falling", 7)]
    assert "300 tokens/s/GPU, 30% of the median 1000" in w[0].message
    assert (
        rules(run(throughput_tokens_per_s_per_gpu=[*steady, 300.0]), Health(throughput_min_fraction=0.2))
        == []
    )
    assert rules(run(throughput_tokens_per_s_per_gpu=[1000.0, 300.0])) == []  # warm-up


def test_stalled_only_while_running() -> None:
    wall = {s: 1000.0 + 10 * s for s in range(1, 6)}  # 10 s a step, last at 1050
    m = run(wall, reward_mean=[0.1] * 5)
    assert seconds_per_step(m) == 10.0
    assert rules(m, now=1050 + 599) == []  # stall_min_seconds 600 first
    w = check_health(m, now=1050 + 700)
    assert [(x.rule, x.step) for x in w] == [("stalled", 5)]
    assert w[0].message.startswith(
        "no new step for 700 s since step 5: more than stall_factor 5 x the median 10 s"
    )
    assert rules(m, Health(stall_min_seconds=0), now=1050 + 51) == ["stalled"]
    assert rules(m, Health(stall_min_seconds=0), now=1050 + 49) == []
    assert rules(m, Health(stall_min_seconds=0), now=None) == []  # the run ended
    assert rules(m, Health(stall_factor=None, stall_min_seconds=0), now=1e9) == []


def test_a_start_without_a_step_is_no_first_step() -> None:
    """A job hung before its first step (loading, engine start-up, a first collective) logs nothing to compare
    a step time with: the time since its latest start is what tells it."""
    fresh = dataclasses.replace(run(), started=1000.0)
    assert rules(fresh, now=1000 + 3599) == []  # first_step_max_seconds 3600
    w = check_health(fresh, now=1000 + 3700)
    assert [(x.rule, x.step) for x in w] == [("no_first_step", None)]
    assert w[0].message.startswith("no step logged 3700 s after the job's latest start")
    assert rules(fresh, Health(first_step_max_seconds=None), now=1e9) == []
    assert rules(fresh, now=None) == []  # the run ended
    # a restart after step 5 (logged at 1050) that hangs: no_first_step, not stalled on the earlier start's step
    wall = {s: 1000.0 + 10 * s for s in range(1, 6)}
    restarted = dataclasses.replace(run(wall, reward_mean=[0.1] * 5), started=2000.0)
    w = check_health(restarted, now=2000 + 3700)
    assert [(x.rule, x.step) for x in w] == [("no_first_step", 5)]
    # once the start logs a step, the stall rule takes over
    going = dataclasses.replace(run({**wall, 6: 2100.0}, reward_mean=[0.1] * 6), started=2000.0)
    assert rules(going, now=2100 + 599) == []
    assert "stalled" in rules(going, now=2100 + 5000)


def test_progress_and_eta() -> None:
    # logged every 2 steps, 4 s apart, and a resume's gap: 2 s a step
    wall = {2: 100.0, 4: 104.0, 6: 108.0, 8: 500.0, 10: 504.0}
    m = run(reward_mean=[], val_score=[])
    m = RunMetrics(
        run_id="r",
        framework="trl",
        version="1.16.0",
        series={"reward_mean": {s: s / 10 for s in wall}, "val_score": {4: 0.5, 8: 0.7, 10: 0.6}},
        wall_time=wall,
    )
    p = progress(m, total_steps=20, now=505.0)
    assert (p.step, p.total, p.seconds_per_step, p.eta_seconds) == (10, 20, 2.0, 20.0)
    assert p.reward == (10, 1.0) and p.val_latest == (10, 0.6) and p.val_best == (8, 0.7)
    assert dict(p.lines())["step"] == "10 / 20 (50%)"
    assert p.lines()[-1] == ("val", "0.6 (step 10), best 0.7 (step 8)")
    assert progress(m, total_steps=20, now=None).eta_seconds is None  # ended
    doc = progress(run(policy_loss=[math.nan])).as_json()
    assert doc["warnings"][0]["rule"] == "non_finite_loss" and doc["step"] == 1
    assert [duration(s) for s in (0.5, 59.0, 185.0, 7380.0)] == ["0.5 s", "59 s", "3m05s", "2h03m"]


def test_the_thresholds_are_a_spec_section() -> None:
    path = REPO / "examples" / "grpo-tiny-trl.yaml"
    from rladapt.primitives.loading import parse_yaml

    data = parse_yaml(path.read_text(), str(path))
    assert isinstance(data, dict)
    assert validate_data(data, "x").spec.health == Health()
    data["spec"]["health"] = {"kl_max_nats": 0.5, "entropy_min_fraction": None}
    assert validate_data(data, "x").spec.health.kl_max_nats == 0.5
    data["spec"]["health"] = {"reward_drop_fraction": 1.5}
    with pytest.raises(SpecError) as err:
        validate_data(data, "x")
    assert "spec.health.reward_drop_fraction" in str(err.value)


def test_the_recorded_thresholds_and_total() -> None:
    from rladapt.cli.watch import thresholds, total_steps
    from rladapt.runs import Run, RunRecord

    def record(**extra: object) -> Run:
        fields = {"id": "r", "launcher": "local", "framework": "verl", "version": "0.9.1", "job_name": "r"}
        made = RunRecord.model_validate(
            {**fields, "created": "", "created_ts": 0.0, "state": "CREATED", "handle": None, **extra}
        )
        return Run(dir=REPO, record=made)

    assert thresholds(record(health={"kl_max_nats": 0.3, "entropy_min_fraction": None})) == Health(
        kl_max_nats=0.3, entropy_min_fraction=None
    )
    assert thresholds(record()) == Health()  # recorded before spec.health
    assert thresholds(record(health={"kl_max_nats": "high"})) == Health()
    assert total_steps(record(total_steps=40)) == 40
    assert [total_steps(record(total_steps=v)) for v in (None, 0)] == [None] * 2
    # a total of another type never reaches it: the record's reader refuses it (tests/test_runs.py)
