"""Service roles on the local launcher: real bash, real processes, a real small service (service_heartbeat.py).

Each role runs as its own process group under a supervisor that lives on the job's detached side; a role that
fails is started again while the job runs, stopped when the job ends unless it outlives the job, and ``stop``
ends them all. The job is the real verl adapter's output with the stub entrypoint (conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from rladapt.launchers.local import SCRIPT, LocalLauncher
from rladapt.launchers.supervise import STATE_FILE, log_name, script_name
from rladapt.plugins import NativeLaunch, Registry, ServiceRole, ServiceStatus, hookimpl, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import RLJob
from rladapt.primitives.errors import UsageError
from rladapt.runs import RunStore

from .conftest import HOSTILE, EngineStubPlugin, render_job, wait_for, write_spec
from .test_local import _alive, invoke

HERE = Path(__file__).resolve().parent
SERVICE = "service_heartbeat.py"


def with_services(native: NativeLaunch, out: Path, *roles: tuple[str, dict[str, object]]) -> NativeLaunch:
    services = tuple(
        ServiceRole(name=name, argv=(sys.executable, SERVICE, str(out), name), **fields)
        for name, fields in roles
    )
    return native.model_copy(update={"services": services})


def starts(out: Path, name: str) -> list[tuple[int, int]]:
    path = out / f"{name}.starts"
    if not path.exists():
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in path.read_text().splitlines())]


def by_name(launcher: LocalLauncher, handle: dict[str, Any], run_dir: Path) -> dict[str, ServiceStatus]:
    return {s.name: s for s in launcher.services(handle, run_dir)}


@pytest.fixture
def service_dir(workdir: Path, tmp_path: Path) -> Path:
    shutil.copy(HERE / SERVICE, workdir / SERVICE)
    return tmp_path / "out"


def test_service_restarts_on_failure_runs_apart_with_the_job_env_and_stop_ends_it(
    engine_registry: Registry, workdir: Path, service_dir: Path, tmp_path: Path
) -> None:
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "300"}))
    native = with_services(
        native,
        service_dir,
        ("heart", {"env": {"HEARTBEAT_FAIL_FIRST": "1", "SERVICE_ROLE_VAR": "role's $(touch pwned)"}}),
    )
    launcher = LocalLauncher()
    artifacts = render_artifacts(launcher, native, {})
    assert script_name("heart") in artifacts.files and artifacts.request["services"][0]["name"] == "heart"
    run_dir = tmp_path / "run"
    handle = launcher.submit(artifacts, run_dir)
    try:
        # the first start exits 3; the supervisor starts it again and it beats
        wait_for(lambda: (service_dir / "heart.beat").exists(), "the restarted service to beat")
        assert len(starts(service_dir, "heart")) == 2
        heart = wait_for(
            lambda: (s := by_name(launcher, handle, run_dir)["heart"]).state == "RUNNING" and s, ""
        )
        assert heart.restarts == 1
        env = json.loads((service_dir / "heart.env.json").read_text())
        assert env == {"HOSTILE": HOSTILE, "SERVICE_ROLE_VAR": "role's $(touch pwned)", "STUB_SLEEP": "300"}
        pid, pgid = starts(service_dir, "heart")[-1]
        assert pgid == pid and pgid != handle["pgid"]  # its own process group, not the job's
        log = (run_dir / log_name("heart")).read_text()
        assert "service heart start 1" in log and "restart 1 of service heart" in log
        assert launcher.status(handle, run_dir).state == "RUNNING"

        result = launcher.stop(handle, run_dir)
        assert result.state == "STOPPED"
        assert not _alive(pid)
        heart = by_name(launcher, handle, run_dir)["heart"]
        assert heart.state == "STOPPED"
        assert not list(workdir.rglob("pwned"))
    finally:
        for p, _ in starts(service_dir, "heart"):
            if _alive(p):
                os.killpg(p, signal.SIGKILL)


def test_job_end_stops_its_services_and_leaves_one_that_outlives_it_to_finish(
    engine_registry: Registry, workdir: Path, service_dir: Path, tmp_path: Path
) -> None:
    native = render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "3"}))
    native = with_services(native, service_dir, ("beside", {}), ("drain", {"outlives_job": True}))
    launcher = LocalLauncher()
    run_dir = tmp_path / "run"
    handle = launcher.submit(render_artifacts(launcher, native, {}), run_dir)
    try:
        wait_for(lambda: launcher.status(handle, run_dir).terminal, "the job to end")
        assert launcher.status(handle, run_dir).state == "SUCCEEDED"
        beside = wait_for(
            lambda: (s := by_name(launcher, handle, run_dir)["beside"]).state == "STOPPED" and s,
            "beside to stop",
        )
        assert beside.message == "the job ended"
        assert not _alive(starts(service_dir, "beside")[0][0])
        drain = by_name(launcher, handle, run_dir)["drain"]
        assert drain.state == "RUNNING"
        (service_dir / "drain.done").write_text("")
        drain = wait_for(
            lambda: (s := by_name(launcher, handle, run_dir)["drain"]).terminal and s, "drain to finish"
        )
        assert drain.state == "SUCCEEDED" and drain.restarts == 0
    finally:
        for name in ("beside", "drain"):
            for p, _ in starts(service_dir, name):
                if _alive(p):
                    os.killpg(p, signal.SIGKILL)


class AddService:
    """Test-only plugin: the launch gets one service role that outlives the job (no spec field asks for one yet)."""

    def __init__(self, out: Path) -> None:
        self.out = out

    @hookimpl
    def rladapt_modify_native(self, native: NativeLaunch, job: RLJob) -> NativeLaunch:
        return with_services(native, self.out, ("drain", {"outlives_job": True}))


def test_cli_status_shows_each_service_and_stop_ends_one_that_outlived_the_job(
    workdir: Path, service_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = load_registry(
        extra=[("engine-stub", EngineStubPlugin()), ("add-service", AddService(service_dir))]
    )
    import rladapt.plugins

    monkeypatch.setattr(rladapt.plugins, "get_registry", lambda: registry)
    spec = write_spec(workdir, env={"STUB_SLEEP": "1"})
    code, out, _ = invoke("launch", "--framework", "verl", str(spec), capsys=capsys)
    assert code == 0, out
    run_id = out.strip()
    run = RunStore().get(run_id)
    wait_for(lambda: (service_dir / "drain.beat").exists(), "the service to beat")
    wait_for(lambda: (run.dir / "exit_code").exists(), "the job to end")
    code, out, _ = invoke("status", run_id, capsys=capsys)
    assert code == 0
    assert "state:     SUCCEEDED" in out
    pid = starts(service_dir, "drain")[0][0]
    assert f"service:   drain RUNNING (pid {pid})" in out

    code, out, _ = invoke("stop", run_id, capsys=capsys)
    assert code == 0
    assert "its services are stopped" in out and "service drain STOPPED" in out
    assert not _alive(pid)
    assert [s.state for s in RunStore().get(run_id).record.services] == ["STOPPED"]

    code, out, _ = invoke("status", run_id, "--format", "json", capsys=capsys)
    assert json.loads(out)["services"][0]["name"] == "drain"


def test_two_services_of_one_name_are_refused_at_render(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = render_job(engine_registry, write_spec(workdir))
    native = with_services(native, tmp_path, ("twin", {}), ("twin", {}))
    with pytest.raises(UsageError, match="two service roles are named 'twin'"):
        render_artifacts(LocalLauncher(), native, {})


def test_a_job_without_services_renders_as_before(engine_registry: Registry, workdir: Path) -> None:
    artifacts = render_artifacts(LocalLauncher(), render_job(engine_registry, write_spec(workdir)), {})
    assert list(artifacts.files) == [SCRIPT] and "services" not in artifacts.request
    assert STATE_FILE == "state.json"


def test_a_record_written_before_service_roles_reads_with_none() -> None:
    from rladapt.runs import read_record
    from tests.conftest import REPO

    record = read_record(REPO / "tests" / "fixtures" / "run_record_format1" / "launch-test-e330dac8")
    assert record.services == () and "services" not in record.to_json()


def test_render_explain_and_the_dry_run_show_the_services(
    workdir: Path, service_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = load_registry(
        extra=[("engine-stub", EngineStubPlugin()), ("add-service", AddService(service_dir))]
    )
    import rladapt.plugins

    monkeypatch.setattr(rladapt.plugins, "get_registry", lambda: registry)
    spec = str(write_spec(workdir))
    code, out, err = invoke("render", "--framework", "verl", spec, "--explain", capsys=capsys)
    assert code == 0, err
    assert (
        f"# service drain: {sys.executable} {SERVICE} {service_dir} drain (1 CPU, restart on-failure, " in out
    )
    assert out.rstrip().endswith("outlives the job)")
    code, out, err = invoke(
        "render", "--framework", "verl", spec, "--explain", "--format", "json", capsys=capsys
    )
    assert code == 0, err
    assert [s["name"] for s in json.loads(out)["services"]] == ["drain"]
    code, out, err = invoke("render", "--framework", "verl", spec, "--format", "json", capsys=capsys)
    assert code == 0, err
    assert json.loads(out)["services"][0]["outlives_job"] is True
    code, out, err = invoke("launch", "--framework", "verl", spec, "--dry-run", capsys=capsys)
    assert code == 0, err
    assert f"--- {script_name('drain')} ---" in out and f"exec {sys.executable} {SERVICE}" in out
