"""Local runs whose submission was cut short: ``kill -9`` of rladapt, or ``rladapt stop`` while it submits.

Real processes throughout: ``rladapt launch`` runs as its own process (``launch_and_die``, which SIGKILLs itself
at a named moment), the job is the stub entrypoint under the real wrapper, and a slow preflight is a real
interpreter behind a shell script that sleeps first. ``status`` and ``stop`` then run as another shell would.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rladapt.cli import main as cli_main
from rladapt.launch import Runner
from rladapt.launchers.local import _WRAPPER, EXIT_FILE, LOG_FILE, PID_FILE, STOP_FILE, LocalLauncher
from rladapt.plugins import Artifacts, Launcher, Registry, hookimpl, load_registry
from rladapt.plugins.launcher import STOP_REQUEST_FILE
from rladapt.processes import alive, group_alive
from rladapt.runs import Run, RunStore
from tests.conftest import REPO

from .conftest import EngineStubPlugin, stub_report, wait_for, write_spec


def invoke(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def start_launch(spec: Path, cwd: Path, **env: str) -> subprocess.Popen[str]:
    """``rladapt launch`` with the test plugins, as a process of its own (see launch_and_die)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.launchers.launch_and_die", "launch", "--framework", "verl", str(spec)],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def the_run() -> Run:
    runs = RunStore().list()
    assert len(runs) == 1, runs
    return runs[0]


@pytest.fixture
def slow_python(tmp_path: Path) -> tuple[str, Path]:
    """A job interpreter that writes its pid to a file, sleeps 3 s, then is this Python: a slow preflight."""
    marks = tmp_path / "slow-python-pids"
    script = tmp_path / "slow" / "python3"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\necho $$ >> {marks}\nsleep 3\nexec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return str(script), marks


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """Process groups to kill at the end whatever happened (a failing test must not leave a job running)."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def test_kill_9_during_the_local_preflight_leaves_a_run_known_to_be_interrupted(
    engine_registry: Registry,
    workdir: Path,
    slow_python: tuple[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    python, marks = slow_python
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    launch = start_launch(spec, workdir, RLADAPT_TEST_PYTHON=python)
    wait_for(marks.exists, "the preflight to start")
    preflight = int(marks.read_text().split()[0])
    run = the_run()
    assert run.state == "SUBMITTING" and run.intent == {"pid_file": PID_FILE, "stop_grace": 15.0}
    launch.kill()
    assert launch.wait(timeout=60) == -signal.SIGKILL

    code, out, err = invoke("status", run.id, capsys=capsys)
    assert code == 0, err
    assert "state:     FAILED" in out
    assert "message:   the submission was interrupted before the job reached local" in out
    assert (run.dir / STOP_REQUEST_FILE).exists()  # a job about to start would see it and not start
    code, out, err = invoke("stop", run.id, capsys=capsys)
    assert (code, out) == (
        0,
        f"run {run.id}: FAILED - the submission was interrupted before the job reached local; nothing to stop\n",
    ), err

    # The orphaned preflight only checks the interpreter and ends; nothing started the job, nothing will.
    wait_for(lambda: not alive(preflight, None), "the orphaned preflight to end", timeout=60)
    assert not (run.dir / LOG_FILE).exists() and not (run.dir / PID_FILE).exists()
    assert marks.read_text().split() == [str(preflight)]  # the job's interpreter never ran again
    assert RunStore().get(run.id).state == "FAILED"


@pytest.mark.parametrize("moment", ["after-submit", "saving-handle"])
def test_kill_9_after_the_fork_or_while_the_handle_is_saved_is_found_by_the_pid_file(
    engine_registry: Registry,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    reap: list[int],
    moment: str,
) -> None:
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    launch = start_launch(spec, workdir, RLADAPT_TEST_DIE_AT=moment)
    assert launch.wait(timeout=120) == -signal.SIGKILL, launch.communicate()
    run = the_run()
    assert run.handle is None and run.state == "SUBMITTING"  # rladapt died before the handle was saved
    pid = int((run.dir / PID_FILE).read_text().split()[0])
    reap.append(pid)
    log = run.dir / LOG_FILE
    wait_for(lambda: "STUB-CHILD" in log.read_text(), "the job to start its child")
    child = int(log.read_text().split("STUB-CHILD ")[1].split()[0])

    code, out, err = invoke("status", run.id, capsys=capsys)
    assert code == 0, err
    assert "state:     RUNNING" in out and f"message:   pid {pid}" in out
    found = RunStore().get(run.id)
    assert found.handle is not None and (found.handle["pid"], found.handle["pgid"]) == (pid, pid)
    assert found.state == "RUNNING"  # the record is complete again
    code, out, _ = invoke("logs", run.id, capsys=capsys)
    assert code == 0 and stub_report(out)["pgid"] == pid

    code, out, err = invoke("stop", run.id, capsys=capsys)
    assert code == 0, err
    assert out.startswith(f"run {run.id}: STOPPED")
    assert not group_alive(pid) and not alive(child, None)
    assert RunStore().get(run.id).state == "STOPPED"


def test_stop_during_the_preflight_means_the_job_never_starts(
    engine_registry: Registry,
    workdir: Path,
    slow_python: tuple[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    python, marks = slow_python
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    launch = start_launch(spec, workdir, RLADAPT_TEST_PYTHON=python)
    wait_for(marks.exists, "the preflight to start")
    run = the_run()

    code, out, _ = invoke("status", run.id, capsys=capsys)
    assert code == 0 and "state:     PENDING" in out and f"being submitted by pid {launch.pid}" in out
    code, out, err = invoke("stop", run.id, capsys=capsys)
    assert code == 0, err
    assert out.startswith(f"run {run.id}: STOPPED - stop requested while pid {launch.pid}")
    assert "the submission will not start the job" in out

    stdout, stderr = launch.communicate(timeout=120)
    assert launch.returncode == 1, stderr
    assert stdout == ""  # no run id: nothing was submitted
    assert (
        f"error: run {run.id}: stopped by `rladapt stop` during its submission, before the job started"
        in stderr
    )
    assert "Traceback" not in stderr
    record = RunStore().get(run.id)
    assert record.state == "STOPPED" and record.handle is None
    time.sleep(1)  # a job started anyway would have written its pid file by now
    assert not (run.dir / PID_FILE).exists() and not (run.dir / LOG_FILE).exists()
    assert len(marks.read_text().split()) == 1  # only the preflight ran the job's interpreter


def test_the_wrapper_records_itself_first_and_refuses_to_start_after_a_stop_request(tmp_path: Path) -> None:
    """The last check, for a stop that comes after submit's own: the wrapper, seen by `find`, starts nothing."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = run_dir / "run.sh"
    script.write_text(f"touch {run_dir / 'job-ran'}\n")
    (run_dir / STOP_REQUEST_FILE).touch()
    files = [run_dir / name for name in (EXIT_FILE, PID_FILE, STOP_REQUEST_FILE, STOP_FILE)]
    done = subprocess.run(
        ["bash", "-c", _WRAPPER, "rladapt-local", str(script), *map(str, files)], timeout=60
    )
    assert done.returncode == 143
    assert not (run_dir / "job-ran").exists()
    pid, started = (run_dir / PID_FILE).read_text().split()
    assert int(pid) == int(pid) > 0 and int(started) > 0
    handle = LocalLauncher().find({"pid_file": PID_FILE}, run_dir)
    assert handle is not None and (handle["pid"], handle["start_time"]) == (int(pid), int(started))
    assert LocalLauncher().status(handle, run_dir).state == "STOPPED"
    assert not list(run_dir.glob("*.tmp"))


