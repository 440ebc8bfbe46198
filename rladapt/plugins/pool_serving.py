"""The serving group a spec asks for (``spec.pool.serve``), as a ``ServiceRole`` the launchers render.

It lives in the plugin contract's layer, not in ``rladapt.pool``, because ``NativeLaunch`` (this layer) is built
from it and the pool sits above: the role is only a command line, ``python -m rladapt pool serve ...``, which the
pool's own CLI carries out where the role runs (the pool's engines are checked there, and by the spec's
``PoolEngine`` before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .service import PortSpec, ServiceRole

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

__all__ = ["ROLE_NAME", "pool_serving"]

#: The role's name (its unit and log): one serving group per spec.
ROLE_NAME = "pool-serve"


def pool_serving(job: RLJob) -> tuple[ServiceRole, ...]:
    """The serving role of ``spec.pool.serve`` (none without it)."""
    pool = job.spec.pool
    if pool is None or pool.serve is None:
        return ()
    serve = pool.serve
    argv = (job.spec.runtime.python, "-m", "rladapt", "pool", "serve", "--store", pool.store,
            "--alias", serve.alias, "--replicas", str(serve.replicas), "--engine", serve.engine,
            "--port", str(serve.port), "--wait")  # fmt: skip
    # --wait: beside a run, the alias is often set later (by the publisher or a gate), not before the launch
    # vLLM and SGLang run one server per GPU; rladapt's reference engine generates on one CPU thread per replica
    on_gpu = serve.engine != "reference"
    return (
        ServiceRole(
            name=ROLE_NAME,
            argv=argv,
            cpus=serve.replicas,
            gpus=serve.replicas if on_gpu else 0,
            ports=tuple(
                PortSpec(name=f"serve-{i}", port=serve.port + i, purpose="serving")
                for i in range(serve.replicas)
            ),
            restart="on-failure",
            outlives_job=False,
            reads=("spec.pool.store",),  # the versions the publisher writes
        ),
    )
