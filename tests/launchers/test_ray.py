"""The ray launcher against a real Ray head (started once per session by the ``ray_head`` fixture).

The job is the real verl adapter output with only the entrypoint replaced (no GPU): see conftest.py.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rladapt.bootstrap import FILES_ENV, LITERAL_ENV, PATCHES_ENV, WORKER_SETUP_HOOK, bootstrap_argv
from rladapt.launchers.ray import RayLauncher
from rladapt.plugins import Registry, RunStatus
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives.errors import LaunchError, UsageError
from rladapt.runs import RunStore, new_run_id
from tests.conftest import REPO

from .conftest import (
    EXAMPLE,
    HOSTILE,
    PATCH_HOOK,
    PROBE_FILE_TEXT,
    make_example_files,
    no_pwned,
    render_job,
    stub_report,
    wait_for,
    write_spec,
)
from .http_servers import stalling_dashboard

SECRET = "ray-s3cr3t $(touch pwned) $HOME ${HOME} 'q'\nline2"


# --- render: pure, no cluster needed -------------------------------------------------------------------------


def test_request_is_the_exact_submission_with_patches_files_and_no_secret_values(
    engine_registry: Registry, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRC_KEY", SECRET)
    spec = write_spec(workdir, secrets=[{"env": "API_KEY", "from": {"env": "SRC_KEY"}}])
    native = render_job(engine_registry, spec)
    request = render_artifacts(
        RayLauncher(), native, {"entrypoint_num_cpus": "0.5"}, run_id="launch-test-0a1b2c3d"
    ).request

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
    # The adapter's runtime_env (working_dir, excludes) is kept; the data files the job reads, which an exclude
    # (*.parquet) would drop, are shipped by negated excludes after it.
    kept = {k: v for k, v in native.runtime_env.items() if k not in ("env_vars", "excludes")}
    assert kept.items() <= runtime_env.items()
    assert runtime_env["excludes"] == [
        *native.runtime_env["excludes"],
        "!/data/gsm8k/train.parquet",
        "!/data/gsm8k/test.parquet",
    ]
    assert request["secret_env"] == {"API_KEY": [{"env": "SRC_KEY"}]}
    # The dry run says plainly that an env source travels by value into Ray's job table.
    (shipped,) = request["paths"]
    assert shipped.endswith("data/gsm8k/train.parquet, data/gsm8k/test.parquet")
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
        render_artifacts(RayLauncher(), native, {})
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
    assert run.record.message.startswith("submission failed: cannot reach the Ray cluster")


def test_no_address_anywhere_is_a_launch_error(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    launcher = RayLauncher()
    artifacts = render_artifacts(launcher, render_job(engine_registry, write_spec(workdir)), {})
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
    artifacts = render_artifacts(launcher, native, {}, run_id=run_id)
    handle = launcher.submit(artifacts, tmp_path)
    assert handle == {"address": ray_head["address"], "submission_id": run_id, "request_timeout": 30.0}

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
    assert (run.state, run.record.exit_code, run.launcher) == ("FAILED", 3, "ray")
    assert run.handle == {"address": ray_head["address"], "submission_id": run_id, "request_timeout": 30.0}
    assert (run.dir / "artifacts" / "request.json").is_file()


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_stop_a_running_job_and_stop_twice(
    engine_registry: Registry, workdir: Path, tmp_path: Path, ray_head: dict[str, str]
) -> None:
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "300"}))
    launcher = RayLauncher()
    artifacts = render_artifacts(
        launcher, native, {"address": ray_head["address"]}, run_id=new_run_id("stop-test")
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

    code = "import sys, rladapt.cli, rladapt.plugins as m; m.get_registry(); print('ray' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


# --- every request has a timeout -------------------------------------------------------------------------------


def test_a_dashboard_that_stalls_after_api_version_fails_launch_within_the_timeout(tmp_path: Path) -> None:
    """`rladapt launch` (a real subprocess, the real verl adapter) against a real HTTP server that answers
    /api/version and then never answers: exit 1 naming the address and the timeout, no traceback, and the run
    recorded as failed. Before every request had a timeout, launch hung here (the subprocess timeout fails it)."""
    make_example_files(tmp_path)
    with stalling_dashboard() as (seen, url):
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "rladapt.cli", "launch", "--framework", "verl", str(EXAMPLE), "-l", "ray",
             "-o", f"address={url}", "-o", "request_timeout=1.5"],
            capture_output=True, text=True, timeout=90, cwd=tmp_path, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        elapsed = time.monotonic() - started
        assert len(seen.requests) >= 2 and seen.requests[0] == ("GET", "/api/version")
    assert proc.returncode == 1, proc.stderr
    assert f"the Ray dashboard at {url} did not answer" in proc.stderr
    assert "within 1.5 s (the request_timeout option)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert elapsed < 60
    (run,) = RunStore().list()
    assert run.state == "FAILED" and "did not answer" in run.record.message


def test_status_logs_stop_and_find_time_out_on_a_stalled_dashboard(tmp_path: Path) -> None:
    launcher = RayLauncher()
    with stalling_dashboard() as (_, url):
        handle = {"address": url, "submission_id": "stalled-0a1b2c3d", "request_timeout": 0.5}
        calls = {
            "status": lambda: launcher.status(handle, tmp_path),
            "stop": lambda: launcher.stop(handle, tmp_path),
            "logs": lambda: list(launcher.logs(handle, tmp_path)),
            "find": lambda: launcher.find(handle, tmp_path),
        }
        for name, call in calls.items():
            with pytest.raises(LaunchError) as info:
                call()
            assert f"the Ray dashboard at {url} did not answer" in info.value.message, name
            assert "within 0.5 s" in info.value.message, name


def test_request_timeout_is_a_typed_option_recorded_in_the_request_and_intent(
    engine_registry: Registry, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "http://head.example:8265")
    native = render_job(engine_registry, write_spec(workdir))
    launcher = RayLauncher()
    default = render_artifacts(launcher, native, {}, run_id="t-0a1b2c3d")
    assert default.request["request_timeout"] == 30.0
    assert launcher.intent(default, "t-0a1b2c3d") == {
        "address": "http://head.example:8265",
        "submission_id": "t-0a1b2c3d",
        "request_timeout": 30.0,
    }
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(
            UsageError, match=rf"ray launcher option request_timeout='{bad}': expected a finite number"
        ):
            render_artifacts(launcher, native, {"request_timeout": bad})


# --- a submission cut short: the job is found by its submission id -------------------------------------------

#: Runs the CLI with the test plugin, and dies by SIGKILL right after Ray accepted the job (submit_job returned),
#: before rladapt saves the handle: what `kill -9` of `rladapt launch` at the worst moment leaves behind.
KILL_AFTER_SUBMIT = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from ray.job_submission import JobSubmissionClient
original = JobSubmissionClient.submit_job
def submit_then_die(self, *args, **kwargs):
    original(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
JobSubmissionClient.submit_job = submit_then_die
import rladapt.plugins as manager
from tests.launchers.conftest import EngineStubPlugin
registry = manager.load_registry(extra=[("engine-stub", EngineStubPlugin())])
manager.get_registry = lambda: registry
from rladapt.cli import main
main(sys.argv[2:])
"""


