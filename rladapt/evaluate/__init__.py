"""Continuous evaluation: an evaluator role beside the training that measures each new version on held-out suites.

``spec.eval.continuous`` asks for it; ``evaluator_roles`` turns it into the launch's ``evaluator`` service role
(``python -m rladapt.evaluate``); ``Evaluator`` is the worker; each result is a file (``EvalResult``) that the
metrics verbs read as ``eval/<suite>/<metric>``. See ``docs/concepts/evaluation.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .results import EvalResult, read_results, results_root
from .role import evaluator_roles
from .settings import RESULTS_DIR, EvalSettings

if TYPE_CHECKING:
    from .worker import Evaluator, Progress, Target

__all__ = [
    "RESULTS_DIR",
    "EvalResult",
    "EvalSettings",
    "Evaluator",
    "Progress",
    "Target",
    "evaluator_roles",
    "read_results",
    "results_root",
]


def __getattr__(name: str) -> Any:
    # the worker pulls in the pool and the plugin registry: the metrics verbs that only read results do not pay
    if name in ("Evaluator", "Progress", "Target"):
        from . import worker

        return getattr(worker, name)
    raise AttributeError(name)
