"""Health warnings from a run's metrics: rules as data, each a pure function of a run's running aggregates
(``rladapt.metrics.running.RunState``, built from a whole ``RunMetrics`` or kept up to date by the run's summary)
and thresholds.

The thresholds are ``spec.health`` (``rladapt.primitives.spec.Health``), recorded with the run at launch, so that
``rladapt status`` and ``watch`` judge a run by the thresholds it was launched with. A rule whose metric the run
does not log (a version that logs no entropy), or whose threshold is null, says nothing: a warning is only ever
about numbers the run logged, and its message carries them.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from rladapt.primitives.spec import Health

from .running import INTERVALS, RunState
from .series import RunMetrics


@dataclass(frozen=True)
class HealthWarning:
    """One finding: the rule, the metric and step it is about, and a message with the numbers."""

    rule: str
    metric: str
    step: int | None
    message: str

    def as_json(self) -> dict[str, object]:
        return {"rule": self.rule, "metric": self.metric, "step": self.step, "message": self.message}


Check = Callable[[RunState, Health, float | None], list[HealthWarning]]


@dataclass(frozen=True)
class Rule:
    """A health rule: its id, the metric it reads, the ``spec.health`` fields it uses and its check.

    ``check(state, thresholds, now)``: ``state`` holds the bounded running aggregates of the run's metrics
    (``rladapt.metrics.running``: a rule reads windows, counts and a median, never a whole series); ``now`` is the
    current time (seconds since the epoch) while the run is running, None once it ended (nothing can stall then).
    """

    id: str
    metric: str
    thresholds: tuple[str, ...]
    meaning: str
    check: Check


def _g(value: float) -> str:
    return f"{value:.4g}"


def non_finite_loss(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    loss = m.get("policy_loss")
    if loss is None or loss.last_bad is None:
        return []
    step, value = loss.last_bad
    since = f" (first at step {loss.first_bad}, {loss.bad} of {loss.count} steps)" if loss.bad > 1 else ""
    return [
        HealthWarning("non_finite_loss", "policy_loss", step, f"policy_loss is {value} at step {step}{since}")
    ]


def reward_collapse(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    reward = m.get("reward_mean")
    if h.reward_drop_fraction is None or reward is None or reward.windows() < 2:
        return []
    assert reward.best_window is not None
    best_step, best = reward.best_window
    step, last = reward.window_mean(h.window_steps)
    if best == 0 or best - last <= h.reward_drop_fraction * abs(best):
        return []
    return [
        HealthWarning(
            "reward_collapse",
            "reward_mean",
            step,
            f"reward_mean over the last {h.window_steps} steps is {_g(last)}, down {_g(best - last)} from its "
            f"best {_g(best)} (the {h.window_steps} steps to {best_step}): more than reward_drop_fraction {h.reward_drop_fraction:g}",
        )
    ]


def kl_blow_up(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    kl = m.get("kl")
    if kl is None or not kl.windows():
        return []
    step, last = kl.window_mean(h.window_steps)
    if h.kl_max_nats is not None and last > h.kl_max_nats:
        return [
            HealthWarning(
                "kl_blow_up",
                "kl",
                step,
                f"kl over the last {h.window_steps} steps is {_g(last)} nats, above kl_max_nats {h.kl_max_nats:g}",
            )
        ]
    if h.kl_growth_factor is None or kl.windows() <= h.window_steps:
        return []
    # the window just before the last one, no step shared
    _, before = kl.window_mean(h.window_steps, end=h.window_steps)
    if last >= h.kl_growth_min_nats and before > 0 and last > h.kl_growth_factor * before:
        return [
            HealthWarning(
                "kl_blow_up",
                "kl",
                step,
                f"kl over the last {h.window_steps} steps is {_g(last)} nats, {_g(last / before)} times the "
                f"{_g(before)} of the {h.window_steps} before: more than kl_growth_factor {h.kl_growth_factor:g}",
            )
        ]
    return []


def entropy_collapse(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    entropy = m.get("entropy")
    if h.entropy_min_fraction is None or entropy is None:
        return []
    if entropy.windows() <= h.window_steps:  # the last window must not overlap the first
        return []
    first = statistics.fmean(v for _, v in entropy.head)
    step, last = entropy.window_mean(h.window_steps)
    if first <= 0 or last >= h.entropy_min_fraction * first:
        return []
    return [
        HealthWarning(
            "entropy_collapse",
            "entropy",
            step,
            f"entropy over the last {h.window_steps} steps is {_g(last)} nats, {_g(last / first * 100)}% of the "
            f"first {h.window_steps} steps' {_g(first)}: below entropy_min_fraction {h.entropy_min_fraction:g}",
        )
    ]


def length_limit(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    clip = m.get("response_clip_ratio")
    if h.response_clip_ratio_max is None or clip is None or not clip.finite:
        return []
    size = min(h.window_steps, clip.finite)
    step, last = clip.window_mean(size)
    if last <= h.response_clip_ratio_max:
        return []
    return [
        HealthWarning(
            "length_limit",
            "response_clip_ratio",
            step,
            f"{_g(last * 100)}% of responses hit the length limit over the last {size} steps: above "
            f"response_clip_ratio_max {h.response_clip_ratio_max:g} (raise data.max_response_length?)",
        )
    ]


def throughput_falling(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    speed = m.get("throughput_tokens_per_s_per_gpu")
    if h.throughput_min_fraction is None or speed is None:
        return []
    if speed.finite <= h.window_steps:  # a median of a few steps is the warm-up's
        return []
    step, last = speed.tail[-1]
    median = statistics.median(speed.values[:-1])
    if median <= 0 or last >= h.throughput_min_fraction * median:
        return []
    return [
        HealthWarning(
            "throughput_falling",
            "throughput_tokens_per_s_per_gpu",
            step,
            f"throughput at step {step} is {_g(last)} tokens/s/GPU, {_g(last / median * 100)}% of the median "
            f"{_g(median)} before it: below throughput_min_fraction {h.throughput_min_fraction:g}",
        )
    ]


def _state(m: RunMetrics | RunState, window: int | None = None) -> RunState:
    if isinstance(m, RunState):
        return m
    return RunState.from_metrics(m, Health().window_steps if window is None else window)


def seconds_per_step(m: RunMetrics | RunState, last: int = INTERVALS) -> float | None:
    """The median wall time of one step over the last ``last`` logged intervals; else of ``step_time_s``.

    Measured between logged steps, so evaluations and saves count (what an ETA needs); a median, so the gap
    of a resume does not.
    """
    state = _state(m)
    last = min(last, INTERVALS)  # what the state keeps
    rates = [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in itertools.pairwise(state.walls) if s1 > s0]
    rates = [r for r in rates[-last:] if r >= 0]
    if rates:
        return statistics.median(rates)
    timed = state.get("step_time_s")
    times = [v for _, v in timed.tail[-last:] if v >= 0] if timed is not None else []
    return statistics.median(times) if times else None


def _logged_since_start(m: RunState) -> bool:
    """Whether the job's latest start logged a step (any logged step counts when its start is unknown)."""
    if m.last_logged is None:
        return False
    return m.started is None or m.last_logged >= m.started


