"""Shared set-up of the launcher tests: a real Ray head, and jobs rendered by the real adapters.

The Ray head (``ray start --head --block`` on 127.0.0.1, own temp dir and ports) is shared by every xdist worker
through a lock file and a reference count next to pytest's base temp dir: the first worker that needs it starts
it, the last one to finish kills its process group. The Ray tests are also marked ``xdist_group("ray")`` so that
``--dist loadgroup`` keeps them on one worker.

The job a test runs is the real adapter output for an example spec. Only the framework's entrypoint
(``python3 -m verl.trainer.main_ppo``, which needs GPUs) is replaced, by ``stub_entrypoint.py``, through a
test-only plugin's ``rladapt_modify_native`` hook; that plugin also registers a runtime patch so that the patch
bootstrap and Ray's ``worker_process_setup_hook`` run for real.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Patch, Registry, hookimpl, load_registry
from rladapt.primitives import RLJob, load_job
from tests.conftest import REPO

HERE = Path(__file__).resolve().parent
EXAMPLE = REPO / "examples" / "grpo-gsm8k.yaml"
STUB = "stub_entrypoint.py"
#: The framework entrypoints the stub replaces (they need GPUs): ``python3 -m <module>``.
ENTRYPOINTS = {"verl": "verl.trainer.main_ppo", "openrlhf": "openrlhf.cli.train_ppo_ray"}
PATCH_MODULE = "rladapt_test_patch"
PATCH_HOOK = f"{PATCH_MODULE}:apply"
PATCH_SOURCE = '''"""Runtime patch probe: marks the process it ran in (the bootstrap's, or a Ray worker's)."""
import sys


def apply() -> None:
    sys.rladapt_test_patched = True
'''
PROBE_FILE_TEXT = "key: '$(touch pwned)' \"dq\"\n`touch pwned`\nlast line without newline"
#: Values that break a shell script or a manifest if anything along the way forgets to quote them.
HOSTILE = "$(touch pwned) `touch pwned` 'single' \"double\" \\ ; touch pwned\nsecond line $HOME"
EXPERIMENT = "exp $(touch pwned) 'x' \"y\"\nnew line"


class EngineStubPlugin:
    """Test-only plugin: swaps the GPU-bound entrypoint for the stub and registers a runtime patch probe."""

    @hookimpl
    def rladapt_register_patches(self) -> list[Patch]:
        return [
            Patch(
                id=f"test-runtime-probe-{framework}",
                framework=framework,
                versions=">=0",
                issue="tests only",
                summary="marks each process the runtime patches reached",
                kind="runtime",
                runtime_hook=PATCH_HOOK,
            )
            for framework in ENTRYPOINTS
        ]

    @hookimpl
    def rladapt_modify_native(self, native: NativeLaunch, job: RLJob) -> NativeLaunch:
        # If the adapter's entrypoint ever changes shape, replacing argv[0:3] would be wrong: say so loudly.
        assert native.argv[1:3] == ("-m", ENTRYPOINTS[native.framework]), native.argv[:3]
        return native.model_copy(
            update={
                "argv": (sys.executable, STUB, *native.argv[3:]),
                "files": {**native.files, "rladapt-probe/config.yaml": PROBE_FILE_TEXT},
            }
        )


@pytest.fixture
def engine_registry(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """The real built-in plugins plus the stub plugin; also what the CLI's ``get_registry`` returns."""
    registry = load_registry(extra=[("engine-stub", EngineStubPlugin())])
    import rladapt.plugins

    monkeypatch.setattr(rladapt.plugins, "get_registry", lambda: registry)
    return registry


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's working directory: the stub and the patch module live here (Ray ships it as working_dir)."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(HERE / STUB, work / STUB)
    (work / f"{PATCH_MODULE}.py").write_text(PATCH_SOURCE)
    make_example_files(work)
    # Ray unpacks a working_dir once per content hash and shares it between jobs: without a file of its own, two
    # tests' identical uploads would share one relative checkpoint directory (and its owner file) on the head
    (work / ".test-id").write_text(f"{uuid.uuid4()}\n")
    monkeypatch.chdir(work)
    return work


