"""The ``slurm`` launcher against a real single-node Slurm (Debian ``slurm-wlm`` + ``munge``).

Slurm comes from ``.ci/slurm.sh up`` (idempotent; it installs the packages when they are missing), called once
per session by the ``slurm`` fixture under a file lock shared by the xdist workers; the fixture brings Slurm
down again only if it started it, when the last worker is done (``scripts/test.sh`` calls ``up``/``down``
itself).

The jobs are the real verl adapter output for the GSM8K example. The framework's entrypoint needs GPUs, which
this machine has no: the shared test plugin (``conftest.EngineStubPlugin``) replaces it with
``stub_entrypoint.py``, and the Ray test swaps that for ``slurm_ray_driver.py`` below, which reports which Ray
cluster it joined. The placement's 8 GPUs per node are overridden with ``-o gpus_per_node=0`` (the node has no
GPU GRES). Everything else is real: the sbatch script, srun steps, the Ray head started by the script, the
patch bootstrap, env, files. The Ray head binds loopback only (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` in the
submitting environment), on ports picked per test, since other Ray heads may run on this machine at the same
time.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rladapt.cli import main as cli_main
from rladapt.launchers.slurm import SCRIPT, SlurmLauncher, status_from_scontrol
from rladapt.launchers.slurm.script import ScriptOptions, _driver_lines
from rladapt.plugins import (
    Artifacts,
    NativeLaunch,
    PortSpec,
    Registry,
    RunStatus,
    SecretRef,
    SecretSourceRef,
    VolumeSpec,
)
from rladapt.plugins.checkpoints import read_bad
from rladapt.plugins.job import PREVIOUS_EXIT_ENV, RESTART_ENV
from rladapt.plugins.launcher import STOP_REQUEST_FILE, Command, render_artifacts
from rladapt.primitives.errors import LaunchError, UsageError
from rladapt.resume import read_attempts
from rladapt.runs import RunStore
from tests.adapters.checkpoint_builders import verl_step
from tests.conftest import REPO
from tests.launchers.conftest import (
    HOSTILE,
    PROBE_FILE_TEXT,
    no_pwned,
    render_job,
    stub_report,
    wait_for,
    write_spec,
)

SLURM_SH = REPO / ".ci" / "slurm.sh"
VENV_BIN = str(Path(sys.executable).parent)
JOB_TIMEOUT = 300.0  # guards against a hang only: two one-CPU jobs fit on the CI node at a time
BASE_OPTIONS: dict[str, Any] = {"gpus_per_node": 0, "cpus_per_task": 1, "mem": "1G"}

RAY_DRIVER = "slurm_ray_driver.py"
RAY_DRIVER_SOURCE = '''"""Stand-in for the framework's driver: joins the job's Ray cluster, runs a task."""
import json
import os
import sys

import ray

ray.init(address="auto", logging_level="ERROR")


@ray.remote(num_cpus=0)
def probe():
    return {"slurm_job_id": os.environ.get("SLURM_JOB_ID"), "hostile": os.environ.get("HOSTILE"),
            "patched": getattr(sys, "rladapt_test_patched", None)}


report = {
    "argv": sys.argv[1:],
    "ray_address": os.environ.get("RAY_ADDRESS"),
    "gcs_address": ray.get_runtime_context().gcs_address,
    "alive_nodes": sum(1 for node in ray.nodes() if node["Alive"]),
    "driver_patched": getattr(sys, "rladapt_test_patched", None),
    "worker": ray.get(probe.remote()),
}
print("SLURM-DRIVER " + json.dumps(report, sort_keys=True), flush=True)
'''


# --- the Slurm cluster --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _slurm_sh(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SLURM_SH), command],
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``{"SLURM_CONF": path}`` of a running Slurm, shared by all xdist workers (reference-counted).

    ``RLADAPT_NO_SLURM=1`` skips the Slurm tests; a Slurm that cannot come up fails them when
    ``RLADAPT_REQUIRE_ENGINES=1`` (as in CI) and skips them otherwise (e.g. a laptop without root for apt).
    """
    if os.environ.get("RLADAPT_NO_SLURM") == "1":
        pytest.skip("Slurm tests disabled by RLADAPT_NO_SLURM=1")
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    lock, state_file = root / "slurm.lock", root / "slurm.json"
    with _locked(lock):
        state: dict[str, Any] = (
            json.loads(state_file.read_text()) if state_file.exists() else {"refs": 0, "started": False}
        )
        up = _slurm_sh("up")
        match = re.search(r"^export SLURM_CONF=(.+)$", up.stdout, re.M)
        if up.returncode != 0 or not match:
            message = f".ci/slurm.sh up failed ({up.returncode}):\n{up.stderr[-3000:]}"
            if os.environ.get("RLADAPT_REQUIRE_ENGINES") == "1":
                pytest.fail(message)
            pytest.skip(message)
        if state["refs"] == 0:
            # Only a Slurm this session started is ours to stop; one that was already up belongs to .ci/run.
            state["started"] = "already up" not in up.stderr
        state["refs"] += 1
        state["conf"] = shlex.split(match.group(1))[0]
        state_file.write_text(json.dumps(state))
    yield {"SLURM_CONF": str(state["conf"])}
    with _locked(lock):
        current = json.loads(state_file.read_text())
        current["refs"] -= 1
        if current["refs"] <= 0 and current["started"]:
            _slurm_sh("down")
            current["started"] = False
        state_file.write_text(json.dumps(current))