def stalled(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    # a start that has logged nothing yet is no_first_step's: its last step belongs to an earlier start
    if now is None or h.stall_factor is None or not _logged_since_start(m):
        return []
    per_step = seconds_per_step(m)
    if per_step is None:
        return []
    step, wall = m.walls[-1]
    idle = now - wall
    limit = max(h.stall_factor * per_step, float(h.stall_min_seconds))
    if idle <= limit:
        return []
    return [
        HealthWarning(
            "stalled",
            "step",
            step,
            f"no new step for {idle:.0f} s since step {step}: more than stall_factor {h.stall_factor:g} x the "
            f"median {per_step:.3g} s per step (and stall_min_seconds {h.stall_min_seconds})",
        )
    ]


def no_first_step(m: RunState, h: Health, now: float | None) -> list[HealthWarning]:
    if now is None or h.first_step_max_seconds is None or m.started is None or _logged_since_start(m):
        return []
    waited = now - m.started
    if waited <= h.first_step_max_seconds:
        return []
    before = m.walls[-1][0] if m.walls else None
    return [
        HealthWarning(
            "no_first_step",
            "step",
            before,
            f"no step logged {waited:.0f} s after the job's latest start: more than first_step_max_seconds "
            f"{h.first_step_max_seconds} (stuck loading, starting the engines or in a collective? "
            "rladapt logs / rladapt triage)",
        )
    ]


RULES: tuple[Rule, ...] = (
    Rule("non_finite_loss", "policy_loss", (), "the loss is NaN or infinite", non_finite_loss),
    Rule(
        "reward_collapse",
        "reward_mean",
        ("window_steps", "reward_drop_fraction"),
        "the mean reward fell far below its best",
        reward_collapse,
    ),
    Rule(
        "kl_blow_up",
        "kl",
        ("window_steps", "kl_max_nats", "kl_growth_factor", "kl_growth_min_nats"),
        "the KL to the reference is above a bound or grows fast",
        kl_blow_up,
    ),
    Rule(
        "entropy_collapse",
        "entropy",
        ("window_steps", "entropy_min_fraction"),
        "the policy's entropy fell to a fraction of its start",
        entropy_collapse,
    ),
    Rule(
        "length_limit",
        "response_clip_ratio",
        ("window_steps", "response_clip_ratio_max"),
        "many responses hit the length limit",
        length_limit,
    ),
    Rule(
        "throughput_falling",
        "throughput_tokens_per_s_per_gpu",
        ("window_steps", "throughput_min_fraction"),
        "throughput fell below a fraction of its running median",
        throughput_falling,
    ),
    Rule(
        "stalled",
        "step",
        ("stall_factor", "stall_min_seconds"),
        "no new step for much longer than a step takes",
        stalled,
    ),
    Rule(
        "no_first_step",
        "step",
        ("first_step_max_seconds",),
        "a start has logged no step long after it began",
        no_first_step,
    ),
)


def check_health(
    metrics: RunMetrics | RunState, thresholds: Health | None = None, now: float | None = None
) -> list[HealthWarning]:
    """Every rule's warnings for ``metrics`` (a whole ``RunMetrics`` or the running ``RunState`` of a run, whose
    window must be the thresholds'; ``now``: the current time while the run runs, else None)."""
    h = thresholds if thresholds is not None else Health()
    state = _state(metrics, h.window_steps)
    if state.window != h.window_steps:
        raise ValueError(f"a RunState of window {state.window} judged with window_steps {h.window_steps}")
    return [w for rule in RULES for w in rule.check(state, h, now)]
