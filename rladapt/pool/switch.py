"""Switching N serving replicas to a version in two phases, and moving an alias only after they switched.

Phase one asks every replica to *stage* the version: its files are verified against the manifest and the replica
must be ready to load them (the reference engine loads them beside what it serves). Only if every replica staged
does phase two ask each to *commit* through its engine's own reload (``rladapt.pool.engines``), and each must then
*report* the version: an engine that answers the reload and keeps the old weights is a failed commit. If any
replica could not stage, every replica drops what it staged and all keep serving the old version; if any could not
commit, every replica is committed back to the version it served before. Either way the alias does not move.
What stays non-atomic is the window of phase two itself (the replicas reload one beside the other), and a replica
that cannot even go back: the result names it and the group's follower converges it on the alias's version.
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

from .engines import Engine, engine_for
from .store import AliasMoved, AliasState, VersionStore

__all__ = ["Group", "SwitchFailed", "SwitchResult", "move_alias", "read_group", "rollback_alias", "switch"]


class SwitchFailed(RladaptError):
    """Not every replica could take the version: none switched, the alias did not move (exit 1)."""


@dataclass
class SwitchResult:
    version: str
    #: every replica staged the version (phase one held); False means none switched
    staged: bool
    #: every replica committed and reports the version; False means they were committed back (see rolled_back)
    committed: bool
    #: replica URL -> why it could not stage or commit (only the failures)
    failures: dict[str, str] = field(default_factory=dict)
    #: after a failed commit: replica URL -> the version it serves again, or why it could not go back
    rolled_back: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "staged": self.staged, "committed": self.committed,
                "failures": self.failures, "rolled_back": self.rolled_back}  # fmt: skip

    def reasons(self) -> str:
        text = "; ".join(f"{url}: {why}" for url, why in self.failures.items())
        if self.rolled_back:
            text += " (back: " + ", ".join(f"{url} {back}" for url, back in self.rolled_back.items()) + ")"
        return text


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


def _attempt(step: Any) -> str | None:
    """Run ``step``; None when it worked, else why not (one line)."""
    try:
        step()
        return None
    except RladaptError as exc:
        return exc.message


def _take(engine: Engine, url: str, store: VersionStore | None, version: str, timeout: float) -> None:
    """Commit ``version`` on one replica and check that it reports it."""
    engine.commit(url, store, version, timeout=timeout)
    reported = engine.served(url, timeout=min(timeout, 30.0))
    if reported != version:
        raise RladaptError(f"the engine answered the commit but reports {reported}, not {version}")


def switch(
    replicas: list[str],
    version: str,
    *,
    timeout: float = 600.0,
    engine: str | Engine = "reference",
    store: VersionStore | None = None,
) -> SwitchResult:
    """Two-phase switch of ``replicas`` (base URLs) of ``engine`` to ``version``; see the module's docstring.

    ``store`` is the pool the version is in: the vLLM and SGLang engines load its folder, and the switch verifies
    the files there first (the reference engine verifies them itself)."""
    driver = engine_for(engine) if isinstance(engine, str) else engine
    workers = max(1, len(replicas))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        before: dict[str, str | None] = {}
        failures: dict[str, str] = {}

        def look(url: str) -> None:
            before[url] = driver.served(url, timeout=min(timeout, 30.0))

        for url, why in zip(replicas, pool.map(lambda u: _attempt(lambda: look(u)), replicas), strict=True):
            if why is not None:
                failures[url] = f"stage: {why}"
        if not failures and not driver.verifies_itself:
            if store is None:
                raise RladaptError(f"switching {driver.name} replicas needs the pool {version} is in")
            problems = store.verify(version)
            if problems:
                failures = {
                    url: f"stage: {version} does not verify: {'; '.join(problems)}" for url in replicas
                }
        if not failures:
            staged = pool.map(
                lambda u: _attempt(lambda: driver.stage(u, store, version, timeout=timeout)), replicas
            )
            failures = {
                url: f"stage: {why}" for url, why in zip(replicas, staged, strict=True) if why is not None
            }
        if failures:
            list(
                pool.map(lambda u: _attempt(lambda: driver.abort(u)), replicas)
            )  # an unreachable one has none
            return SwitchResult(version, False, False, failures)
        committed = pool.map(lambda u: _attempt(lambda: _take(driver, u, store, version, timeout)), replicas)
        failures = {
            url: f"commit: {why}" for url, why in zip(replicas, committed, strict=True) if why is not None
        }
        if not failures:
            return SwitchResult(version, True, True)

        def back(url: str) -> str:
            old = before.get(url)
            if old is None:
                return "nothing to go back to (it reported no version)"
            try:
                if driver.holds(url, store, old, timeout=min(timeout, 30.0)):
                    return old  # its commit failed before anything changed: it still serves the old version
            except RladaptError as exc:
                return f"could not go back to {old}: {exc.message}"

            def go_back() -> None:
                driver.stage(url, store, old, timeout=timeout)
                _take(driver, url, store, old, timeout)

            why = _attempt(go_back)
            return old if why is None else f"could not go back to {old}: {why}"

        rolled = dict(zip(replicas, pool.map(back, replicas), strict=True))
    return SwitchResult(version, True, False, failures, rolled)


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
    move the alias only if every replica took the version (the ones that did are committed back otherwise)."""
    version = store.resolve(ref)
    group = read_group(store, name)
    result = None
    if group is not None:
        if if_current is not None:  # a compare-and-swap that will fail must not switch the replicas first
            now_at = store.aliases().get(name, "none")
            wanted = if_current if if_current == "none" else store.resolve(if_current)
            if now_at != wanted:
                raise AliasMoved(f"alias {name!r} names {now_at}, not {wanted}: not moved to {version}")
        result = switch(list(group.replicas), version, timeout=timeout, engine=group.engine, store=store)
        if not result.committed:
            raise SwitchFailed(
                f"alias {name!r} stays where it was: not every replica could take {version} ({result.reasons()})"
            )
    try:
        return store.set_alias(name, version, if_current=if_current, by=by), result
    except AliasMoved:
        if group is not None:  # moved by someone else between the check and the swap: serve what it names now
            switch(list(group.replicas), store.alias_state(name).version, timeout=timeout, engine=group.engine,
                   store=store)  # fmt: skip
        raise


def rollback_alias(store: VersionStore, name: str, *, by: str | None = None,
                   timeout: float = 600.0) -> tuple[AliasState, SwitchResult | None]:  # fmt: skip
    """``rollback`` through the group that follows the alias, as ``move_alias`` does for a move."""
    state = store.alias_state(name)
    group = read_group(store, name)
    result = None
    if group is not None and state.previous:
        back = state.previous[-1]
        result = switch(list(group.replicas), back, timeout=timeout, engine=group.engine, store=store)
        if not result.committed:
            raise SwitchFailed(
                f"alias {name!r} stays where it was: not every replica could take {back} ({result.reasons()})"
            )
    return store.rollback(name, by=by), result
