"""Service roles on Kubernetes: a Job beside the RayJob (a role that ends with the training runs under the wrapper
that ends it when the job ends, and is the RayJob's; one that outlives it is not), with a Service for its ports;
the pods get the job's env,
volumes and working directory. Rendered with the real client's models and checked against the official Kubernetes
schemas (kubernetes-validate, strict); submitted through the real client to the fake API server (no real one can
run here), which checks each created object against the same schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.launchers.kubernetes.manifest import SERVICE_LABEL, service_file
from rladapt.plugins import NativeLaunch, PortSpec, ServiceRole, VolumeSpec
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives.errors import SpecError
from tests.launchers.k8s_fake_apiserver import FakeCluster
from tests.launchers.k8s_schemas import k8s_errors

from .test_kubernetes import IMAGE, LAUNCHER, cluster, manifests, toy_native  # noqa: F401

RUN = "qwen-grpo-1a2b3c4d"


def _native() -> NativeLaunch:
    base = toy_native()
    return base.model_copy(
        update={
            "volumes": (VolumeSpec(name="ckpt", mount="/ckpt", kind="pvc", source="ckpt-claim"),),
            "env": {**base.env, "SHARED": "$(NOT_EXPANDED) job"},
            "services": (
                ServiceRole(
                    name="serve",
                    argv=("python", "-m", "server", "--port", "8000", "$(HOME)"),
                    env={"ROLE": "serve", "SHARED": "role wins"},
                    cpus=2,
                    memory="4Gi",
                    gpus=1,
                    ports=(PortSpec(name="http", port=8000),),
                ),
                ServiceRole(name="evaluator", argv=("python", "eval.py"), outlives_job=True),
                ServiceRole(name="once", argv=("python", "once.py"), restart="never"),
            ),
        }
    )


def _objects(files: dict[str, str], role: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(files[service_file(role)]))


def test_each_role_renders_a_valid_workload_beside_the_rayjob_with_the_jobs_env_volumes_and_resources() -> (
    None
):
    artifacts = render_artifacts(LAUNCHER, _native(), {"image": IMAGE}, run_id=RUN)
    rayjob, _ = manifests(artifacts)
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    serve = _objects(artifacts.files, "serve")
    assert [o["kind"] for o in serve] == ["Job", "Service"]
    assert [o["kind"] for o in _objects(artifacts.files, "evaluator")] == ["Job"]
    once = _objects(artifacts.files, "once")[0]
    assert once["kind"] == "Job" and once["spec"]["backoffLimit"] == 0
    assert once["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    evaluator = _objects(artifacts.files, "evaluator")[0]
    assert evaluator["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    problems = [
        e
        for role in ("serve", "evaluator", "once")
        for o in _objects(artifacts.files, role)
        for e in k8s_errors(o)
    ]
    assert problems == []

    workload, service = serve
    assert workload["metadata"]["name"] == f"{RUN}-serve"
    assert workload["spec"]["template"]["metadata"]["labels"][SERVICE_LABEL] == f"{RUN}-serve"
    pod = workload["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "OnFailure" and workload["spec"]["backoffLimit"] == 6
    container = pod["containers"][0]
    assert (
        container["image"] == IMAGE and container["command"][-1] == "$$(HOME)"
    )  # kept literal by the kubelet
    # it ends with the job: the wrapper watches the job's end marker in its checkpoint directory, then ends it
    assert container["command"][:5] == ["python", "-m", "rladapt.launchers.ends_with_job",
                                        _native().checkpoint_dir, "--"]  # fmt: skip
    assert container["command"][5:7] == ["python", "-m"]
    assert evaluator["spec"]["template"]["spec"]["containers"][0]["command"] == ["python", "eval.py"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["ROLE"] == "serve" and env["SHARED"] == "role wins"
    job_env = {e["name"] for e in head["containers"][0]["env"]}
    assert job_env - {"SHARED"} <= set(env)  # the job's environment, the role's over it
    assert container["resources"] == {
        "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
    }
    assert pod["volumes"] == head["volumes"]
    assert container["volumeMounts"] == head["containers"][0]["volumeMounts"]
    assert container["workingDir"] == head["containers"][0].get("workingDir")
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": 8000}]
    assert service["spec"]["selector"] == {SERVICE_LABEL: f"{RUN}-serve"}
    # the dry run shows them
    described = artifacts.describe()
    assert f"--- {service_file('serve')} ---" in described and "ends_with_job" in described
    assert [s["kinds"] for s in artifacts.request["services"]] == [
        ["Job", "Service"],
        ["Job"],
        ["Job"],
    ]


def test_a_role_name_too_long_for_its_objects_is_a_spec_problem_naming_it() -> None:
    native = toy_native().model_copy(
        update={"services": (ServiceRole(name="e" * 40, argv=("python", "x.py")),)}
    )
    with pytest.raises(SpecError) as caught:
        render_artifacts(LAUNCHER, native, {"image": IMAGE}, run_id="run-" + "a" * 26)
    assert f"services.{'e' * 40}.name" in str(caught.value.problems)
    # the same role beside a shorter run id fits
    render_artifacts(LAUNCHER, native, {"image": IMAGE}, run_id=RUN)


def test_submit_creates_the_services_status_reads_them_and_stop_deletes_them(
    cluster: FakeCluster,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    artifacts = render_artifacts(LAUNCHER, _native(), {"image": IMAGE}, run_id=RUN)
    handle = LAUNCHER.submit(artifacts, tmp_path)
    owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": RUN, "uid": handle["uid"]}
    # the roles that end with the training are the RayJob's: deleting it ends them
    for role in ("serve", "once"):
        assert cluster.objects["Job"][("team-a", f"{RUN}-{role}")]["metadata"]["ownerReferences"] == [owner]
    assert cluster.objects["Service"][("team-a", f"{RUN}-serve")]["metadata"]["ownerReferences"] == [owner]
    # a Job that outlives the training is not the RayJob's: deleting the RayJob must not end it
    assert "ownerReferences" not in cluster.objects["Job"][("team-a", f"{RUN}-evaluator")]["metadata"]

    states = {s.name: s for s in LAUNCHER.services(handle, tmp_path)}
    assert states["serve"].state == "PENDING" and states["serve"].unit == f"Job team-a/{RUN}-serve"
    cluster.set_object_status("Job", "team-a", f"{RUN}-serve", active=1)
    cluster.add_service_pod("team-a", f"{RUN}-serve-abc", {SERVICE_LABEL: f"{RUN}-serve"}, restarts=2)
    cluster.set_object_status("Job", "team-a", f"{RUN}-evaluator", active=1)
    cluster.set_object_status("Job", "team-a", f"{RUN}-once", failed=1)
    states = {s.name: s for s in LAUNCHER.services(handle, tmp_path)}
    assert (states["serve"].state, states["serve"].restarts) == ("RUNNING", 2)
    assert states["evaluator"].state == "RUNNING" and states["once"].state == "FAILED"

    # a run found again from its intent (the submitter died after the API server took it) still knows them
    found = LAUNCHER.find(LAUNCHER.intent(artifacts, RUN), tmp_path)
    assert found is not None and found["services"] == handle["services"]

    # the training ends: the roles that end with it go, the one that outlives it stays
    cluster.set_status("team-a", RUN, jobDeploymentStatus="Complete", jobStatus="SUCCEEDED")
    states = {s.name: s for s in LAUNCHER.services(handle, tmp_path)}
    assert (states["serve"].state, states["once"].state, states["evaluator"].state) == (
        "STOPPED",
        "STOPPED",
        "RUNNING",
    )
    assert list(cluster.objects["Job"]) == [("team-a", f"{RUN}-evaluator")]
    assert not cluster.objects["Service"]

    LAUNCHER.stop(handle, tmp_path)
    assert all(not table for table in cluster.objects.values()), cluster.objects
    assert {s.state for s in LAUNCHER.services(handle, tmp_path)} == {"STOPPED"}
