"""The README's TRL example, as written, on the real Ray head (the ``ray_head`` fixture): ``rladapt launch -f trl
-l ray -o address=... -o shared=$PWD examples/grpo-tiny-trl.yaml`` from the repository root trains to SUCCEEDED.

The working directory is the repository, on storage the head's node shares (this machine): its relative
interpreter (``.venv/bin/python``, which Ray's upload leaves out) runs from there, and the tiny model's weights,
which the adapter's excludes drop (``*.safetensors``), are shipped. The checkpoint directory is given absolute so
that ``rladapt checkpoints``, ``metrics`` and ``resume`` read it from here, as from a shared file system.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import rladapt
from tests.conftest import REPO

pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
EXAMPLE = "examples/grpo-tiny-trl.yaml"


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_the_readme_trl_example_trains_on_ray_with_checkpoints_metrics_and_resume(
    ray_head: dict[str, Any], tmp_path: Path
) -> None:
    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("the README's interpreter .venv/bin/python is made by scripts/test.sh")
    ck = tmp_path / "ck"
    res = rladapt(
        "launch", "-f", "trl", "--follow", EXAMPLE, "-l", "ray", "-o", f"address={ray_head['address']}",
        "-o", f"shared={REPO},{tmp_path}", "spec.training.steps=2", "spec.checkpoint.every_steps=2",
        "spec.checkpoint.resume=auto", f"spec.checkpoint.dir={ck}",
        cwd=REPO, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    run_id = res.stdout.splitlines()[0]
    assert f"run {run_id}: SUCCEEDED (exit code 0)" in res.stderr
    assert "warning: spec.checkpoint.dir" not in res.stderr  # on the shared storage declared

    checkpoints = rladapt("checkpoints", run_id, "--format", "json", cwd=REPO)
    assert checkpoints.returncode == 0, checkpoints.stderr
    steps = json.loads(checkpoints.stdout)
    assert [s["step"] for s in steps["checkpoints"] if s["complete"]] == [2], steps

    metrics = rladapt("metrics", run_id, "--format", "csv", cwd=REPO)
    assert metrics.returncode == 0, metrics.stderr
    rows = metrics.stdout.splitlines()
    assert rows[0].startswith("step,") and [r.split(",")[0] for r in rows[1:]] == ["1", "2"], rows

    resumed = rladapt("resume", run_id, cwd=REPO, timeout=900)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr
