"""``rladapt pool serve``: N replicas of an engine that follow an alias.

The group starts each replica on the version the alias names, registers itself (``<store>/serving/<alias>.json``)
so that ``pool alias`` / ``pool rollback`` switch it two-phase before moving the alias, and then follows the alias:
when the alias names another version than the replicas serve (moved by a tool that does not know the group), it
switches them; a replica that exited is started again on the alias's version. The engine
(``rladapt.pool.engines``: reference, vllm, sglang) says how a replica starts and how it switches.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rladapt.primitives.errors import RladaptError, UsageError

from .engines import ENGINES, Engine, engine_for
from .store import VersionStore
from .switch import Group, group_path, switch, write_group

__all__ = ["ENGINES", "ServeGroup", "check_engine"]


def check_engine(name: str) -> Engine:
    """The engine ``name``, once its server's Python module is importable here; a UsageError (exit 2) saying what
    to install otherwise, before any replica starts (each would exit saying it, N times)."""
    engine = engine_for(name)
    needed = [engine.requires] if engine.requires else []
    if name == "reference":
        needed = ["torch", "transformers"]
    lacking = [module for module in needed if importlib.util.find_spec(module) is None]
    if lacking:
        hint = (
            "install 'rladapt[engine]' (and torch: pip install torch==2.13.0)"
            if name == "reference"
            else f"install {name} where the replicas run (it needs a GPU)"
        )
        raise UsageError(f"--engine {name}: {', '.join(lacking)} is not installed: {hint}")
    return engine


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    #: the GPU it may use (CUDA_VISIBLE_DEVICES), for the engines that run on one
    gpu: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class ServeGroup:
    store: VersionStore
    alias: str
    replicas: int
    engine: str = "reference"
    port: int | None = None
    log_dir: Path | None = None
    members: list[Replica] = field(default_factory=list)

    def start(self, *, timeout: float = 300.0) -> Group:
        driver = engine_for(self.engine)
        if self.replicas < 1:
            raise UsageError(f"--replicas must be at least 1, not {self.replicas}")
        version = self.store.alias_state(self.alias).version
        self.store.path(
            version
        )  # a store without local folders (an object store) cannot be served: said here
        logs = self.log_dir or (self.store.root / "serving" / "logs")
        logs.mkdir(parents=True, exist_ok=True)
        ports = (
            [self.port + i for i in range(self.replicas)]
            if self.port
            else [_free_port() for _ in range(self.replicas)]
        )
        gpus = self._gpus(driver)
        self.members = [
            Replica(port, logs / f"{self.alias}-{port}.log", gpu=gpus[i] if gpus else None)
            for i, port in enumerate(ports)
        ]
        for member in self.members:
            self._spawn(member, version)
        try:
            for member in self.members:
                self._wait(member, timeout)
                driver.started(member.url, self.store, version)
        except RladaptError:
            self.stop()
            raise
        group = Group(self.alias, self.engine, tuple(m.url for m in self.members), os.getpid())
        write_group(self.store, group)
        return group

    @property
    def driver(self) -> Engine:
        return engine_for(self.engine)

    def _gpus(self, driver: Engine) -> list[str] | None:
        """One GPU per replica for the engines that run on one: the i-th of the visible devices (or GPU i), so
        that N vLLM servers do not all start on the first GPU; a UsageError when fewer are visible."""
        if not driver.uses_gpu:
            return None
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        devices = [d for d in visible.split(",") if d.strip()] if visible is not None else None
        if devices is None:
            return [str(i) for i in range(self.replicas)]
        if len(devices) < self.replicas:
            raise UsageError(
                f"{self.replicas} {self.engine} replicas need a GPU each; CUDA_VISIBLE_DEVICES names {len(devices)} "
                f"({visible!r})"
            )
        return devices[: self.replicas]

    def replica_env(self, member: Replica) -> dict[str, str]:
        env = {**os.environ, **self.driver.env()}
        if member.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = member.gpu
        return env

    def _spawn(self, member: Replica, version: str) -> None:
        argv = self.driver.command(self.store, version, host="127.0.0.1", port=member.port)
        with member.log.open("ab") as log:
            member.process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.replica_env(member),
            )

    def _wait(self, member: Replica, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if member.process is not None and member.process.poll() is not None:
                tail = member.log.read_text(errors="replace").strip().splitlines()[-3:]
                raise RladaptError(f"replica on port {member.port} exited: {' | '.join(tail)}")
            try:
                self.driver.health(member.url, timeout=2)
                return
            except RladaptError:
                time.sleep(0.2)
        raise RladaptError(f"replica on port {member.port} did not answer within {timeout:g} s")

    def follow_once(self) -> str | None:
        """One round of following: restart exited replicas, converge them on the alias. Returns what happened."""
        wanted = self.store.alias_state(self.alias).version
        for member in self.members:
            if member.process is not None and member.process.poll() is not None:
                self._spawn(member, wanted)
                self._wait(member, 300)
                self.driver.started(member.url, self.store, wanted)
                return f"restarted the replica on port {member.port} on {wanted}"
        served = set()
        for member in self.members:
            try:
                served.add(self.driver.served(member.url))
            except RladaptError:
                return None  # a replica between states: look again next round
        if served != {wanted}:
            result = switch([m.url for m in self.members], wanted, engine=self.engine, store=self.store)
            return (
                f"switched to {wanted}"
                if result.committed
                else f"could not switch to {wanted}: {result.failures}"
            )
        return None

    def follow(self, *, interval: float = 2.0, say: Callable[[str], None] = print) -> None:
        while True:
            event = self.follow_once()
            if event:
                say(event)
            time.sleep(interval)

    def stop(self) -> None:
        for member in self.members:
            if member.process is not None and member.process.poll() is None:
                member.process.terminate()
        for member in self.members:
            if member.process is not None:
                try:
                    member.process.wait(10)
                except subprocess.TimeoutExpired:
                    member.process.kill()
                    member.process.wait()
        group_path(self.store, self.alias).unlink(missing_ok=True)
