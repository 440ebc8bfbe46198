"""What the evaluator is told: the spec's ``eval.continuous`` and where the run's versions and results are.

The settings travel as one JSON argument (``python -m rladapt.evaluate --settings JSON``), so the role a launcher
runs needs nothing from the machine that launched it; ``rladapt eval RUN`` builds the same settings from the run's
record and spec.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rladapt.primitives.spec import ContinuousEval

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

__all__ = ["RESULTS_DIR", "EvalSettings"]

#: The results' folder inside the run's checkpoint directory, beside ``rladapt-metrics``: the one place that is
#: the run's own on every launcher, survives a resume, and where its other metrics are read back from.
RESULTS_DIR = "rladapt-eval"


@dataclass(frozen=True)
class EvalSettings:
    continuous: ContinuousEval
    #: the run's checkpoint directory as the job sees it (results go under ``RESULTS_DIR`` there)
    checkpoint_dir: str
    framework: str = ""
    version: str = ""
    #: ``spec.pool.store`` (follow: pool)
    store: str | None = None
    #: the run whose versions are followed; None: ``$RLADAPT_RUN_ID`` where the evaluator runs
    run_id: str | None = None
    #: the training's last step: a follower exits once it has evaluated a version at or after it
    final_step: int | None = None

    @classmethod
    def from_job(cls, job: RLJob, *, framework: str = "", version: str = "") -> EvalSettings | None:
        spec = job.spec
        if spec.eval.continuous is None:
            return None
        return cls(
            continuous=spec.eval.continuous,
            checkpoint_dir=job.checkpoint_dir,
            framework=framework,
            version=version,
            store=spec.pool.store if spec.pool is not None else None,
            final_step=_last_version_step(job),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "continuous": self.continuous.model_dump(mode="json", exclude_none=True),
            "checkpoint_dir": self.checkpoint_dir,
            "framework": self.framework,
            "version": self.version,
            "store": self.store,
            "run_id": self.run_id,
            "final_step": self.final_step,
        }

    def text(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Any) -> EvalSettings:
        """Settings from their JSON form; ValueError (or a pydantic ValidationError, a ValueError) when malformed."""
        if not isinstance(data, dict) or not isinstance(data.get("checkpoint_dir"), str):
            raise ValueError("expected an object with continuous and checkpoint_dir")
        final = data.get("final_step")
        return cls(
            continuous=ContinuousEval.model_validate(data.get("continuous")),
            checkpoint_dir=data["checkpoint_dir"],
            framework=str(data.get("framework") or ""),
            version=str(data.get("version") or ""),
            store=data.get("store") if isinstance(data.get("store"), str) else None,
            run_id=data.get("run_id") if isinstance(data.get("run_id"), str) else None,
            final_step=final if isinstance(final, int) else None,
        )


def _last_version_step(job: RLJob) -> int | None:
    """The step of the run's last version: its last step, or with ``spec.pool.every_steps`` the last multiple of
    it (the publisher skips the others); None when the run counts epochs, alone or beside steps (it stops at
    whichever limit comes first: its last step is not known here)."""
    steps = job.spec.training.steps
    if steps is None or job.spec.training.epochs is not None:
        return None
    pool, continuous = job.spec.pool, job.spec.eval.continuous
    if pool is not None and pool.every_steps and continuous is not None and continuous.follow == "pool":
        return steps - steps % pool.every_steps or None
    return steps