@pytest.fixture
def slurm_env(slurm: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The submitting shell: Slurm's config, this venv first on PATH (ray, python3), Ray on loopback."""
    monkeypatch.setenv("SLURM_CONF", slurm["SLURM_CONF"])
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return slurm


# --- helpers ------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ray_options() -> dict[str, Any]:
    """Ray on its own ports: Ray's fixed defaults (6379, 10001, 52365) would collide with other heads here."""
    extra = (
        f"--ray-client-server-port={_free_port()} --dashboard-agent-listen-port={_free_port()} "
        f"--dashboard-agent-grpc-port={_free_port()} --runtime-env-agent-port={_free_port()} "
        f"--metrics-export-port={_free_port()}"
    )
    return {"ray": True, "ray_port": _free_port(), "ray_args": extra, "object_store_memory": 100 << 20}


def _native(registry: Registry, workdir: Path, env: dict[str, str] | None = None, **kw: Any) -> NativeLaunch:
    return render_job(registry, write_spec(workdir, env=env, **kw))


def _render(native: NativeLaunch, **options: Any) -> Artifacts:
    artifacts = render_artifacts(SlurmLauncher(), native, {**BASE_OPTIONS, **options}, run_id="slurm-test")
    _bash_n(artifacts.files[SCRIPT])
    return artifacts


def _bash_n(script: str) -> None:
    check = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def _wait_terminal(launcher: SlurmLauncher, handle: dict[str, Any], run_dir: Path) -> RunStatus:
    status: RunStatus | None = None

    def terminal() -> bool:
        nonlocal status
        status = launcher.status(handle, run_dir)
        return status.terminal

    try:
        wait_for(terminal, f"Slurm job {handle['job_id']} to end", timeout=JOB_TIMEOUT, interval=0.5)
    except AssertionError:
        launcher.stop(handle, run_dir)
        raise AssertionError(f"job {handle['job_id']} did not end; output:\n{_output(handle)}") from None
    assert status is not None
    return status


def _output(handle: dict[str, Any]) -> str:
    path = Path(handle["output"])
    return path.read_text(errors="replace") if path.exists() else ""


def _job_processes(job_id: str) -> list[str]:
    """Live processes whose environment says they belong to Slurm job ``job_id`` (zombies do not count)."""
    marker = f"SLURM_JOB_ID={job_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(f"{entry.name} {command[:120]}")
    return found


# --- render (pure; no Slurm needed) -------------------------------------------------------------------------


def test_the_job_never_starts_when_a_stop_was_asked_during_its_submission(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    """The script itself honours the stop request (run here in bash as sbatch would start it, no Slurm needed):
    a submitter killed after sbatch cannot scancel, so the job, once it leaves the queue, must refuse to start."""
    script = _render(_native(engine_registry, workdir)).files[SCRIPT]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / STOP_REQUEST_FILE).touch()
    env = {**os.environ, "SLURM_JOB_ID": "7", "SLURM_SUBMIT_DIR": str(workdir)}
    done = subprocess.run(["bash", "-c", script], cwd=run_dir, env=env, capture_output=True, text=True)
    assert done.returncode == 143, done.stderr
    assert "stopped before it started" in done.stderr
    assert (run_dir / "slurm-7.exit").read_text().strip() == "143"
    # Nothing of the job ran: no Ray was started, and the driver's stub wrote nothing into the working directory.
    assert "starting the Ray head" not in done.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == sorted([STOP_REQUEST_FILE, "slurm-7.exit"])


def test_render_follows_placement_and_options(engine_registry: Registry, workdir: Path) -> None:
    native = _native(engine_registry, workdir)
    spec_opts = {"slurm": {"partition": "gpu", "account": "rl", "time": "1:00:00"}}
    native = native.model_copy(update={"launcher_options": spec_opts})
    # --launcher-opt wins over spec.launcher.slurm.
    artifacts = render_artifacts(
        SlurmLauncher(), native, {"time": "2-00:00:00", "qos": "high"}, run_id="grpo-0a1b"
    )
    script = artifacts.files[SCRIPT]
    _bash_n(script)
    header = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert header == [
        "#SBATCH --job-name=grpo-0a1b",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=rl",
        "#SBATCH --qos=high",
        "#SBATCH --time=2-00:00:00",
        "#SBATCH --exclusive",  # no CPU count asked: whole nodes, every CPU of which Ray is told (issue 24)
        "#SBATCH --output=slurm-%j.out",
    ]
    # sbatch stops reading directives at the first command: every #SBATCH line comes before it.
    first_command = next(i for i, line in enumerate(script.splitlines()) if line and not line.startswith("#"))
    assert all(i < first_command for i, line in enumerate(script.splitlines()) if line.startswith("#SBATCH"))
    assert "ray start --head --block" in script and "--num-gpus=8" in script
    # The driver is the batch shell's child, through the patch bootstrap; as an srun step only when asked.
    patches = "".join(f"--patch {hook} " for hook in native.runtime_patches)
    assert native.runtime_patches[-1] == "rladapt_test_patch:apply"
    bootstrap = f"{sys.executable} -m rladapt.bootstrap {patches}-- \\\n"
    assert f"\nrladapt_rc=0\n{bootstrap}" in script
    stepped = render_artifacts(
        SlurmLauncher(), native, {"driver_srun": "true", "srun_args": "--container-image='a b'"}
    )
    assert (
        "\nsrun '--container-image=a b' --overlap --nodes=1 --ntasks=1 -w \"$SLURMD_NODENAME\" " + bootstrap
    ) in stepped.files[SCRIPT]
    # Every Ray node's step overlaps the others, so a driver step can start next to the Ray head's.
    assert (
        "\nsrun '--container-image=a b' --overlap --nodes=1 --ntasks=1 -w \"$rladapt_head\" \\\n"
        "  ray start --head --block"
    ) in stepped.files[SCRIPT]


def test_render_multi_node_starts_workers_and_drops_ray_when_asked(
    engine_registry: Registry, workdir: Path
) -> None:
    native = _native(engine_registry, workdir)
    pools = tuple(p.model_copy(update={"nodes": 3}) for p in native.pools)
    ports = (
        PortSpec(name="gcs", port=7000, purpose="ray"),
        PortSpec(name="dash", port=8266, purpose="dashboard"),
    )
    native = native.model_copy(
        update={"pools": pools, "ports": ports, "lifecycle": {**native.lifecycle, "timeout_seconds": 5400}}
    )
    script = render_artifacts(SlurmLauncher(), native, {"cpus_per_task": 16, "exclusive": "true"}).files[
        SCRIPT
    ]
    _bash_n(script)
    assert "#SBATCH --nodes=3" in script and "#SBATCH --exclusive" in script
    assert "#SBATCH --time=01:30:00" in script  # from spec.lifecycle.timeout_seconds
    assert 'ray start --address="$RAY_ADDRESS" --block --num-cpus="$rladapt_ray_cpus"' in script
    assert "rladapt_ray_cpus=16" in script
    # The spec's ports: the GCS port and the dashboard (which is otherwise off).
    assert 'export RAY_ADDRESS="$rladapt_head_ip:7000"' in script
    assert "--port=7000 --include-dashboard=true --dashboard-port=8266" in script
    plain = render_artifacts(SlurmLauncher(), native, {"ray": "false", "gpus_per_node": "0"}).files[SCRIPT]
    _bash_n(plain)
    assert "ray start" not in plain and "RAY_ADDRESS" not in plain and "--gpus-per-node" not in plain


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"partiton": "gpu"}, "unknown slurm launcher option 'partiton' (did you mean 'partition'?)"),
        ({"partition": "gpu\n#SBATCH --wrap=x"}, "partition="),
        ({"partition": "a b"}, "partition="),
        ({"account": "$(id)"}, "account="),
        ({"time": "1 day"}, "time="),
        ({"mem": "lots"}, "mem="),
        ({"ray_port": "70000"}, "ray_port"),
        ({"cpus_per_task": "0"}, "cpus_per_task"),
        ({"ray": "maybe"}, "ray="),
        ({"ray_args": "'unterminated"}, "ray_args="),
        ({"gpus_per_node": "4"}, "gpus_per_node='4' contradicts the placement; expected 8 "),
        ({"gpus_per_node": "16"}, "or 0 for a CPU-only test run, found 16"),
        ({"run_id": "../../etc"}, "slurm launcher: run_id='../../etc': expected a run id"),
        ({"run_id": "Run-1", "job_name": "mine"}, "run_id='Run-1'"),
    ],
)
def test_render_rejects_bad_options(
    engine_registry: Registry, workdir: Path, options: dict[str, Any], fragment: str
) -> None:
    native = _native(engine_registry, workdir)
    given = dict(options)
    run_id = given.pop("run_id", None)  # the run id is render's own argument, not an option
    with pytest.raises(UsageError) as caught:
        render_artifacts(SlurmLauncher(), native, given, run_id=run_id)
    assert fragment in caught.value.message


