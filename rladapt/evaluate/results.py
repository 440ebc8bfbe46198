"""The result files: one per (version, suite), written once and atomically, read back as metrics.

``<checkpoint dir>/rladapt-eval/<version>/<suite>.json`` holds the score, the suite's metrics, the training step
and version it measured, and every answer with its score. A file that exists is a result: the evaluator writes it
in one rename after scoring, so a crash leaves either the whole result or none, and a restart evaluates only the
(version, suite) pairs without a file. The gate's decision on a version is ``<version>/_gate.json`` (a suite name
starts with a letter, so it cannot be a suite's file).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rladapt.files import write_text

from .settings import RESULTS_DIR

__all__ = [
    "GATE_FILE",
    "RESULT_FORMAT",
    "EvalResult",
    "read_results",
    "result_path",
    "results_root",
    "write_result",
]

RESULT_FORMAT = 1
GATE_FILE = "_gate.json"
#: The evaluator's settings and its last pass (``<results>/_evaluator.json``): what ``rladapt status`` and
#: ``rladapt eval`` read to know the suites and where the versions are.
STATE_FILE = "_evaluator.json"


@dataclass(frozen=True)
class EvalResult:
    version: str
    suite: str
    step: int
    score: float
    metrics: dict[str, float]
    run_id: str | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    evaluated: str = ""
    seconds: float = 0.0
    generation: dict[str, Any] = field(default_factory=dict)
    #: what generated the answers: a serving replica's URL, or "transformers" (the weights loaded by the evaluator)
    engine: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULT_FORMAT,
            "run_id": self.run_id,
            "version": self.version,
            "step": self.step,
            "suite": self.suite,
            "score": self.score,
            "metrics": self.metrics,
            "generation": self.generation,
            "engine": self.engine,
            "evaluated": self.evaluated,
            "seconds": self.seconds,
            "samples": self.samples,
        }

    @classmethod
    def from_json(cls, data: Any) -> EvalResult:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        metrics = data.get("metrics")
        if not isinstance(metrics, dict) or not all(isinstance(v, (int, float)) for v in metrics.values()):
            raise ValueError("metrics: expected an object of numbers")
        step, score = data.get("step"), data.get("score")
        if not isinstance(step, int) or not isinstance(score, (int, float)):
            raise ValueError("expected an integer step and a numeric score")
        return cls(
            version=str(data["version"]),
            suite=str(data["suite"]),
            step=step,
            score=float(score),
            metrics={str(k): float(v) for k, v in metrics.items()},
            run_id=data.get("run_id") if isinstance(data.get("run_id"), str) else None,
            samples=list(data.get("samples") or []),
            evaluated=str(data.get("evaluated") or ""),
            seconds=float(data.get("seconds") or 0.0),
            generation=dict(data.get("generation") or {}),
            engine=str(data.get("engine") or ""),
        )


def results_root(checkpoint_dir: Path | str) -> Path:
    return Path(checkpoint_dir) / RESULTS_DIR


def result_path(root: Path, version: str, suite: str) -> Path:
    return root / version / f"{suite}.json"


def write_result(root: Path, result: EvalResult) -> Path:
    """Write ``result`` in one rename (never half a file); returns its path."""
    text = json.dumps(result.to_json(), indent=1, allow_nan=False) + "\n"
    return write_text(result_path(root, result.version, result.suite), text, what="evaluation result",
                      make_parents=True)  # fmt: skip


def read_results(root: Path, run_id: str | None = None) -> tuple[list[EvalResult], list[str]]:
    """Every result under ``root`` (oldest step first) and a warning per unreadable file. With ``run_id``, the
    results another run wrote into the same checkpoint directory are left out (as its event files are)."""
    found: list[EvalResult] = []
    warnings: list[str] = []
    if not root.is_dir():
        return found, warnings
    for path in sorted(root.glob("*/*.json")):
        if path.name.startswith("_"):
            continue
        try:
            result = EvalResult.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError) as exc:
            warnings.append(f"{path}: unreadable evaluation result ({exc})")
            continue
        if run_id is not None and result.run_id is not None and result.run_id != run_id:
            continue
        if not math.isfinite(result.score):
            continue
        found.append(result)
    found.sort(key=lambda r: (r.step, r.version, r.suite))
    return found, warnings


def read_gate(root: Path, version: str) -> dict[str, Any] | None:
    try:
        data = json.loads((root / version / GATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_gate(root: Path, version: str, decision: dict[str, Any]) -> Path:
    return write_text(root / version / GATE_FILE, json.dumps(decision, indent=1) + "\n", what="gate decision",
                      make_parents=True)  # fmt: skip


def read_state(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((root / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_state(root: Path, state: dict[str, Any]) -> Path:
    return write_text(root / STATE_FILE, json.dumps(state, indent=1) + "\n", what="evaluator state",
                      make_parents=True)  # fmt: skip
