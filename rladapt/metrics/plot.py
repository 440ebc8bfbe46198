"""``rladapt compare --plot``: one panel per metric, each run a line, drawn with matplotlib's Agg canvas.

matplotlib is imported here only, so only ``--plot`` needs it (``pip install 'rladapt[plot]'``). The figure is
built on ``matplotlib.figure.Figure`` directly, not pyplot: no global state and no GUI backend, whatever the
user's matplotlibrc says.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from rladapt.primitives.errors import OutputError, UsageError

from .compare import Comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Panels per row: three stay readable on a laptop screen and in a pull request.
COLUMNS = 3


def figure(comparison: Comparison) -> Figure:
    """The figure: one panel per compared metric (a title with its neutral name, unit and which way is better),
    a line per run, and one legend naming each run, framework and version."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'rladapt[plot]'") from None
    panels = comparison.metrics
    cols = min(COLUMNS, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(4.6 * cols, 3.2 * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    handles = []
    # one step axis for every panel, so a validation every N steps lines up with the training curves
    steps = [s for metric in panels for s, _ in metric.rows]
    pad = max((max(steps) - min(steps)) * 0.03, 0.3) if steps else 0.5
    for i, metric in enumerate(panels):
        ax = axes[i // cols][i % cols]
        for j, run in enumerate(comparison.runs):
            points = [(s, v[j]) for s, v in metric.rows if v[j] is not None and math.isfinite(v[j])]  # type: ignore[arg-type]
            # sparse series (a validation every N steps) and short runs read better with markers
            marker = "o" if len(points) <= 30 or metric.name == "val_score" else None
            (line,) = ax.plot(
                [s for s, _ in points],
                [v for _, v in points],
                marker=marker,
                markersize=4,
                linewidth=1.6,
                color=f"C{j}",
                label=comparison.label(run),
            )
            if i == 0:
                handles.append(line)
        better = {True: "  (higher is better)", False: "  (lower is better)", None: ""}[
            metric.higher_is_better
        ]
        unit = f" [{metric.unit}]" if metric.unit else ""
        ax.set_title(f"{metric.name}{unit}{better}", fontsize=11)
        ax.set_xlabel("step", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if steps:
            ax.set_xlim(min(steps) - pad, max(steps) + pad)
        ax.tick_params(labelsize=8)
    for k in range(len(panels), rows * cols):  # the empty cells of the last row
        axes[k // cols][k % cols].set_visible(False)
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncols=min(len(handles), 3),
        fontsize=9,
        title=f"baseline: {comparison.label(comparison.baseline)}",
        title_fontsize=9,
    )
    return fig


def save(comparison: Comparison, path: str | Path) -> Path:
    """Draw ``comparison`` into ``path`` (PNG; another suffix matplotlib knows gives that format)."""
    target = Path(path)
    fig = figure(comparison)
    try:
        fig.savefig(target, dpi=110)
    except (OSError, ValueError) as exc:
        raise OutputError(f"cannot write the plot {str(target)!r}: {exc}") from None
    return target