def test_gpus_per_node_is_the_placement_or_an_explicit_cpu_only_run(
    engine_registry: Registry, workdir: Path
) -> None:
    native = _native(engine_registry, workdir)
    assert native.gpus_per_node == 8
    default = render_artifacts(SlurmLauncher(), native, {}).files[SCRIPT]
    assert render_artifacts(SlurmLauncher(), native, {"gpus_per_node": 8}).files[SCRIPT] == default
    assert "#SBATCH --gpus-per-node=8" in default and default.count(" --num-gpus=8 ") == 2
    # 0: nothing asked of Slurm, and Ray counts the node's GPUs instead of being told there are none.
    cpu_only = render_artifacts(SlurmLauncher(), native, {"gpus_per_node": "0"}).files[SCRIPT]
    _bash_n(cpu_only)
    assert "--gpus-per-node" not in cpu_only and "--num-gpus" not in cpu_only
    assert cpu_only.count("--disable-usage-stats") == 2  # the head's and the workers' `ray start`
    # A placement without GPUs: Ray is told so, as the placement says.
    no_gpus = native.model_copy(
        update={"pools": tuple(p.model_copy(update={"gpus_per_node": 0}) for p in native.pools)}
    )
    for options in ({}, {"gpus_per_node": 0}):
        script = render_artifacts(SlurmLauncher(), no_gpus, options).files[SCRIPT]
        assert "--gpus-per-node" not in script and script.count(" --num-gpus=0 ") == 2


def test_render_secrets_by_reference_only(engine_registry: Registry, workdir: Path) -> None:
    secrets = [
        {"env": "API_KEY", "from": {"env": "MY_API_KEY"}},
        {"env": "FILE_KEY", "from": {"file": "~/secret dir/key.txt"}},
    ]
    native = _native(engine_registry, workdir, secrets=secrets)
    script = _render(native).files[SCRIPT]
    assert 'if [[ -n "${MY_API_KEY+set}" ]]; then API_KEY="$MY_API_KEY"' in script
    assert (
        "if [[ -f \"$HOME\"/'secret dir/key.txt' && -r \"$HOME\"/'secret dir/key.txt' ]]; "
        'then FILE_KEY="$(cat -- "$HOME"/\'secret dir/key.txt\')"'
    ) in script
    k8s = native.model_copy(
        update={
            "secrets": (
                SecretRef(env="TOKEN", sources=(SecretSourceRef(kind="k8s_secret", name="hf", key="t"),)),
            )
        }
    )
    with pytest.raises(
        UsageError, match=r"secret TOKEN: a Slurm job can read none of its sources \(k8s_secret hf/t\)"
    ):
        render_artifacts(SlurmLauncher(), k8s, {})


