"""Switching N serving replicas to a version in two phases, and moving an alias only after they switched.

Phase one asks every replica to *stage* the version: verify its files against the manifest and load them beside
what it serves. Only if every replica staged does phase two ask each to *commit*; if any could not stage (damaged
files, out of memory, a dead replica), every replica is told to drop what it staged and all keep serving the old
version, and the alias does not move. What stays non-atomic is a replica dying between its stage and its commit:
the switch then reports which replica did not commit, and the group's follower converges it when it comes back.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rladapt.files import write_text
from rladapt.primitives.errors import RladaptError

from .store import AliasState, VersionStore

__all__ = ["Group", "SwitchFailed", "SwitchResult", "move_alias", "read_group", "rollback_alias", "switch"]


class SwitchFailed(RladaptError):
    """Not every replica could take the version: none switched, the alias did not move (exit 1)."""


@dataclass
class SwitchResult:
    version: str
    #: every replica staged the version (phase one held); False means none switched
    staged: bool
    #: every replica committed; a replica that died between its stage and its commit makes this False
    committed: bool
    #: replica URL -> why it could not stage or commit (only the failures)
    failures: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "staged": self.staged, "committed": self.committed,
                "failures": self.failures}  # fmt: skip


def _post(url: str, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(
        url.rstrip("/") + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return dict(json.loads(response.read() or b"{}"))
    except urllib.error.HTTPError as exc:
        try:
            reason = json.loads(exc.read()).get("error", exc.reason)
        except ValueError:
            reason = exc.reason
        raise RladaptError(f"HTTP {exc.code}: {reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise RladaptError(f"unreachable: {getattr(exc, 'reason', exc)}") from None


def get_json(url: str, path: str, timeout: float = 5.0) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as response:
            return dict(json.loads(response.read() or b"{}"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise RladaptError(f"{url}: unreachable: {getattr(exc, 'reason', exc)}") from None


def switch(replicas: list[str], version: str, *, timeout: float = 600.0) -> SwitchResult:
    """Two-phase switch of ``replicas`` (base URLs) to ``version``; see the module's docstring."""

    def call(url: str, path: str, body: dict[str, Any]) -> str | None:
        try:
            _post(url, path, body, timeout)
            return None
        except RladaptError as exc:
            return exc.message

    with ThreadPoolExecutor(max_workers=max(1, len(replicas))) as pool:
        staged = dict(
            zip(replicas, pool.map(lambda u: call(u, "/stage", {"version": version}), replicas), strict=True)
        )
        failures = {url: f"stage: {why}" for url, why in staged.items() if why is not None}
        if failures:
            list(pool.map(lambda u: call(u, "/abort", {}), replicas))  # an unreachable one has nothing staged
            return SwitchResult(version, False, False, failures)
        committed = dict(
            zip(replicas, pool.map(lambda u: call(u, "/commit", {"version": version}), replicas), strict=True)
        )
    failures = {url: f"commit: {why}" for url, why in committed.items() if why is not None}
    return SwitchResult(version, True, not failures, failures)


@dataclass(frozen=True)
class Group:
    """A serving group following an alias (``<store>/serving/<alias>.json``, written by ``pool serve``)."""

    alias: str
    engine: str
    replicas: tuple[str, ...]
    pid: int

    def to_json(self) -> dict[str, Any]:
        return {"alias": self.alias, "engine": self.engine, "replicas": list(self.replicas), "pid": self.pid}


def group_path(store: VersionStore, alias: str) -> Path:
    return store.root / "serving" / f"{alias}.json"


def write_group(store: VersionStore, group: Group) -> None:
    write_text(group_path(store, group.alias), json.dumps(group.to_json(), indent=2) + "\n",
               what="serving group", make_parents=True)  # fmt: skip


def read_group(store: VersionStore, alias: str) -> Group | None:
    """The group following ``alias``, if one is registered and its process is alive."""
    try:
        data = json.loads(group_path(store, alias).read_text())
        group = Group(str(data["alias"]), str(data["engine"]), tuple(data["replicas"]), int(data["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(group.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return group


def move_alias(store: VersionStore, name: str, ref: str, *, if_current: str | None = None,
               by: str | None = None, timeout: float = 600.0) -> tuple[AliasState, SwitchResult | None]:  # fmt: skip
    """Point alias ``name`` at ``ref``; when a serving group follows it, switch the group first (two-phase) and
    move the alias only if every replica staged the version. A replica that died after staging does not hold the
    alias back: the others serve the version, and the group restarts the dead one on what the alias names."""
    version = store.resolve(ref)
    group = read_group(store, name)
    result = None
    if group is not None:
        result = switch(list(group.replicas), version, timeout=timeout)
        if not result.staged:
            reasons = "; ".join(f"{url}: {why}" for url, why in result.failures.items())
            raise SwitchFailed(
                f"alias {name!r} stays where it was: not every replica could take {version} ({reasons})"
            )
    return store.set_alias(name, version, if_current=if_current, by=by), result


def rollback_alias(store: VersionStore, name: str, *, by: str | None = None,
                   timeout: float = 600.0) -> tuple[AliasState, SwitchResult | None]:  # fmt: skip
    """``rollback`` through the group that follows the alias, as ``move_alias`` does for a move."""
    state = store.alias_state(name)
    group = read_group(store, name)
    result = None
    if group is not None and state.previous:
        back = state.previous[-1]
        result = switch(list(group.replicas), back, timeout=timeout)
        if not result.staged:
            reasons = "; ".join(f"{url}: {why}" for url, why in result.failures.items())
            raise SwitchFailed(
                f"alias {name!r} stays where it was: not every replica could take {back} ({reasons})"
            )
    return store.rollback(name, by=by), result
