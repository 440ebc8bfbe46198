"""A relative path given on the command line is recorded absolute, so the run's commands work from anywhere.

The kubernetes launcher is the one with a path option (``-o kubeconfig=kc.yaml``); no Kubernetes API server
can run here, so it talks to the fake API server of the launcher tests through the real ``kubernetes`` client.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rladapt.plugins import load_registry
from tests.cli.test_cli import GSM8K, rladapt
from tests.launchers.k8s_fake_apiserver import FakeCluster, fake_apiserver, write_kubeconfig

IMAGE = "ghcr.io/example/rl:2025.1"


def test_relative_kubeconfig_is_recorded_absolute_and_status_works_elsewhere_fake_apiserver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)
    if "verl" not in registry.frameworks:
        pytest.skip("the built-in verl adapter is not importable here")
    # Only the file named on the command line may be found: no $KUBECONFIG, no ~/.kube/config to fall back on.
    monkeypatch.delenv("KUBECONFIG", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    launch_dir, other_dir = tmp_path / "project", tmp_path / "elsewhere"
    launch_dir.mkdir()
    other_dir.mkdir()
    env = {"HOME": str(home)}
    cluster: FakeCluster
    with fake_apiserver() as (cluster, url):
        write_kubeconfig(launch_dir / "kc.yaml", url, namespace="team-a")
        expected = str(launch_dir / "kc.yaml")

        rendered = rladapt(
            "render", "-f", "verl", GSM8K, "-l", "kubernetes", "-o", f"image={IMAGE}", "-o", "kubeconfig=kc.yaml",
            "--format", "json", cwd=launch_dir, env=env,
        )  # fmt: skip
        assert rendered.returncode == 0, rendered.stderr
        assert json.loads(rendered.stdout)["request"]["kubeconfig"] == expected

        launched = rladapt(
            "launch", "-f", "verl", GSM8K, "-l", "kubernetes", "-o", f"image={IMAGE}", "-o", "kubeconfig=kc.yaml",
            cwd=launch_dir, env=env,
        )  # fmt: skip
        assert launched.returncode == 0, launched.stderr
        run_id = launched.stdout.strip().splitlines()[-1]
        run_dir = Path(os.environ["RLADAPT_HOME"]) / "runs" / run_id
        record = json.loads((run_dir / "run.json").read_text())
        assert record["options"]["kubeconfig"] == expected
        assert record["artifacts"]["request"]["kubeconfig"] == expected
        assert json.loads((run_dir / "artifacts" / "request.json").read_text())["kubeconfig"] == expected
        assert record["handle"]["kubeconfig"] == expected

        ((namespace, name),) = cluster.rayjobs
        cluster.set_status(namespace, name, jobDeploymentStatus="Running", jobStatus="RUNNING")
        # From another directory, where kc.yaml would name nothing: the recorded path reaches the same server.
        status = rladapt("status", run_id, cwd=other_dir, env=env)
        assert status.returncode == 0, status.stderr
        assert "RUNNING" in status.stdout
        stopped = rladapt("stop", run_id, cwd=other_dir, env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert "STOPPED" in stopped.stdout and cluster.rayjobs == {}
