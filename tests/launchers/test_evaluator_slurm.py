"""The evaluator role on the real single-node Slurm (``.ci/slurm.sh``, the ``slurm`` fixture of test_slurm.py): the
README's TRL job with a continuous suite, ``rladapt launch -l slurm`` from the repository root as written. The
evaluator is a job step beside the driver (``srun --overlap``); it reads the pool store and the checkpoint
directory at the paths the job sees, takes the run id from the job's environment, and drains the last version after
the driver ended. Every version gets exactly one result, equal to the score computed independently from its
weights, and the results are the run's metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rladapt.runs import RunStore
from tests.conftest import REPO
from tests.support.evaluation import SUITE, check_metrics, check_results, continuous

from .test_slurm import slurm, slurm_env  # noqa: F401 (the fixtures)


@pytest.mark.engine
def test_the_readme_trl_job_is_evaluated_by_a_job_step_on_slurm(
    slurm_env: dict[str, str],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    from tests.cli.test_cli import rladapt

    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("the README's interpreter .venv/bin/python is made by scripts/test.sh")
    ck, pool = tmp_path / "ck", tmp_path / "pool"
    res = rladapt(
        "launch", "-f", "trl", "--follow", "examples/grpo-tiny-trl.yaml", "-l", "slurm", "-o", "gpus_per_node=0",
        "-o", "cpus_per_task=1", "-o", "mem=2G", "-o", "ray=false", "spec.training.steps=4",
        "spec.checkpoint.every_steps=2", f"spec.checkpoint.dir={ck}", f"spec.pool.store={pool}", continuous(),
        cwd=REPO, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    run_id = res.stdout.splitlines()[0]
    assert f"run {run_id}: SUCCEEDED (exit code 0)" in res.stderr

    scores = check_results(ck, pool, run_id, [2, 4])

    status = rladapt("status", run_id, "--format", "json", cwd=REPO)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["evaluation"] == {"versions": 2, "evaluated": 2, "behind": 0, "pending": [], "suites": [SUITE]}
    (service,) = [s for s in doc["services"] if s["name"] == "evaluator"]
    assert service["state"] == "SUCCEEDED" and service["unit"].endswith("step evaluator"), service
    text = rladapt("status", run_id, cwd=REPO).stdout
    assert "service:   evaluator SUCCEEDED" in text and "2 of 2 versions evaluated" in text, text

    # the job step's own log, in the run's services/ folder
    log = (RunStore().get(run_id).dir / "services" / "evaluator.log").read_text()
    assert sorted(line.split()[1] for line in log.splitlines() if f"{SUITE}: score" in line) == [
        "v00000001",
        "v00000002",
    ], log

    check_metrics(run_id, scores)
