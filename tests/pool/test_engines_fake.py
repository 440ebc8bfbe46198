"""Switching vLLM and SGLang replicas through their own protocols, against fake servers (vLLM and SGLang need a
GPU): ``tests/pool/fake_engines.py`` implements the routes and payloads the adapters cite from each engine's code.

What must hold: a switch moves every replica and then the alias; a replica that answers the reload and keeps the
old weights fails the switch; a replica that fails mid-switch sends the ones that switched back to the old
version; a damaged version reaches no replica; a missing engine is refused before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rladapt.pool import Source, SwitchFailed, VersionStore, check_engine, move_alias, rollback_alias, switch
from rladapt.pool.engines import SglangEngine, VllmEngine
from rladapt.pool.switch import Group, write_group
from rladapt.primitives.errors import UsageError
from tests.pool.fake_engines import FakeEngine, FakeSglang, FakeVllm

REPO = Path(__file__).resolve().parents[2]


def _folder(path: Path, content: bytes) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "llama"}')
    (path / "model.safetensors").write_bytes(content)
    return path


@pytest.fixture
def store(tmp_path: Path) -> VersionStore:
    pool = VersionStore(tmp_path / "pool")
    for step in (1, 2, 3):
        folder = _folder(tmp_path / f"step{step}", f"weights of step {step}".encode() * 64)
        pool.publish(folder, ["config.json", "model.safetensors"], source=Source(run_id="r", step=step))
    pool.set_alias("serving", "v00000001")
    return pool


def folder(store: VersionStore, version: str) -> str:
    return str(store.path(version).resolve())


@pytest.fixture
def fakes() -> Iterator[list[FakeEngine]]:
    started: list[FakeEngine] = []
    yield started
    for fake in started:
        fake.stop()


def group_of(store: VersionStore, kind: str, replicas: list[FakeEngine]) -> list[str]:
    """Register the fakes as the group following ``serving`` (what ``pool serve`` writes), so that ``pool alias``
    switches them first."""
    urls = [fake.url for fake in replicas]
    write_group(store, Group("serving", kind, tuple(urls), os.getpid()))
    return urls


def start(fakes: list[FakeEngine], kind: str, store: VersionStore, *behaviours: str) -> list[FakeEngine]:
    made = []
    for behaviour in behaviours:
        cls = FakeVllm if kind == "vllm" else FakeSglang
        fake = cls(folder(store, "v00000001"), version="v00000001", behaviour=behaviour).start()
        fakes.append(fake)
        made.append(fake)
    return made


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_a_fake_group_switches_every_replica_then_the_alias_and_rolls_back(
    kind: str, store: VersionStore, fakes: list[FakeEngine]
) -> None:
    replicas = start(fakes, kind, store, "ok", "ok")
    group_of(store, kind, replicas)
    state, result = move_alias(store, "serving", "v00000002")
    assert result is not None and result.committed, result
    assert state.version == "v00000002"
    for fake in replicas:
        assert (fake.version, fake.model) == ("v00000002", folder(store, "v00000002"))
    state, result = rollback_alias(store, "serving")
    assert state.version == "v00000001" and result is not None and result.committed
    assert {fake.version for fake in replicas} == {"v00000001"}


def test_fake_vllm_is_reloaded_from_disk_between_a_keep_pause_and_a_resume(
    store: VersionStore, fakes: list[FakeEngine]
) -> None:
    (fake,) = start(fakes, "vllm", store, "ok")
    result = switch([fake.url], "v00000002", engine="vllm", store=store)
    assert result.committed, result
    assert fake.routes() == [
        "/weight_checker", "/pause?mode=keep", "/collective_rpc", "/collective_rpc", "/update_weight_version",
        "/resume", "/weight_checker",
    ]  # fmt: skip
    rpc = [body for _, path, body in fake.calls if path == "/collective_rpc"]
    assert rpc == [
        {"method": "update_config", "args": [{"model_config": {"model": folder(store, "v00000002")}}]},
        {"method": "reload_weights"},
    ]
    assert not fake.paused


def test_fake_sglang_reloads_from_disk_naming_the_version_between_pause_and_continue(
    store: VersionStore, fakes: list[FakeEngine]
) -> None:
    (fake,) = start(fakes, "sglang", store, "ok")
    assert switch([fake.url], "v00000003", engine="sglang", store=store).committed
    assert fake.routes() == ["/pause_generation", "/update_weights_from_disk", "/continue_generation"]
    update = next(body for _, path, body in fake.calls if path == "/update_weights_from_disk")
    assert update == {"model_path": folder(store, "v00000003"), "weight_version": "v00000003"}
    assert not fake.paused


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_a_fake_that_answers_the_reload_but_keeps_the_old_weights_fails_the_switch(
    kind: str, store: VersionStore, fakes: list[FakeEngine]
) -> None:
    good, stale = start(fakes, kind, store, "ok", "stale")
    group_of(store, kind, [good, stale])
    old_weights = good.weights
    with pytest.raises(SwitchFailed, match="not every replica could take v00000002") as caught:
        move_alias(store, "serving", "v00000002")
    assert stale.url in caught.value.message
    assert store.alias_state("serving").version == "v00000001"
    # both serve v00000001 again, by name and by weights: the good one was committed back
    for fake in (good, stale):
        assert (fake.version, fake.weights) == ("v00000001", old_weights), fake.kind


def test_a_fake_sglang_that_reloads_but_keeps_reporting_the_old_version_fails_the_switch(
    store: VersionStore, fakes: list[FakeEngine]
) -> None:
    good, unnamed = start(fakes, "sglang", store, "ok", "unnamed")
    result = switch([good.url, unnamed.url], "v00000002", engine="sglang", store=store)
    assert not result.committed
    assert "reports v00000001, not v00000002" in result.failures[unnamed.url]
    assert result.rolled_back == {good.url: "v00000001", unnamed.url: "v00000001"}
    # the one that loaded v00000002's weights under the old name was reloaded too, not trusted by its name
    assert [fake.model for fake in (good, unnamed)] == [folder(store, "v00000001")] * 2


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_a_fake_replica_failing_mid_switch_sends_the_others_back(
    kind: str, store: VersionStore, fakes: list[FakeEngine]
) -> None:
    replicas = start(fakes, kind, store, "ok", "ok", "fail")
    urls = group_of(store, kind, replicas)
    with pytest.raises(SwitchFailed, match="CUDA out of memory"):
        move_alias(store, "serving", "v00000002")
    assert store.alias_state("serving").version == "v00000001"
    assert [fake.version for fake in replicas] == ["v00000001"] * 3
    assert [fake.model for fake in replicas] == [folder(store, "v00000001")] * 3
    result = switch(urls, "v00000002", engine=kind, store=store)
    assert (result.staged, result.committed) == (True, False)
    assert result.rolled_back == dict.fromkeys(urls, "v00000001")
    assert list(result.failures) == [urls[2]]


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_a_damaged_version_reaches_no_fake_replica(
    kind: str, store: VersionStore, fakes: list[FakeEngine]
) -> None:
    replicas = start(fakes, kind, store, "ok", "ok")
    group_of(store, kind, replicas)
    weights = store.path("v00000003") / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[0] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(SwitchFailed, match="v00000003 does not verify: model.safetensors: sha256 differs"):
        move_alias(store, "serving", "v00000003")
    for fake in replicas:  # nothing but reads: no pause, no reload
        assert fake.routes() in ([], ["/weight_checker"]), fake.routes()
        assert fake.version == "v00000001"


def test_fake_vllm_without_dev_mode_is_refused_naming_the_route(
    store: VersionStore, fakes: list[FakeEngine]
) -> None:
    fake = FakeVllm(folder(store, "v00000001"), version="v00000001", dev_mode=False).start()
    fakes.append(fake)
    result = switch([fake.url], "v00000002", engine="vllm", store=store)
    assert not result.staged
    assert "GET /weight_info: HTTP 404" in result.failures[fake.url]


def test_the_engines_start_commands_name_the_version_folder(store: VersionStore) -> None:
    vllm = VllmEngine().command(store, "v00000002", host="127.0.0.1", port=8001)
    assert vllm[1:4] == ["-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert vllm[4] == folder(store, "v00000002") and VllmEngine().env() == {"VLLM_SERVER_DEV_MODE": "1"}
    sglang = SglangEngine().command(store, "v00000002", host="127.0.0.1", port=8001)
    assert sglang[sglang.index("--model-path") + 1] == folder(store, "v00000002")
    assert sglang[sglang.index("--weight-version") + 1] == "v00000002"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_pool_serve_refuses_an_engine_that_is_not_installed_before_starting_anything(
    engine: str, store: VersionStore
) -> None:
    if check_engine.__module__ and _installed(engine):
        pytest.skip(f"{engine} is installed here")
    with pytest.raises(UsageError, match=f"--engine {engine}: {engine} is not installed"):
        check_engine(engine)
    done = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "pool", "serve", "--alias", "serving", "--engine", engine,
         "--store", str(store.root)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{engine} is not installed" in done.stderr and "Traceback" not in done.stderr
    assert not (store.root / "serving").exists()


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_pool_serve_group_of_fake_engine_processes_starts_switches_and_restarts(
    kind: str, store: VersionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ServeGroup with the engine's own start-up steps; only the server program is the fake (run as a process)."""
    from rladapt.pool import ServeGroup
    from rladapt.pool.engines import Engine

    cls: type[Engine] = VllmEngine if kind == "vllm" else SglangEngine

    def fake_command(self: Engine, pool: VersionStore, version: str, *, host: str, port: int) -> list[str]:
        argv = [sys.executable, "-m", "tests.pool.fake_engines", kind, "--model", folder(pool, version),
                "--port", str(port)]  # fmt: skip
        return argv + (["--version", version] if kind == "sglang" else [])  # vLLM is named by `started`

    monkeypatch.setattr(cls, "command", fake_command)
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    with pytest.raises(UsageError, match=f"2 {kind} replicas need a GPU each; CUDA_VISIBLE_DEVICES names 1"):
        ServeGroup(store, "serving", replicas=2, engine=kind).start(timeout=60)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    group = ServeGroup(store, "serving", replicas=2, engine=kind)
    started = group.start(timeout=60)
    try:
        # each replica process sees its own GPU, and the engine's own environment
        environs = [_environ(m.process.pid) for m in group.members if m.process is not None]
        assert [e.get("CUDA_VISIBLE_DEVICES") for e in environs] == ["5", "7"]
        assert all(e.get("VLLM_SERVER_DEV_MODE") == ("1" if kind == "vllm" else None) for e in environs)
        driver = cls()
        assert [driver.served(url) for url in started.replicas] == ["v00000001"] * 2
        _, result = move_alias(store, "serving", "v00000002")
        assert result is not None and result.committed
        assert [driver.served(url) for url in started.replicas] == ["v00000002"] * 2
        process = group.members[0].process
        assert process is not None
        process.kill()
        process.wait()
        # the restarted replica loads what the alias names, and the follower has nothing more to do
        assert group.follow_once() == f"restarted the replica on port {group.members[0].port} on v00000002"
        assert driver.holds(started.replicas[0], store, "v00000002")
        assert group.follow_once() is None
    finally:
        group.stop()


def _environ(pid: int) -> dict[str, str]:
    """A running process's environment, as Linux shows it."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_a_compare_and_swap_that_fails_switches_no_fake_replica(
    store: VersionStore, fakes: list[FakeEngine]
) -> None:
    from rladapt.pool import AliasMoved

    replicas = start(fakes, "sglang", store, "ok", "ok")
    group_of(store, "sglang", replicas)
    with pytest.raises(AliasMoved, match="names v00000001, not v00000002"):
        move_alias(store, "serving", "v00000003", if_current="v00000002")
    assert all(fake.routes() == [] for fake in replicas)