def test_submit_refuses_an_unset_secret_source_before_sbatch(
    engine_registry: Registry, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_API_KEY", raising=False)
    native = _native(engine_registry, workdir, secrets=[{"env": "API_KEY", "from": {"env": "MY_API_KEY"}}])
    artifacts = _render(native)
    # names only, never a value
    assert artifacts.request["secrets"] == [{"env": "API_KEY", "sources": [{"env": "MY_API_KEY"}]}]
    run_dir = tmp_path / "run"
    with pytest.raises(
        LaunchError,
        match=r"no source of these secrets can be read in this shell: API_KEY \(\$MY_API_KEY is not set\)",
    ):
        SlurmLauncher().submit(artifacts, run_dir)
    assert not run_dir.exists()  # refused before anything was written or queued


def test_render_rejects_names_that_would_break_out(engine_registry: Registry, workdir: Path) -> None:
    native = _native(engine_registry, workdir)
    # A trailing newline passes a "^...$" regex: the name would end the export line and start a command.
    for env in ({"OK\n": "x"}, {"A;touch pwned": "x"}):
        with pytest.raises(UsageError, match="not a valid environment variable name"):
            render_artifacts(SlurmLauncher(), native.model_copy(update={"env": env}), {})
    bad_secret = (SecretRef(env="TOKEN", sources=(SecretSourceRef(kind="env", name="SRC\n"),)),)
    with pytest.raises(UsageError, match="source variable"):
        render_artifacts(SlurmLauncher(), native.model_copy(update={"secrets": bad_secret}), {})
    # Values that only reach comments are JSON-escaped, so a newline cannot end the comment.
    volume = VolumeSpec(name="shm", mount="/dev/shm\ntouch pwned", kind="memory", source="1Gi")
    script = _render(native.model_copy(update={"volumes": (volume,)})).files[SCRIPT]
    assert "\ntouch pwned" not in script and '"/dev/shm\\ntouch pwned"' in script


@pytest.mark.parametrize(
    ("line", "state", "code"),
    [
        ("JobId=5 JobName=x JobState=PENDING Reason=Resources ExitCode=0:0", "PENDING", None),
        ("JobId=5 JobName=x JobState=RUNNING Reason=None ExitCode=0:0 NodeList=vm", "RUNNING", None),
        ("JobId=5 JobName=x JobState=COMPLETING Reason=None ExitCode=0:0", "RUNNING", None),
        ("JobId=5 JobName=x JobState=COMPLETED Reason=None ExitCode=0:0", "SUCCEEDED", 0),
        ("JobId=5 JobName=x JobState=FAILED Reason=NonZeroExitCode ExitCode=7:0", "FAILED", 7),
        ("JobId=5 JobName=x JobState=CANCELLED Reason=None ExitCode=0:15", "STOPPED", 143),
        ("JobId=5 JobName=x JobState=CANCELLED Reason=None ExitCode=0:0", "STOPPED", None),
        ("JobId=5 JobName=x JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15", "FAILED", 143),
        ("JobId=5 JobName=x JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0", "FAILED", 0),
        ("JobId=5 JobName=x JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125", "FAILED", 253),
        ("JobId=5 JobName=x JobState=WEIRD ExitCode=0:0", "UNKNOWN", None),
    ],
)
def test_scontrol_state_mapping(line: str, state: str, code: int | None) -> None:
    fields = dict(token.split("=", 1) for token in line.split())
    status = status_from_scontrol(fields)
    assert (status.state, status.exit_code) == (state, code)
    assert "Slurm job 5" in status.message


# --- against the real Slurm ---------------------------------------------------------------------------------


# Ray starts a head here too: one Ray start-up at a time on a 2-core machine (Ray gives a node 30 s to register).
@pytest.mark.xdist_group("ray")
@pytest.mark.engine
def test_ray_on_slurm_end_to_end(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _native(engine_registry, workdir)
    (workdir / RAY_DRIVER).write_text(RAY_DRIVER_SOURCE)
    # The stub stand-in for main_ppo becomes one that reports on the Ray cluster it joined (see module doc).
    native = native.model_copy(update={"argv": (native.argv[0], RAY_DRIVER, *native.argv[2:])})
    options = _ray_options()
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, **options), run_dir)
    assert set(handle) >= {"job_id", "script", "output"} and Path(handle["script"]).is_file()

    lines = list(launcher.logs(handle, run_dir, follow=True))  # follows until the job is terminal
    output = "".join(lines)
    status = launcher.status(handle, run_dir)
    assert (status.state, status.exit_code) == ("SUCCEEDED", 0), output
    assert output == _output(handle)
    assert f"Ray cluster up: 1 node(s) at 127.0.0.1:{options['ray_port']}" in output
    report_lines = [line for line in lines if line.startswith("SLURM-DRIVER ")]
    assert len(report_lines) == 1, output
    report = json.loads(report_lines[0][len("SLURM-DRIVER ") :])
    assert report["ray_address"] == f"127.0.0.1:{options['ray_port']}"
    assert report["gcs_address"] == report["ray_address"]  # joined the head the script started
    assert report["alive_nodes"] == 1
    # The task ran in a Ray worker of this Slurm job, with the job's env and the runtime patch applied.
    assert report["worker"] == {"slurm_job_id": handle["job_id"], "hostile": HOSTILE, "patched": True}
    assert report["driver_patched"] is True
    assert report["argv"] == list(native.argv[2:])
    assert (run_dir / f"slurm-{handle['job_id']}.exit").read_text() == "0\n"
    # The EXIT trap stopped the Ray head: nothing of this job is left running.
    wait_for(lambda: not _job_processes(handle["job_id"]), "the job's processes to end", timeout=60)
    assert not no_pwned(tmp_path)


@pytest.mark.engine
def test_failing_driver_gives_failed_with_its_exit_code(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _native(engine_registry, workdir, env={"STUB_EXIT": "7"})
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, ray=False), run_dir)
    status = _wait_terminal(launcher, handle, run_dir)
    output = "".join(launcher.logs(handle, run_dir))
    assert (status.state, status.exit_code) == ("FAILED", 7), output
    assert "STUB-EXIT 7" in output and "rladapt: the driver exited with 7" in output
    assert stub_report(output)["argv"] == list(native.argv[2:])
    # A second stop of a finished job changes nothing and says so.
    again = launcher.stop(handle, run_dir)
    assert (again.state, again.exit_code) == ("FAILED", 7) and "already finished" in again.message


