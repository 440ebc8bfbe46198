"""Secrets across launchers: several sources in order, each launcher taking the first it can read, and no value
ever in a rendered file or (for a file source) in Ray's job table.

Real components throughout: the real adapters' output, real bash for the local launcher, a real Ray head for the
ray launcher (the ``ray_head`` fixture of conftest.py); the entrypoint is the stub of conftest.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rladapt.bootstrap import SECRET_FILES_ENV, WORKER_SETUP_HOOK
from rladapt.launchers._common import secret_lines
from rladapt.launchers.kubernetes import KubernetesLauncher
from rladapt.launchers.local import SCRIPT, LocalLauncher
from rladapt.launchers.ray import RayLauncher
from rladapt.launchers.slurm import SCRIPT as SBATCH_SCRIPT
from rladapt.launchers.slurm import SlurmLauncher
from rladapt.plugins import NativeLaunch, Registry, RunStatus, SecretRef, SecretSourceRef
from rladapt.plugins.launcher import render_artifacts
from rladapt.plugins.testing.checks import check_native
from rladapt.primitives import load_job
from rladapt.primitives.errors import LaunchError, SpecError, UsageError
from rladapt.runs import new_run_id
from tests.conftest import EXAMPLES, REPO, TRL_EXAMPLES

from .conftest import render_job, stub_report, write_spec

#: Set in the submitting shell under every name a source may read: it must never appear in anything rendered.
SENTINEL = "sentinel-s3cr3t-9f1c $(touch pwned)"
FILE_VALUE = "from-the-file 'q' $HOME `touch pwned`"
FRAMEWORKS = ("verl", "openrlhf")
#: (example, framework) -> the spec field that framework refuses: the dry run must stop there, exit 2, and say so.
REFUSED: dict[tuple[str, str], str] = {
    # OpenRLHF ships no math-verify scorer (rladapt/adapters/openrlhf/__init__.py, WHY_NOT)
    ("grpo-math-nemo-rl", "openrlhf"): "spec.reward.builtin.name",
    # the TRL example generates with the policy itself (HF rollout); it dry-runs on trl below
    ("grpo-tiny-trl", "verl"): "spec.rollout.engine",
    ("grpo-tiny-trl", "openrlhf"): "spec.rollout.engine",
    # OpenRLHF trains with DeepSpeed only (no backend.megatron capability in any version)
    ("grpo-megatron-math", "openrlhf"): "spec.training.backend",
    # OpenRLHF has no SGLang rollout and runs turns only in an agent function (WHY_NOT multi_turn)
    ("multi-turn-tools-gsm8k", "openrlhf"): "spec.rollout.engine",
}
#: What each launcher needs on the command line for a dry run of any example.
LAUNCHER_ARGS = {
    "local": [],
    # a dry run: every path the job reads is taken as on storage the nodes share (none is looked at)
    "ray": ["-o", "shared=/"],
    "slurm": [],
    "kubernetes": ["-o", "image=rayproject/ray:2.40.0-py311"],
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _secret(env: str, *sources: SecretSourceRef) -> SecretRef:
    return SecretRef(env=env, sources=sources)


# --- the spec and NativeLaunch ---------------------------------------------------------------------------------


def test_a_secret_names_several_sources_and_native_carries_every_one_in_order(
    engine_registry: Registry, workdir: Path
) -> None:
    sources = [{"k8s_secret": {"name": "hf", "key": "token"}}, {"env": "HF_TOKEN"}, {"file": "~/.hf token"}]
    spec = write_spec(
        workdir, secrets=[{"env": "HF_TOKEN", "from": sources}, {"env": "ONE", "from": {"env": "X"}}]
    )
    native = render_job(engine_registry, spec)
    assert native.secrets == (
        _secret(
            "HF_TOKEN",
            SecretSourceRef(kind="k8s_secret", name="hf", key="token"),
            SecretSourceRef(kind="env", name="HF_TOKEN"),
            SecretSourceRef(kind="file", name="~/.hf token"),
        ),
        _secret("ONE", SecretSourceRef(kind="env", name="X")),  # the one-source form is still valid
    )
    assert native.to_dict()["format"] == 2
    assert native.to_dict()["secrets"][0]["sources"][2] == {
        "kind": "file",
        "name": "~/.hf token",
        "key": None,
    }


def test_an_empty_source_list_is_a_spec_error_naming_the_field(workdir: Path) -> None:
    spec = write_spec(workdir, secrets=[{"env": "K", "from": []}])
    with pytest.raises(SpecError) as info:
        load_job(spec)
    assert (
        "spec.secrets[0].from: invalid value; expected a source, or a list of one or more sources tried in order, found []"
        in info.value.message
    )


def test_the_kit_flags_an_adapter_that_drops_a_source(engine_registry: Registry, workdir: Path) -> None:
    sources = [{"k8s_secret": {"name": "hf", "key": "token"}}, {"env": "HF_TOKEN"}]
    spec = write_spec(workdir, secrets=[{"env": "HF_TOKEN", "from": sources}])
    job = load_job(spec)
    rendered = engine_registry.frameworks["verl"].obj
    version = rendered.resolve_version(None)
    native = rendered.translate(job, version)
    assert check_native(rendered, version, job, native) == []
    dropped = native.model_copy(update={"secrets": (_secret("HF_TOKEN", native.secrets[0].sources[0]),)})
    (failure,) = check_native(rendered, version, job, dropped)
    assert failure.endswith("native.secrets must carry every source of each secret, in the spec's order")


# --- every example dry-runs on every launcher, with no secret value anywhere ------------------------------------


EXAMPLE_CASES = [(e, fw) for e in EXAMPLES for fw in FRAMEWORKS] + [(e, "trl") for e in TRL_EXAMPLES]


@pytest.mark.parametrize("launcher", list(LAUNCHER_ARGS))
@pytest.mark.parametrize(
    ("example", "framework"), EXAMPLE_CASES, ids=[f"{e.stem}-{fw}" for e, fw in EXAMPLE_CASES]
)
def test_every_example_dry_runs_on_every_launcher_without_a_secret_value(
    example: Path, framework: str, launcher: str, tmp_path: Path
) -> None:
    job = load_job(example)
    env = dict(os.environ)
    for secret in job.spec.secrets:
        env[secret.env] = SENTINEL
        env.update({s.env: SENTINEL for s in secret.from_ if s.env})
    command = [sys.executable, "-m", "rladapt", "launch", "-f", framework, str(example), "-l", launcher]
    res = subprocess.run(
        [*command, *LAUNCHER_ARGS[launcher], "--dry-run"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert SENTINEL not in res.stdout and SENTINEL not in res.stderr
    refused = REFUSED.get((example.stem, framework))
    if refused is not None:
        assert res.returncode == 2 and f"{refused}: {framework} " in res.stderr, res.stderr
        return
    assert res.returncode == 0, res.stderr
    if job.spec.secrets:
        assert "WANDB_API_KEY" in res.stdout  # by reference: the name, with the source picked


def test_the_examples_use_several_sources_where_they_have_secrets() -> None:
    with_secrets = [e for e in EXAMPLES if load_job(e).spec.secrets]
    assert with_secrets, "no example exercises secrets"
    for example in with_secrets:
        for secret in load_job(example).spec.secrets:
            assert len(secret.from_) > 1, example.name


# --- which source each launcher takes, and says it took ---------------------------------------------------------


def test_each_launcher_takes_the_first_source_it_can_read_and_says_which(
    engine_registry: Registry, workdir: Path
) -> None:
    sources = [{"k8s_secret": {"name": "wandb", "key": "api-key"}}, {"env": "MY_KEY"}, {"file": "/run/key"}]
    native = render_job(engine_registry, write_spec(workdir, secrets=[{"env": "API_KEY", "from": sources}]))

    local = render_artifacts(LocalLauncher(), native, {}).files[SCRIPT]
    assert '# secret API_KEY <- env MY_KEY, else file "/run/key"' in local
    sbatch = render_artifacts(SlurmLauncher(), native, {}).files[SBATCH_SCRIPT]
    assert '# secret API_KEY <- env MY_KEY, else file "/run/key"' in sbatch

    ray = render_artifacts(RayLauncher(), native, {}).request
    assert ray["secret_env"] == {"API_KEY": [{"env": "MY_KEY"}, {"file": "/run/key"}]}
    assert ray["notes"][0].startswith("secret API_KEY <- $MY_KEY of the submitting shell (the first set)")
    assert 'else file "/run/key", read on each node' in ray["notes"][0]

    k8s = render_artifacts(KubernetesLauncher(), native, {"image": "rayproject/ray:2.40.0"})
    ref = {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    rayjob = yaml.safe_load(k8s.files["rayjob.yaml"])
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert ref in head["env"]
    assert not [e for e in head["env"] if e["name"] == "API_KEY" and e != ref]


def test_kubernetes_refuses_a_secret_without_a_kubernetes_source_naming_it_and_its_sources(
    engine_registry: Registry, workdir: Path
) -> None:
    sources = [{"env": "MY_KEY"}, {"file": "/run/key"}]
    native = render_job(engine_registry, write_spec(workdir, secrets=[{"env": "API_KEY", "from": sources}]))
    with pytest.raises(SpecError) as info:
        render_artifacts(KubernetesLauncher(), native, {"image": "rayproject/ray:2.40.0"})
    assert (
        "spec.secrets[0].from: secret API_KEY: a Kubernetes cluster can read none of its sources (env MY_KEY, "
        'file "/run/key"); it reads Kubernetes secrets only; expected a source {k8s_secret: {name: SECRET, '
        "key: KEY}} in the list (sources are tried in order), found env, file"
    ) in info.value.message


@pytest.mark.parametrize(
    ("launcher", "label"),
    [
        (LocalLauncher(), "the local launcher"),
        (SlurmLauncher(), "a Slurm job"),
        (RayLauncher(), "the ray launcher"),
    ],
)
def test_script_and_ray_launchers_refuse_a_secret_with_only_kubernetes_sources(
    engine_registry: Registry,
    workdir: Path,
    launcher: LocalLauncher | SlurmLauncher | RayLauncher,
    label: str,
) -> None:
    sources = [{"k8s_secret": {"name": "a", "key": "k"}}, {"k8s_secret": {"name": "b", "key": "k"}}]
    native = render_job(engine_registry, write_spec(workdir, secrets=[{"env": "API_KEY", "from": sources}]))
    with pytest.raises(UsageError) as info:
        render_artifacts(launcher, native, {})
    assert info.value.message.startswith(
        f"secret API_KEY: {label} can read none of its sources (k8s_secret a/k, k8s_secret b/k); it reads "
        "a variable of the submitting shell (`from: {env: VAR}`) or a file (`from: {file: PATH}`)"
    )


def test_a_file_path_cannot_break_out_of_the_script_comment() -> None:
    native_secret = _secret("K", SecretSourceRef(kind="file", name="x\ntouch pwned"))
    native = NativeLaunch(framework="f", version="1", job_name="j", argv=("true",), secrets=(native_secret,))
    lines = secret_lines(native, "the local launcher")
    script = "\n".join(lines)
    assert lines[0] == '# secret K <- file "x\\ntouch pwned" (the first set or readable when the job starts)'
    assert "\ntouch pwned" not in script.replace("'x\ntouch pwned'", "")
    syntax = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True, timeout=30)
    assert syntax.returncode == 0, syntax.stderr


# --- local: the script tries the sources in order when the job starts -------------------------------------------


def _run_local(native: NativeLaunch, run_dir: Path) -> tuple[RunStatus, str]:
    launcher = LocalLauncher()
    handle = launcher.submit(render_artifacts(launcher, native, {}), run_dir)
    output = "".join(launcher.logs(handle, run_dir, follow=True))
    return launcher.status(handle, run_dir), output


def test_local_job_falls_back_to_the_next_source_and_prefers_the_first(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_file = tmp_path / "dir with space" / "key"
    secret_file.parent.mkdir()
    secret_file.write_text(FILE_VALUE + "\n\n")
    sources = [{"k8s_secret": {"name": "s", "key": "k"}}, {"env": "SRC_KEY"}, {"file": str(secret_file)}]
    native = render_job(
        engine_registry, write_spec(workdir, secrets=[{"env": "STUB_SECRET", "from": sources}])
    )
    script = render_artifacts(LocalLauncher(), native, {}).files[SCRIPT]
    assert FILE_VALUE not in script

    monkeypatch.delenv("SRC_KEY", raising=False)  # the variable is not set: the file gives the value
    status, output = _run_local(native, tmp_path / "run-file")
    assert status.state == "SUCCEEDED", output
    assert stub_report(output)["secret_sha256"] == _sha(FILE_VALUE)  # trailing newlines dropped, as $(cat)

    monkeypatch.setenv("SRC_KEY", SENTINEL)  # set: the first source wins over the file
    status, output = _run_local(native, tmp_path / "run-env")
    assert status.state == "SUCCEEDED", output
    assert stub_report(output)["secret_sha256"] == _sha(SENTINEL)
    assert SENTINEL not in output and not list(workdir.rglob("pwned"))


def test_local_submit_refuses_when_no_source_can_be_read_and_the_script_would_too(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SRC_KEY", raising=False)
    sources = [{"env": "SRC_KEY"}, {"file": "missing.txt"}]
    native = render_job(
        engine_registry, write_spec(workdir, secrets=[{"env": "STUB_SECRET", "from": sources}])
    )
    artifacts = render_artifacts(LocalLauncher(), native, {})
    with pytest.raises(LaunchError) as info:
        LocalLauncher().submit(artifacts, tmp_path / "run")
    assert info.value.message == (
        "no source of these secrets can be read in this shell: STUB_SECRET ($SRC_KEY is not set; "
        'file "missing.txt": No such file or directory)'
    )
    assert not (tmp_path / "run").exists()
    # The script itself (as a Slurm node would run it) stops before the job, naming every source it tried.
    res = subprocess.run(
        ["bash", "-c", artifacts.files[SCRIPT]], capture_output=True, text=True, timeout=60, cwd=workdir
    )
    assert res.returncode == 1
    assert res.stderr.strip().endswith(
        "rladapt: no source of the secret STUB_SECRET can be read here: $SRC_KEY is not set; "
        'file "missing.txt" is not a readable file'
    )
    assert "STUB-REPORT" not in res.stdout


def test_slurm_submit_takes_a_file_source_on_trust_and_refuses_only_unset_variables(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SRC_KEY", raising=False)
    native = render_job(
        engine_registry, write_spec(workdir, secrets=[{"env": "API_KEY", "from": [{"env": "SRC_KEY"}]}])
    )
    with pytest.raises(LaunchError, match=r"API_KEY \(\$SRC_KEY is not set\)"):
        SlurmLauncher().submit(render_artifacts(SlurmLauncher(), native, {}), tmp_path / "run")
    assert not (tmp_path / "run").exists()
    on_nodes = render_job(
        engine_registry,
        write_spec(
            workdir, secrets=[{"env": "API_KEY", "from": [{"env": "SRC_KEY"}, {"file": "/on/nodes"}]}]
        ),
    )
    assert render_artifacts(SlurmLauncher(), on_nodes, {}).request["secrets"] == [
        {"env": "API_KEY", "sources": [{"env": "SRC_KEY"}, {"file": "/on/nodes"}]}
    ]


# --- ray: a file source keeps the value out of the job table -------------------------------------------------


def test_ray_file_source_renders_only_its_path_and_the_setup_hook(
    engine_registry: Registry, workdir: Path
) -> None:
    sources = [{"k8s_secret": {"name": "s", "key": "k"}}, {"file": "~/keys/$HOME.txt"}, {"env": "SRC_KEY"}]
    native = render_job(
        engine_registry, write_spec(workdir, secrets=[{"env": "STUB_SECRET", "from": sources}])
    )
    request = render_artifacts(RayLauncher(), native, {}).request
    env_vars = request["runtime_env"]["env_vars"]
    assert "$" not in env_vars[SECRET_FILES_ENV]  # Ray expands $VAR in env_vars: the path travels escaped
    assert json.loads(env_vars[SECRET_FILES_ENV]) == {"STUB_SECRET": "~/keys/$HOME.txt"}
    assert request["runtime_env"]["worker_process_setup_hook"] == WORKER_SETUP_HOOK
    assert "secret_env" not in request  # settled now: the env source after the file is never used on Ray
    assert request["notes"] == [
        'secret STUB_SECRET <- file "~/keys/$HOME.txt", read on each node by rladapt\'s bootstrap (driver) and '
        "worker setup hook (workers): the job table holds only the path"
    ]


def test_ray_note_warns_that_a_relative_secret_file_travels_with_the_working_directory(
    engine_registry: Registry, workdir: Path
) -> None:
    spec = write_spec(workdir, secrets=[{"env": "STUB_SECRET", "from": {"file": "keys/k"}}])
    (note,) = render_artifacts(RayLauncher(), render_job(engine_registry, spec), {}).request["notes"]
    assert note.endswith(
        "(relative to the job's working directory on the node; a file inside spec.runtime.working_dir is "
        "uploaded to the cluster with it)"
    )


def test_ray_submit_settles_env_sources_first_set_else_the_file(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rladapt.launchers import ray as ray_launcher

    sources = [{"env": "SRC_A"}, {"env": "SRC_B"}, {"file": "/run/key"}]
    native = render_job(
        engine_registry, write_spec(workdir, secrets=[{"env": "STUB_SECRET", "from": sources}])
    )
    request = render_artifacts(RayLauncher(), native, {}).request
    monkeypatch.delenv("SRC_A", raising=False)
    monkeypatch.setenv("SRC_B", SENTINEL)
    assert ray_launcher._settle_secrets(request["secret_env"]) == ({"STUB_SECRET": SENTINEL}, {})
    monkeypatch.delenv("SRC_B")
    assert ray_launcher._settle_secrets(request["secret_env"]) == ({}, {"STUB_SECRET": "/run/key"})
    only_env = {"STUB_SECRET": [{"env": "SRC_A"}, {"env": "SRC_B"}]}
    with pytest.raises(UsageError, match=r"not set in this shell: STUB_SECRET \(from \$SRC_A or \$SRC_B\)"):
        ray_launcher._settle_secrets(only_env)


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_ray_job_table_holds_no_value_of_a_file_secret_and_driver_and_workers_see_it(
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ray_head: dict[str, str],
) -> None:
    from ray.job_submission import JobSubmissionClient

    secret_file = tmp_path / "keys" / "api key"
    secret_file.parent.mkdir()
    secret_file.write_text(FILE_VALUE + "\n")
    monkeypatch.setenv("SRC_KEY", SENTINEL)  # listed after the file: Ray must not take it
    sources = [{"k8s_secret": {"name": "s", "key": "k"}}, {"file": str(secret_file)}, {"env": "SRC_KEY"}]
    spec = write_spec(workdir, env={"STUB_RAY_TASK": "1"}, secrets=[{"env": "STUB_SECRET", "from": sources}])
    native = render_job(engine_registry, spec)
    launcher = RayLauncher()
    run_id = new_run_id(native.job_name)
    artifacts = render_artifacts(launcher, native, {"address": ray_head["address"]}, run_id=run_id)
    handle = launcher.submit(artifacts, tmp_path / "run")
    output = "".join(launcher.logs(handle, tmp_path / "run", follow=True))
    assert launcher.status(handle, tmp_path / "run").state == "SUCCEEDED", output

    report = stub_report(output)
    assert report["secret_sha256"] == _sha(FILE_VALUE)  # the driver, through the bootstrap
    assert report["worker"]["secret_sha256"] == _sha(FILE_VALUE)  # a worker, through the setup hook
    client = JobSubmissionClient(ray_head["address"])
    info = client.get_job_info(run_id)
    listed = [job for job in client.list_jobs() if job.submission_id == run_id]
    table = json.dumps([info.dict(), *(job.dict() for job in listed)], default=str)
    assert str(secret_file) in table  # the reference is there ...
    for value in (FILE_VALUE, SENTINEL):  # ... and no value, neither the file's nor the unused variable's
        assert value not in table and value not in output


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_ray_job_fails_clearly_when_the_secret_file_is_missing_on_the_node(
    engine_registry: Registry, workdir: Path, tmp_path: Path, ray_head: dict[str, str]
) -> None:
    missing = tmp_path / "no-such-key"
    spec = write_spec(workdir, secrets=[{"env": "STUB_SECRET", "from": {"file": str(missing)}}])
    native = render_job(engine_registry, spec)
    launcher = RayLauncher()
    run_id = new_run_id(native.job_name)
    handle = launcher.submit(
        render_artifacts(launcher, native, {"address": ray_head["address"]}, run_id=run_id), tmp_path / "run"
    )
    output = "".join(launcher.logs(handle, tmp_path / "run", follow=True))
    status = launcher.status(handle, tmp_path / "run")
    assert status.state == "FAILED"
    assert "STUB-REPORT" not in output
    text = output + status.message
    assert f"cannot read the secret STUB_SECRET from {json.dumps(str(missing))}" in text, text


# --- the bootstrap reads secret files where it runs -------------------------------------------------------------


def test_bootstrap_sets_secret_files_and_refuses_an_unreadable_one(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"caf\xc3\xa9 \xff\n")
    program = "import os, sys; sys.stdout.buffer.write(os.environb[b'K'])"
    env = {**os.environ, SECRET_FILES_ENV: json.dumps({"K": str(key)})}
    argv = [sys.executable, "-m", "rladapt.bootstrap", "--", sys.executable, "-c", program]
    res = subprocess.run(argv, env=env, capture_output=True, timeout=60, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert res.stdout == b"caf\xc3\xa9 \xff"  # byte for byte, trailing newline dropped

    env[SECRET_FILES_ENV] = json.dumps({"K": str(tmp_path / "gone")})
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (
        f"rladapt.bootstrap: cannot read the secret K from {json.dumps(str(tmp_path / 'gone'))}: "
        "No such file or directory\n"
    )
