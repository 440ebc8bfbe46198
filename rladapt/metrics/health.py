"""Health warnings from a run's metrics: rules as data, each a pure function of ``RunMetrics`` and thresholds.

The thresholds are ``spec.health`` (``rladapt.primitives.spec.Health``), recorded with the run at launch, so that
``rladapt status`` and ``watch`` judge a run by the thresholds it was launched with. A rule whose metric the run
does not log (a version that logs no entropy), or whose threshold is null, says nothing: a warning is only ever
about numbers the run logged, and its message carries them.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rladapt.primitives.spec import Health

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


Check = Callable[[RunMetrics, Health, float | None], list[HealthWarning]]


@dataclass(frozen=True)
class Rule:
    """A health rule: its id, the metric it reads, the ``spec.health`` fields it uses and its check.

    ``check(metrics, thresholds, now)``: ``now`` is the current time (seconds since the epoch) while the run is
    running, None once it ended (nothing can stall then).
    """

    id: str
    metric: str
    thresholds: tuple[str, ...]
    meaning: str
    check: Check


def _finite(points: Mapping[int, float] | None) -> list[tuple[int, float]]:
    return [(s, v) for s, v in sorted((points or {}).items()) if math.isfinite(v)]


def _windows(points: list[tuple[int, float]], size: int) -> list[tuple[int, float]]:
    """``(last step, mean)`` of each run of ``size`` consecutive points (none when there are fewer)."""
    return [
        (points[i + size - 1][0], statistics.fmean(v for _, v in points[i : i + size]))
        for i in range(len(points) - size + 1)
    ]


def _g(value: float) -> str:
    return f"{value:.4g}"


def non_finite_loss(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    points = sorted((m.series.get("policy_loss") or {}).items())
    bad = [(s, v) for s, v in points if not math.isfinite(v)]
    if not bad:
        return []
    step, value = bad[-1]
    first = bad[0][0]
    since = f" (first at step {first}, {len(bad)} of {len(points)} steps)" if len(bad) > 1 else ""
    return [
        HealthWarning("non_finite_loss", "policy_loss", step, f"policy_loss is {value} at step {step}{since}")
    ]


def reward_collapse(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    if h.reward_drop_fraction is None:
        return []
    windows = _windows(_finite(m.series.get("reward_mean")), h.window_steps)
    if len(windows) < 2:
        return []
    best_step, best = max(windows, key=lambda w: w[1])
    step, last = windows[-1]
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


def kl_blow_up(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    windows = _windows(_finite(m.series.get("kl")), h.window_steps)
    if not windows:
        return []
    step, last = windows[-1]
    if h.kl_max_nats is not None and last > h.kl_max_nats:
        return [
            HealthWarning(
                "kl_blow_up",
                "kl",
                step,
                f"kl over the last {h.window_steps} steps is {_g(last)} nats, above kl_max_nats {h.kl_max_nats:g}",
            )
        ]
    if h.kl_growth_factor is None or len(windows) <= h.window_steps:
        return []
    _, before = windows[-1 - h.window_steps]  # the window just before the last one, no step shared
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


def entropy_collapse(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    if h.entropy_min_fraction is None:
        return []
    windows = _windows(_finite(m.series.get("entropy")), h.window_steps)
    if len(windows) <= h.window_steps:  # the last window must not overlap the first
        return []
    first = windows[0][1]
    step, last = windows[-1]
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


def length_limit(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    if h.response_clip_ratio_max is None:
        return []
    points = _finite(m.series.get("response_clip_ratio"))
    if not points:
        return []
    size = min(h.window_steps, len(points))
    step, last = _windows(points, size)[-1]
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


def throughput_falling(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    if h.throughput_min_fraction is None:
        return []
    points = _finite(m.series.get("throughput_tokens_per_s_per_gpu"))
    if len(points) <= h.window_steps:  # a median of a few steps is the warm-up's
        return []
    step, last = points[-1]
    median = statistics.median(v for _, v in points[:-1])
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


def seconds_per_step(m: RunMetrics, last: int = 20) -> float | None:
    """The median wall time of one step over the last ``last`` logged intervals; else of ``step_time_s``.

    Measured between logged steps, so evaluations and saves count (what an ETA needs); a median, so the gap
    of a resume does not.
    """
    wall = sorted(m.wall_time.items())
    rates = [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in itertools.pairwise(wall) if s1 > s0]
    rates = [r for r in rates[-last:] if r >= 0]
    if rates:
        return statistics.median(rates)
    timed = [v for _, v in _finite(m.series.get("step_time_s"))[-last:] if v >= 0]
    return statistics.median(timed) if timed else None


def _since_start(m: RunMetrics) -> dict[int, float]:
    """The steps the job's latest start logged (all of them when its start is unknown)."""
    return {s: t for s, t in m.wall_time.items() if m.started is None or t >= m.started}


def stalled(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    # a start that has logged nothing yet is no_first_step's: its last step belongs to an earlier start
    if now is None or h.stall_factor is None or not _since_start(m):
        return []
    per_step = seconds_per_step(m)
    if per_step is None:
        return []
    step = max(m.wall_time)
    idle = now - m.wall_time[step]
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


def no_first_step(m: RunMetrics, h: Health, now: float | None) -> list[HealthWarning]:
    if now is None or h.first_step_max_seconds is None or m.started is None or _since_start(m):
        return []
    waited = now - m.started
    if waited <= h.first_step_max_seconds:
        return []
    before = max(m.wall_time) if m.wall_time else None
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
    metrics: RunMetrics, thresholds: Health | None = None, now: float | None = None
) -> list[HealthWarning]:
    """Every rule's warnings for ``metrics`` (``now``: the current time while the run runs, else None)."""
    h = thresholds if thresholds is not None else Health()
    return [w for rule in RULES for w in rule.check(metrics, h, now)]
