"""Bounded running aggregates of a run's metrics: all that progress (step, time per step, reward, validation) and
every health rule (``rladapt.metrics.health``) read, kept as points arrive in step order.

The rules look at windows of ``spec.health.window_steps`` consecutive finite points: the first window, the last
one, the one just before it, the best one; a count of the non-finite losses; the median of every throughput but
the last. ``SeriesState`` keeps exactly that for one series (the first window, the last ``2 x window`` points, the
best window's mean, counts; the finite throughputs in a compact array: a median needs every one), so that what
``status`` and ``watch`` show of a 100,000-step run is computed from a few kilobytes, updated from the points
logged since the last call (``rladapt.metrics.summary``). ``RunState.from_metrics`` builds the same state from a
whole ``RunMetrics``: one evaluation of the rules, whichever way the points came.

Points only go forward: a point at or before a step already taken (a resume re-logging the steps after its
checkpoint) is ``GoesBack``, and the caller rebuilds the state from the whole series, where the newest point of
each step wins.
"""

from __future__ import annotations

import base64
import statistics
from array import array
from dataclasses import dataclass, field
from typing import Any

from .records import load_numpy
from .series import RunMetrics

#: the neutral series progress and the health rules read
TRACKED = (
    "policy_loss",
    "reward_mean",
    "kl",
    "entropy",
    "response_clip_ratio",
    "throughput_tokens_per_s_per_gpu",
    "step_time_s",
    "val_score",
)
#: a median of every point but the last (``throughput_falling``)
KEEP_ALL = frozenset({"throughput_tokens_per_s_per_gpu"})
#: ``seconds_per_step``: the median of the last 20 intervals between logged steps
INTERVALS = 20


class GoesBack(Exception):
    """A point at or before a step already taken: the state is rebuilt from the whole series."""


@dataclass
class SeriesState:
    """One series, its points added in step order."""

    window: int
    keep_all: bool = False
    #: every point, finite or not
    count: int = 0
    last: tuple[int, float] | None = None
    bad: int = 0
    first_bad: int | None = None
    last_bad: tuple[int, float] | None = None
    #: the finite points
    finite: int = 0
    head: list[tuple[int, float]] = field(default_factory=list)
    tail: list[tuple[int, float]] = field(default_factory=list)
    #: ``(last step, mean)`` of the best window so far (the earliest on a tie)
    best_window: tuple[int, float] | None = None
    #: the highest and lowest finite points (the earliest on a tie)
    high: tuple[int, float] | None = None
    low: tuple[int, float] | None = None
    values: array[float] = field(default_factory=lambda: array("d"))

    @property
    def keep(self) -> int:
        return max(2 * self.window, INTERVALS + 1)

    def add(self, step: int, value: float) -> None:
        self.extend([step], [value])

    def extend(self, steps: Any, values: Any) -> None:
        """Add points (steps strictly ascending, after every step taken), windows computed in numpy."""
        np = load_numpy()

        steps = np.asarray(steps, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        if not len(steps):
            return
        if (self.last is not None and int(steps[0]) <= self.last[0]) or bool(np.any(np.diff(steps) <= 0)):
            raise GoesBack
        self.count += len(steps)
        self.last = (int(steps[-1]), float(values[-1]))
        ok = np.isfinite(values)
        bad = np.flatnonzero(~ok)
        if len(bad):
            self.bad += len(bad)
            if self.first_bad is None:
                self.first_bad = int(steps[bad[0]])
            self.last_bad = (int(steps[bad[-1]]), float(values[bad[-1]]))
        fs, fv = steps[ok], values[ok]
        if not len(fs):
            return
        w = self.window
        # the windows that end at a new point: the last w - 1 points kept, then the new ones
        prev = self.tail[len(self.tail) - (w - 1) :] if w > 1 else []
        vs = np.concatenate([np.array([v for _, v in prev], dtype=np.float64), fv])
        ss = np.concatenate([np.array([s for s, _ in prev], dtype=np.int64), fs])
        if len(vs) >= w:
            sums = np.lib.stride_tricks.sliding_window_view(vs, w).sum(axis=1)
            i = int(np.argmax(sums))  # the earliest best window
            mean = statistics.fmean(vs[i : i + w].tolist())
            if self.best_window is None or mean > self.best_window[1]:
                self.best_window = (int(ss[i + w - 1]), mean)
        self.finite += len(fs)
        new = list(zip(fs.tolist(), fv.tolist(), strict=True))
        if len(self.head) < w:
            self.head.extend(new[: w - len(self.head)])
        self.tail = (self.tail + new[-self.keep :])[-self.keep :]
        hi, lo = int(np.argmax(fv)), int(np.argmin(fv))
        if self.high is None or fv[hi] > self.high[1]:
            self.high = new[hi]
        if self.low is None or fv[lo] < self.low[1]:
            self.low = new[lo]
        if self.keep_all:
            self.values.frombytes(fv.tobytes())

    def window_mean(self, size: int, end: int = 0) -> tuple[int, float]:
        """``(last step, mean)`` of the ``size`` finite points ending ``end`` points before the newest."""
        points = self.tail[len(self.tail) - end - size : len(self.tail) - end]
        return points[-1][0], statistics.fmean(v for _, v in points)

    def windows(self) -> int:
        """How many windows of ``window`` consecutive finite points there are."""
        return max(self.finite - self.window + 1, 0)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "values"}
        out["values"] = base64.b64encode(self.values.tobytes()).decode("ascii")
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SeriesState:
        def point(p: Any) -> tuple[int, float] | None:
            return None if p is None else (int(p[0]), float(p[1]))

        values = array("d")
        values.frombytes(base64.b64decode(data["values"]))
        return cls(
            window=int(data["window"]),
            keep_all=bool(data["keep_all"]),
            count=int(data["count"]),
            last=point(data["last"]),
            bad=int(data["bad"]),
            first_bad=None if data["first_bad"] is None else int(data["first_bad"]),
            last_bad=point(data["last_bad"]),
            finite=int(data["finite"]),
            head=[(int(s), float(v)) for s, v in data["head"]],
            tail=[(int(s), float(v)) for s, v in data["tail"]],
            best_window=point(data["best_window"]),
            high=point(data["high"]),
            low=point(data["low"]),
            values=values,
        )


