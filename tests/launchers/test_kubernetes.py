"""The kubernetes launcher: KubeRay RayJob manifests, validated offline, and the API calls against a fake server.

No Kubernetes API server can run here. Manifests are validated against KubeRay's real CRD schema (unknown fields
rejected) and the official Kubernetes schemas (``kubernetes-validate --strict``); what the kubelet, KubeRay's
submitter shell and Ray do to the strings is replayed with real shells; submit/status/logs/stop run the real
``kubernetes`` client against a small local HTTP server that implements only the endpoints used.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.bootstrap import PATCHES_ENV, WORKER_SETUP_HOOK, bootstrap_argv
from rladapt.launchers.kubernetes import (
    CONFIGMAP_FILE,
    MANAGED_BY_LABEL,
    RAYJOB_FILE,
    KubernetesLauncher,
    map_status,
    rayjob_name,
)
from rladapt.pipeline import render_native
from rladapt.plugins import Artifacts, FrameworkAdapter, FrameworkVersion, NativeLaunch, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import LaunchError, RLJob, SpecError, UsageError, load_job
from rladapt.runs import RunStore
from tests.conftest import EXAMPLES
from tests.launchers.http_servers import yes_server
from tests.launchers.k8s_fake_apiserver import FakeCluster, fake_apiserver, write_kubeconfig
from tests.launchers.k8s_schemas import (
    as_pod,
    crd_errors,
    k8s_errors,
    kuberay_rule_violations,
    metadata_errors,
    pod_templates,
)
from tests.launchers.k8s_shell import kubelet_expand, kuberay_k8sjob_argv, shell_words

IMAGE = "ghcr.io/example/rl:2025.1"
LAUNCHER = KubernetesLauncher()


class ToyAdapter(FrameworkAdapter):
    """A stand-in framework whose launch carries files, runtime patches and arbitrary argv, for what the built-in
    adapters do not produce."""

    PLUGIN_NAME = "toy"

    def versions(self) -> list[FrameworkVersion]:
        return [FrameworkVersion("1.0", frozenset())]

    def check_capabilities(self, job: RLJob, version: FrameworkVersion) -> None:
        pass  # the launcher is under test here, not capability checks

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        return NativeLaunch.from_job(
            job,
            framework="toy",
            version=version.version,
            argv=(
                "python3",
                "-m",
                "toy.train",
                f"--steps={job.spec.training.steps}",
                "--config",
                "conf/toy.yaml",
            ),
            files={"conf/toy.yaml": f"model: {job.spec.model.path}\nlr: {job.spec.training.optimizer.lr}\n"},
            runtime_patches=("toy_patches:fix_seed",),
            patches=("toy-seed",),
        )


ADAPTERS = {"verl": "rladapt.adapters.verl", "openrlhf": "rladapt.adapters.openrlhf"}
WITHOUT_EVAL = ["spec.eval={every_steps: 0, before_training: false}", "spec.data.val=[]"]


def toy_launch(job: RLJob) -> NativeLaunch:
    adapter = ToyAdapter()
    return adapter.translate(job, adapter.resolve_version(None))


def native_for(example: Path, framework: str) -> NativeLaunch:
    job = load_job(example)
    if framework == "toy":
        return toy_launch(job)
    # Every built-in adapter is loaded: the examples' spec.native names frameworks besides the one under test.
    registry = load_registry(builtins=ADAPTERS, use_entry_points=False)
    if framework not in registry.frameworks:
        pytest.skip(f"built-in adapter {framework} is not importable here: {registry.broken}")
    try:
        return render_native(job, framework, registry).native
    except SpecError:
        pass
    # OpenRLHF cannot express the examples' evaluation set-up; without it the rest of the example still runs
    # through the real adapter, which is what the launcher needs.
    try:
        return render_native(load_job(example, WITHOUT_EVAL), framework, registry).native
    except SpecError as exc:
        pytest.skip(f"{example.name} does not translate to {framework}: {exc.message}")


def toy_native(**update: Any) -> NativeLaunch:
    native = native_for(EXAMPLES[0], "toy")
    return native.model_copy(update=update)


def manifests(artifacts: Artifacts) -> tuple[dict[str, Any], dict[str, Any] | None]:
    rayjob = yaml.safe_load(artifacts.files[RAYJOB_FILE])
    configmap = yaml.safe_load(artifacts.files[CONFIGMAP_FILE]) if CONFIGMAP_FILE in artifacts.files else None
    return rayjob, configmap


def containers(rayjob: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {group: tpl["spec"]["containers"][0] for group, tpl in pod_templates(rayjob).items()}


def assert_valid(artifacts: Artifacts) -> None:
    rayjob, configmap = manifests(artifacts)
    problems = crd_errors(rayjob) + kuberay_rule_violations(rayjob) + metadata_errors(rayjob["metadata"])
    for group, template in pod_templates(rayjob).items():
        problems += k8s_errors(as_pod(template, f"{rayjob['metadata']['name']}-{group}"))
    if configmap is not None:
        problems += k8s_errors(configmap)
    for file, text in artifacts.files.items():  # the claims the launch creates when absent
        if file.startswith("pvc-"):
            problems += k8s_errors(yaml.safe_load(text))
    assert problems == []


# --- offline validation of every example ------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "toy"])
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_manifests_validate_against_kuberay_crd_and_kubernetes_schemas(
    example: Path, framework: str
) -> None:
    native = native_for(example, framework)
    artifacts = render_artifacts(
        LAUNCHER, native, {"image": IMAGE, "namespace": "rl"}, run_id=f"{native.job_name}-0a1b2c3d"
    )
    assert_valid(artifacts)
    rayjob, configmap = manifests(artifacts)
    assert rayjob["apiVersion"] == "ray.io/v1" and rayjob["kind"] == "RayJob"
    # The entrypoint is the bootstrap around the native argv, and survives the submitter's kubelet and shells.
    assert shlex.split(kubelet_expand(rayjob["spec"]["entrypoint"], {})) == bootstrap_argv(native)
    groups = rayjob["spec"]["rayClusterSpec"].get("workerGroupSpecs", [])
    assert [(g["groupName"], g["replicas"]) for g in groups] == [(p.name, p.nodes) for p in native.pools]
    assert (configmap is not None) == bool(native.files)


def test_crd_validation_rejects_unknown_and_mistyped_fields() -> None:
    """The validation itself must be able to fail: a typo the API server would silently prune is caught."""
    rayjob, _ = manifests(render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE}))
    assert crd_errors(rayjob) == []
    typo = yaml.safe_load(yaml.safe_dump(rayjob))
    typo["spec"]["shutdownAfterJobFinishez"] = True
    typo["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    typo["spec"]["ttlSecondsAfterFinished"] = "soon"
    errors = " | ".join(crd_errors(typo))
    assert (
        "shutdownAfterJobFinishez" in errors
        and "imagee" in errors
        and "'soon' is not of type 'integer'" in errors
    )
    pod = as_pod(pod_templates(rayjob)["head"], "p")
    pod["spec"]["containers"][0]["imagee"] = "x"
    assert any("imagee" in e for e in k8s_errors(pod))


def test_async_grpo_example_maps_placement_volumes_ports_secrets_and_lifecycle() -> None:
    native = native_for(EXAMPLES[0], "toy")
    assert native.job_name == "qwen2-7b-async-grpo-math"
    options = {
        "image": IMAGE,
        "namespace": "rl-team",
        "cpu": "32",
        "memory": "256Gi",
        "head_cpu": "4",
        "head_memory": "16Gi",
        "image_pull_policy": "IfNotPresent",
        "service_account": "rl-runner",
        "node_selector": "gpu=h100,zone=a",
        "tolerations": "nvidia.com/gpu:NoSchedule,dedicated=rl:NoExecute",
        "priority_class": "high",
        "ray_version": "2.49.0",
    }
    artifacts = render_artifacts(LAUNCHER, native, options)
    assert_valid(artifacts)
    rayjob, configmap = manifests(artifacts)
    assert configmap is not None
    meta, spec = rayjob["metadata"], rayjob["spec"]
    assert meta["namespace"] == "rl-team" and meta["labels"]["team"] == "reasoning"
    assert meta["labels"][MANAGED_BY_LABEL] == "rladapt"
    assert spec["submissionMode"] == "K8sJobMode" and spec["shutdownAfterJobFinishes"] is True
    assert (
        spec["ttlSecondsAfterFinished"] == 600
        and spec["backoffLimit"] == 0
        and "activeDeadlineSeconds" not in spec
    )
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == {"worker_process_setup_hook": WORKER_SETUP_HOOK}
    cluster = spec["rayClusterSpec"]
    assert cluster["rayVersion"] == "2.49.0"
    train, gen = cluster["workerGroupSpecs"]
    assert (train["groupName"], train["replicas"], train["minReplicas"], train["maxReplicas"]) == (
        "train",
        2,
        2,
        2,
    )
    assert (gen["groupName"], gen["replicas"]) == ("gen", 1)
    by_group = containers(rayjob)
    head = by_group["head"]
    assert head["resources"] == {
        "limits": {"cpu": "4", "memory": "16Gi"},
        "requests": {"cpu": "4", "memory": "16Gi"},
    }
    assert by_group["train"]["resources"]["limits"] == {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}
    assert by_group["train"]["resources"]["requests"] == by_group["train"]["resources"]["limits"]
    # Ray's ports on the head; the spec's dashboard port (8265) is Ray's own, so it is not opened twice.
    assert [(p["name"], p["containerPort"]) for p in head["ports"]] == [
        ("gcs-server", 6379),
        ("dashboard", 8265),
        ("client", 10001),
    ]
    assert cluster["headGroupSpec"]["rayStartParams"] == {}
    for group, container in by_group.items():
        assert container["image"] == IMAGE and container["imagePullPolicy"] == "IfNotPresent", group
        env = {e["name"]: e for e in container["env"]}
        assert env["WANDB_API_KEY"] == {
            "name": "WANDB_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}},
        }
        assert env[PATCHES_ENV]["value"] == "toy_patches:fix_seed"
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert mounts["/ckpt"]["name"] == "ckpt" and mounts["/dev/shm"]["name"] == "shm"
        assert mounts["/workspace/conf/toy.yaml"]["readOnly"] is True
        assert container["workingDir"] == "/workspace"
    for template in pod_templates(rayjob).values():
        pod = template["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["ckpt"]["persistentVolumeClaim"] == {"claimName": "rl-ckpt"}
        assert volumes["shm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
        assert volumes["rladapt-files"]["configMap"]["name"] == configmap["metadata"]["name"]
        assert pod["serviceAccountName"] == "rl-runner" and pod["priorityClassName"] == "high"
        assert pod["nodeSelector"] == {"gpu": "h100", "zone": "a"}
        assert pod["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "rl", "effect": "NoExecute"},
        ]
        assert template["metadata"]["labels"][MANAGED_BY_LABEL] == "rladapt"
    # The ConfigMap holds the files byte for byte, and each mount picks its own key.
    mount = next(m for m in head["volumeMounts"] if m["mountPath"] == "/workspace/conf/toy.yaml")
    assert configmap["data"][mount["subPath"]] == native.files["conf/toy.yaml"]


def test_volume_kinds_lifecycle_and_moved_ray_ports() -> None:
    job = load_job(
        EXAMPLES[0],
        [
            "spec.volumes=[{name: data, mount: /data, read_only: true, source: {nfs: {server: nfs.local, path: /export/rl}}},"
            " {name: cache, mount: /home/ray/.cache, source: {host_path: /mnt/cache}}]",
            "spec.ports=[{name: ray, port: 6380, purpose: ray}, {name: dash, port: 8266, purpose: dashboard},"
            " {name: rollout, port: 8000, purpose: rollout}]",
            "spec.lifecycle={max_restarts: 2, timeout_seconds: 86400, shutdown_after_finish: false}",
            "spec.runtime.working_dir=/opt/job",
        ],
    )
    native = toy_launch(job)
    artifacts = render_artifacts(LAUNCHER, native, {"image": IMAGE, "submission_mode": "HTTPMode"})
    assert_valid(artifacts)
    rayjob, _ = manifests(artifacts)
    spec = rayjob["spec"]
    assert spec["shutdownAfterJobFinishes"] is False and "ttlSecondsAfterFinished" not in spec
    assert (
        spec["activeDeadlineSeconds"] == 86400
        and spec["backoffLimit"] == 2
        and spec["submissionMode"] == "HTTPMode"
    )
    head_group = spec["rayClusterSpec"]["headGroupSpec"]
    assert head_group["rayStartParams"] == {"port": "6380", "dashboard-port": "8266"}
    by_group = containers(rayjob)
    assert {p["name"]: p["containerPort"] for p in by_group["head"]["ports"]} == {
        "gcs-server": 6380,
        "dashboard": 8266,
        "client": 10001,
        "rollout": 8000,
    }
    assert [p["name"] for p in by_group["train"]["ports"]] == ["rollout"]
    volumes = {v["name"]: v for v in head_group["template"]["spec"]["volumes"]}
    assert volumes["data"]["nfs"] == {"server": "nfs.local", "path": "/export/rl", "readOnly": True}
    assert volumes["cache"]["hostPath"] == {"path": "/mnt/cache"}
    mounts = {m["name"]: m for m in by_group["train"]["volumeMounts"]}
    assert mounts["data"] == {"name": "data", "mountPath": "/data", "readOnly": True}
    # An absolute working_dir is the directory in the image: the driver's cwd, and where the files go.
    assert by_group["head"]["workingDir"] == "/opt/job" and "/opt/job/conf/toy.yaml" in {
        m["mountPath"] for m in by_group["head"]["volumeMounts"]
    }


def test_render_is_deterministic_and_the_dry_run_shows_every_manifest() -> None:
    native = toy_native()
    first, second = (render_artifacts(LAUNCHER, native, {"image": IMAGE}) for _ in range(2))
    assert first == second
    text = first.describe()
    assert f"--- {RAYJOB_FILE} ---\n{first.files[RAYJOB_FILE]}" in text
    assert f"--- {CONFIGMAP_FILE} ---\n{first.files[CONFIGMAP_FILE]}" in text


def test_names_follow_the_run_id_within_kuberay_limits() -> None:
    assert rayjob_name("qwen-grpo", None) == "qwen-grpo"
    assert rayjob_name("qwen-grpo", "qwen-grpo-1a2b3c4d") == "qwen-grpo-1a2b3c4d"
    long = rayjob_name("x", "a-very-long-job-name-that-goes-on-and-on-and-on-1a2b3c4d")
    assert len(long) <= 47 and long.endswith("-1a2b3c4d") and long.startswith("a-very-long")
    assert rayjob_name("3b-grpo", None) == "rl-3b-grpo"  # a DNS-1035 label starts with a letter
    artifacts = render_artifacts(
        LAUNCHER, toy_native(job_name="3b-grpo"), {"image": IMAGE}, run_id="3b-grpo-00ff00ff"
    )
    rayjob, configmap = manifests(artifacts)
    assert rayjob["metadata"]["name"] == "rl-3b-grpo-00ff00ff"
    assert rayjob["metadata"]["labels"]["rladapt.io/run-id"] == "3b-grpo-00ff00ff"
    assert configmap is not None and configmap["metadata"]["name"] == "rl-3b-grpo-00ff00ff-files"
    assert_valid(artifacts)


# --- hostile values and secrets ----------------------------------------------------------------------------------


HOSTILE = [
    "$(touch {marker})",
    "`touch {marker}`",
    'it\'s "quoted"',
    "line one\nline two; touch {marker}",
    "$(RAY_JOB_SUBMISSION_ID)",
    "$$(HOME)",
    "a$b $ $",
    "${oc.env:HOME}",
]


@pytest.mark.parametrize("mode", ["K8sJobMode", "HTTPMode", "SidecarMode"])
def test_hostile_argv_and_env_stay_data(tmp_path: Path, mode: str) -> None:
    marker = tmp_path / "pwned"
    values = [v.replace("{marker}", str(marker)) for v in HOSTILE]
    native = toy_native(
        argv=("python3", "-c", "print(1)", *values), env={f"EVIL_{i}": v for i, v in enumerate(values)}
    )
    artifacts = render_artifacts(LAUNCHER, native, {"image": IMAGE, "submission_mode": mode})
    assert_valid(artifacts)
    rayjob, _ = manifests(artifacts)
    expected = bootstrap_argv(native)
    entrypoint = rayjob["spec"]["entrypoint"]
    if mode == "HTTPMode":  # the operator posts the entrypoint to Ray over HTTP: only Ray's shell parses it
        assert shlex.split(entrypoint) == expected
        assert shell_words(["sh", "-c"], entrypoint, str(tmp_path)) == expected
    else:  # it sits in the submitter's container args: kubelet expansion, bash, `ray job submit`, sh
        submitter_env = {
            "RAY_DASHBOARD_ADDRESS": "head-svc:8265",
            "RAY_JOB_SUBMISSION_ID": "id-1",
            "PYTHONUNBUFFERED": "1",
        }
        assert shlex.split(kubelet_expand(entrypoint, submitter_env)) == expected
        assert kuberay_k8sjob_argv(entrypoint, submitter_env, str(tmp_path)) == expected
    assert not marker.exists()
    # Env values reach the containers, escaped for the kubelet's $(VAR) expansion, and only there.
    for container in containers(rayjob).values():
        defined = {e["name"]: e.get("value", "") for e in container["env"]}
        for i, value in enumerate(values):
            assert kubelet_expand(defined[f"EVIL_{i}"], defined) == value
    assert "EVIL_0" not in rayjob["spec"].get("runtimeEnvYAML", "")


def test_runtime_env_refuses_what_the_submitter_shell_would_run(tmp_path: Path) -> None:
    native = toy_native(files={}, working_dir="https://example.com/code.zip?$(touch x)")
    with pytest.raises(SpecError) as info:
        render_artifacts(LAUNCHER, native, {"image": IMAGE})
    assert "spec.runtime.working_dir" in info.value.message and "'$' and '`'" in info.value.message
    ok = render_artifacts(
        LAUNCHER, toy_native(files={}, working_dir="s3://bucket/code.zip"), {"image": IMAGE}
    )
    rayjob, _ = manifests(ok)
    assert yaml.safe_load(rayjob["spec"]["runtimeEnvYAML"])["working_dir"] == "s3://bucket/code.zip"


def test_secrets_only_by_reference_and_never_their_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "s3cr3t-value-from-the-shell")
    job = load_job(
        EXAMPLES[0],
        [
            "spec.secrets=[{env: WANDB_API_KEY, from: {env: WANDB_API_KEY}},"
            " {env: HF_TOKEN, from: {file: /home/me/.hf-token}},"
            " {env: OK_TOKEN, from: {k8s_secret: {name: tokens, key: ok}}}]"
        ],
    )
    native = toy_launch(job)
    with pytest.raises(SpecError) as info:
        render_artifacts(LAUNCHER, native, {"image": IMAGE})
    message = info.value.message
    assert "spec.secrets[0].from" in message and "spec.secrets[1].from" in message
    assert "spec.secrets[2]" not in message and "k8s_secret" in message
    assert "s3cr3t" not in message
    k8s_only = native.model_copy(update={"secrets": native.secrets[2:]})
    artifacts = render_artifacts(LAUNCHER, k8s_only, {"image": IMAGE})
    assert "s3cr3t" not in artifacts.describe()
    for container in containers(manifests(artifacts)[0]).values():
        (ref,) = [e for e in container["env"] if e["name"] == "OK_TOKEN"]
        assert ref == {"name": "OK_TOKEN", "valueFrom": {"secretKeyRef": {"name": "tokens", "key": "ok"}}}


# --- user mistakes -----------------------------------------------------------------------------------------------


def test_missing_image_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"spec\.runtime\.image.*--launcher-opt image="):
        render_artifacts(LAUNCHER, toy_native(), {})
    rayjob, _ = manifests(render_artifacts(LAUNCHER, toy_native(image="registry.local/rl:1"), {}))
    assert {c["image"] for c in containers(rayjob).values()} == {"registry.local/rl:1"}


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"imag": "x"}, r"unknown kubernetes launcher option 'imag' \(did you mean 'image'\?\)"),
        ({"cpu": "lots"}, r"cpu='lots': expected a Kubernetes quantity"),
        ({"submission_mode": "InteractiveMode"}, r"expected one of K8sJobMode, HTTPMode, SidecarMode"),
        ({"tolerations": "gpu:Sometimes"}, r"tolerations: 'gpu:Sometimes' is not key\[=value\]\[:Effect\]"),
        ({"node_selector": "gpu"}, r"node_selector: 'gpu' is not a node label KEY=VALUE"),
        ({"head_gpus": "two"}, r"head_gpus='two': expected a whole number"),
        ({"workdir": "relative"}, r"workdir='relative': expected an absolute path"),
        ({"namespace": "Team_A"}, r"namespace='Team_A': expected a DNS name"),
        (
            {"gpu_resource": "$(id)"},
            r"gpu_resource='\$\(id\)': expected an extended resource name DOMAIN/NAME",
        ),
        ({"gpu_resource": "gpu"}, r"gpu_resource='gpu': expected an extended resource name"),
        ({"gpu_resource": "nvidia.com/"}, r"gpu_resource='nvidia.com/': expected"),
        ({"gpu_resource": "Nvidia.com/gpu"}, r"gpu_resource='Nvidia.com/gpu': expected"),
        ({"gpu_resource": "kubernetes.io/gpu"}, r"gpu_resource='kubernetes.io/gpu': expected"),
        ({"image": "a b"}, r"image='a b': expected an image reference"),
        ({"image": "reg/img:1\x00"}, r"image='reg/img:1\\x00': expected an image reference"),
        ({"image": ""}, r"image='': expected an image reference"),
        ({"ray_version": "abc"}, r"ray_version='abc': expected the Ray version"),
        ({"ray_version": "2.49.0; rm"}, r"ray_version='2.49.0; rm': expected the Ray version"),
        ({"run_id": "../../etc"}, r"run_id='../../etc': expected a run id, a DNS label"),
        ({"run_id": "a" * 64}, r"run_id='a{64}': expected a run id"),
    ],
)
def test_bad_options_are_usage_errors(options: dict[str, Any], match: str) -> None:
    given = dict(options)
    run_id = given.pop("run_id", None)  # the run id is render's own argument, not an option
    with pytest.raises(UsageError, match=match):
        render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE, **given}, run_id=run_id)


def test_spec_problems_are_reported_together_with_field_paths() -> None:
    job = load_job(
        EXAMPLES[0],
        [
            "spec.placement.pools=[{name: Train_Pool, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]}]",
            "spec.ports=[{name: gcs-server, port: 7000}, {name: metrics, port: 10001}]",
            "metadata.labels={team: 'bad value!'}",
            "spec.weight_sync.max_staleness=0",
        ],
    )
    native = toy_launch(job)
    with pytest.raises(SpecError) as info:
        render_artifacts(LAUNCHER, native, {"image": IMAGE})
    paths = {p.path for p in info.value.problems}
    assert paths == {"spec.placement.pools[0].name", "spec.ports[0]", "spec.ports[1]", "metadata.labels.team"}


def test_good_gpu_resource_image_and_ray_version_are_rendered() -> None:
    options = {"image": "registry.local:5000/rl/img@sha256:" + "a" * 64, "gpu_resource": "amd.com/gpu"}
    artifacts = render_artifacts(LAUNCHER, toy_native(), {**options, "ray_version": "2.49.0"})
    assert_valid(artifacts)
    rayjob, _ = manifests(artifacts)
    assert rayjob["spec"]["rayClusterSpec"]["rayVersion"] == "2.49.0"
    worker = containers(rayjob)["train"]
    assert worker["image"] == options["image"] and worker["resources"]["limits"]["amd.com/gpu"] == "8"


def test_spec_image_with_whitespace_is_a_spec_problem() -> None:
    with pytest.raises(SpecError) as info:
        render_artifacts(LAUNCHER, toy_native(image="reg/img:1 --privileged"), {})
    (problem,) = info.value.problems
    assert problem.path == "spec.runtime.image" and problem.found == "'reg/img:1 --privileged'"


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("max_restarts", "backoffLimit"),
        ("timeout_seconds", "activeDeadlineSeconds"),
        ("ttl_seconds_after_finish", "ttlSecondsAfterFinished"),
    ],
)
def test_lifecycle_numbers_beyond_int32_are_refused(key: str, field: str) -> None:
    native = toy_native()
    at_limit = native.model_copy(update={"lifecycle": {**native.lifecycle, key: 2**31 - 1}})
    rayjob, _ = manifests(render_artifacts(LAUNCHER, at_limit, {"image": IMAGE}))
    assert rayjob["spec"][field] == 2**31 - 1
    for bad in (2**31, -1):
        beyond = native.model_copy(update={"lifecycle": {**native.lifecycle, key: bad}})
        with pytest.raises(SpecError) as info:
            render_artifacts(LAUNCHER, beyond, {"image": IMAGE})
        (problem,) = info.value.problems
        assert problem.path == f"spec.lifecycle.{key}" and problem.found == str(bad)
        assert "from 0 to 2147483647" in info.value.message


def test_label_problems_never_print_raw_newlines() -> None:
    native = toy_native(labels={"team": "a\nforged: line", "bad\nkey": "x"})
    with pytest.raises(SpecError) as info:
        render_artifacts(LAUNCHER, native, {"image": IMAGE})
    message = info.value.message
    # One header line plus one line per problem: nothing from the values starts a line of its own.
    assert len(message.splitlines()) == 3 and "forged: line" in message
    assert "'a\\nforged: line'" in message and "metadata.labels['bad\\nkey']" in message
    assert {p.path for p in info.value.problems} == {"metadata.labels.team", "metadata.labels['bad\\nkey']"}


def test_spec_launcher_options_apply_and_the_command_line_wins() -> None:
    native = toy_native(launcher_options={"kubernetes": {"image": "from/spec:1", "namespace": "spec-ns"}})
    rayjob, _ = manifests(render_artifacts(LAUNCHER, native, {"namespace": "cli-ns"}))
    assert rayjob["metadata"]["namespace"] == "cli-ns"
    assert containers(rayjob)["head"]["image"] == "from/spec:1"


def test_plugin_registers_and_kubernetes_is_imported_lazily() -> None:
    registry = load_registry(builtins={"kubernetes": "rladapt.launchers.kubernetes"}, use_entry_points=False)
    assert isinstance(registry.launcher("kubernetes"), KubernetesLauncher)
    code = (
        "import sys, rladapt.launchers.kubernetes, rladapt.plugins as m; m.load_registry(); "
        "print(sorted(n for n in sys.modules if n == 'kubernetes' or n.startswith('kubernetes.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ({}, "PENDING"),
        ({"jobDeploymentStatus": "Initializing"}, "PENDING"),
        ({"jobDeploymentStatus": "Running", "jobStatus": "PENDING"}, "PENDING"),
        ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, "RUNNING"),
        (
            {"jobDeploymentStatus": "Running", "jobStatus": "FAILED"},
            "RUNNING",
        ),  # the operator has yet to decide
        ({"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED"}, "PENDING"),
        ({"jobDeploymentStatus": "Suspended"}, "PENDING"),
        ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "SUCCEEDED"),
        ({"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}, "STOPPED"),
        ({"jobDeploymentStatus": "Complete", "jobStatus": "FAILED"}, "FAILED"),
        ({"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded"}, "FAILED"),
    ],
)
def test_status_mapping(status: dict[str, Any], state: str) -> None:
    result = map_status(status)
    assert result.state == state
    if "reason" in status:
        assert status["reason"] in result.message


# --- the API: a fake server, since no real API server can run here ---------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    with fake_apiserver() as (state, url):
        monkeypatch.setenv(
            "KUBECONFIG",
            str(write_kubeconfig(tmp_path / "kubeconfig", url, namespace="team-a", contexts=("dev", "prod"))),
        )
        yield state


def test_submit_status_logs_stop_fake_apiserver(cluster: FakeCluster, tmp_path: Path) -> None:
    """Submit, follow and stop through the real kubernetes client. No real API server can run here: the fake
    serves only the endpoints the launcher uses and checks the RayJob against KubeRay's CRD schema like the API
    server does; the test plays the KubeRay operator by setting status and adding the submitter pod."""
    artifacts = render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE}, run_id="qwen-grpo-1a2b3c4d")
    handle = LAUNCHER.submit(artifacts, tmp_path)
    assert (
        handle["namespace"] == "team-a"
        and handle["name"] == "qwen-grpo-1a2b3c4d"
        and handle["context"] == "dev"
    )
    stored = cluster.rayjobs[("team-a", "qwen-grpo-1a2b3c4d")]
    assert handle["uid"] == stored["metadata"]["uid"]
    sent, _ = manifests(artifacts)
    assert stored["spec"] == sent["spec"]  # what was rendered is what the API server received
    configmap = cluster.configmaps[("team-a", "qwen-grpo-1a2b3c4d-files")]
    assert configmap["metadata"]["ownerReferences"] == [
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "qwen-grpo-1a2b3c4d", "uid": handle["uid"]}
    ]
    assert "warnings" not in handle

    assert LAUNCHER.status(handle, tmp_path).state == "PENDING"
    cluster.set_status(
        "team-a",
        "qwen-grpo-1a2b3c4d",
        jobDeploymentStatus="Running",
        jobStatus="RUNNING",
        rayClusterName="qwen-grpo-1a2b3c4d-raycluster-x7k2p",
    )
    assert LAUNCHER.status(handle, tmp_path).state == "RUNNING"

    cluster.add_pod(
        "team-a",
        "qwen-grpo-1a2b3c4d-raycluster-x7k2p-head-abcde",
        {"ray.io/cluster": "qwen-grpo-1a2b3c4d-raycluster-x7k2p", "ray.io/node-type": "head"},
        "ray head started\n",
    )
    cluster.add_pod(
        "team-a",
        "qwen-grpo-1a2b3c4d-7fz9q",
        {"job-name": "qwen-grpo-1a2b3c4d"},
        "Job submission server address: http://head:8265\nstep 1 reward=0.25\nstep 2 reward=0.5",
    )
    lines = list(LAUNCHER.logs(handle, tmp_path, follow=True))
    assert lines == [
        "Job submission server address: http://head:8265\n",
        "step 1 reward=0.25\n",
        "step 2 reward=0.5",
    ]

    cluster.set_status("team-a", "qwen-grpo-1a2b3c4d", jobDeploymentStatus="Complete", jobStatus="SUCCEEDED")
    assert LAUNCHER.status(handle, tmp_path).state == "SUCCEEDED"
    # Stopping a finished run frees its objects and keeps its final state, in the record and on the next stop.
    assert LAUNCHER.stop(handle, tmp_path).state == "SUCCEEDED"
    assert cluster.rayjobs == {} and cluster.configmaps == {}
    again = LAUNCHER.stop(handle, tmp_path)
    assert again.state == "SUCCEEDED" and "already deleted" in again.message
    assert LAUNCHER.status(handle, tmp_path).state == "SUCCEEDED"
    elsewhere = tmp_path / "other-run-dir"
    elsewhere.mkdir()
    gone = LAUNCHER.status(handle, elsewhere)
    assert gone.state == "UNKNOWN" and "no longer exists" in gone.message


def test_stop_running_job_twice_and_never_a_newer_namesake_fake_apiserver(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    """Stop against the fake API server (no real one can run here): the uid precondition protects a later RayJob
    that reuses the name."""
    artifacts = render_artifacts(
        LAUNCHER, toy_native(files={}), {"image": IMAGE, "namespace": "jobs", "context": "prod"}
    )
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    handle = LAUNCHER.submit(artifacts, first_dir)
    assert handle["namespace"] == "jobs" and handle["context"] == "prod" and "configmap" not in handle
    cluster.set_status("jobs", handle["name"], jobDeploymentStatus="Running", jobStatus="RUNNING")
    assert LAUNCHER.stop(handle, first_dir).state == "STOPPED"
    assert ("jobs", handle["name"]) not in cluster.rayjobs
    assert LAUNCHER.stop(handle, first_dir).state == "STOPPED"
    assert LAUNCHER.status(handle, first_dir).state == "STOPPED"
    newer = LAUNCHER.submit(artifacts, second_dir)
    assert newer["uid"] != handle["uid"]
    assert LAUNCHER.status(handle, first_dir).state == "STOPPED"  # not the newer RayJob's state
    deletes = [r for r in cluster.requests if r[0] == "DELETE"]
    assert LAUNCHER.stop(handle, first_dir).state == "STOPPED"
    assert [r for r in cluster.requests if r[0] == "DELETE"] == deletes
    assert cluster.rayjobs[("jobs", handle["name"])]["metadata"]["uid"] == newer["uid"]


def test_failed_job_and_logs_before_any_pod_fake_apiserver(cluster: FakeCluster, tmp_path: Path) -> None:
    """Against the fake API server (no real one can run here)."""
    handle = LAUNCHER.submit(render_artifacts(LAUNCHER, toy_native(files={}), {"image": IMAGE}), tmp_path)
    with pytest.raises(LaunchError, match=r"has no submitter or head pod to read logs from"):
        list(LAUNCHER.logs(handle, tmp_path))
    cluster.set_status(
        "team-a",
        handle["name"],
        jobDeploymentStatus="Failed",
        jobStatus="FAILED",
        reason="AppFailed",
        message="Job entrypoint command failed with exit code 3",
    )
    status = LAUNCHER.status(handle, tmp_path)
    assert status.state == "FAILED" and "exit code 3" in status.message
    # Without a submitter pod (its Job already cleaned up), the Ray head's log is what there is.
    cluster.set_status("team-a", handle["name"], jobDeploymentStatus="Failed", rayClusterName="rc-1")
    cluster.add_pod(
        "team-a", "rc-1-head-xyz", {"ray.io/cluster": "rc-1", "ray.io/node-type": "head"}, "head up\n"
    )
    assert list(LAUNCHER.logs(handle, tmp_path)) == ["head up\n"]
    assert ("GET", "/api/v1/namespaces/team-a/pods/rc-1-head-xyz/log") in cluster.requests


def test_submission_refused_with_422_fake_apiserver(cluster: FakeCluster, tmp_path: Path) -> None:
    """A 4xx from the (fake: no real one can run here) API server is a LaunchError with its message, and the
    ConfigMap created for the refused RayJob is removed again."""
    cluster.refuse_rayjobs = (422, "Invalid", 'RayJob.ray.io "x" is invalid: spec.entrypoint: Required value')
    with pytest.raises(LaunchError) as info:
        LAUNCHER.submit(render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE}), tmp_path)
    assert "refused: 422 Invalid" in info.value.message
    assert "spec.entrypoint: Required value" in info.value.message
    assert cluster.configmaps == {} and cluster.rayjobs == {}
    cluster.refuse_rayjobs = (404, "NotFound", "the server could not find the requested resource")
    with pytest.raises(LaunchError, match=r"404 NotFound.*KubeRay operator"):
        LAUNCHER.submit(render_artifacts(LAUNCHER, toy_native(files={}), {"image": IMAGE}), tmp_path)


def test_name_taken_is_refused_with_409_fake_apiserver(cluster: FakeCluster, tmp_path: Path) -> None:
    """A second RayJob of the same name is refused by the (fake: no real one can run here) API server."""
    artifacts = render_artifacts(LAUNCHER, toy_native(files={}), {"image": IMAGE})
    LAUNCHER.submit(artifacts, tmp_path)
    with pytest.raises(LaunchError, match=r"409 AlreadyExists.*stop the previous run or rename"):
        LAUNCHER.submit(artifacts, tmp_path)


def test_unreachable_api_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", url)))
    artifacts = render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE})
    with pytest.raises(LaunchError, match=rf"cannot reach the Kubernetes API server at {url}"):
        LAUNCHER.submit(artifacts, tmp_path)
    handle = {"namespace": "default", "name": "x", "uid": "u", "context": "fake", "kubeconfig": None}
    for call in (LAUNCHER.status, LAUNCHER.stop):
        with pytest.raises(LaunchError, match=r"cannot reach the Kubernetes API server"):
            call(handle, tmp_path)


def test_no_kubeconfig_or_unknown_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    artifacts = render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE})
    with pytest.raises(LaunchError, match=r"no kubeconfig at .*missing.*set KUBECONFIG"):
        LAUNCHER.submit(artifacts, tmp_path)
    monkeypatch.setenv(
        "KUBECONFIG", str(write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:9", contexts=("a", "b")))
    )
    with pytest.raises(LaunchError, match=r"has no context 'staging'; known contexts: a, b"):
        LAUNCHER.submit(
            render_artifacts(LAUNCHER, toy_native(), {"image": IMAGE, "context": "staging"}), tmp_path
        )


def test_cli_launch_status_logs_stop_runs_fake_apiserver(cluster: FakeCluster, tmp_path: Path) -> None:
    """`rladapt launch --launcher kubernetes` and the run commands, as users run them (real subprocesses, the real
    verl adapter, the real kubernetes client); the API server is the fake, since no real one can run here."""
    if "verl" not in load_registry(builtins=ADAPTERS, use_entry_points=False).frameworks:
        pytest.skip("the built-in verl adapter is not importable here")

    def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rladapt.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    spec = str(EXAMPLES[1])  # grpo-gsm8k
    launched = rladapt(
        "launch", "--framework", "verl", spec, "--launcher", "kubernetes", "-o", f"image={IMAGE}"
    )
    assert launched.returncode == 0, launched.stderr
    run_id = launched.stdout.strip().splitlines()[-1]
    ((namespace, name),) = cluster.rayjobs
    assert namespace == "team-a" and name == rayjob_name("", run_id)
    assert cluster.rayjobs[(namespace, name)]["metadata"]["labels"]["rladapt.io/run-id"] == run_id
    cluster.set_status(namespace, name, jobDeploymentStatus="Running", jobStatus="RUNNING")
    cluster.add_pod(namespace, f"{name}-q8x2v", {"job-name": name}, "epoch 1\nval/score=0.61\n")

    status = rladapt("status", run_id)
    assert status.returncode == 0 and "RUNNING" in status.stdout
    logs = rladapt("logs", run_id)
    assert logs.returncode == 0 and logs.stdout == "epoch 1\nval/score=0.61\n"
    stopped = rladapt("stop", run_id)
    assert stopped.returncode == 0 and "STOPPED" in stopped.stdout and cluster.rayjobs == {}
    again = rladapt("stop", run_id)
    assert again.returncode == 0 and "STOPPED" in again.stdout and "already deleted" in again.stdout
    listed = rladapt("runs")
    assert run_id in listed.stdout and "STOPPED" in listed.stdout


# --- answers that are not a Kubernetes API server's ------------------------------------------------------------


def _rladapt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _launch_args(*extra: str) -> list[str]:
    return ["launch", "--framework", "verl", str(EXAMPLES[1]), "--launcher", "kubernetes", "-o", f"image={IMAGE}",
            *extra]  # fmt: skip


def test_a_server_answering_200_to_everything_is_no_api_server_fake_apiserver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real HTTP server that answers 200 {} to every request. `rladapt launch` must not report it submitted
    (it did, with no uid), and status, stop and logs of a run whose API server became such a server must exit 1
    with a clear message naming it (they crashed). The run itself is launched against the fake API server, since
    no real one can run here."""
    if "verl" not in load_registry(builtins=ADAPTERS, use_entry_points=False).frameworks:
        pytest.skip("the built-in verl adapter is not importable here")
    kubeconfig = tmp_path / "kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    with yes_server() as (seen, yes_url):
        write_kubeconfig(kubeconfig, yes_url)
        launched = _rladapt(tmp_path, *_launch_args())
        assert launched.returncode == 1, (launched.stdout, launched.stderr)
        assert f"the server at {yes_url} (context fake) does not answer like a Kubernetes API server" in (
            launched.stderr
        )
        assert "expected a RayJob object, found an empty answer" in launched.stderr
        assert "Traceback" not in launched.stderr and "internal error" not in launched.stderr
        assert seen.requests  # it was asked, and its answer refused

        with fake_apiserver() as (_, real_url):
            write_kubeconfig(kubeconfig, real_url)
            launched = _rladapt(tmp_path, *_launch_args())
            assert launched.returncode == 0, launched.stderr
            run_id = launched.stdout.strip().splitlines()[-1]
        write_kubeconfig(kubeconfig, yes_url)  # the same context now reaches the 200-to-everything server
        for verb in ("status", "stop", "logs"):
            done = _rladapt(tmp_path, verb, run_id)
            assert done.returncode == 1, (verb, done.stdout, done.stderr)
            assert f"the server at {yes_url} (context fake) does not answer like a Kubernetes" in done.stderr
            assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ([], "expected a RayJob object, found list"),
        ({}, "expected a RayJob object, found an empty answer"),
        ({"kind": "Status", "apiVersion": "v1"}, "expected kind RayJob of apiVersion ray.io/v1, found kind 'Status'"),
        ({"kind": "RayJob", "apiVersion": "v1", "metadata": {"uid": "u", "name": "j"}}, "apiVersion 'v1'"),
        ({"kind": "RayJob", "apiVersion": "ray.io/v1", "metadata": {"name": "j"}}, "has no metadata.uid"),
        ({"kind": "RayJob", "apiVersion": "ray.io/v1", "metadata": {"uid": "u", "name": "k"}}, "found metadata.name"),
        (
            {"kind": "RayJob", "apiVersion": "ray.io/v1", "metadata": {"uid": "u", "name": "j"}, "status": []},
            "status is list",
        ),
        (
            {"kind": "RayJob", "apiVersion": "ray.io/v1", "metadata": {"uid": "u", "name": "j"},
             "status": {"jobStatus": 3}},
            "status.jobStatus must be strings",
        ),
    ],
)  # fmt: skip
def test_every_answer_is_checked_in_one_place(answer: Any, problem: str) -> None:
    from rladapt.launchers.kubernetes.cluster import Cluster

    cluster = Cluster(api=None, host="https://api.example:6443", context="c", kubeconfig=None, namespace="n")
    with pytest.raises(LaunchError) as info:
        cluster.call("reading RayJob n/j", lambda **_: answer, kind="RayJob", name="j")
    assert problem in info.value.message
    assert info.value.message.startswith("reading RayJob n/j: the server at https://api.example:6443")


