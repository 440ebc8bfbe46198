"""The evaluator role on the real Ray head (the ``ray_head`` fixture): the README's TRL job with a continuous suite,
``rladapt launch -l ray -o shared=$PWD`` from the repository root. The evaluator is its own Ray job beside the
driver's (same working directory and environment, the run id among it); it drains the last version after the
training's job ended, and every version gets exactly one result equal to the independent score of its weights.
``rladapt stop`` ends an evaluator that is still following a run."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from rladapt.launchers.ray import RayLauncher
from rladapt.pipeline import render_native
from rladapt.plugins import load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import load_job
from tests.cli.test_cli import rladapt
from tests.conftest import REPO
from tests.support.evaluation import SUITE, check_metrics, check_results, continuous

pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
EXAMPLE = "examples/grpo-tiny-trl.yaml"


def _evaluator(run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's status document and its evaluator service as ``rladapt status`` reports them now."""
    status = rladapt("status", run_id, "--format", "json", cwd=REPO)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    (service,) = [s for s in doc.get("services") or [] if s["name"] == "evaluator"]
    return doc, service


def _wait_service(run_id: str, states: tuple[str, ...], timeout: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        doc, service = _evaluator(run_id)
        if service["state"] in states:
            return doc
        assert time.monotonic() < deadline, service
        time.sleep(2)


def test_the_evaluator_runs_the_interpreter_the_driver_runs_from_shared_storage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's relative interpreter (.venv/bin/python) is left out of Ray's upload: with the working directory
    on shared storage the driver runs it from there, and so must the evaluator's restart loop."""
    monkeypatch.chdir(REPO)
    native = render_native(
        load_job(
            REPO / EXAMPLE, ["spec.pool.store=/shared/pool", "spec.checkpoint.dir=/shared/ck", continuous()]
        ),
        "trl",
        load_registry(),
    ).native
    # the pool store and the checkpoints the evaluator reads are on storage every node mounts
    options = {"shared": f"{REPO},/shared"}
    request = render_artifacts(RayLauncher(), native, options, run_id="tiny-1a2b3c4d").request
    python = str(REPO / ".venv" / "bin" / "python")
    assert shlex.split(str(request["entrypoint"]))[0] == python
    (evaluator,) = (item["request"] for item in request["services"])
    assert evaluator["submission_id"] == "tiny-1a2b3c4d-evaluator"
    loop = evaluator["entrypoint"]
    once = loop[loop.index("until ") + len("until ") : loop.index("; do ")]
    argv = shlex.split(once)
    assert argv[0] == python and ".venv/bin/python" not in argv, loop
    assert argv[argv.index("--") + 1 :][:3] == [python, "-m", "rladapt.evaluate"], loop


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_the_readme_trl_job_is_evaluated_by_its_own_ray_job_and_stop_ends_it(
    ray_head: dict[str, Any], tmp_path: Path
) -> None:
    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("the README's interpreter .venv/bin/python is made by scripts/test.sh")
    ck, pool = tmp_path / "ck", tmp_path / "pool"
    launch = ["launch", "-f", "trl", EXAMPLE, "-l", "ray", "-o", f"address={ray_head['address']}",
              "-o", f"shared={REPO},{tmp_path}", "spec.checkpoint.every_steps=2", f"spec.pool.store={pool}"]  # fmt: skip
    res = rladapt(*launch, "--follow", "spec.training.steps=4", f"spec.checkpoint.dir={ck}", continuous(),
                  cwd=REPO, timeout=900)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    run_id = res.stdout.splitlines()[0]
    assert f"run {run_id}: SUCCEEDED (exit code 0)" in res.stderr

    # it outlives the training's job: the last version is drained, then it exits 0
    doc = _wait_service(run_id, ("SUCCEEDED", "FAILED", "STOPPED"))
    _, service = _evaluator(run_id)
    assert service["state"] == "SUCCEEDED", service
    assert service["unit"] == f"Ray job {run_id}-evaluator", service
    scores = check_results(ck, pool, run_id, [2, 4])
    assert doc["evaluation"] == {"versions": 2, "evaluated": 2, "behind": 0, "pending": [], "suites": [SUITE]}
    check_metrics(run_id, scores)

    # stop ends an evaluator that is still following its run (and the training with it)
    started = rladapt(*launch, "spec.training.steps=400", f"spec.checkpoint.dir={tmp_path / 'ck2'}", continuous(),
                      cwd=REPO, timeout=300)  # fmt: skip
    assert started.returncode == 0, started.stderr
    second = started.stdout.splitlines()[0]
    _wait_service(second, ("RUNNING",), timeout=300)
    stopped = rladapt("stop", second, cwd=REPO, timeout=300)
    assert stopped.returncode == 0, stopped.stderr
    _wait_service(second, ("STOPPED",), timeout=120)
    assert json.loads(rladapt("status", second, "--format", "json", cwd=REPO).stdout)["state"] == "STOPPED"
