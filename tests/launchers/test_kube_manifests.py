"""Manifests a cluster admin accepts (issue 24): every RayJob pod requests CPU and memory, and a checkpoint
directory on no volume (the pod's ephemeral disk) is a warning at render, an error with ``launch --strict``; so is
each local file the job reads (data, model, reward and agent files, tool configs) that is on no volume the pods
mount, since nothing of this machine reaches them.

Before, the head pod carried no requests at all, pools whose roles asked nothing carried GPUs only, and nothing
said that checkpoints under a relative ``spec.checkpoint.dir`` would be written inside the pod and lost with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rladapt.launchers.kubernetes import KubernetesLauncher
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import load_job
from tests.conftest import EXAMPLES, REPO
from tests.launchers.test_kubernetes import assert_valid, containers, manifests, toy_launch

IMAGE = "ghcr.io/example/rl:2025.1"
LAUNCHER = KubernetesLauncher()
GSM8K = REPO / "examples" / "grpo-gsm8k.yaml"  # checkpoint.dir relative, no volume
SEPARATE = REPO / "examples" / "async-grpo-separate.yaml"  # checkpoint.dir /ckpt/..., a PVC mounted at /ckpt


def render(example: Path, *overrides: str, **options: Any) -> Any:
    native = toy_launch(load_job(example, list(overrides)))
    artifacts = render_artifacts(LAUNCHER, native, {"image": IMAGE, **options})
    assert_valid(artifacts)  # KubeRay's CRD schema, its rules, and the Kubernetes pod schema
    return artifacts


def ephemeral(artifacts: Any) -> list[str]:
    return [w for w in artifacts.warnings if w.startswith("spec.checkpoint.dir ")]


def unshipped(artifacts: Any) -> dict[str, str]:
    """The inputs warned about as on no volume: spec field -> warning."""
    return {w.split(" ", 1)[0]: w for w in artifacts.warnings if "the pods read it from the image" in w}


def test_the_head_pod_requests_cpu_and_memory_and_the_options_make_them_its_limits() -> None:
    rayjob, _ = manifests(render(GSM8K))
    head = containers(rayjob)["head"]["resources"]
    assert head == {"requests": {"cpu": "1", "memory": "2Gi"}}  # KubeRay's sample head; no limit
    rayjob, _ = manifests(render(GSM8K, head_cpu="4", head_memory="16Gi", head_gpus=1))
    head = containers(rayjob)["head"]["resources"]
    assert head["requests"] == head["limits"] == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}


def test_worker_pods_request_what_their_roles_ask_and_a_pool_that_asks_nothing_is_a_warning() -> None:
    asked = render(GSM8K, "spec.roles.actor.cpus_per_gpu=6", "spec.roles.actor.memory=300Gi")
    rayjob, _ = manifests(asked)
    for name, container in containers(rayjob).items():
        assert {"cpu", "memory"} <= set(container["resources"]["requests"]), name
    assert not [w for w in asked.warnings if "worker pods" in w]

    silent = render(GSM8K)
    pools = [w for w in silent.warnings if "worker pods" in w]
    assert len(pools) == 1
    assert pools[0].startswith(
        "the worker pods of pool all request no CPUs (spec.roles.<role>.cpus_per_gpu of its roles "
    )
    assert "or -o cpu=) and no memory (spec.roles.<role>.memory of its roles" in pools[0]
    only_cpu = render(GSM8K, "spec.roles.actor.memory=300Gi")
    assert [w for w in only_cpu.warnings if "worker pods" in w and "no memory" in w] == []


def test_a_checkpoint_directory_on_no_volume_is_a_warning() -> None:
    relative = render(GSM8K)
    assert ephemeral(relative) == [
        "spec.checkpoint.dir checkpoints/qwen2-5-3b-grpo-gsm8k (in the pods: /workspace/checkpoints/"
        "qwen2-5-3b-grpo-gsm8k) is on no volume: checkpoints and metrics would "
        "land on the pod's ephemeral disk and be lost with it; mount a volume over it (spec.volumes: a pvc "
        "claim, nfs or host_path) or give an absolute path under one"
    ]
    # relative to the working directory in the pods (the generated files' /workspace): a claim mounted there
    pvc = "spec.volumes=[{name: ckpt, mount: /workspace/checkpoints, source: {pvc: rl-ckpt}}]"
    assert ephemeral(render(GSM8K, pvc)) == []
    assert "(in the pods: /opt/job/checkpoints/" in ephemeral(render(GSM8K, workdir="/opt/job"))[0]
    # a memory volume is a tmpfs: as ephemeral as the pod
    tmpfs = "spec.volumes=[{name: ckpt, mount: /ckpt, source: {memory: 64Gi}}]"
    assert ephemeral(render(GSM8K, tmpfs, "spec.checkpoint.dir=/ckpt/run"))
    host = "spec.volumes=[{name: ckpt, mount: /ckpt, source: {host_path: /mnt/ckpt}}]"
    assert ephemeral(render(GSM8K, host, "spec.checkpoint.dir=/ckpt/run")) == []
    assert ephemeral(render(GSM8K, host, "spec.checkpoint.dir=/ckptx/run"))  # a prefix is no mount
    assert ephemeral(render(GSM8K, "spec.checkpoint.dir=s3://bucket/run")) == []  # remote: the framework's
    assert ephemeral(render(SEPARATE)) == []  # the example mounts its PVC at /ckpt


def test_a_data_file_on_no_volume_is_a_warning_naming_the_field_and_where_the_pods_look() -> None:
    warned = unshipped(render(GSM8K))
    assert warned["spec.data.train[0]"] == (
        "spec.data.train[0] data/gsm8k/train.parquet (in the pods: /workspace/data/gsm8k/train.parquet) is on no "
        "volume: the pods read it from the image, where it must already be (nothing of this machine is shipped "
        "to them); mount a volume over it (spec.volumes: a pvc claim, nfs or host_path), or build it into the image"
    )
    # the example's other local inputs; its model is a Hub id and its interpreter the image's
    assert set(warned) == {"spec.data.train[0]", "spec.data.val[0]", "spec.reward.function.path"}
    local_model = unshipped(
        render(GSM8K, "spec.model.path=/models/qwen", "spec.runtime.python=.venv/bin/python")
    )
    assert "spec.model.path /models/qwen is on no volume" in local_model["spec.model.path"]
    assert "spec.runtime.python" not in local_model
    assert (
        "(in the pods: /opt/job/data/gsm8k/"
        in unshipped(render(GSM8K, workdir="/opt/job"))["spec.data.val[0]"]
    )


def test_inputs_under_a_mounted_volume_are_not_warned_about() -> None:
    pvc = "spec.volumes=[{name: data, mount: /workspace/data, source: {pvc: rl-data}}]"
    assert set(unshipped(render(GSM8K, pvc))) == {"spec.reward.function.path"}
    nfs = "spec.volumes=[{name: shared, mount: /shared, source: {nfs: {server: fs.example, path: /export}}}]"
    absolute = [
        nfs,
        "spec.data.train=[/shared/train.parquet]",
        "spec.data.val=[/shared/test.parquet]",
        "spec.reward.function.path=/shared/rewards/gsm8k.py",
        "spec.model.path=/shared/models/qwen",
    ]
    assert unshipped(render(GSM8K, *absolute)) == {}
    # a memory volume is a tmpfs the pod starts with empty: nothing to read there
    tmpfs = "spec.volumes=[{name: shm, mount: /shared, source: {memory: 8Gi}}]"
    assert set(unshipped(render(GSM8K, *absolute[1:], tmpfs))) == {
        "spec.data.train[0]",
        "spec.data.val[0]",
        "spec.reward.function.path",
        "spec.model.path",
    }
    host = "spec.volumes=[{name: shared, mount: /sharedx, source: {host_path: /mnt}}]"
    assert "spec.data.train[0]" in unshipped(render(GSM8K, *absolute[1:], host))  # a prefix is no mount


def test_remote_urls_and_hub_ids_are_not_inputs_of_the_pods() -> None:
    remote = [
        "spec.data.train=[s3://bucket/gsm8k/train.parquet]",
        "spec.data.val=[openai/gsm8k]",  # a Hub dataset id: the framework downloads it
        "spec.model.path=Qwen/Qwen2.5-3B-Instruct",
        "spec.reward.function.path=/shared/rewards/gsm8k.py",
        "spec.volumes=[{name: shared, mount: /shared, source: {pvc: rl-shared}}]",
    ]
    assert unshipped(render(GSM8K, *remote)) == {}
    # a remote working directory is a package Ray downloads: the relative paths are read inside it
    native = toy_launch(load_job(GSM8K, ["spec.runtime.working_dir=s3://bucket/job.zip"]))
    native = native.model_copy(update={"files": {}})
    artifacts = render_artifacts(LAUNCHER, native, {"image": IMAGE})
    assert unshipped(artifacts) == {}
    absolute = native.model_copy(
        update={"inputs": {**native.inputs, "spec.data.train[0]": "/data/t.parquet"}}
    )
    assert set(unshipped(render_artifacts(LAUNCHER, absolute, {"image": IMAGE}))) == {"spec.data.train[0]"}


def test_a_file_the_launch_generates_is_shipped_and_a_home_directory_is_nowhere_known() -> None:
    native = toy_launch(load_job(GSM8K))
    generated = native.model_copy(
        update={
            "files": {**native.files, "rewards/generated.py": "def compute_score(): ...\n"},
            "inputs": {
                "spec.reward.function.path": "rewards/generated.py",
                "spec.data.train[0]": "~/t.parquet",
            },
        }
    )
    warned = unshipped(render_artifacts(LAUNCHER, generated, {"image": IMAGE}))
    assert set(warned) == {"spec.data.train[0]"}  # the reward file is mounted from the launch's ConfigMap
    assert warned["spec.data.train[0]"].startswith("spec.data.train[0] ~/t.parquet is on no volume:")


def test_every_example_renders_valid_manifests_with_requests_on_every_pod() -> None:
    for example in EXAMPLES:
        rayjob, _ = manifests(
            render(example, "spec.roles.actor.cpus_per_gpu=4", "spec.roles.actor.memory=64Gi")
        )
        for name, container in containers(rayjob).items():
            requests = (container.get("resources") or {}).get("requests") or {}
            if name == "head" or "actor" in name or name in ("all", "train"):
                assert {"cpu", "memory"} <= set(requests), (example.name, name, requests)


def _rladapt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def test_launch_says_the_warnings_and_strict_refuses_them() -> None:
    args = ["launch", "-f", "verl", str(GSM8K), "-l", "kubernetes", "-o", f"image={IMAGE}", "--dry-run"]
    shown = _rladapt(*args)
    assert shown.returncode == 0, shown.stderr
    assert "warning: spec.checkpoint.dir checkpoints/qwen2-5-3b-grpo-gsm8k" in shown.stderr
    assert "kind: RayJob" in shown.stdout
    assert "warning: spec.reward.function.path rewards/gsm8k.py is on no volume" in shown.stderr
    strict = _rladapt(*args, "--strict")
    assert strict.returncode == 2, strict.stderr
    assert strict.stdout == ""
    assert "--strict: the kubernetes launcher warns, nothing was submitted:" in strict.stderr
    assert "  - spec.checkpoint.dir checkpoints/qwen2-5-3b-grpo-gsm8k is on no volume" in strict.stderr
    assert (
        "  - spec.data.train[0] data/gsm8k/train.parquet is on no volume: the pods read it from the image"
        in (strict.stderr)
    )
    assert "Traceback" not in strict.stderr
    rendered = _rladapt("render", "-f", "verl", str(GSM8K), "-l", "kubernetes", "-o", f"image={IMAGE}")
    assert rendered.returncode == 0 and rendered.stdout == shown.stdout
    assert "warning: spec.checkpoint.dir checkpoints/qwen2-5-3b-grpo-gsm8k" in rendered.stderr
    # a launcher with nothing to warn about: --strict changes nothing
    local = _rladapt("launch", "-f", "verl", str(GSM8K), "--dry-run", "--strict")
    assert local.returncode == 0, local.stderr
    assert "warning:" not in local.stderr


def test_the_readme_names_the_extra_the_kubernetes_launcher_needs() -> None:
    """Without it, launch -l kubernetes (dry run included) is exit 2 naming the extra (tests/packaging)."""
    lines = [line for line in (REPO / "README.md").read_text().splitlines() if "kubernetes" in line]
    launch_lines = [line for line in lines if line.startswith("rladapt launch")]
    assert launch_lines and all("pip install 'rladapt[kubernetes]'" in line for line in launch_lines)


def test_eval_datasets_on_no_volume_are_warned_about_like_the_other_data() -> None:
    """``spec.eval.datasets`` reach the framework with the validation files: the pods read them too."""
    warned = unshipped(render(GSM8K, "spec.eval.datasets=[data/extra/test.parquet]"))
    assert (
        "spec.eval.datasets[0] data/extra/test.parquet (in the pods: /workspace/"
        in warned["spec.eval.datasets[0]"]
    )


def test_a_dry_run_with_the_kubernetes_client_hidden_names_the_extra(tmp_path: Path) -> None:
    """The quick form of tests/packaging's plain-install check: with ``import kubernetes`` failing, as without the
    extra, ``launch --dry-run -l kubernetes`` is exit 2 naming ``rladapt[kubernetes]``, never a traceback."""
    code = (
        "import runpy, sys\n"
        "sys.modules['kubernetes'] = None  # import kubernetes now raises ImportError, as when it is absent\n"
        f"sys.argv = ['rladapt', 'launch', '-f', 'verl', {str(GSM8K)!r}, '-l', 'kubernetes', "
        f"'-o', 'image={IMAGE}', '--dry-run']\n"
        "runpy.run_module('rladapt.cli', run_name='__main__')\n"
    )
    for name in ("data/gsm8k/train.parquet", "data/gsm8k/test.parquet", "rewards/gsm8k.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")  # the files the spec names are there
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's rladapt, from another directory
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr
    assert "pip install 'rladapt[kubernetes]'" in res.stderr
    assert res.stdout == "" and "Traceback" not in res.stderr
