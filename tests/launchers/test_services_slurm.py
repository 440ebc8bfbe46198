"""Service roles on Slurm: each a job step (``srun --overlap``) of the batch script beside the driver, on the real
single-node Slurm of ``.ci/slurm.sh`` (the ``slurm`` fixture of test_slurm.py), with a real small service."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rladapt.launchers.slurm import SCRIPT, SlurmLauncher
from rladapt.plugins import NativeLaunch, Registry, ServiceRole
from rladapt.primitives.errors import UsageError

from .conftest import HOSTILE, render_job, wait_for, write_spec
from .test_slurm import JOB_TIMEOUT, _output, _render, _wait_terminal, slurm, slurm_env  # noqa: F401 (the fixtures)

HERE = Path(__file__).resolve().parent
SERVICE = "service_heartbeat.py"


def _with_services(native: NativeLaunch, out: Path, *roles: tuple[str, dict[str, Any]]) -> NativeLaunch:
    services = tuple(
        ServiceRole(name=name, argv=(sys.executable, SERVICE, str(out), name), **fields)
        for name, fields in roles
    )
    return native.model_copy(update={"services": services})


def test_render_puts_each_service_in_a_step_before_the_driver(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = render_job(engine_registry, write_spec(workdir))
    native = _with_services(
        native,
        tmp_path,
        ("heart", {"cpus": 2, "memory": "2Gi", "env": {"X_ROLE": "a b"}}),
        ("drain", {"outlives_job": True}),
    )
    artifacts = _render(native, ray=False)
    script = artifacts.files[SCRIPT]
    heart = script.index("rladapt_service heart on-failure")
    assert heart < script.index("# --- the driver")
    step = script[heart : script.index("\n", script.index("\n", heart) + 1)]
    assert "srun --overlap --nodes=1 --ntasks=1 --cpus-per-task=2 --job-name=heart --mem=2G" in step
    assert "env 'X_ROLE=a b' srun" in step
    assert (
        "rladapt_service_stop+=($!)"
        in script.split("rladapt_service drain")[0].rsplit("\n", 3)[-1] + script[heart:]
    )
    drain_line = script[script.index("rladapt_service drain") :].split("\n")[2]
    assert drain_line == "rladapt_service_pids+=($!)"  # not stopped when the driver ends: waited for
    assert [s["name"] for s in artifacts.request["services"]] == ["heart", "drain"]


def test_a_service_memory_slurm_cannot_read_is_a_usage_error(
    engine_registry: Registry, workdir: Path
) -> None:
    native = _with_services(
        render_job(engine_registry, write_spec(workdir)), workdir, ("heart", {"memory": "lots"})
    )
    with pytest.raises(UsageError, match="services.heart.memory='lots'"):
        _render(native, ray=False)


@pytest.mark.engine
def test_services_run_as_steps_restart_stop_with_the_driver_or_outlive_it(
    slurm_env: dict[str, str],  # noqa: F811 (the fixture)
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
) -> None:
    shutil.copy(HERE / SERVICE, workdir / SERVICE)
    out = tmp_path / "out"
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "8"}))
    native = _with_services(
        native,
        out,
        ("heart", {"env": {"HEARTBEAT_FAIL_FIRST": "1", "SERVICE_ROLE_VAR": "slurm $(touch pwned)"}}),
        ("drain", {"outlives_job": True}),
    )
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, ray=False), run_dir)
    try:
        wait_for(lambda: (out / "heart.beat").exists(), "the restarted service to beat", timeout=JOB_TIMEOUT)
        states = {s.name: s for s in launcher.services(handle, run_dir)}
        assert states["heart"].state == "RUNNING" and states["heart"].restarts == 1, states
        assert states["heart"].unit == f"Slurm job {handle['job_id']} step heart"
        env = json.loads((out / "heart.env.json").read_text())
        assert env["HOSTILE"] == HOSTILE and env["SERVICE_ROLE_VAR"] == "slurm $(touch pwned)"
        steps = subprocess.run(
            ["squeue", "-h", "-s", "-j", handle["job_id"], "-o", "%j"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert "heart" in steps and "drain" in steps, steps
        # the driver ends: heart is stopped, drain keeps the job until it has finished its work
        wait_for(
            lambda: {s.name: s.state for s in launcher.services(handle, run_dir)}["heart"] == "STOPPED",
            "heart to be stopped when the driver ends",
            timeout=JOB_TIMEOUT,
        )
        assert "rladapt: the driver exited with 0" in _output(handle)
        assert launcher.status(handle, run_dir).state == "RUNNING"
        (out / "drain.done").write_text("")
        status = _wait_terminal(launcher, handle, run_dir)
        assert status.state == "SUCCEEDED", _output(handle)
        states = {s.name: s for s in launcher.services(handle, run_dir)}
        assert states["drain"].state == "SUCCEEDED" and states["heart"].state == "STOPPED"
        log = (run_dir / "services" / "heart.log").read_text()
        assert "service heart start 1" in log and "restart 1" in log
        assert not list(workdir.rglob("pwned"))
    finally:
        launcher.stop(handle, run_dir)


@pytest.mark.engine
def test_stop_cancels_the_job_and_its_service_steps(
    slurm_env: dict[str, str],  # noqa: F811 (the fixture)
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
) -> None:
    shutil.copy(HERE / SERVICE, workdir / SERVICE)
    out = tmp_path / "out"
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "600"}))
    native = _with_services(native, out, ("drain", {"outlives_job": True}))
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, ray=False), run_dir)
    wait_for(lambda: (out / "drain.beat").exists(), "the service to beat", timeout=JOB_TIMEOUT)
    stopped = launcher.stop(handle, run_dir)
    assert stopped.state == "STOPPED", stopped
    drain = wait_for(
        lambda: (s := launcher.services(handle, run_dir)[0]).state == "STOPPED" and s, "drain to be stopped"
    )
    assert drain.name == "drain"
    pid = int((out / "drain.starts").read_text().split()[0])
    wait_for(
        lambda: (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]
        ),
        "the service process to end",
        timeout=90,
    )
