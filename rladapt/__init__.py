"""rladapt: one framework-neutral RL post-training job spec, translated by plugins into native launches."""

from __future__ import annotations

__version__ = "0.1.0"