class StoppedDuringSubmit(LocalLauncher):
    """The local launcher, with a `rladapt stop` arriving right after the fork (the request made in-process)."""

    PLUGIN_NAME = "stopped-during-submit"

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, object]:
        handle = super().submit(artifacts, run_dir)
        (run_dir / STOP_REQUEST_FILE).touch()
        return handle


class _StoppedPlugin:
    @hookimpl
    def rladapt_register_launchers(self) -> list[Launcher]:
        return [StoppedDuringSubmit()]


def test_a_stop_request_that_comes_while_submit_runs_stops_the_job_at_once(
    workdir: Path, reap: list[int]
) -> None:
    registry = load_registry(extra=[("engine-stub", EngineStubPlugin()), ("stopped", _StoppedPlugin())])
    store = RunStore()
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    planned = Runner(registry, store).dryrun(
        spec, framework="verl", launcher="stopped-during-submit", options={"stop_grace": "5"}
    )
    with pytest.raises(Exception, match="was stopped by `rladapt stop` during its submission: STOPPED"):
        Runner(registry, store).schedule(planned)
    (run,) = store.list()
    assert run.handle is not None
    reap.append(int(run.handle["pgid"]))
    assert run.state == "STOPPED"
    assert not group_alive(int(run.handle["pgid"]))


def test_fake_enospc_while_saving_the_handle_is_a_clear_error_and_the_job_stays_reachable(
    engine_registry: Registry,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reap: list[int],
) -> None:
    """A fake full disk (os.replace raising ENOSPC for the record with the handle): a real one cannot be timed
    to fill up between the submission and the handle. The launch exits 1 without a traceback, leaves no temp
    file, and the record's intent still finds the job: status and stop work."""
    replace = os.replace

    def full_disk(src: str, dst: str) -> None:
        if str(dst).endswith("run.json") and '"handle": {' in Path(src).read_text(encoding="utf-8"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", full_disk)
    spec = write_spec(workdir, env={"STUB_SLEEP": "300"})
    code, out, err = invoke("launch", "--framework", "verl", str(spec), capsys=capsys)
    monkeypatch.setattr(os, "replace", replace)
    run = the_run()
    reap.append(
        int(
            wait_for((run.dir / PID_FILE).exists, "the wrapper")
            and (run.dir / PID_FILE).read_text().split()[0]
        )
    )
    assert (code, out) == (1, "")
    assert err.startswith(f"error: run {run.id} was submitted to local, but its handle could not be saved: ")
    assert "no space left on the device" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert run.state == "SUBMITTING" and run.handle is None
    assert not [p for p in run.dir.rglob("*") if p.name.endswith(".tmp")]

    code, out, err = invoke("status", run.id, capsys=capsys)
    assert code == 0 and "state:     RUNNING" in out, err
    code, out, err = invoke("stop", run.id, capsys=capsys)
    assert code == 0 and out.startswith(f"run {run.id}: STOPPED"), err
    assert RunStore().get(run.id).state == "STOPPED"
