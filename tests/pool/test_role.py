"""``spec.pool.serve``: the serving group a launch renders as a service role beside the training job
(``NativeLaunch.services``), checked where the contract is (``rladapt render --format json``), and the role's own
command run for real (``rladapt pool serve``)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from rladapt.pool import ENGINES, Source, VersionStore
from rladapt.pool.switch import get_json
from rladapt.primitives.spec import PoolEngine

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "grpo-tiny-trl.yaml"
TINY = REPO / "examples" / "tiny" / "model"


def render(*overrides: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt", "render", "-f", "trl", "--format", "json", str(SPEC), *overrides],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip


def test_the_spec_engines_are_the_pools() -> None:
    assert typing.get_args(PoolEngine) == ENGINES


def test_a_spec_without_pool_serve_renders_no_service() -> None:
    done = render("spec.pool.store=/shared/pool")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["services"] == []


def test_pool_serve_renders_one_role_running_pool_serve_with_its_ports() -> None:
    done = render("spec.pool.store=/shared/pool", "spec.pool.serve.alias=candidate", "spec.pool.serve.replicas=3",
                  "spec.pool.serve.port=9100")  # fmt: skip
    assert done.returncode == 0, done.stderr
    launch = json.loads(done.stdout)
    (role,) = launch["services"]
    python = launch["argv"][0]  # the job's interpreter (spec.runtime.python) runs the role too
    assert role["name"] == "pool-serve"
    assert role["argv"] == [python, "-m", "rladapt", "pool", "serve", "--store", "/shared/pool", "--alias",
                            "candidate", "--replicas", "3", "--engine", "reference", "--port", "9100", "--wait"]  # fmt: skip
    assert [(p["name"], p["port"], p["purpose"]) for p in role["ports"]] == [
        ("serve-0", 9100, "serving"), ("serve-1", 9101, "serving"), ("serve-2", 9102, "serving"),
    ]  # fmt: skip
    assert (role["gpus"], role["cpus"], role["restart"], role["outlives_job"]) == (0, 3, "on-failure", False)


def test_a_vllm_or_sglang_group_asks_one_gpu_per_replica() -> None:
    for engine in ("vllm", "sglang"):
        done = render("spec.pool.store=/p", f"spec.pool.serve.engine={engine}", "spec.pool.serve.replicas=2")
        assert done.returncode == 0, done.stderr
        (role,) = json.loads(done.stdout)["services"]
        assert role["gpus"] == 2 and role["argv"][role["argv"].index("--engine") + 1] == engine


def test_a_bad_pool_serve_is_a_spec_error_naming_each_field() -> None:
    done = render("spec.pool.store=/p", "spec.pool.serve.engine=tgi", "spec.pool.serve.alias=9x",
                  "spec.pool.serve.replicas=0", "spec.pool.serve.port=65535")  # fmt: skip
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert (
        "spec.pool.serve.engine: wrong value; expected 'reference', 'vllm' or 'sglang', found 'tgi'"
        in done.stderr
    )
    assert "spec.pool.serve.alias" in done.stderr and "'9x'" in done.stderr
    assert "spec.pool.serve.replicas" in done.stderr
    done = render("spec.pool.store=/p", "spec.pool.serve.replicas=2", "spec.pool.serve.port=65535")
    assert done.returncode == 2 and "would need ports up to 65536; the last port is 65535" in done.stderr
    done = render("spec.pool.serve.replicas=2")
    assert done.returncode == 2 and "spec.pool.store" in done.stderr


@pytest.mark.engine
def test_the_rendered_role_command_waits_for_the_alias_then_serves_it(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the reference engine needs torch")
    pytest.importorskip("transformers", reason="the reference engine needs transformers")
    store = VersionStore(tmp_path / "pool")
    model = tmp_path / "model"
    shutil.copytree(TINY, model)
    store.publish(model, source=Source(run_id="r", step=1))
    done = render(f"spec.pool.store={store.root}", "spec.pool.serve.port=0")
    assert done.returncode == 2  # port 0 is not a port a launcher can declare
    free = _free_port()
    done = render(f"spec.pool.store={store.root}", f"spec.pool.serve.port={free}")
    (role,) = json.loads(done.stdout)["services"]
    argv = [sys.executable, *role["argv"][1:]]  # this test's interpreter stands in for the job's
    serve = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    try:
        assert serve.stdout is not None
        # beside a run the alias is set later (by the publisher or a gate): the role waits for it, then serves
        first = serve.stdout.readline()
        assert first.strip() == "waiting for the alias serving to name a version", first
        assert serve.poll() is None
        store.set_alias("serving", "v00000001")
        first = serve.stdout.readline()
        assert first.strip() == f"serving serving with 1 reference replica(s): http://127.0.0.1:{free}", first
        assert get_json(f"http://127.0.0.1:{free}", "/version")["version"] == "v00000001"
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
