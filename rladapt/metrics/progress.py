"""How far a run is, from its metrics: step / total, time per step, ETA, the latest reward and validation score,
and the health warnings (what ``rladapt status`` adds and ``rladapt watch`` refreshes). Pure over ``RunMetrics`` or
the running ``RunState`` a run's summary keeps."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rladapt.primitives.spec import Health

from .health import HealthWarning, check_health, seconds_per_step
from .running import RunState
from .series import RunMetrics


@dataclass(frozen=True)
class Progress:
    step: int | None
    total: int | None
    seconds_per_step: float | None
    eta_seconds: float | None
    reward: tuple[int, float] | None
    val_latest: tuple[int, float] | None
    val_best: tuple[int, float] | None
    last_logged: float | None
    warnings: list[HealthWarning] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        def point(p: tuple[int, float] | None) -> dict[str, Any] | None:
            # JSON has no NaN: a non-finite value is null, its step kept
            return None if p is None else {"step": p[0], "value": p[1] if math.isfinite(p[1]) else None}

        return {
            "step": self.step,
            "total_steps": self.total,
            "seconds_per_step": self.seconds_per_step,
            "eta_seconds": self.eta_seconds,
            "reward_mean": point(self.reward),
            "val_score": point(self.val_latest),
            "val_score_best": point(self.val_best),
            "last_logged": self.last_logged,
            "warnings": [w.as_json() for w in self.warnings],
        }

    def lines(self) -> list[tuple[str, str]]:
        """``(label, text)`` rows for a terminal; rows without data are left out."""
        rows: list[tuple[str, str]] = []
        if self.step is not None:
            of = f" / {self.total}" if self.total else ""
            share = f" ({self.step / self.total:.0%})" if self.total else ""
            rows.append(("step", f"{self.step}{of}{share}"))
        if self.seconds_per_step is not None:
            rows.append(("per step", duration(self.seconds_per_step)))
        if self.eta_seconds is not None:
            rows.append(("eta", duration(self.eta_seconds)))
        if self.reward is not None:
            rows.append(("reward", f"{number(self.reward[1])} (step {self.reward[0]})"))
        if self.val_latest is not None:
            text = f"{number(self.val_latest[1])} (step {self.val_latest[0]})"
            if self.val_best is not None and self.val_best != self.val_latest:
                text += f", best {number(self.val_best[1])} (step {self.val_best[0]})"
            rows.append(("val", text))
        for w in self.warnings:
            rows.append(("warning", f"{w.rule}: {w.message}"))
        return rows


def number(value: float) -> str:
    return f"{value + 0.0:.4g}"


def duration(seconds: float) -> str:
    """``0.84 s``, ``12.5 s``, ``3m05s``, ``2h03m``."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    whole = round(seconds)
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def progress(
    metrics: RunMetrics | RunState,
    total_steps: int | None = None,
    thresholds: Health | None = None,
    now: float | None = None,
) -> Progress:
    """The progress of a run (its whole ``RunMetrics``, or its running ``RunState``, whose window must be the
    thresholds'): ``now`` is the current time while it runs (ETA, the stall rule), None once ended."""
    h = thresholds if thresholds is not None else Health()
    state = metrics if isinstance(metrics, RunState) else RunState.from_metrics(metrics, h.window_steps)
    step = state.last_step
    per_step = seconds_per_step(state)
    eta = None
    if now is not None and step is not None and total_steps and per_step is not None:
        eta = max(total_steps - step, 0) * per_step
    reward, val = state.get("reward_mean"), state.get("val_score")
    return Progress(
        step=step,
        total=total_steps,
        seconds_per_step=per_step,
        eta_seconds=eta,
        reward=reward.last if reward is not None else None,
        val_latest=val.last if val is not None else None,
        val_best=val.high if val is not None else None,
        last_logged=state.last_logged,
        warnings=check_health(state, h, now),
    )