def _launch_killed_after_submit(spec: Path, address: str, cwd: Path) -> str:
    """`rladapt launch` killed by SIGKILL right after the submission; returns the run id it recorded."""
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_SUBMIT, str(REPO), "launch", "--framework", "verl", str(spec),
         "-l", "ray", "-o", f"address={address}"],
        capture_output=True, text=True, timeout=300, cwd=cwd, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    (run,) = RunStore().list()
    assert run.handle is None  # it died before it could save the handle
    return run.id


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_find_reaches_a_job_whose_submitter_was_killed_after_submit(
    workdir: Path, ray_head: dict[str, str]
) -> None:
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    run_id = _launch_killed_after_submit(spec, ray_head["address"], workdir)
    run = RunStore().get(run_id)
    launcher = RayLauncher()
    intent = launcher.intent(run.artifacts, run_id)
    assert intent["submission_id"] == run_id and intent["address"] == ray_head["address"]

    handle = launcher.find(intent, run.dir)
    assert handle == {"address": ray_head["address"], "submission_id": run_id, "request_timeout": 30.0}
    wait_for(lambda: launcher.status(handle, run.dir).state == "RUNNING", "the job to run", interval=1)
    stopped = launcher.stop(handle, run.dir)
    assert stopped.state == "STOPPED", stopped
    assert launcher.status(handle, run.dir).state == "STOPPED"
    # A submission id Ray never accepted: nothing runs under it, and find says so.
    assert launcher.find({**intent, "submission_id": f"{run_id}-never"}, run.dir) is None


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_cli_status_and_stop_reach_a_job_whose_submitter_was_killed_after_submit(
    workdir: Path, ray_head: dict[str, str]
) -> None:
    """End to end: `rladapt status` and `rladapt stop` of the half-submitted run find the job by its intent
    (needs the runner's part: the intent recorded before submit, find() called for a run without a handle)."""
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    run_id = _launch_killed_after_submit(spec, ray_head["address"], workdir)

    def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rladapt.cli", *args],
            capture_output=True, text=True, timeout=120, cwd=workdir, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    seen: list[str] = []

    def running() -> bool:
        status = rladapt("status", run_id)
        assert status.returncode == 0, status.stderr
        seen.append(status.stdout)
        # A terminal state will never become RUNNING: say what the job did instead of waiting out the deadline.
        assert not any(word in status.stdout for word in ("FAILED", "SUCCEEDED", "STOPPED")), status.stdout
        return "RUNNING" in status.stdout

    handle = {"address": ray_head["address"], "submission_id": run_id}
    try:
        # A loaded 2-core head can keep a job PENDING (runtime env set-up) for minutes; the deadline guards a hang.
        try:
            wait_for(running, "`rladapt status` to report the job running", timeout=400, interval=1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last status: {seen[-1:]!r}") from None
        stopped = rladapt("stop", run_id)
        assert stopped.returncode == 0 and "STOPPED" in stopped.stdout, (stopped.stdout, stopped.stderr)
        assert RayLauncher().status(handle, workdir).state == "STOPPED"
    finally:  # never leave the job running on the shared head, whatever failed above
        RayLauncher().stop(handle, workdir)
