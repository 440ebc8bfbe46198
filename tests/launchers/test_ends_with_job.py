"""The wrapper of a service role that ends with the training job (``python -m rladapt.launchers.ends_with_job``),
for real on local processes: the job is the real bootstrap holding its checkpoint directory (``owner_job``), the
role a real small service (``service_heartbeat.py``). The role ends once the job has ended, by itself, without
anybody looking at the run; a role that fails is the wrapper's failure; a stop reaches the role."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rladapt.launchers.ends_with_job import MODULE, wrap
from rladapt.processes import group_alive

from .owner_job import CHECKPOINT_DIR, end_job, job_env, start_job

HERE = Path(__file__).resolve().parent
SERVICE = str(HERE / "service_heartbeat.py")


def _wrapped(cwd: Path, out: Path, *, name: str = "serve", **env: str) -> subprocess.Popen[str]:
    argv = wrap(sys.executable, CHECKPOINT_DIR, (sys.executable, SERVICE, str(out), name))
    return subprocess.Popen(
        [*argv[:3], "--poll", "0.1", "--grace", "10", *argv[3:]],
        cwd=cwd, env={**job_env(), **env}, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"{path.name} did not appear"
        time.sleep(0.05)


def _role_pgid(out: Path, name: str = "serve") -> int:
    return int((out / f"{name}.starts").read_text().splitlines()[-1].split()[1])


def test_the_role_ends_by_itself_once_the_job_has_ended(tmp_path: Path) -> None:
    out, go = tmp_path / "out", tmp_path / "go"
    job = start_job(tmp_path, go)
    wrapper = _wrapped(tmp_path, out)
    try:
        _wait_for(out / "serve.beat", wrapper)
        pgid = _role_pgid(out)
        assert pgid != os.getpgid(wrapper.pid)  # its own group: stopping it reaches what it started
        assert wrapper.poll() is None  # the job runs: so does the role
        assert end_job(job, tmp_path, go) == 0
        _, err = wrapper.communicate(timeout=120)
    finally:
        for proc in (job, wrapper):
            if proc.poll() is None:
                proc.kill()
    assert wrapper.returncode == 0, err
    assert "the training job of run tiny-0a1b2c3d has ended: stopping" in err, err
    assert not group_alive(pgid)
    assert not (out / "serve.done").exists()  # stopped, not finished by itself

    # started again after the end (a restart loop around it): the role is not started at all
    again = _wrapped(tmp_path, out)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "is not started" in err, err
    assert len((out / "serve.starts").read_text().splitlines()) == 1


def test_an_end_of_another_attempt_is_not_this_jobs_end(tmp_path: Path) -> None:
    """The owner file of the run's previous attempt (before a resume's job took the directory) says ended: the
    role of the new attempt runs on."""
    out, go = tmp_path / "out", tmp_path / "go"
    end_job(start_job(tmp_path, go, attempt="tiny-0a1b2c3d-a1"), tmp_path, go)
    wrapper = _wrapped(tmp_path, out, RLADAPT_RUN_ATTEMPT="tiny-0a1b2c3d-a2")
    try:
        _wait_for(out / "serve.beat", wrapper)
        (out / "serve.done").touch()  # the role ends by itself: its exit is the wrapper's
        _, err = wrapper.communicate(timeout=120)
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
    assert wrapper.returncode == 0 and "has ended" not in err, err


def test_a_failing_role_is_the_wrappers_failure_and_a_stop_reaches_the_role(tmp_path: Path) -> None:
    out, go = tmp_path / "out", tmp_path / "go"
    job = start_job(tmp_path, go)
    try:
        failing = _wrapped(tmp_path, out, name="fail", HEARTBEAT_FAIL_FIRST="1")
        failing.communicate(timeout=120)
        assert failing.returncode == 3  # a restart loop around it starts it again

        wrapper = _wrapped(tmp_path, out)
        _wait_for(out / "serve.beat", wrapper)
        pgid = _role_pgid(out)
        wrapper.send_signal(signal.SIGTERM)
        wrapper.communicate(timeout=120)
        assert (
            wrapper.returncode == 128 + signal.SIGTERM
        )  # the role's own end: killed by the forwarded SIGTERM
        assert not group_alive(pgid)
    finally:
        end_job(job, tmp_path, go)


def test_usage() -> None:
    result = subprocess.run([sys.executable, "-m", MODULE, "ck"], capture_output=True, text=True, check=False)
    assert (
        result.returncode == 2 and "no command after --" in result.stderr and "Traceback" not in result.stderr
    )
