"""``rladapt.metrics.compare`` and ``plot`` on constructed metrics: alignment by step, the difference against the
baseline, the JSON, and the figure (a real PNG, one panel per metric, a line per run)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rladapt.metrics import RunMetrics
from rladapt.metrics.compare import compare, default_metrics


def metrics(
    run_id: str,
    framework: str = "trl",
    version: str = "1.16.0",
    native_series: dict[str, dict[int, float]] | None = None,
    **series: dict[int, float],
) -> RunMetrics:
    """A run's metrics; ``native_series`` holds the names that are no Python identifier (``train/reward_std``)."""
    return RunMetrics(
        run_id=run_id, framework=framework, version=version, series={**series, **(native_series or {})}
    )


A = metrics(
    "a",
    reward_mean={1: 0.1, 2: 0.2, 3: 0.3},
    kl={1: 0.0, 2: 0.01},
    val_score={2: 0.5},
    native_series={"train/reward_std": {1: 1.0}},
)
B = metrics(
    "b", "verl", "0.9.1", reward_mean={1: 0.15, 3: 0.1, 4: 0.9}, val_score={2: 0.75}, entropy={1: 2.0}
)


def test_runs_are_aligned_by_step_against_the_first() -> None:
    c = compare([A, B])
    assert default_metrics([A, B]) == ["reward_mean", "val_score"]  # both logged, in the neutral order
    reward = c.metrics[0]
    assert (reward.name, reward.higher_is_better) == ("reward_mean", True)
    assert reward.rows == [(1, [0.1, 0.15]), (2, [0.2, None]), (3, [0.3, 0.1]), (4, [None, 0.9])]
    diffs = [reward.diffs(v) for _, v in reward.rows]
    assert diffs[0][0] == pytest.approx(0.05) and diffs[1:] == [[None], [pytest.approx(-0.2)], [None]]
    mean, n = reward.mean_diffs()[0]
    assert n == 2 and mean == pytest.approx(-0.075)
    assert c.label(B) == "b (verl 0.9.1)"


def test_named_metrics_and_a_third_run() -> None:
    C = metrics("c", reward_mean={1: math.nan, 2: 0.4})
    c = compare([A, B, C], ["reward_mean", "train/reward_std"])
    assert [m.name for m in c.metrics] == ["reward_mean", "train/reward_std"]
    assert c.metrics[1].rows == [(1, [1.0, None, None])] and c.metrics[1].unit == ""
    doc = c.as_json()
    assert doc["baseline"] == "a" and [r["run"] for r in doc["runs"]] == ["a", "b", "c"]
    step1 = doc["metrics"]["reward_mean"]["steps"][0]
    assert step1["values"] == {"a": 0.1, "b": 0.15, "c": None}  # NaN is null in JSON
    assert step1["diff"]["b"] == pytest.approx(0.05) and step1["diff"]["c"] is None
    assert doc["metrics"]["reward_mean"]["mean_diff"]["c"] == {"mean": pytest.approx(0.2), "steps": 1}
    with pytest.raises(ValueError):
        compare([A])


def test_the_plot_is_a_png_with_a_panel_per_metric(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra")
    from rladapt.metrics.plot import figure, save

    c = compare([A, B], ["reward_mean", "kl", "val_score", "train/reward_std"])
    fig = figure(c)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4 and len(fig.axes) == 6  # 2 rows of 3, the last two cells hidden
    titles = [ax.get_title() for ax in visible]
    assert titles == [
        "reward_mean  (higher is better)",
        "kl [nats]",
        "val_score  (higher is better)",
        "train/reward_std",
    ]
    reward = visible[0]
    assert [line.get_label() for line in reward.get_lines()] == ["a (trl 1.16.0)", "b (verl 0.9.1)"]
    assert list(np.asarray(reward.get_lines()[1].get_xdata())) == [1, 3, 4]
    assert (
        np.asarray(visible[1].get_lines()[1].get_xdata()).size == 0
    )  # b logged no KL: an empty line, the legend intact
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["a (trl 1.16.0)", "b (verl 0.9.1)"]

    out = save(c, tmp_path / "cmp.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > height > 300