def make_example_files(work: Path) -> None:
    """Stand-ins for the data and reward files the GSM8K example names (the stub entrypoint reads none of them):
    every launcher refuses a job whose files are missing where it runs."""
    for name in ("data/gsm8k/train.parquet", "data/gsm8k/test.parquet", "rewards/gsm8k.py"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text("")


def write_spec(
    directory: Path,
    env: dict[str, str] | None = None,
    secrets: list[dict[str, Any]] | None = None,
    name: str = "launch-test",
    framework: str = "verl",
) -> Path:
    """The GSM8K example with a test name, a hostile experiment name, extra env and secrets."""
    data = yaml.safe_load(EXAMPLE.read_text())
    if framework == "openrlhf":  # OpenRLHF has no evaluation before training: the adapter rightly refuses it
        data["spec"]["eval"]["before_training"] = False
    data["metadata"]["name"] = name
    data["spec"]["logging"]["experiment"] = EXPERIMENT
    data["spec"]["env"] = {"HOSTILE": HOSTILE, **(env or {})}
    if secrets:
        data["spec"]["secrets"] = secrets
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def render_job(registry: Registry, spec: Path, framework: str = "verl") -> NativeLaunch:
    return render_native(load_job(spec), framework, registry).native


def stub_report(output: str) -> dict[str, Any]:
    lines = [line for line in output.splitlines() if line.startswith("STUB-REPORT ")]
    assert len(lines) == 1, output
    report: dict[str, Any] = json.loads(lines[0][len("STUB-REPORT ") :])
    return report


def no_pwned(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("pwned")]


def wait_for(predicate: Any, what: str, timeout: float = 120.0, interval: float = 0.2) -> Any:
    """Poll until ``predicate()`` is truthy; the deadline only guards against a hang, it asserts no timing."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(interval)


# --- the shared Ray head ----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _start_head() -> dict[str, Any]:
    # A short temp dir: Ray's AF_UNIX socket paths must stay under 107 bytes.
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp" if os.path.isdir("/tmp") else None)
    gcs, dashboard = _free_port(), _free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    env.pop("RAY_ADDRESS", None)
    ray_bin = str(Path(sys.executable).parent / "ray")
    command = [
        ray_bin, "start", "--head", "--block", f"--port={gcs}",
        "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}", "--include-dashboard=true",
        "--num-cpus=2", "--num-gpus=0", f"--object-store-memory={128 << 20}", f"--temp-dir={temp}",
        "--disable-usage-stats", f"--ray-client-server-port={_free_port()}",
        f"--dashboard-agent-listen-port={_free_port()}", f"--dashboard-agent-grpc-port={_free_port()}",
        f"--node-manager-port={_free_port()}", f"--object-manager-port={_free_port()}",
        f"--runtime-env-agent-port={_free_port()}", f"--metrics-export-port={_free_port()}",
    ]  # fmt: skip
    log = open(Path(temp) / "head.log", "wb")  # noqa: SIM115 - the head outlives this function
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{dashboard}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(
                f"ray start exited with {proc.returncode}:\n{(Path(temp) / 'head.log').read_text()}"
            )
        try:
            with urllib.request.urlopen(f"{url}/api/version", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    wait_for(ready, "the Ray head's dashboard", timeout=180, interval=0.5)
    return {
        "pid": proc.pid,
        "address": url,
        "temp": temp,
        "start_seconds": round(time.monotonic() - started, 1),
    }


def _kill_head(state: dict[str, Any]) -> None:
    # SIGKILL to the group: SIGTERM takes 20-30 s because some agents ignore it; `ray stop` would kill every
    # Ray cluster of this user on the host.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(int(state["pid"]), signal.SIGKILL)
    shutil.rmtree(state["temp"], ignore_errors=True)


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A real Ray head shared by all xdist workers: ``{"address": "http://127.0.0.1:PORT", ...}``."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    lock, state_file = root / "ray-head.lock", root / "ray-head.json"
    with _locked(lock):
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state is None or not _alive(int(state["pid"])):
            state = {**_start_head(), "refs": 0}
            print(f"\nRay head ready in {state['start_seconds']} s at {state['address']}", file=sys.stderr)
        state["refs"] += 1
        state_file.write_text(json.dumps(state))
    yield state
    with _locked(lock):
        current = json.loads(state_file.read_text())
        current["refs"] -= 1
        if current["refs"] <= 0:
            _kill_head(current)
            state_file.unlink()
        else:
            state_file.write_text(json.dumps(current))