def test_relative_kubeconfig_is_stored_absolute_fake_apiserver(
    cluster: FakeCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o kubeconfig=kc.yaml` from one directory, `status` and `stop` from another (fake API server: no real one
    can run here)."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.delenv("KUBECONFIG")
    (here / "kc.yaml").write_text((tmp_path / "kubeconfig").read_text())
    launched = _rladapt(here, *_launch_args("-o", "kubeconfig=kc.yaml"))
    assert launched.returncode == 0, launched.stderr
    run_id = launched.stdout.strip().splitlines()[-1]
    handle = RunStore().get(run_id).handle
    assert handle is not None and handle["kubeconfig"] == str(here / "kc.yaml")
    status = _rladapt(elsewhere, "status", run_id)
    assert status.returncode == 0 and "PENDING" in status.stdout, status.stderr
    stopped = _rladapt(elsewhere, "stop", run_id)
    assert stopped.returncode == 0 and "STOPPED" in stopped.stdout, stopped.stderr
    assert cluster.rayjobs == {}


# --- a submission cut short: the RayJob is found by its namespace and name -------------------------------------

#: Runs the CLI and dies by SIGKILL right after the API server created the RayJob, before rladapt saves the
#: handle: what `kill -9` of `rladapt launch` at the worst moment leaves behind.
KILL_AFTER_CREATE = """
import os, signal, sys
from kubernetes.client import CustomObjectsApi
original = CustomObjectsApi.create_namespaced_custom_object
def create_then_die(self, *args, **kwargs):
    original(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
CustomObjectsApi.create_namespaced_custom_object = create_then_die
from rladapt.cli import main
main(sys.argv[1:])
"""


def _launch_killed_after_create(cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_CREATE, *_launch_args()],
        capture_output=True, text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    (run,) = RunStore().list()
    assert run.handle is None
    return run.id


def test_find_reaches_a_rayjob_whose_submitter_was_killed_after_create_fake_apiserver(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    """kill -9 of `rladapt launch` right after the RayJob was created; find(intent) returns the handle submit
    would have, status reads it, stop deletes the RayJob and its ConfigMap. Against the fake API server, since
    no real one can run here."""
    if "verl" not in load_registry(builtins=ADAPTERS, use_entry_points=False).frameworks:
        pytest.skip("the built-in verl adapter is not importable here")
    run_id = _launch_killed_after_create(tmp_path)
    run = RunStore().get(run_id)
    intent = LAUNCHER.intent(run.artifacts, run_id)
    ((namespace, name),) = cluster.rayjobs
    assert intent["name"] == name and intent["run_id"] == run_id

    handle = LAUNCHER.find(intent, run.dir)
    assert handle is not None
    assert (handle["namespace"], handle["name"]) == (namespace, name) == ("team-a", name)
    assert handle["uid"] == cluster.rayjobs[(namespace, name)]["metadata"]["uid"]
    configmaps = list(cluster.configmaps)
    if configmaps:
        assert handle["configmap"]["uid"] == cluster.configmaps[configmaps[0]]["metadata"]["uid"]
    assert LAUNCHER.status(handle, run.dir).state == "PENDING"
    assert LAUNCHER.stop(handle, run.dir).state == "STOPPED"
    assert cluster.rayjobs == {} and cluster.configmaps == {}
    # Nothing of that name (never created, or gone): None, not an error.
    assert LAUNCHER.find(intent, run.dir) is None


def test_find_refuses_a_namesake_of_another_run_fake_apiserver(cluster: FakeCluster, tmp_path: Path) -> None:
    """Against the fake API server (no real one can run here)."""
    artifacts = render_artifacts(LAUNCHER, toy_native(files={}), {"image": IMAGE}, run_id="mine-0a1b2c3d")
    LAUNCHER.submit(artifacts, tmp_path)
    intent = LAUNCHER.intent(artifacts, "other-0a1b2c3d")
    assert LAUNCHER.find(intent, tmp_path) is None
    found = LAUNCHER.find(LAUNCHER.intent(artifacts, "mine-0a1b2c3d"), tmp_path)
    assert found is not None and found["kubeconfig"] == os.environ["KUBECONFIG"]


def test_cli_status_and_stop_reach_a_rayjob_whose_submitter_was_killed_fake_apiserver(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    """End to end through the CLI (needs the runner's part: the intent recorded before submit, and find() for a
    run without a handle). Fake API server: no real one can run here."""
    if "verl" not in load_registry(builtins=ADAPTERS, use_entry_points=False).frameworks:
        pytest.skip("the built-in verl adapter is not importable here")
    run_id = _launch_killed_after_create(tmp_path)
    ((namespace, name),) = cluster.rayjobs
    cluster.set_status(namespace, name, jobDeploymentStatus="Running", jobStatus="RUNNING")
    status = _rladapt(tmp_path, "status", run_id)
    assert status.returncode == 0 and "RUNNING" in status.stdout, (status.stdout, status.stderr)
    stopped = _rladapt(tmp_path, "stop", run_id)
    assert stopped.returncode == 0 and "STOPPED" in stopped.stdout, (stopped.stdout, stopped.stderr)
    assert cluster.rayjobs == {} and cluster.configmaps == {}
