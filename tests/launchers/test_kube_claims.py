"""A claim the launch creates (issue 24, item 3): ``spec.volumes`` of ``source: {pvc: NAME, size: ...}`` make the
kubernetes launcher render a PersistentVolumeClaim beside the RayJob, created at submit when the namespace has
none of that name, used as it is when it has one (a warning when it differs), and never deleted by rladapt (no
owner reference to the RayJob, ``stop`` leaves it: checkpoints outlive the job). Without ``size`` the claim is an
existing one, as before. The other launchers create no claim: ``size`` is refused there, naming the field.

The claim is checked against the official Kubernetes schemas (kubernetes-validate, strict) and submitted through
the real client to the fake API server (named so: no real Kubernetes API server can run here), which checks it
against the same schemas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.launchers.kubernetes.manifest import claim_file
from rladapt.launchers.local import LocalLauncher
from rladapt.launchers.ray import RayLauncher
from rladapt.launchers.slurm import SlurmLauncher
from rladapt.plugins import Launcher, NativeLaunch, VolumeSpec, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import load_job
from rladapt.primitives.errors import SpecError
from tests.conftest import REPO
from tests.launchers.k8s_fake_apiserver import FakeCluster
from tests.launchers.k8s_schemas import k8s_errors

from .test_kubernetes import (  # noqa: F401
    ADAPTERS,
    IMAGE,
    LAUNCHER,
    assert_valid,
    cluster,
    manifests,
    toy_launch,
    toy_native,
)

RUN = "qwen-grpo-1a2b3c4d"
GSM8K = REPO / "examples" / "grpo-gsm8k.yaml"
CREATED = "spec.volumes=[{name: ckpt, mount: /ckpt, source: {pvc: rl-ckpt, size: 100Gi}}]"


def _claim_volume(**fields: Any) -> NativeLaunch:
    volume = VolumeSpec(name="ckpt", mount="/ckpt", kind="pvc", source="rl-ckpt", **fields)
    return toy_native(volumes=(volume,))


def _claim(artifacts: Any, name: str = "rl-ckpt") -> dict[str, Any]:
    claim: dict[str, Any] = yaml.safe_load(artifacts.files[claim_file(name)])
    return claim


def test_a_pvc_with_a_size_renders_a_valid_claim_the_pods_mount_owned_by_nothing() -> None:
    artifacts = render_artifacts(
        LAUNCHER, _claim_volume(size="100Gi", storage_class="fast-rwx"), {"image": IMAGE}
    )
    assert_valid(artifacts)  # the RayJob and the claim against the real schemas
    claim = _claim(artifacts)
    assert k8s_errors(claim) == []
    assert claim["kind"] == "PersistentVolumeClaim" and claim["metadata"]["name"] == "rl-ckpt"
    assert "ownerReferences" not in claim["metadata"]  # checkpoints outlive the RayJob
    assert claim["spec"] == {
        # the toy launch has a head and a worker group: several pods on several nodes mount it
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "100Gi"}},
        "storageClassName": "fast-rwx",
    }
    assert artifacts.request["claims"] == [{"name": "rl-ckpt", "file": claim_file("rl-ckpt")}]
    rayjob, _ = manifests(artifacts)
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert {"name": "ckpt", "persistentVolumeClaim": {"claimName": "rl-ckpt"}} in head["volumes"]
    assert f"--- {claim_file('rl-ckpt')} ---" in artifacts.describe()  # the dry run shows it


def test_the_access_mode_is_the_specs_else_chosen_from_how_many_pods_mount_the_claim() -> None:
    explicit = render_artifacts(
        LAUNCHER, _claim_volume(size="1Ti", access_mode="ReadWriteOnce"), {"image": IMAGE}
    )
    assert _claim(explicit)["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert "storageClassName" not in _claim(explicit)["spec"]  # the cluster's default class
    head_only = _claim_volume(size="10Gi").model_copy(update={"pools": ()})
    assert _claim(render_artifacts(LAUNCHER, head_only, {"image": IMAGE}))["spec"]["accessModes"] == [
        "ReadWriteOnce"
    ]


def test_without_a_size_the_claim_is_an_existing_one_and_nothing_is_created() -> None:
    artifacts = render_artifacts(LAUNCHER, _claim_volume(), {"image": IMAGE})
    assert not [f for f in artifacts.files if f.startswith("pvc-")]
    assert "claims" not in artifacts.request


def test_the_spec_takes_size_class_and_mode_only_on_a_pvc_and_class_and_mode_only_with_a_size() -> None:
    job = load_job(GSM8K, [CREATED, "spec.checkpoint.dir=/ckpt/run"])
    source = job.spec.volumes[0].source
    assert (source.pvc, source.size) == ("rl-ckpt", "100Gi")
    artifacts = render_artifacts(LAUNCHER, toy_launch(job), {"image": IMAGE})
    assert_valid(artifacts)
    assert not [w for w in artifacts.warnings if w.startswith("spec.checkpoint.dir ")]  # on the claim
    wrong = {
        "{host_path: /mnt, size: 10Gi}": "go with pvc only",
        "{pvc: rl-ckpt, storage_class: fast}": "needs size",
        "{pvc: rl-ckpt, access_mode: ReadWriteOnce}": "needs size",
        "{pvc: rl-ckpt, size: lots}": "size is a storage size such as 100Gi",
        "{pvc: rl-ckpt, size: 1Gi, access_mode: ReadWriteSome}": "access_mode",
        "{pvc: RL_ckpt, size: 1Gi}": "DNS subdomain",
    }
    for source_text, expected in wrong.items():
        with pytest.raises(SpecError) as caught:
            load_job(GSM8K, [f"spec.volumes=[{{name: ckpt, mount: /ckpt, source: {source_text}}}]"])
        text = str(caught.value)
        assert "spec.volumes[0].source" in text and expected in text, (source_text, text)


@pytest.mark.parametrize(
    "launcher", [LocalLauncher(), SlurmLauncher(), RayLauncher()], ids=lambda x: x.PLUGIN_NAME
)
def test_the_other_launchers_refuse_a_claim_to_create_naming_the_field(launcher: Launcher) -> None:
    native = _claim_volume(size="100Gi", storage_class="fast")
    options = {"address": "http://127.0.0.1:8265"} if launcher.PLUGIN_NAME == "ray" else {}
    with pytest.raises(SpecError) as caught:
        render_artifacts(launcher, native, options)
    paths = [p.path for p in caught.value.problems]
    assert paths == ["spec.volumes[0].source.size", "spec.volumes[0].source.storage_class"]
    assert f"the {launcher.PLUGIN_NAME} launcher creates no claim" in str(caught.value)
    # an existing claim by name is not refused there (the inputs, not under test here, left out: Ray's upload)
    render_artifacts(launcher, _claim_volume().model_copy(update={"inputs": {}}), options)


def test_submit_creates_an_absent_claim_and_stop_leaves_it(
    cluster: FakeCluster,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    artifacts = render_artifacts(LAUNCHER, _claim_volume(size="100Gi"), {"image": IMAGE}, run_id=RUN)
    handle = LAUNCHER.submit(artifacts, tmp_path)
    claims = cluster.objects["PersistentVolumeClaim"]
    assert list(claims) == [("team-a", "rl-ckpt")]
    created = claims[("team-a", "rl-ckpt")]
    assert created["spec"]["resources"]["requests"]["storage"] == "100Gi"
    assert "ownerReferences" not in created["metadata"]  # deleting the RayJob must not take the claim
    assert handle["claims"] == [{"name": "rl-ckpt", "created": True}]
    assert "warnings" not in handle
    # the claim is created before the RayJob, whose pods need it
    posts = [path for method, path in cluster.requests if method == "POST"]
    assert posts[0] == "/api/v1/namespaces/team-a/persistentvolumeclaims"

    # a submission interrupted after the RayJob was created: the run found again knows its claims too
    found = LAUNCHER.find(LAUNCHER.intent(artifacts, RUN), tmp_path)
    assert found is not None and found["claims"] == [{"name": "rl-ckpt"}]

    stopped = LAUNCHER.stop(handle, tmp_path)
    assert ("team-a", RUN) not in cluster.rayjobs
    assert list(claims) == [("team-a", "rl-ckpt")] and claims[("team-a", "rl-ckpt")] is created
    assert not [p for m, p in cluster.requests if m == "DELETE" and "persistentvolumeclaims" in p]
    assert "PersistentVolumeClaim rl-ckpt kept" in (stopped.message or "")


def test_an_existing_claim_is_used_as_it_is_and_a_different_one_is_a_warning(
    cluster: FakeCluster,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    existing = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "rl-ckpt", "namespace": "team-a", "uid": "claim-uid-1"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "50Gi"}},
            "storageClassName": "slow",
        },
    }
    cluster.objects["PersistentVolumeClaim"][("team-a", "rl-ckpt")] = existing
    artifacts = render_artifacts(
        LAUNCHER, _claim_volume(size="100Gi", storage_class="fast"), {"image": IMAGE}, run_id=RUN
    )
    handle = LAUNCHER.submit(artifacts, tmp_path)
    assert cluster.objects["PersistentVolumeClaim"][("team-a", "rl-ckpt")] is existing  # never replaced
    assert handle["claims"] == [{"name": "rl-ckpt", "created": False}]
    assert ("team-a", RUN) in cluster.rayjobs  # the launch goes on with the claim there
    (warning,) = handle["warnings"]
    assert warning.startswith("PersistentVolumeClaim team-a/rl-ckpt exists and is used as it is, with ")
    for part in ("size 50Gi (the spec asks 100Gi)", "storage class slow (the spec asks fast)",
                 "access modes ReadWriteOnce (the spec asks ReadWriteMany)", "rladapt never replaces a claim"):  # fmt: skip
        assert part in warning


def test_an_existing_claim_like_the_specs_is_no_warning(
    cluster: FakeCluster,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    first = render_artifacts(LAUNCHER, _claim_volume(size="100Gi"), {"image": IMAGE}, run_id=RUN)
    LAUNCHER.submit(first, tmp_path / "a")
    again = render_artifacts(LAUNCHER, _claim_volume(size="102400Mi"), {"image": IMAGE}, run_id=RUN + "x")
    handle = LAUNCHER.submit(again, tmp_path / "b")
    assert handle["claims"] == [{"name": "rl-ckpt", "created": False}] and "warnings" not in handle


def test_launch_says_the_existing_claims_difference_and_stop_says_the_claim_is_kept_fake_apiserver(
    cluster: FakeCluster,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    """End to end through the CLI, against the fake API server (no real one can run here): the warning that
    submit found is said on stderr at `launch` (it was only kept in the run record), and `stop` names the claim
    it leaves."""
    if "verl" not in load_registry(builtins=ADAPTERS, use_entry_points=False).frameworks:
        pytest.skip("the built-in verl adapter is not importable here")
    cluster.objects["PersistentVolumeClaim"][("team-a", "rl-ckpt")] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "rl-ckpt", "namespace": "team-a", "uid": "claim-uid-1"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Gi"}}},
    }

    def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rladapt.cli", *args],
            capture_output=True, text=True, timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    launched = rladapt(
        "launch", "-f", "verl", str(GSM8K), "-l", "kubernetes", "-o", f"image={IMAGE}", CREATED,
        "spec.checkpoint.dir=/ckpt/run", "spec.data.train=[/ckpt/train.parquet]", "spec.data.val=[/ckpt/val.parquet]",
        "spec.reward.function.path=/ckpt/reward.py",
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    run_id = launched.stdout.strip().splitlines()[-1]
    assert (
        "warning: PersistentVolumeClaim team-a/rl-ckpt exists and is used as it is, with size 10Gi (the spec asks "
        "100Gi): rladapt never replaces a claim"
    ) in launched.stderr
    stopped = rladapt("stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    assert "PersistentVolumeClaim rl-ckpt kept" in stopped.stdout
    assert ("team-a", "rl-ckpt") in cluster.objects["PersistentVolumeClaim"] and cluster.rayjobs == {}
