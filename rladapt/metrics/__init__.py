"""One metric namespace across frameworks: neutral names, what each framework version logs them as, and a run's
metrics read back per step (``rladapt metrics``, ``compare``, ``status``, ``watch``)."""

from __future__ import annotations

from .mapping import Absent, Logged, MetricMap
from .names import BY_NAME, METRICS_DIR, NAMES, NEUTRAL, Neutral, metrics_dir
from .series import RunMetrics
from .store import read_metrics_dir, read_run_metrics, run_metrics_dir

__all__ = [
    "BY_NAME",
    "METRICS_DIR",
    "NAMES",
    "NEUTRAL",
    "Absent",
    "Logged",
    "MetricMap",
    "Neutral",
    "RunMetrics",
    "metrics_dir",
    "read_metrics_dir",
    "read_run_metrics",
    "run_metrics_dir",
]
