"""The evaluator and the serving group on Kubernetes, rendered from the README's TRL job with a continuous suite and
``spec.pool.serve`` (``rladapt launch --dry-run -l kubernetes``): the evaluator is a Job beside the RayJob, the
serving group a Deployment with a Service for its replicas' ports, each schema-checked (strict, the official
Kubernetes schemas), with the checkpoint directory and the pool store mounted in their pods. A pool store on no
volume is a warning: the pods that read it would each see a disk of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.evaluate import EvalSettings
from rladapt.launch import Runner, _for_job
from rladapt.launchers.kubernetes.manifest import service_file
from rladapt.plugins import Artifacts
from tests.conftest import REPO
from tests.launchers.k8s_schemas import k8s_errors
from tests.support.evaluation import continuous

EXAMPLE = "examples/grpo-tiny-trl.yaml"
IMAGE = "registry.example.com/team/rladapt-trl:1.0"
VOLUMES = (
    "spec.volumes=[{name: ckpt, mount: /ckpt, source: {pvc: ckpt-claim}}, "
    "{name: pool, mount: /pool, source: {nfs: {server: nfs.example.com, path: /export/pool}}}, "
    "{name: work, mount: /workspace, source: {pvc: work-claim}}]"
)
RUN = "tiny-grpo-trl-1a2b3c4d"
SERVE = "spec.pool.serve={alias: serving, replicas: 2, engine: reference, port: 8100}"


def _render(
    monkeypatch: pytest.MonkeyPatch, *overrides: str
) -> tuple[Artifacts, dict[str, list[dict[str, Any]]]]:
    monkeypatch.chdir(REPO)
    planned = Runner().dryrun(
        EXAMPLE,
        ["spec.checkpoint.dir=/ckpt/tiny", "spec.runtime.python=python", SERVE,
         continuous(", gate: {suite: share-of-a, min: 0.5, promote: serving}"), *overrides],
        framework="trl==1.16.0",
        launcher="kubernetes",
        options={"image": IMAGE, "workdir": "/workspace"},
    )  # fmt: skip
    # as `rladapt launch` submits it: the job (and each role beside it) told its run id
    planned = _for_job(planned, RUN, RUN, take_over=False)
    artifacts = planned.render(RUN)
    files = artifacts.files
    roles = {
        role: list(yaml.safe_load_all(files[service_file(role)])) for role in ("evaluator", "pool-serve")
    }
    return artifacts, roles


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"])


def test_the_evaluator_job_and_the_serving_job_render_valid_with_the_stores_mounted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    artifacts, roles = _render(monkeypatch, "spec.pool.store=/pool/store", VOLUMES)
    assert [o["kind"] for o in roles["evaluator"]] == ["Job"]
    assert [o["kind"] for o in roles["pool-serve"]] == ["Job", "Service"]
    assert [e for objs in roles.values() for o in objs for e in k8s_errors(o)] == []
    assert not [w for w in artifacts.warnings if "no volume" in w], artifacts.warnings

    (job,) = roles["evaluator"]
    pod = _pod(job)
    assert (
        pod["restartPolicy"] == "OnFailure"
    )  # a crash restarts it; it drains the last versions, then completes
    (container,) = pod["containers"]
    assert container["image"] == IMAGE and container["workingDir"] == "/workspace"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts["/ckpt"] == "ckpt" and mounts["/pool"] == "pool", mounts
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["ckpt"]["persistentVolumeClaim"]["claimName"] == "ckpt-claim"
    assert volumes["pool"]["nfs"] == {"server": "nfs.example.com", "path": "/export/pool"}
    argv = container.get("command", []) + container.get("args", [])
    settings = EvalSettings.from_json(json.loads(argv[argv.index("--settings") + 1]))
    # what it reads, as the pods see it: the checkpoint directory and the store on their volumes
    assert (settings.checkpoint_dir, settings.store, settings.final_step) == ("/ckpt/tiny", "/pool/store", 30)
    env = {e["name"]: e.get("value") for e in container.get("env") or []}
    assert env["RLADAPT_RUN_ID"] == RUN  # follow: pool reads the run's versions by the run id the job gets

    serving, service = roles["pool-serve"]
    # one pod runs the group's replicas (the reference engine, CPU), restarted when it fails
    assert "parallelism" not in serving["spec"] and _pod(serving)["restartPolicy"] == "OnFailure"
    (serve,) = _pod(serving)["containers"]
    assert {m["mountPath"] for m in serve["volumeMounts"]} >= {"/ckpt", "/pool"}
    command = serve.get("command", []) + serve.get("args", [])
    assert command[command.index("--store") :] == ["--store", "/pool/store", "--alias", "serving", "--replicas",
                                                   "2", "--engine", "reference", "--port", "8100", "--wait"]  # fmt: skip
    # it ends with the job: under the wrapper that watches the job's end marker in its checkpoint directory
    assert command[1:5] == ["-m", "rladapt.launchers.ends_with_job", "/ckpt/tiny", "--"], command
    assert "ends_with_job" not in argv  # the evaluator outlives the job: it ends by itself
    assert sorted(p["port"] for p in service["spec"]["ports"]) == [8100, 8101]


def test_a_pool_store_on_no_volume_is_a_warning_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    artifacts, roles = _render(monkeypatch, "spec.pool.store=/scratch/pool", VOLUMES)
    warnings = [w for w in artifacts.warnings if "no volume" in w]
    assert warnings == [
        "spec.pool.store /scratch/pool is on no volume: the published versions (which the evaluator and serving "
        "pods read) would land on the pod's ephemeral disk and be lost with it; mount a volume over it "
        "(spec.volumes: a pvc claim, nfs or host_path) or give an absolute path under one"
    ]
    assert [e for objs in roles.values() for o in objs for e in k8s_errors(o)] == []


def test_launch_dry_run_shows_both_roles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cli.test_cli import rladapt

    res = rladapt(
        "launch", "--dry-run", "-f", "trl==1.16.0", EXAMPLE, "-l", "kubernetes", "-o", f"image={IMAGE}",
        "spec.checkpoint.dir=/ckpt/tiny", "spec.pool.store=/pool/store", VOLUMES, SERVE, continuous(),
        cwd=REPO, env={"RLADAPT_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("kind: Job") == 2 and "kind: Deployment" not in res.stdout, res.stdout[-3000:]
    assert "-evaluator" in res.stdout and "-pool-serve" in res.stdout
