"""The running aggregates progress and the health rules read (``rladapt.metrics.running``): fed in pieces, as a
summary is from the bytes appended since its last read, they judge a run as its whole metrics do; kept in a run's
summary, ``status`` reads them from the bytes logged since the last call, and a resume that re-logs steps rebuilds
them."""

from __future__ import annotations

import itertools
import json
import math
import random
import sys
from pathlib import Path

import pytest

from rladapt.metrics import RunMetrics, read_metrics_dir
from rladapt.metrics.events import EventsReader
from rladapt.metrics.health import check_health
from rladapt.metrics.progress import progress
from rladapt.metrics.running import TRACKED, GoesBack, RunState, SeriesState
from rladapt.metrics.summary import read_summary
from rladapt.primitives import UsageError
from rladapt.primitives.spec import Health

# a threshold low enough for each rule to fire on the random series below, so that equality is about warnings
STRICT = Health(
    window_steps=4,
    reward_drop_fraction=0.1,
    kl_max_nats=None,
    kl_growth_factor=1.5,
    kl_growth_min_nats=0.0,
    entropy_min_fraction=0.99,
    response_clip_ratio_max=0.3,
    throughput_min_fraction=0.99,
)


def _series(rng: random.Random, steps: int) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for name in TRACKED:
        points = {}
        for step in range(1, steps + 1):
            if rng.random() < 0.2:
                continue  # not logged at every step
            value = rng.random() * (1 + step / 10)
            if name == "entropy":
                value = (1 + rng.random()) / step  # falls: the entropy rule fires on the longer runs
            if name == "policy_loss" and rng.random() < 0.05:
                value = rng.choice([math.nan, math.inf])
            points[step] = value
        out[name] = points
    return out


def _state_in_pieces(series: dict[str, dict[int, float]], wall: dict[int, float], h: Health) -> RunState:
    state = RunState(window=h.window_steps)
    cut = sorted({0, max(wall) // 3, max(wall) // 2, max(wall) - 1, max(wall)})
    for lo, hi in itertools.pairwise(cut):
        for name, points in series.items():
            part = sorted((s, v) for s, v in points.items() if lo < s <= hi)
            if part:
                state.extend(name, [s for s, _ in part], [v for _, v in part])
        for step in sorted(s for s in wall if lo < s <= hi):
            state.add_step(step)
            state.add_wall(step, wall[step])
    return state


@pytest.mark.parametrize("seed", range(6))
def test_aggregates_fed_in_pieces_judge_as_the_whole_series(seed: int) -> None:
    rng = random.Random(seed)
    steps = rng.randint(5, 80)
    series = _series(rng, steps)
    wall = {s: 1000.0 + 2 * s + rng.random() for s in range(1, steps + 1)}
    metrics = RunMetrics(run_id="r", framework="verl", version="0.9.1", series=series, wall_time=wall)
    for h in (Health(), STRICT):
        pieces = _state_in_pieces(series, wall, h)
        now = 1000.0 + 2 * steps + 5000  # long after the last step: stalled
        assert check_health(pieces, h, now) == check_health(metrics, h, now)
        assert progress(pieces, 100, h, now) == progress(metrics, 100, h, now)
        # kept as JSON (the summary) and read back: the same judgement
        again = RunState.from_json(json.loads(json.dumps(pieces.to_json())))
        assert progress(again, 100, h, now) == progress(metrics, 100, h, now)


def test_a_point_that_goes_back_is_refused() -> None:
    state = SeriesState(window=3)
    state.extend([1, 2, 3], [0.1, 0.2, 0.3])
    with pytest.raises(GoesBack):
        state.extend([3], [0.5])
    run = RunState(window=3)
    for step in range(1, 40):
        run.add_wall(step, float(step))
    run.add_wall(38, 100.0)  # a step among the last ones: its newest event
    assert run.walls[-2] == (38, 100.0)
    with pytest.raises(GoesBack):
        run.add_wall(2, 5.0)


def test_without_numpy_the_aggregates_name_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        sys.modules, "numpy", None
    )  # `import numpy` raises ImportError, as when not installed
    with pytest.raises(UsageError, match=r"^reading metrics needs numpy: pip install 'rladapt\[metrics\]'$"):
        SeriesState(window=3).extend([1], [0.5])


tensorboard = pytest.importorskip("torch.utils.tensorboard")
LOSS, REWARD = (
    "actor/pg_loss",
    "critic/score/mean",
)  # verl 0.9.1's policy_loss and reward_mean (its MetricMap)


def _log(directory: Path, steps: range, shift: float = 0.0) -> None:
    writer = tensorboard.SummaryWriter(log_dir=str(directory))
    for step in steps:
        writer.add_scalar(LOSS, math.nan if step % 17 == 0 else 1 / step, step)
        writer.add_scalar(REWARD, (step % 7) / 7 + shift, step)
    writer.close()


def test_status_progress_from_the_summary_is_the_whole_read_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, run_dir = tmp_path / "rladapt-metrics", tmp_path / "run"

    starts: list[int] = []
    real = EventsReader.read_file

    def both() -> tuple[object, object, bool]:
        with monkeypatch.context() as m:  # the summary's reads only, not the whole read compared with

            def spy(
                self: EventsReader, path: Path, start: int = 0, version: float | None = None
            ) -> tuple[int, float | None]:
                starts.append(start)
                return real(self, path, start, version)

            m.setattr(EventsReader, "read_file", spy)
            found = read_summary(run_dir, root, "verl", "0.9.1", window=STRICT.window_steps)
        assert found.state is not None
        whole = read_metrics_dir(root, "verl", "0.9.1")
        return progress(found.state, 200, STRICT), progress(whole, 200, STRICT), found.incremental

    _log(root / "a", range(1, 60))
    ours, whole, incremental = both()
    assert ours == whole and not incremental

    starts.clear()
    _log(root / "b", range(60, 120))  # the run goes on in a new file
    ours, whole, incremental = both()
    assert ours == whole and incremental and 0 in starts
    starts.clear()
    ours, whole, incremental = both()  # nothing new: nothing read
    assert ours == whole and incremental and starts == []

    _log(root / "c", range(100, 130), shift=5.0)  # a resume from step 99 re-logs steps 100 to 119
    ours, whole, incremental = both()
    assert ours == whole and not incremental  # rebuilt: the newest point of each step wins
    assert ours.reward is not None and ours.reward[1] >= 5.0  # type: ignore[attr-defined]
