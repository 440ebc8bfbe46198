"""The local launcher on this machine: real bash, real processes, the real verl adapter's output.

Only the framework entrypoint is replaced (no GPU): see ``EngineStubPlugin`` in conftest.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from rladapt.bootstrap import PATCHES_ENV, WORKER_SETUP_HOOK, bootstrap_argv
from rladapt.cli import main as cli_main
from rladapt.launchers.local import LOG_FILE, SCRIPT, LocalLauncher
from rladapt.plugins import NativeLaunch, Registry, RunStatus
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives.errors import LaunchError, UsageError
from rladapt.runs import RunStore

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

SECRET = "s3cr3t $(touch pwned) 'q'"
FILE_SECRET = "from-a-file `touch pwned`"


def run_to_end(native: NativeLaunch, run_dir: Path) -> tuple[RunStatus, str, dict[str, object]]:
    launcher = LocalLauncher()
    handle = launcher.submit(render_artifacts(launcher, native, {}), run_dir)
    output = "".join(launcher.logs(handle, run_dir, follow=True))
    return launcher.status(handle, run_dir), output, handle


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def invoke(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI in this process (so the test plugin's registry applies), with main()'s exit-code policy."""
    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_script_round_trips_every_argument_and_passes_bash_syntax_check(
    engine_registry: Registry, workdir: Path
) -> None:
    native = render_job(engine_registry, write_spec(workdir))
    script = render_artifacts(LocalLauncher(), native, {}).files[SCRIPT]
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    exec_line = next(line for line in script.splitlines() if line.startswith("exec "))
    # The exec line spans lines when an argument holds a newline: parse from it to the end of the script.
    tail = script[script.index(exec_line) :]
    assert shlex.split(tail)[1:] == bootstrap_argv(native)
    assert "--patch" in bootstrap_argv(native) and PATCH_HOOK in bootstrap_argv(native)


def test_script_hands_the_patches_to_the_ray_workers_of_the_job(
    engine_registry: Registry, workdir: Path
) -> None:
    # Before Launcher.command the local script only passed --patch to the bootstrap: the Ray workers that the
    # framework's own ray.init starts never ran the patch hook.
    native = render_job(engine_registry, write_spec(workdir))
    lines = render_artifacts(LocalLauncher(), native, {}).files[SCRIPT].splitlines()
    exports = dict(line[len("export ") :].split("=", 1) for line in lines if line.startswith("export "))
    assert shlex.split(exports[PATCHES_ENV]) == [",".join(native.runtime_patches)]
    job_config = json.loads(shlex.split(exports["RAY_JOB_CONFIG_JSON_ENV_VAR"])[0])
    assert job_config == {"runtime_env": {"worker_process_setup_hook": WORKER_SETUP_HOOK}}
    assert lines.index(f"export {PATCHES_ENV}={exports[PATCHES_ENV]}") < next(
        i for i, line in enumerate(lines) if line.startswith("exec ")
    )


