"""The reference engine's side of a switch: rladapt's own server (``rladapt.pool.engine``) has stage and commit
routes, so staging loads the version beside the served one and commit is one reference assignment."""

from __future__ import annotations

import sys

from ..store import VersionStore
from .base import Engine
from .http import call

__all__ = ["ReferenceEngine"]


class ReferenceEngine(Engine):
    name = "reference"
    requires = "transformers"
    verifies_itself = True  # its /stage re-hashes the files on the replica's own host

    def command(self, store: VersionStore, version: str, *, host: str, port: int) -> list[str]:
        return [sys.executable, "-m", "rladapt.pool.engine", "--store", str(store.root), "--version", version,
                "--host", host, "--port", str(port)]  # fmt: skip

    def served(self, url: str, *, timeout: float = 10.0) -> str | None:
        version = call(url, "/version", timeout=timeout).get("version")
        return str(version) if version else None

    def stage(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 600.0) -> None:
        call(url, "/stage", {"version": version}, timeout=timeout)

    def commit(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 600.0) -> None:
        call(url, "/commit", {"version": version}, timeout=timeout)

    def abort(self, url: str, *, timeout: float = 30.0) -> None:
        call(url, "/abort", {}, timeout=timeout)
