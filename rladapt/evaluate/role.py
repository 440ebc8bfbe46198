"""The evaluator as a service role of the launch (``NativeLaunch.services``): what every launcher runs beside the
training job when the spec has ``eval.continuous``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rladapt.plugins.service import ServiceRole

from .settings import EvalSettings

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

__all__ = ["evaluator_roles"]


def evaluator_roles(job: RLJob, framework: str = "", version: str = "") -> tuple[ServiceRole, ...]:
    """One ``evaluator`` role when the spec asks for continuous evaluation, else none.

    It outlives the training job: the last versions are published as the training ends, and the evaluator
    drains them. It exits by itself once the job has ended (its end marker in the checkpoint directory,
    ``rladapt.runs.owner.job_ended``) and every version it left is measured, or once the run's known last step
    is measured; ``rladapt stop`` stops it earlier. A crash restarts it, and it evaluates only what has no
    result yet.
    """
    settings = EvalSettings.from_job(job, framework=framework, version=version)
    if settings is None:
        return ()
    argv = (job.spec.runtime.python, "-m", "rladapt.evaluate", "--nice", "10", "--settings", settings.text())
    # it reads the checkpoints (or the pool's versions) and writes its results under the checkpoint directory
    reads = ("spec.checkpoint.dir", *(("spec.pool.store",) if settings.continuous.follow == "pool" else ()))
    return (
        ServiceRole(
            name="evaluator", argv=argv, cpus=1, restart="on-failure", outlives_job=True, reads=reads
        ),
    )