@pytest.mark.engine
def test_ray_workers_of_a_local_job_run_the_patches(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # the job's ray.init starts its own local cluster
    # Ray >= 2.5x turns token auth on for a new ray.init cluster and leaves ~/.ray/auth_token behind, which then
    # turns it on for every later `ray start` of this user (the Ray tests' head among them).
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_RAY_TASK": "1"}))
    status, output, _ = run_to_end(native, tmp_path / "run")
    assert status.state == "SUCCEEDED", output
    worker = stub_report(output)["worker"]
    assert worker["patched"] is True
    assert PATCH_HOOK in str(worker["patch_list"]).split(",")


@pytest.mark.parametrize("framework", ["verl", "openrlhf"])
def test_job_runs_with_env_secrets_files_and_patches_and_nothing_hostile_executes(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(FILE_SECRET + "\n")
    spec = write_spec(
        workdir,
        env={"STUB_EXIT": "0"},
        secrets=[
            {"env": "API_KEY", "from": {"env": "SRC_KEY"}},
            {"env": "FILE_KEY", "from": {"file": str(secret_file)}},
        ],
        framework=framework,
    )
    monkeypatch.setenv("SRC_KEY", SECRET)
    native = render_job(engine_registry, spec, framework)
    assert native.framework == framework
    script = render_artifacts(LocalLauncher(), native, {}).files[SCRIPT]
    assert SECRET not in script and FILE_SECRET not in script  # secrets by reference only

    status, output, _ = run_to_end(native, tmp_path / "run")

    assert status == RunStatus("SUCCEEDED", 0, "")
    report = stub_report(output)
    assert report["argv"] == list(native.argv[2:])  # every adapter argument arrived verbatim
    assert report["hostile"] == HOSTILE
    assert report["api_key"] == SECRET
    assert report["file_key"] == FILE_SECRET
    assert report["patched_in_process"] is True
    assert report["probe_file"] == PROBE_FILE_TEXT
    assert report["pwned_in_cwd"] is False
    assert no_pwned(workdir, tmp_path) == []
    assert "STUB-EXIT 0" in output


def test_failing_job_reports_its_real_exit_code_through_the_cli(
    engine_registry: Registry, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(workdir, env={"STUB_EXIT": "3"})
    code, out, err = invoke("launch", "--framework", "verl", str(spec), "--follow", capsys=capsys)
    assert code == 1 and out, (out, err)  # a launch that failed before printing its run id says why in err
    run_id = out.splitlines()[0]
    assert "STUB-EXIT 3" in out
    assert f"run {run_id} ended FAILED (exit code 3)" in err
    record = RunStore().get(run_id).record.to_json()
    assert (record["state"], record["exit_code"], record["launcher"]) == ("FAILED", 3, "local")
    assert record["framework"] == "verl" and record["spec_hash"].startswith("sha256:")
    assert record["handle"]["pid"] > 0

    # The other verbs find the run from its record alone.
    code, out, _ = invoke("logs", run_id, capsys=capsys)
    assert code == 0 and "STUB-EXIT 3" in out and "STUB-REPORT" in out
    code, out, _ = invoke("status", capsys=capsys)  # no id: the latest run
    assert code == 0 and f"run:       {run_id}" in out and "state:     FAILED (exit code 3)" in out
    code, out, _ = invoke("runs", capsys=capsys)
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["RUN", "LAUNCHER", "FRAMEWORK", "STATE", "STARTS", "CREATED", "VALIDATION"]
    assert row.split()[:5] == [run_id, "local", "verl", record["version"], "FAILED"]
    code, out, _ = invoke("runs", "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["id"] == run_id


def test_missing_secret_sources_are_refused_at_submit_before_anything_starts(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SRC_KEY", raising=False)
    (workdir / "unreadable").mkdir()  # cat of a directory fails too
    spec = write_spec(
        workdir,
        secrets=[
            {"env": "API_KEY", "from": {"env": "SRC_KEY"}},
            {"env": "FILE_KEY", "from": {"file": "no-such-secret.txt"}},
            {"env": "DIR_KEY", "from": {"file": "unreadable"}},
        ],
    )
    launcher = LocalLauncher()
    artifacts = render_artifacts(launcher, render_job(engine_registry, spec), {})
    run_dir = tmp_path / "run"
    with pytest.raises(LaunchError) as caught:
        launcher.submit(artifacts, run_dir)
    assert caught.value.message == (
        "no source of these secrets can be read in this shell: API_KEY ($SRC_KEY is not set), "
        'FILE_KEY (file "no-such-secret.txt": No such file or directory), '
        'DIR_KEY (file "unreadable": Is a directory)'
    )
    assert not run_dir.exists()


def test_cli_launch_with_an_unset_secret_source_fails_and_starts_nothing(
    engine_registry: Registry,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SRC_KEY", raising=False)
    spec = write_spec(workdir, secrets=[{"env": "API_KEY", "from": {"env": "SRC_KEY"}}])
    code, _, err = invoke("launch", "--framework", "verl", str(spec), capsys=capsys)
    assert code == LaunchError.exit_code != 0
    assert "no source of these secrets can be read in this shell: API_KEY ($SRC_KEY is not set)" in err
    (run,) = RunStore().list()
    assert run.handle is None and not (run.dir / LOG_FILE).exists() and not (run.dir / SCRIPT).exists()


@pytest.fixture
def bare_python(tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real interpreter without rladapt: a fresh venv of this Python, without pip or the project."""
    monkeypatch.delenv("PYTHONPATH", raising=False)  # which could point at a source tree of rladapt
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=300)
    python = str(bare / "bin" / "python")
    alone = subprocess.run([python, "-c", "import rladapt"], cwd=workdir, capture_output=True, timeout=60)
    assert alone.returncode != 0, "the bare venv must not see rladapt for the tests using it to mean anything"
    return python


def test_interpreter_without_rladapt_is_refused_at_submit_with_the_fix(
    engine_registry: Registry, workdir: Path, tmp_path: Path, bare_python: str
) -> None:
    python = bare_python
    native = render_job(engine_registry, write_spec(workdir))
    launcher = LocalLauncher()
    run_dir = tmp_path / "run"

    without = native.model_copy(update={"argv": (python, *native.argv[1:])})
    with pytest.raises(LaunchError) as caught:
        launcher.submit(render_artifacts(launcher, without, {}), run_dir)
    message = caught.value.message
    assert f"the job's interpreter {python!r} cannot import rladapt" in message
    assert "No module named 'rladapt'" in message
    assert "install rladapt into that environment, or set spec.runtime.python" in message
    assert not run_dir.exists()

    missing = str(tmp_path / "nowhere" / "python3")
    gone = native.model_copy(update={"argv": (missing, *native.argv[1:])})
    with pytest.raises(LaunchError, match=rf"the job's interpreter {missing!r} was not found"):
        launcher.submit(render_artifacts(launcher, gone, {}), run_dir)
    assert not run_dir.exists()


def test_preflight_checks_the_interpreter_where_and_as_the_job_runs(
    engine_registry: Registry, workdir: Path, tmp_path: Path, bare_python: str
) -> None:
    """The check runs the job's own prelude: a relative interpreter and the job's env count, secrets do not."""
    (workdir / "python").symlink_to(bare_python)
    # The job's env makes rladapt and its dependencies importable to the bare interpreter, as PYTHONPATH may.
    import rladapt

    paths = [str(Path(rladapt.__file__).resolve().parents[1]), sysconfig.get_paths()["purelib"]]
    native = render_job(engine_registry, write_spec(workdir, env={"PYTHONPATH": os.pathsep.join(paths)}))
    native = native.model_copy(update={"argv": ("./python", *native.argv[1:])})
    launcher = LocalLauncher()
    artifacts = render_artifacts(launcher, native, {})
    assert artifacts.request["python"] == "./python"
    script = artifacts.files[SCRIPT]
    preflight = script.index("--rladapt-preflight")
    assert script.index("export PYTHONPATH=") < preflight < script.index("exec ./python -m rladapt.bootstrap")
    checked = subprocess.run(
        ["bash", "-c", script, SCRIPT, "--rladapt-preflight"], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stderr
    assert not (workdir / "rladapt-probe").exists()  # the preflight stops before the job's files

    without_env = render_job(engine_registry, write_spec(workdir))
    without_env = without_env.model_copy(update={"argv": ("./python", *without_env.argv[1:])})
    with pytest.raises(LaunchError, match="'./python' cannot import rladapt"):
        launcher.submit(render_artifacts(launcher, without_env, {}), tmp_path / "run")


@pytest.mark.parametrize("run_id", ["../../etc", "Upper", "a" * 64, "trailing-\n", "-dash"])
def test_run_id_option_must_be_a_dns_label(engine_registry: Registry, workdir: Path, run_id: str) -> None:
    native = render_job(engine_registry, write_spec(workdir))
    with pytest.raises(UsageError, match=r"local launcher: run_id=.*expected a run id, a DNS label"):
        render_artifacts(LocalLauncher(), native, {}, run_id=run_id)
    assert render_artifacts(LocalLauncher(), native, {}, run_id="job-0a1b2c3d").files[SCRIPT]


def test_kubernetes_secret_is_refused_at_render_time(engine_registry: Registry, workdir: Path) -> None:
    spec = write_spec(
        workdir, secrets=[{"env": "WANDB_API_KEY", "from": {"k8s_secret": {"name": "wandb", "key": "k"}}}]
    )
    native = render_job(engine_registry, spec)
    with pytest.raises(
        UsageError,
        match=r"secret WANDB_API_KEY: the local launcher can read none of its sources \(k8s_secret wandb/k\); "
        r"it reads a variable of the submitting shell",
    ):
        render_artifacts(LocalLauncher(), native, {})


def test_unknown_launcher_option_is_a_usage_error(engine_registry: Registry, workdir: Path) -> None:
    native = render_job(engine_registry, write_spec(workdir))
    with pytest.raises(UsageError, match="unknown local launcher option.*partition"):
        render_artifacts(LocalLauncher(), native, {"partition": "gpu"})


def test_dry_run_prints_the_rendered_script_byte_for_byte_and_records_nothing(
    engine_registry: Registry, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(workdir)
    code, out, _ = invoke("launch", "--framework", "verl", str(spec), "--dry-run", capsys=capsys)
    assert code == 0
    assert out == render_artifacts(LocalLauncher(), render_job(engine_registry, spec), {}).describe()
    assert RunStore().list() == []
    assert no_pwned(workdir) == []


def test_stop_ends_the_whole_group_status_works_from_another_process_and_stop_twice_is_fine(
    engine_registry: Registry, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    code, out, _ = invoke("launch", "--framework", "verl", str(spec), capsys=capsys)
    assert code == 0
    run_id = out.strip()
    run = RunStore().get(run_id[:-3])  # a unique prefix finds it too
    log = run.dir / LOG_FILE
    wait_for(lambda: "STUB-CHILD" in log.read_text(), "the stub to start its child")
    report = stub_report(log.read_text())
    child = int(log.read_text().split("STUB-CHILD ")[1].split()[0])
    assert run.handle is not None and report["pgid"] == run.handle["pgid"]

    # Another process, as from another shell session: it only has the run directory to go by.
    other = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "status", run_id], capture_output=True, text=True, timeout=120
    )
    assert other.returncode == 0, other.stderr
    assert "state:     RUNNING" in other.stdout

    code, out, _ = invoke("stop", run_id, capsys=capsys)
    assert code == 0
    assert out.startswith(f"run {run_id}: STOPPED")
    assert not _alive(int(report["pid"])) and not _alive(child)
    assert RunStore().get(run_id).state == "STOPPED"

    code, out, _ = invoke("stop", run_id, capsys=capsys)
    assert code == 0
    assert "already stopped; nothing to stop" in out
    assert RunStore().get(run_id).state == "STOPPED"


def test_job_killed_from_outside_is_failed_with_the_signal(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "300"}))
    launcher = LocalLauncher()
    run_dir = tmp_path / "run"
    handle = launcher.submit(render_artifacts(launcher, native, {}), run_dir)
    wait_for(lambda: "STUB-CHILD" in (run_dir / LOG_FILE).read_text(), "the stub to start")
    assert launcher.status(handle, run_dir).state == "RUNNING"
    os.kill(int(stub_report((run_dir / LOG_FILE).read_text())["pid"]), signal.SIGKILL)
    status = wait_for(lambda: (s := launcher.status(handle, run_dir)).terminal and s, "the run to end")
    assert status == RunStatus("FAILED", 137, "exited with code 137 (killed by SIGKILL)")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(int(handle["pgid"]), signal.SIGKILL)  # the stub's orphaned child


def test_status_logs_stop_of_unknown_run_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for verb in ("status", "logs", "stop"):
        code, _, err = invoke(verb, "no-such-run", capsys=capsys)
        assert code == 2
        assert "no run 'no-such-run'" in err


def test_runs_lists_the_current_state_of_local_runs_unasked(
    engine_registry: Registry, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(workdir, env={"STUB_EXIT": "0"})
    code, out, _ = invoke("launch", "--framework", "verl", str(spec), capsys=capsys)
    assert code == 0
    run = RunStore().get(out.splitlines()[0])
    deadline = time.monotonic() + 120
    while not LocalLauncher().status(run.handle or {}, run.dir).terminal:  # reads the job, not the record
        assert time.monotonic() < deadline, "the stub job did not end"
        time.sleep(0.2)
    assert RunStore().get(run.id).state not in {"SUCCEEDED", "FAILED"}  # the record has not been told yet
    code, out, _ = invoke("runs", capsys=capsys)  # no --refresh: local state is read without an engine
    assert code == 0 and out.splitlines()[1].split()[4] == "SUCCEEDED"
