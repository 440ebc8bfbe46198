"""One metric namespace across frameworks: neutral names, what each framework version logs them as, and a run's
metrics read back per step (``rladapt metrics``, ``compare``, ``status``, ``watch``)."""

from __future__ import annotations

from .names import BY_NAME, NAMES, NEUTRAL, Neutral
from .series import RunMetrics

__all__ = ["BY_NAME", "NAMES", "NEUTRAL", "Neutral", "RunMetrics"]