def test_the_restart_loop_tells_each_start_which_restart_it_is_and_how_the_last_one_ended(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    """Each start in the batch script's loop is a fresh bootstrap: without the previous start's exit code it cannot
    mark the step that start failed to load (issue 23), and every restart took that step again. Rendered and run
    by bash with a stand-in driver (no Slurm needed): the first start inherits neither variable, even from a
    submission environment that holds them; restart N sees N and the code of the start before it."""
    native = _native(engine_registry, workdir)
    native = native.model_copy(update={"lifecycle": {**native.lifecycle, "max_restarts": 2}})
    script = _render(native, ray=False).files[SCRIPT]
    assert f'  export {RESTART_ENV}="$rladapt_attempt" {PREVIOUS_EXIT_ENV}="$rladapt_rc"\n' in script
    # the loop's own lines, around a driver that records what it sees and fails twice (exit 6, then 7)
    seen = tmp_path / "seen.txt"
    driver = (
        "import os, sys; from pathlib import Path; p = Path(sys.argv[-1]); "
        f"v = [os.environ.get(n, '-') for n in ({RESTART_ENV!r}, {PREVIOUS_EXIT_ENV!r})]; "
        "n = len(p.read_text().splitlines()) if p.exists() else 0; "
        "p.open('a').write(' '.join(v) + chr(10)); sys.exit((6, 7, 0)[n])"
    )
    command = Command(argv=(sys.executable, "-c", driver, "--", str(seen)))
    merged = SlurmLauncher().merge_options(native, BASE_OPTIONS)
    lines = _driver_lines(native, ScriptOptions(native, merged), command)
    env = {**os.environ, RESTART_ENV: "9", PREVIOUS_EXIT_ENV: "1"}
    result = subprocess.run(
        ["bash", "-c", "\n".join(["set -euo pipefail", *lines])],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert seen.read_text().splitlines() == ["- -", "1 6", "2 7"]
    assert "restart 2 of 2" in result.stderr


@pytest.mark.engine
def test_restarts_rerun_the_driver(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _native(engine_registry, workdir, env={"STUB_EXIT": "3"})
    native = native.model_copy(update={"lifecycle": {**native.lifecycle, "max_restarts": 1}})
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    # The driver as an srun step this time (the mode for sites that need srun_args, e.g. a container).
    handle = launcher.submit(_render(native, ray=False, driver_srun=True), run_dir)
    status = _wait_terminal(launcher, handle, run_dir)
    output = _output(handle)
    assert (status.state, status.exit_code) == ("FAILED", 3), output
    assert output.count("STUB-EXIT 3") == 2 and "restart 1 of 1" in output


# Ray starts a head here too: one Ray start-up at a time on a 2-core machine (Ray gives a node 30 s to register).
@pytest.mark.xdist_group("ray")
@pytest.mark.engine
def test_stop_cancels_the_job_and_its_ray_cluster(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _native(engine_registry, workdir, env={"STUB_SLEEP": "600", "STUB_RAY_TASK": "1"})
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, **_ray_options()), run_dir)
    job_id = handle["job_id"]
    # The driver joined Ray, ran a task and now sleeps next to a child process.
    wait_for(
        lambda: "STUB-CHILD " in _output(handle),
        "the driver to be running",
        timeout=JOB_TIMEOUT,
        interval=0.5,
    )
    running = launcher.status(handle, run_dir)
    assert running.state == "RUNNING", running
    assert any("raylet" in p or "gcs_server" in p for p in _job_processes(job_id)), _job_processes(job_id)
    assert stub_report(_output(handle))["worker"]["hostile"] == HOSTILE

    stopped = launcher.stop(handle, run_dir)
    assert stopped.state == "STOPPED", stopped
    wait_for(
        lambda: not _job_processes(job_id), "the job's processes (Ray head, driver, child) to end", timeout=90
    )
    # The trap ran on SIGTERM: the exit code is on record even after slurmctld forgets the job, and Ray's
    # session logs of the failed job are kept on the node (here: this machine) for whoever debugs it.
    assert (run_dir / f"slurm-{job_id}.exit").read_text() == "143\n"
    kept = re.search(r"^rladapt: Ray logs kept in (\S+) on ", _output(handle), re.M)
    assert kept and Path(kept.group(1), "session_latest").exists(), _output(handle)
    shutil.rmtree(kept.group(1))
    again = launcher.stop(handle, run_dir)
    assert again.state == "STOPPED" and "already stopped" in again.message
    assert launcher.status(handle, run_dir).state == "STOPPED"


@pytest.mark.engine
def test_hostile_values_run_nothing(
    slurm_env: dict[str, str],
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret_file = tmp_path / "secret dir" / "it's $(touch pwned).txt"
    secret_file.parent.mkdir()
    secret_file.write_text(HOSTILE)
    monkeypatch.setenv("MY_API_KEY", "s3cr3t " + HOSTILE)
    secrets = [
        {"env": "API_KEY", "from": {"env": "MY_API_KEY"}},
        {"env": "FILE_KEY", "from": {"file": str(secret_file)}},
    ]
    native = _native(engine_registry, workdir, env={"EXTRA": HOSTILE}, secrets=secrets)
    native = native.model_copy(update={"argv": (*native.argv, HOSTILE, "--flag=" + HOSTILE, "")})
    artifacts = _render(native, ray=False, job_name=HOSTILE)
    script = artifacts.files[SCRIPT]
    assert "#SBATCH --job-name=touch-pwned-touch-pwned-single-double-touch-pwned-second-line-HOME" in script
    assert "s3cr3t" not in script  # secrets by reference only
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(artifacts, run_dir)
    status = _wait_terminal(launcher, handle, run_dir)
    output = _output(handle)
    assert (status.state, status.exit_code) == ("SUCCEEDED", 0), output
    report = stub_report(output)
    assert report["argv"] == list(native.argv[2:])
    assert report["hostile"] == HOSTILE
    assert report["api_key"] == "s3cr3t " + HOSTILE
    assert report["file_key"] == HOSTILE.rstrip("\n")  # "$(cat f)" drops trailing newlines, as any shell does
    assert report["probe_file"] == PROBE_FILE_TEXT
    assert report["pwned_in_cwd"] is False
    assert not no_pwned(tmp_path, workdir, run_dir)


@pytest.mark.engine
def test_invalid_partition_is_a_launch_error(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _native(engine_registry, workdir)
    with pytest.raises(LaunchError, match=r"(?i)sbatch refused the job: .*invalid partition"):
        SlurmLauncher().submit(_render(native, partition="no-such-partition", ray=False), tmp_path / "run")


@pytest.mark.engine
def test_slurm_unreachable_is_a_launch_error(
    slurm_env: dict[str, str],
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    artifacts = _render(_native(engine_registry, workdir), ray=False)
    launcher = SlurmLauncher()
    # A controller port nobody listens on; short timeouts so the clients give up at once.
    conf = Path(slurm_env["SLURM_CONF"]).read_text()
    dead = re.sub(r"^SlurmctldPort=.*$", f"SlurmctldPort={_free_port()}", conf, flags=re.M)
    (tmp_path / "dead.conf").write_text(dead + "MessageTimeout=1\nTCPTimeout=1\n")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "dead.conf"))
    with pytest.raises(LaunchError, match="Slurm controller is unreachable"):
        launcher.submit(artifacts, tmp_path / "run")
    with pytest.raises(LaunchError, match="Slurm controller is unreachable"):
        launcher.status({"job_id": "1", "output": str(tmp_path / "x.out")}, tmp_path / "run")
    # No Slurm client on PATH at all.
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(LaunchError, match=r"Slurm is not available here: `sbatch` is not on PATH"):
        launcher.submit(artifacts, tmp_path / "run2")


@pytest.mark.engine
def test_status_of_a_job_slurm_forgot(slurm_env: dict[str, str], tmp_path: Path) -> None:
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    run_dir.mkdir()
    handle = {"job_id": "987654", "output": str(run_dir / "slurm-987654.out")}
    assert launcher.status(handle, run_dir).state == "UNKNOWN"
    (run_dir / "slurm-987654.exit").write_text("0\n")
    status = launcher.status(handle, run_dir)
    assert (status.state, status.exit_code) == ("SUCCEEDED", 0)
    (run_dir / "slurm-987654.exit").write_text("9\n")
    assert launcher.status(handle, run_dir).state == "FAILED"
    (run_dir / "stop_requested").write_text("1\n")
    assert launcher.status(handle, run_dir).state == "STOPPED"


def _cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI in this process (so the test plugin's registry applies), with main()'s exit-code policy."""
    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.engine
def test_cli_launch_status_runs_and_a_refused_submission(
    slurm_env: dict[str, str],
    engine_registry: Registry,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = str(write_spec(workdir, env={"STUB_EXIT": "3"}))
    opts = [f"-o{key}={value}" for key, value in {**BASE_OPTIONS, "ray": "false"}.items()]
    launch = ["launch", "--framework", "verl", spec, "--launcher", "slurm", *opts]

    code, out, _ = _cli(*launch, "--dry-run", capsys=capsys)
    assert code == 0 and out.startswith(
        f"--- {SCRIPT} ---\n#!/usr/bin/env bash\n#SBATCH --job-name=launch-test\n"
    )
    assert RunStore().list() == []  # a dry run records nothing

    code, out, err = _cli(*launch, "--follow", capsys=capsys)
    assert code == 1, err
    run_id = out.splitlines()[0]
    assert "STUB-EXIT 3" in out and f"run {run_id} ended FAILED (exit code 3)" in err
    record = RunStore().get(run_id).record.to_json()
    assert (record["state"], record["exit_code"], record["launcher"]) == ("FAILED", 3, "slurm")
    assert record["handle"]["job_id"].isdigit()
    script = Path(record["handle"]["script"]).read_text()
    assert f"#SBATCH --job-name={run_id}\n" in script  # the run id names the Slurm job
    code, out, _ = _cli("status", run_id, capsys=capsys)
    assert code == 0 and "state:     FAILED (exit code 3)" in out and "launcher:  slurm" in out
    code, out, _ = _cli("runs", capsys=capsys)
    assert code == 0 and out.splitlines()[1].split()[:2] == [run_id, "slurm"]

    # sbatch refuses the job: a clear error, and a record that says so (no handle, FAILED).
    code, _, err = _cli(*launch, "-opartition=no-such-partition", capsys=capsys)
    assert code != 0 and "sbatch refused the job" in err and "Invalid partition" in err
    refused = RunStore().list()[-1].record.to_json()
    assert refused["state"] == "FAILED" and refused["handle"] is None
    assert refused["message"].startswith("submission failed: sbatch refused the job")


def test_registered_as_builtin_plugin(engine_registry: Registry) -> None:
    assert isinstance(engine_registry.launcher("slurm"), SlurmLauncher)
    assert engine_registry.launchers["slurm"].plugin == "slurm"


# Ray starts a head here too: one Ray start-up at a time on a 2-core machine (Ray gives a node 30 s to register).
@pytest.mark.xdist_group("ray")
@pytest.mark.engine
def test_driver_as_an_srun_step_next_to_the_jobs_ray_cluster(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    """-o driver_srun=true with the job's own Ray cluster (the default) on the real single-node Slurm: the
    driver step used to be refused ("Memory required by task is not available") next to the Ray head's. No
    `mem` option: the job gets the cluster's memory per CPU (DefMemPerCPU), as a user's job does by default."""
    native = _native(engine_registry, workdir)
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    options = {"gpus_per_node": 0, "cpus_per_task": 1, "driver_srun": True}
    artifacts = render_artifacts(launcher, native, {**options, **_ray_options()}, run_id="slurm-test")
    assert "#SBATCH --mem" not in artifacts.files[SCRIPT]
    handle = launcher.submit(artifacts, run_dir)
    status = _wait_terminal(launcher, handle, run_dir)
    output = _output(handle)
    assert "Memory required by task is not available" not in output, output
    assert (status.state, status.exit_code) == ("SUCCEEDED", 0), output
    assert "Ray cluster up: 1 node(s)" in output
    assert stub_report(output)["argv"] == list(native.argv[2:])


# --- a submission cut short: the job is found by its name -------------------------------------------------------

#: The CLI with the test plugin (the stub entrypoint), as a process of its own: the sbatch wrapper kills it.
CLI_WITH_STUB = """
import sys
sys.path.insert(0, sys.argv[1])
import rladapt.plugins as manager
from tests.launchers.conftest import EngineStubPlugin
registry = manager.load_registry(extra=[("engine-stub", EngineStubPlugin())])
manager.get_registry = lambda: registry
from rladapt.cli import main
main(sys.argv[2:])
"""
#: First on PATH: runs the real sbatch, then kills rladapt (its parent) by SIGKILL the moment Slurm accepted the
#: job, before rladapt could save the job id.
SBATCH_THEN_KILL = """#!/usr/bin/env bash
{real} "$@"
rc=$?
kill -9 "$PPID"
exit "$rc"
"""


def _squeue_active(name: str) -> list[str]:
    proc = subprocess.run(
        ["squeue", "--noheader", f"--name={name}", "--format=%i %T"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _launch_killed_after_sbatch(workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    real = shutil.which("sbatch")
    assert real is not None
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    wrapper = wrappers / "sbatch"
    wrapper.write_text(SBATCH_THEN_KILL.format(real=shlex.quote(real)))
    wrapper.chmod(0o755)
    spec = write_spec(workdir, env={"STUB_SLEEP": "600"})
    opts = [f"-o{key}={value}" for key, value in {**BASE_OPTIONS, "ray": "false"}.items()]
    env = dict(os.environ, PATH=f"{wrappers}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [sys.executable, "-c", CLI_WITH_STUB, str(REPO), "launch", "--framework", "verl", str(spec),
         "--launcher", "slurm", *opts],
        capture_output=True, text=True, timeout=300, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == -9, (proc.returncode, proc.stdout, proc.stderr)
    (run,) = RunStore().list()
    assert run.handle is None  # killed before it saved the job id
    return run.id


@pytest.mark.engine
def test_find_reaches_a_job_whose_submitter_was_killed_after_sbatch(
    slurm_env: dict[str, str],
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = _launch_killed_after_sbatch(workdir, tmp_path, monkeypatch)
    try:
        run = RunStore().get(run_id)
        launcher = SlurmLauncher()
        intent = launcher.intent(run.artifacts, run_id)
        assert intent["job_name"] == run_id
        (job_id, _) = _squeue_active(run_id)
        handle = launcher.find(intent, run.dir)
        assert handle == {
            "job_id": job_id,
            "script": str(run.dir.absolute() / SCRIPT),
            "output": str(run.dir.absolute() / f"slurm-{job_id}.out"),
        }
        assert launcher.status(handle, run.dir).state in ("PENDING", "RUNNING")
        stopped = launcher.stop(handle, run.dir)
        assert stopped.state == "STOPPED", stopped
        assert _squeue_active(run_id) == []
        # Still found after it ended (squeue --states=all, then its output file), and nothing for another name.
        assert launcher.find(intent, run.dir) == handle
        assert launcher.find({"job_name": f"{run_id}-never", "run_id": run_id}, tmp_path) is None
    finally:
        subprocess.run(["scancel", f"--name={run_id}"], capture_output=True, timeout=60)


@pytest.mark.engine
def test_find_takes_the_newest_of_several_jobs_of_one_name_and_says_so(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native = _native(engine_registry, workdir, env={"STUB_SLEEP": "600"})
    launcher = SlurmLauncher()
    name = f"twice-{os.getpid()}-{_free_port()}"
    artifacts = _render(native, ray=False, job_name=name)
    try:
        first = launcher.submit(artifacts, tmp_path / "first")
        second = launcher.submit(artifacts, tmp_path / "second")
        found = launcher.find(launcher.intent(artifacts, "slurm-test"), tmp_path / "second")
        assert found is not None and found["job_id"] == second["job_id"]
        assert found["warnings"] == [
            f"2 Slurm jobs are named {name}: took the newest, {second['job_id']} (the others: {first['job_id']})"
        ]
    finally:
        subprocess.run(["scancel", f"--name={name}"], capture_output=True, timeout=60)


@pytest.mark.engine
def test_cli_status_and_stop_reach_a_job_whose_submitter_was_killed_after_sbatch(
    slurm_env: dict[str, str],
    engine_registry: Registry,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """End to end (needs the runner's part: the intent recorded before sbatch, find() for a run without a job
    id): `rladapt status` reports the job, `rladapt stop` cancels it."""
    run_id = _launch_killed_after_sbatch(workdir, tmp_path, monkeypatch)

    def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rladapt.cli", *args],
            capture_output=True, text=True, timeout=120, cwd=workdir, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    try:
        status = rladapt("status", run_id)
        assert status.returncode == 0, status.stderr
        assert "PENDING" in status.stdout or "RUNNING" in status.stdout, status.stdout
        stopped = rladapt("stop", run_id)
        assert stopped.returncode == 0 and "STOPPED" in stopped.stdout, (stopped.stdout, stopped.stderr)
        assert _squeue_active(run_id) == []
    finally:
        subprocess.run(["scancel", f"--name={run_id}"], capture_output=True, timeout=60)


REQUEUE_DRIVER = "slurm_requeue_driver.py"
#: Stands in for verl's main_ppo: reports the step it resumes from (``resume_path``, or under ``auto`` the step
#: ``latest_checkpointed_iteration.txt`` names, as verl does); a fresh start commits step 2 in verl's layout for the
#: placement's 8 ranks (real torch.save files, which pass the scan's content checks) and then waits to be
#: requeued; a resumed start ends at once.
REQUEUE_DRIVER_SOURCE = """
import json, os, sys, time
from pathlib import Path
import torch
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
root = Path(args["trainer.default_local_dir"])
mode, path = args.get("trainer.resume_mode"), args.get("trainer.resume_from_path")
marker = root / "latest_checkpointed_iteration.txt"
if mode == "auto" and marker.exists():  # verl's find_latest_ckpt_path: the step the marker names
    path = str(root / f"global_step_{marker.read_text().strip()}")
print("REQUEUE-DRIVER " + json.dumps({"mode": mode, "resumed_from": path}), flush=True)
if path:
    sys.exit(0)
step, world = root / "global_step_2", 8
actor = step / "actor"
(actor / "huggingface").mkdir(parents=True, exist_ok=True)
for rank in range(world):
    for kind in ("model", "optim", "extra_state"):
        torch.save({"w": torch.zeros(4)}, actor / f"{kind}_world_size_{world}_rank_{rank}.pt")
(actor / "huggingface" / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
(actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 1, "world_size": world}))
torch.save({"dataloader": {}}, step / "data.pt")
(root / "latest_checkpointed_iteration.txt").write_text("2")
print("REQUEUE-DRIVER committed step 2", flush=True)
time.sleep(600)
"""


@pytest.mark.engine
def test_a_requeued_job_finds_its_own_owner_file_and_continues(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    """`scontrol requeue` starts the same job again without passing through rladapt: its bootstrap finds the
    checkpoint directory held by its own run and attempt (the owner file), takes it as a restart, and continues from
    the step the first start committed instead of refusing the directory or starting over."""
    from rladapt.plugins.job import run_env
    from rladapt.runs.owner import read_owner

    native = _native(engine_registry, workdir)
    (workdir / REQUEUE_DRIVER).write_text(REQUEUE_DRIVER_SOURCE)
    native = native.model_copy(
        update={
            "argv": (native.argv[0], REQUEUE_DRIVER, *native.argv[2:]),
            "env": {**native.env, **run_env("slurm-test", "slurm-test")},
        }
    )
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, ray=False), run_dir)
    try:
        wait_for(
            lambda: "REQUEUE-DRIVER committed step 2" in _output(handle),
            "the first start to commit step 2",
            timeout=JOB_TIMEOUT,
            interval=0.5,
        )
        root = workdir / str(native.checkpoint_dir)
        first = read_owner(root)
        assert first is not None and (first.run, first.attempt) == ("slurm-test", "slurm-test")
        requeue = subprocess.run(
            ["scontrol", "requeue", handle["job_id"]], capture_output=True, text=True, timeout=60, check=False
        )
        assert requeue.returncode == 0, requeue.stderr
        status = _wait_terminal(launcher, handle, run_dir)
    finally:
        launcher.stop(handle, run_dir)
    output = _output(handle)
    assert (status.state, status.exit_code) == ("SUCCEEDED", 0), output
    assert (
        "a restart of slurm-test: continuing from the newest complete step of its own checkpoints" in output
    )
    assert f"resuming from step 2 ({root / 'global_step_2'})" in output
    # the rendered resume_mode=auto lands on the step the bootstrap chose, so the command is left as rendered
    resumed = json.dumps({"mode": "auto", "resumed_from": f"{native.checkpoint_dir}/global_step_2"})
    assert f"REQUEUE-DRIVER {resumed}" in output
    assert "REQUEUE-DRIVER committed step 2" not in output  # (Slurm truncates the output file on a requeue)
    again = read_owner(root)
    assert again is not None and again.run == "slurm-test" and again.token != first.token


LOADING_DRIVER = "slurm_loading_driver.py"
#: Stands in for verl's main_ppo in the restart loop: it takes the step verl would (``resume_from_path``, or under
#: ``auto`` the step ``latest_checkpointed_iteration.txt`` names), fails to load global_step_2 with exit 1 as a
#: ``load_state_dict`` error would, and ends at once from any other step.
LOADING_DRIVER_SOURCE = """
import json, sys
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
root = Path(args["trainer.default_local_dir"])
mode, path = args.get("trainer.resume_mode"), args.get("trainer.resume_from_path")
marker = root / "latest_checkpointed_iteration.txt"
if mode == "auto" and marker.exists():
    path = str(root / f"global_step_{marker.read_text().strip()}")
print("LOADING-DRIVER " + json.dumps({"mode": mode, "resumed_from": path}), flush=True)
if path and Path(path).name == "global_step_2":
    print("LOADING-DRIVER RuntimeError: Error(s) in loading state_dict", file=sys.stderr, flush=True)
    sys.exit(1)
"""


def _loading_job(registry: Registry, workdir: Path) -> tuple[NativeLaunch, Path]:
    """verl's steps 1 and 2 for the placement's 8 ranks (real torch.save files) and the driver that cannot load 2."""
    native = _native(registry, workdir)
    (workdir / LOADING_DRIVER).write_text(LOADING_DRIVER_SOURCE)
    native = native.model_copy(
        update={
            "argv": (native.argv[0], LOADING_DRIVER, *native.argv[2:]),
            "lifecycle": {**native.lifecycle, "max_restarts": 1},
        }
    )
    root = workdir / str(native.checkpoint_dir)
    verl_step(root, 1, world=8)
    verl_step(root, 2, world=8)
    return native, root


def _assert_marked_and_continued(output: str, root: Path, native: NativeLaunch) -> None:
    reason = "the first start resumed from it and exited with 1 before committing a later step"
    assert f"step 2 ({root / 'global_step_2'}) is marked bad, never chosen again: {reason}" in output, output
    assert f"resuming from step 1 ({root / 'global_step_1'})" in output
    assert [m["step"] for m in read_bad(root)] == [2]
    assert "restart 1 of 1" in output and "rladapt: the driver exited with 0" in output


def test_the_rendered_restart_loop_marks_a_step_its_driver_failed_to_load(
    engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    """The rendered script, run by bash here (no Slurm): the real bootstrap, the verl adapter's scan and the
    attempts file. Before, the restart resumed from global_step_2 again and the job ended with exit 1."""
    native, root = _loading_job(engine_registry, workdir)
    script = _render(native, ray=False).files[SCRIPT]
    # the whole script, run by bash as sbatch would start it: in the run directory, with Slurm's two variables
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {**os.environ, "SLURM_JOB_ID": "7", "SLURM_SUBMIT_DIR": str(workdir), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=run_dir, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    _assert_marked_and_continued(output, root, native)
    starts = [(s["restart"], s["from_step"]) for s in read_attempts(run_dir)]
    assert starts == [(0, 2), (1, 1)]


@pytest.mark.engine
def test_a_restart_on_slurm_marks_the_step_its_driver_failed_to_load(
    slurm_env: dict[str, str], engine_registry: Registry, workdir: Path, tmp_path: Path
) -> None:
    native, root = _loading_job(engine_registry, workdir)
    launcher, run_dir = SlurmLauncher(), tmp_path / "run"
    handle = launcher.submit(_render(native, ray=False), run_dir)
    status = _wait_terminal(launcher, handle, run_dir)
    output = _output(handle)
    assert (status.state, status.exit_code) == ("SUCCEEDED", 0), output
    _assert_marked_and_continued(output, root, native)
    starts = [(s["restart"], s["from_step"]) for s in read_attempts(run_dir)]
    assert starts == [(0, 2), (1, 1)]


# --- the README's TRL example on the real Slurm ----------------------------------------------------------------


@pytest.mark.engine
def test_the_readme_trl_example_trains_on_slurm_with_checkpoints_metrics_and_resume(
    slurm_env: dict[str, str], tmp_path: Path
) -> None:
    """``rladapt launch -f trl -l slurm examples/grpo-tiny-trl.yaml`` from the repository root, as written (its
    relative interpreter, model, data and reward read in the working directory the nodes share), CPU-only: the
    node has no GPUs and TRL needs no Ray cluster (``-o gpus_per_node=0 -o ray=false``)."""
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    from tests.cli.test_cli import rladapt

    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("the README's interpreter .venv/bin/python is made by scripts/test.sh")
    ck = tmp_path / "ck"
    res = rladapt(
        "launch", "-f", "trl", "--follow", "examples/grpo-tiny-trl.yaml", "-l", "slurm", "-o", "gpus_per_node=0",
        "-o", "cpus_per_task=1", "-o", "mem=2G", "-o", "ray=false", "spec.training.steps=2",
        "spec.checkpoint.every_steps=2", "spec.checkpoint.resume=auto", f"spec.checkpoint.dir={ck}",
        cwd=REPO, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    run_id = res.stdout.splitlines()[0]
    assert f"run {run_id}: SUCCEEDED (exit code 0)" in res.stderr

    listed = rladapt("checkpoints", run_id, "--format", "json", cwd=REPO)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["resume_from"]["step"] == 2
    metrics = rladapt("metrics", run_id, "--format", "csv", cwd=REPO)
    assert metrics.returncode == 0, metrics.stderr
    assert [r.split(",")[0] for r in metrics.stdout.splitlines()[1:]] == ["1", "2"]

    resumed = rladapt("resume", run_id, cwd=REPO)
    assert resumed.returncode == 0, resumed.stderr
    followed = rladapt("logs", run_id, "--follow", cwd=REPO, timeout=900)
    assert "resuming from step 2" in followed.stdout, followed.stdout[-2000:]
    status = rladapt("status", run_id, "--format", "json", cwd=REPO)
    assert json.loads(status.stdout)["state"] == "SUCCEEDED", status.stdout