@dataclass
class RunState:
    """What progress and the health rules read of a run: its tracked series, its newest step, and when the last
    steps were logged (each step's newest event)."""

    window: int
    series: dict[str, SeriesState] = field(default_factory=dict)
    last_step: int | None = None
    #: ``(step, wall)`` of the last ``INTERVALS + 1`` logged steps
    walls: list[tuple[int, float]] = field(default_factory=list)
    last_logged: float | None = None
    #: when the job's latest start began (``RunMetrics.started``): set by the reader, not kept
    started: float | None = None

    def extend(self, name: str, steps: Any, values: Any) -> None:
        state = self.series.get(name)
        if state is None:
            state = self.series[name] = SeriesState(self.window, keep_all=name in KEEP_ALL)
        state.extend(steps, values)

    def add_step(self, step: int) -> None:
        if self.last_step is None or step > self.last_step:
            self.last_step = step

    def add_wall(self, step: int, wall: float) -> None:
        """The newest event of ``step`` so far was logged at ``wall``."""
        walls = self.walls
        if not walls or step > walls[-1][0]:
            walls.append((step, wall))
            if len(walls) > INTERVALS + 1:
                del walls[0]
        else:
            at = next((i for i, (s, _) in enumerate(walls) if s == step), None)
            if at is None:  # a step not among the last ones, or one between two of them
                raise GoesBack
            walls[at] = (step, max(walls[at][1], wall))
        self.last_logged = wall if self.last_logged is None else max(self.last_logged, wall)

    def get(self, name: str) -> SeriesState | None:
        return self.series.get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "series": {n: s.to_json() for n, s in self.series.items()},
            "last_step": self.last_step,
            "walls": self.walls,
            "last_logged": self.last_logged,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        return cls(
            window=int(data["window"]),
            series={str(n): SeriesState.from_json(s) for n, s in data["series"].items()},
            last_step=None if data["last_step"] is None else int(data["last_step"]),
            walls=[(int(s), float(w)) for s, w in data["walls"]],
            last_logged=None if data["last_logged"] is None else float(data["last_logged"]),
        )

    @classmethod
    def from_metrics(cls, metrics: RunMetrics, window: int) -> RunState:
        state = cls(window=window, started=metrics.started)
        for name in TRACKED:
            points = sorted((metrics.series.get(name) or {}).items())
            if points:
                state.extend(name, [s for s, _ in points], [v for _, v in points])
        state.last_step = metrics.last_step()
        for step, wall in sorted(metrics.wall_time.items())[-(INTERVALS + 1) :]:
            state.walls.append((step, wall))
        state.last_logged = max(metrics.wall_time.values()) if metrics.wall_time else None
        return state
