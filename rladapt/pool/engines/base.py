"""What rladapt needs from a serving engine to switch N replicas between pool versions without a mixed state.

An ``Engine`` speaks one engine's own protocol to one replica (a base URL). The switch (``rladapt.pool.switch``)
drives every replica of a group through the same steps:

1. ``served(url)``: the version the replica reports now (the version to go back to);
2. ``stage(url, store, version)``: everything that can fail *before* anything served changes. The files are checked
   against the manifest (by the replica itself for the reference engine, by rladapt on the path the engine will
   read for the others) and the replica must answer its health route;
3. ``commit(url, store, version)``: the engine's own reload, naming the version;
4. ``served(url)`` again: the replica must *report* the new version. An update that answers 200 and keeps serving
   the old weights is a failure (verl issue 7495, TRL issue 5312), never a success;
5. when a replica fails 3 or 4, every replica that already committed is committed back to the version it served.

``command`` starts one replica; ``started`` runs once it answers (vLLM learns its first version there).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path

from rladapt.primitives.errors import RladaptError

from ..store import VersionStore
from .http import call

__all__ = ["Engine", "EngineFailed"]


class EngineFailed(RladaptError):
    """A replica refused or botched a step of a switch; the message says which step and why."""


class Engine(ABC):
    #: the name ``pool serve --engine`` takes
    name: str
    #: the Python module the engine's server needs (checked before any replica starts); None: rladapt's own
    requires: str | None = None
    #: True when the replica verifies the version's files itself (the reference engine); otherwise the switch
    #: verifies them once, on the store path the engine will load, before asking any replica to stage
    verifies_itself: bool = False
    #: each replica runs on one GPU of its own (``pool serve`` gives replica i the i-th visible device)
    uses_gpu: bool = False

    @abstractmethod
    def command(self, store: VersionStore, version: str, *, host: str, port: int) -> list[str]:
        """The argv starting one replica that serves ``version`` on ``host:port``."""

    def env(self) -> Mapping[str, str]:
        """What the replica's environment needs besides the caller's."""
        return {}

    def health(self, url: str, *, timeout: float = 5.0) -> None:
        """Return when the replica answers its health route; an ``EngineCallFailed`` otherwise."""
        call(url, "/health", timeout=timeout)

    def started(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 60.0) -> None:
        """Runs once after the replica first answers; the default has nothing to do."""
        return None

    @abstractmethod
    def served(self, url: str, *, timeout: float = 10.0) -> str | None:
        """The version the replica reports serving (None when it reports none)."""

    def holds(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 10.0) -> bool:
        """Whether the replica serves ``version`` by every sign it gives (after a failed commit: whether it must
        be committed back); the default trusts the version it reports."""
        return self.served(url, timeout=timeout) == version

    def stage(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 600.0) -> None:
        """Make ready to serve ``version`` without changing what is served; the default checks health only (the
        files were verified by the switch, see ``verifies_itself``)."""
        self.health(url, timeout=min(timeout, 30.0))

    @abstractmethod
    def commit(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 600.0) -> None:
        """Serve ``version`` from now on, through the engine's own reload."""

    def abort(self, url: str, *, timeout: float = 30.0) -> None:
        """Drop what ``stage`` prepared; the default has nothing to drop."""
        return None


def version_folder(store: VersionStore | None, version: str) -> str:
    """The absolute path an engine on this host loads ``version`` from."""
    if store is None:
        raise EngineFailed(f"cannot name {version}'s folder without the pool it is in")
    return str(Path(store.path(version)).resolve())
