"""The ray launcher against a real Ray head (started once per session by the ``ray_head`` fixture).

The job is the real verl adapter output with only the entrypoint replaced (no GPU): see conftest.py.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from rladapt.bootstrap import FILES_ENV, LITERAL_ENV, PATCHES_ENV, WORKER_SETUP_HOOK, bootstrap_argv
from rladapt.launchers.ray import RayLauncher
from rladapt.plugins import RunStatus
from rladapt.plugins._manager import Registry
from rladapt.primitives.errors import LaunchError, UsageError
from rladapt.runs import RUN_ID_OPTION, RunStore, new_run_id

from .conftest import (
    HOSTILE,
    PATCH_HOOK,
    PROBE_FILE_TEXT,
    no_pwned,
    render_job,
    stub_report,
    wait_for,
    write_spec,
)

SECRET = "ray-s3cr3t $(touch pwned) $HOME ${HOME} 'q'\nline2"


# --- render: pure, no cluster needed -------------------------------------------------------------------------


def test_request_is_the_exact_submission_with_patches_files_and_no_secret_values(
    engine_registry: Registry, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRC_KEY", SECRET)
    spec = write_spec(workdir, secrets=[{"env": "API_KEY", "from": {"env": "SRC_KEY"}}])
    native = render_job(engine_registry, spec)
    request = (
        RayLauncher()
        .render(native, {RUN_ID_OPTION: "launch-test-0a1b2c3d", "entrypoint_num_cpus": "0.5"})
        .request
    )

    assert shlex.split(request["entrypoint"]) == bootstrap_argv(native)
    assert request["submission_id"] == "launch-test-0a1b2c3d"
    assert request["metadata"]["rladapt.run_id"] == "launch-test-0a1b2c3d"
    assert request["metadata"]["rladapt.framework"] == "verl"
    assert request["entrypoint_num_cpus"] == 0.5
    runtime_env = request["runtime_env"]
    assert runtime_env["worker_process_setup_hook"] == WORKER_SETUP_HOOK
    assert runtime_env["env_vars"][PATCHES_ENV] == ",".join(native.runtime_patches)
    assert native.runtime_patches[-1] == PATCH_HOOK  # verl's own runtime patch first, then the test's
    # Ray runs os.path.expandvars over env_vars: a value holding '$' travels JSON-escaped, for the bootstrap.
    assert "HOSTILE" not in runtime_env["env_vars"]
    assert "$" not in runtime_env["env_vars"][LITERAL_ENV]
    assert json.loads(runtime_env["env_vars"][LITERAL_ENV]) == {"HOSTILE": HOSTILE}
    assert "$" not in runtime_env["env_vars"][FILES_ENV]
    assert json.loads(runtime_env["env_vars"][FILES_ENV]) == {"rladapt-probe/config.yaml": PROBE_FILE_TEXT}
    # The adapter's runtime_env (working_dir, excludes) is kept.
    assert {k: v for k, v in native.runtime_env.items() if k != "env_vars"}.items() <= runtime_env.items()
    assert request["secret_env"] == {"API_KEY": [{"env": "SRC_KEY"}]}
    # The dry run says plainly that an env source travels by value into Ray's job table.
    (note,) = request["notes"]
    assert note.startswith("secret API_KEY <- $SRC_KEY of the submitting shell (the first set), BY VALUE")
    assert "Ray's job table stores it" in note and "`file` source" in note
    assert SECRET not in json.dumps(request)
    assert "address" not in request  # taken from $RAY_ADDRESS at submit time


def test_a_secret_with_only_kubernetes_sources_is_refused_naming_them_and_what_ray_reads(
    engine_registry: Registry, workdir: Path
) -> None:
    source = {"k8s_secret": {"name": "wandb", "key": "k"}}
    native = render_job(engine_registry, write_spec(workdir, secrets=[{"env": "API_KEY", "from": source}]))
    with pytest.raises(UsageError) as refused:
        RayLauncher().render(native, {})
    assert refused.value.message == (
        "secret API_KEY: the ray launcher can read none of its sources (k8s_secret wandb/k); it reads a variable "
        "of the submitting shell (`from: {env: VAR}`) or a file (`from: {file: PATH}`): add one to "
        "spec.secrets[].from, a list of sources tried in order"
    )


def test_unreachable_cluster_is_a_launch_error_and_the_run_record_says_so(
    engine_registry: Registry, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rladapt.cli import main as cli_main

    spec = write_spec(workdir)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli_main(
            [
                "launch",
                "--framework",
                "verl",
                str(spec),
                "--launcher",
                "ray",
                "-o",
                "address=http://127.0.0.1:9",
            ]
        )
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert "cannot reach the Ray cluster at http://127.0.0.1:9" in err
    assert "Traceback" not in err
    (run,) = RunStore().list()
    assert run.state == "FAILED" and run.handle is None
    assert run.record["message"].startswith("submission failed: cannot reach the Ray cluster")


def test_no_address_anywhere_is_a_launch_error(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    launcher = RayLauncher()
    artifacts = launcher.render(render_job(engine_registry, write_spec(workdir)), {})
    with pytest.raises(LaunchError, match="no Ray cluster address: pass --launcher-opt address="):
        launcher.submit(artifacts, tmp_path)


# --- against the real head -----------------------------------------------------------------------------------


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_job_succeeds_on_ray_with_env_secret_files_and_patches_in_driver_and_workers(
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ray_head: dict[str, str],
) -> None:
    monkeypatch.setenv("SRC_KEY", SECRET)
    monkeypatch.setenv("RAY_ADDRESS", ray_head["address"])  # the address comes from the environment here
    spec = write_spec(
        workdir, env={"STUB_RAY_TASK": "1"}, secrets=[{"env": "API_KEY", "from": {"env": "SRC_KEY"}}]
    )
    native = render_job(engine_registry, spec)
    launcher = RayLauncher()
    run_id = new_run_id(native.job_name)
    artifacts = launcher.render(native, {RUN_ID_OPTION: run_id})
    handle = launcher.submit(artifacts, tmp_path)
    assert handle == {"address": ray_head["address"], "submission_id": run_id}

    output = "".join(launcher.logs(handle, tmp_path, follow=True))
    assert launcher.status(handle, tmp_path) == RunStatus("SUCCEEDED", 0, "Job finished successfully.")
    report = stub_report(output)
    assert report["argv"] == list(native.argv[2:])
    assert report["hostile"] == HOSTILE
    assert report["api_key"] == SECRET
    assert report["patched_in_process"] is True
    assert report["probe_file"] == PROBE_FILE_TEXT
    assert report["pwned_in_cwd"] is False
    # A Ray worker started by the job ran the patch through worker_process_setup_hook.
    assert report["worker"]["patched"] is True
    assert report["worker"]["patch_list"].split(",")[-1] == PATCH_HOOK
    assert report["worker"]["hostile"] == HOSTILE
    assert no_pwned(workdir, tmp_path) == []

    # The same submission id again: Ray refuses, and says so.
    with pytest.raises(LaunchError) as refused:
        launcher.submit(artifacts, tmp_path)
    assert refused.value.message == (
        f"the Ray cluster at {ray_head['address']} refused the job: Job with submission_id {run_id} already "
        f"exists. Please use a different submission_id."
    )
    # Stopping a finished job changes nothing.
    assert launcher.stop(handle, tmp_path) == RunStatus("SUCCEEDED", 0, "already finished; nothing to stop")


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_failing_job_reports_its_exit_code_through_the_cli(
    engine_registry: Registry, workdir: Path, ray_head: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from rladapt.cli import main as cli_main

    spec = write_spec(workdir, env={"STUB_EXIT": "3"})
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli_main(
            ["launch", "--framework", "verl", str(spec), "-l", "ray", "-o", f"address={ray_head['address']}",
             "--follow"]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert exit_info.value.code == 1
    run_id = out.splitlines()[0]
    assert "STUB-EXIT 3" in out
    assert f"run {run_id} ended FAILED (exit code 3)" in err
    run = RunStore().get(run_id)
    assert (run.state, run.record["exit_code"], run.launcher) == ("FAILED", 3, "ray")
    assert run.handle == {"address": ray_head["address"], "submission_id": run_id}
    assert (run.dir / "artifacts" / "request.json").is_file()


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_stop_a_running_job_and_stop_twice(
    engine_registry: Registry, workdir: Path, tmp_path: Path, ray_head: dict[str, str]
) -> None:
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "300"}))
    launcher = RayLauncher()
    artifacts = launcher.render(
        native, {"address": ray_head["address"], RUN_ID_OPTION: new_run_id("stop-test")}
    )
    handle = launcher.submit(artifacts, tmp_path)
    wait_for(
        lambda: "STUB-CHILD" in "".join(launcher.logs(handle, tmp_path)), "the stub to start", interval=1
    )
    assert launcher.status(handle, tmp_path).state == "RUNNING"

    stopped = launcher.stop(handle, tmp_path)
    assert stopped.state == "STOPPED"
    again = launcher.stop(handle, tmp_path)
    assert again.state == "STOPPED" and again.message == "already stopped; nothing to stop"


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_status_of_a_job_ray_does_not_know_is_unknown(tmp_path: Path, ray_head: dict[str, str]) -> None:
    status = RayLauncher().status(
        {"address": ray_head["address"], "submission_id": "never-submitted"}, tmp_path
    )
    assert status.state == "UNKNOWN" and "never-submitted" in status.message


def test_ray_is_not_imported_when_the_cli_starts() -> None:
    import subprocess

    code = "import sys, rladapt.cli, rladapt.plugins._manager as m; m.get_registry(); print('ray' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"
