"""Service roles on Ray: each its own Ray job beside the driver's (same runtime_env and working_dir, the role's
resources as the entrypoint's), on the real Ray head of the ``ray_head`` fixture, with a real small service."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from rladapt.launchers.ray import RayLauncher
from rladapt.plugins import NativeLaunch, Registry, ServiceRole, ServiceStatus
from rladapt.plugins.job import run_env
from rladapt.plugins.launcher import render_artifacts
from rladapt.runs import new_run_id
from rladapt.runs.owner import HEARTBEAT_ENV

from .conftest import HOSTILE, render_job, wait_for, write_spec

HERE = Path(__file__).resolve().parent
SERVICE = "service_heartbeat.py"


def _with_services(native: NativeLaunch, out: Path) -> NativeLaunch:
    argv = (sys.executable, SERVICE, str(out))
    return native.model_copy(
        update={
            "services": (
                ServiceRole(
                    name="heart",
                    argv=(*argv, "heart"),
                    env={"HEARTBEAT_FAIL_FIRST": "1", "SERVICE_ROLE_VAR": "ray $(touch pwned)"},
                    memory="64Mi",
                ),
                ServiceRole(name="drain", argv=(*argv, "drain"), outlives_job=True, restart="never"),
            )
        }
    )


def test_each_service_is_its_own_job_request_with_the_jobs_runtime_env_and_its_resources(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _with_services(render_job(engine_registry, write_spec(workdir)), tmp_path)
    request = render_artifacts(
        RayLauncher(), native, {"entrypoint_num_gpus": "1"}, run_id="svc-test-0a1b"
    ).request
    heart, drain = (item["request"] for item in request["services"])
    assert heart["submission_id"] == "svc-test-0a1b-heart" and drain["submission_id"] == "svc-test-0a1b-drain"
    assert heart["entrypoint_num_cpus"] == 1 and heart["entrypoint_memory"] == 64 << 20
    assert "entrypoint_num_gpus" not in heart  # the driver's option, not the role's
    assert heart["runtime_env"]["working_dir"] == request["runtime_env"]["working_dir"]
    env = heart["runtime_env"]["env_vars"]
    assert env["HEARTBEAT_FAIL_FIRST"] == "1" and "RLADAPT_RUNTIME_PATCHES" not in env
    # on-failure: the entrypoint starts the command again; the command itself runs through the bootstrap
    assert heart["entrypoint"].startswith("n=0; until ") and "rladapt.bootstrap" in heart["entrypoint"]
    assert shlex.split(drain["entrypoint"])[-4:] == [sys.executable, SERVICE, str(tmp_path), "drain"]


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_services_run_beside_the_job_restart_end_with_it_or_outlive_it_until_stop(
    engine_registry: Registry, workdir: Path, tmp_path: Path, ray_head: dict[str, str]
) -> None:
    shutil.copy(HERE / SERVICE, workdir / SERVICE)
    out = tmp_path / "out"
    native = _with_services(render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "20"})), out)
    launcher = RayLauncher()
    artifacts = render_artifacts(launcher, native, {"address": ray_head["address"]}, run_id=new_run_id("svc"))
    handle = launcher.submit(artifacts, tmp_path)
    try:
        assert [s["name"] for s in handle["services"]] == ["heart", "drain"]

        def states() -> dict[str, ServiceStatus]:
            return {s.name: s for s in launcher.services(handle, tmp_path)}

        wait_for(lambda: (out / "heart.beat").exists(), "the restarted service to beat", timeout=180)
        heart = states()["heart"]
        assert (heart.state, heart.restarts) == ("RUNNING", 1), heart
        assert heart.unit == f"Ray job {handle['submission_id']}-heart"
        env = json.loads((out / "heart.env.json").read_text())
        assert env["HOSTILE"] == HOSTILE and env["SERVICE_ROLE_VAR"] == "ray $(touch pwned)"

        wait_for(
            lambda: launcher.status(handle, tmp_path).terminal, "the job to end", timeout=180, interval=1
        )
        assert launcher.status(handle, tmp_path).state == "SUCCEEDED"
        now = states()  # the driver has ended: heart goes, drain goes on
        assert now["heart"].state == "STOPPED" and now["heart"].message == "the job ended"
        assert now["drain"].state == "RUNNING"

        result = launcher.stop(handle, tmp_path)
        assert result.state == "SUCCEEDED"  # the job's own outcome stays
        drain = wait_for(lambda: (s := states()["drain"]).terminal and s, "drain to stop", timeout=60)
        assert drain.state == "STOPPED"
        assert not list(workdir.rglob("pwned"))
        # a service job Ray does not know (deleted, never submitted) does not keep stop from working
        unknown = {
            **handle,
            "services": [*handle["services"], {"name": "gone", "submission_id": "never-was-x"}],
        }
        assert launcher.stop(unknown, tmp_path).message == "already finished; nothing to stop"
        assert {s.name: s.state for s in launcher.services(unknown, tmp_path)}["gone"] == "UNKNOWN"
    finally:
        launcher.stop(handle, tmp_path)


def test_a_role_that_ends_with_the_job_runs_under_the_wrapper_that_watches_the_jobs_end(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _with_services(render_job(engine_registry, write_spec(workdir)), tmp_path)
    request = render_artifacts(RayLauncher(), native, {}, run_id="svc-test-0a1b").request
    heart, drain = (item["request"] for item in request["services"])
    # the wrapper, in the job's checkpoint directory, inside the restart loop (its exit 0 at the job's end ends it)
    assert (
        f"-m rladapt.launchers.ends_with_job {native.checkpoint_dir} -- {sys.executable} "
        in heart["entrypoint"]
    )
    assert "ends_with_job" not in drain["entrypoint"]  # it outlives the job: it ends by itself


@pytest.mark.engine
@pytest.mark.xdist_group("ray")
def test_a_role_that_ends_with_the_job_ends_by_itself_when_the_job_ends_without_rladapt_looking(
    engine_registry: Registry, workdir: Path, tmp_path: Path, ray_head: dict[str, str]
) -> None:
    from ray.job_submission import JobSubmissionClient

    shutil.copy(HERE / SERVICE, workdir / SERVICE)
    out = tmp_path / "out"
    run_id = new_run_id("svc")
    native = _with_services(render_job(engine_registry, write_spec(workdir, env={"STUB_SLEEP": "8"})), out)
    # as `rladapt launch` tells the job its run (launch._for_job); a short heartbeat so that the end stands soon
    env = {**native.env, **run_env(run_id, run_id), HEARTBEAT_ENV: "0.5"}
    native = native.model_copy(update={"env": env})
    launcher = RayLauncher()
    artifacts = render_artifacts(launcher, native, {"address": ray_head["address"]}, run_id=run_id)
    handle = launcher.submit(artifacts, tmp_path)
    try:
        client = JobSubmissionClient(ray_head["address"])
        heart = f"{handle['submission_id']}-heart"
        # no launcher.services() here: it would stop the role itself once the job ended
        ended = wait_for(
            lambda: (
                (s := str(client.get_job_status(heart).value)) in ("SUCCEEDED", "FAILED", "STOPPED") and s
            ),
            "the role to end by itself",
            timeout=300,
            interval=1,
        )
        assert launcher.status(handle, tmp_path).state == "SUCCEEDED"
        assert ended == "SUCCEEDED", client.get_job_logs(heart)
        assert "has ended" in client.get_job_logs(heart)
        assert str(client.get_job_status(f"{handle['submission_id']}-drain").value) == "RUNNING"
    finally:
        launcher.stop(handle, tmp_path)
