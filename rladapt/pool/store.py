"""The version store: immutable version folders, atomically replaced aliases, leases, and garbage collection.

Layout of a store (a directory)::

    versions/v00000001/   one folder per version: its files and manifest.json; never modified once it appears
    aliases/NAME.json     the version an alias names and the stack of what it named before (``rollback``)
    leases/v00000001/H.json  holder H keeps v00000001 alive until ``expires``
    tmp/                  publishes under way (each with a ``.publisher`` file naming its process)
    quarantine/           versions GC found damaged: moved aside, never deleted
    trash/                versions GC removes: renamed here first (their disappearance is one rename), then deleted
    counter               the last version number handed out: numbers are never reused
    .lock                 the store lock (``flock``)

Why folders that never change: a consumer that has resolved ``serving`` to v12 may read v12's files for minutes;
if a publish could rewrite v12 in place, a replica could load half of one version and half of another. A version
appears by one rename of a complete, verified, fsynced folder, so a reader sees all of it or none of it.

Every change of shared state (a new version number, an alias, a lease, a GC decision) is made under the store
lock, so GC never deletes a version an alias or a lease is being pointed at in the same instant. The lock is an
``flock``, which local file systems honour; on a network file system that does not, run one writer at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rladapt.files import sync_dir, write_text
from rladapt.plugins.weights import hf_files
from rladapt.primitives.errors import OutputError, RladaptError, UsageError
from rladapt.processes import alive

from .manifest import (
    MANIFEST,
    DamagedManifest,
    FileEntry,
    Manifest,
    Source,
    content_digest,
    file_entry,
    version_name,
)

__all__ = ["AliasState", "GcReport", "Lease", "VersionStore", "hf_weight_files"]

_VERSION = re.compile(r"^v(\d{8})$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,63}$")
#: A publish folder in ``tmp/`` whose process cannot be checked (another host) is swept after this long.
_FOREIGN_TMP_AGE = 24 * 3600.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def hf_weight_files(folder: Path) -> list[str]:
    """The names of ``folder``'s Hugging Face model files; a ``NoWeights`` (exit 2) when it is not a complete
    model folder (``rladapt.plugins.weights.hf_files``)."""
    return sorted(hf_files(folder))


@dataclass(frozen=True)
class AliasState:
    name: str
    version: str
    #: what the alias named before, oldest first (``rollback`` returns to the last of them)
    previous: tuple[str, ...]
    history: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "previous": list(self.previous),
                "history": list(self.history)}  # fmt: skip


@dataclass(frozen=True)
class Lease:
    version: str
    holder: str
    expires: float
    taken: str

    def alive(self, at: float) -> bool:
        return self.expires > at

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "holder": self.holder, "expires": self.expires, "taken": self.taken}


@dataclass
class GcReport:
    deleted: list[str] = field(default_factory=list)
    kept: dict[str, list[str]] = field(default_factory=dict)
    quarantined: dict[str, str] = field(default_factory=dict)
    damaged_kept: dict[str, str] = field(default_factory=dict)
    swept: list[str] = field(default_factory=list)
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "deleted": self.deleted, "kept": self.kept,
                "quarantined": self.quarantined, "damaged_kept": self.damaged_kept, "swept": self.swept}  # fmt: skip


class VersionStore:
    """One store of versions at ``root`` (created on first write): a directory or a ``file://`` URL. A store at
    any other fsspec URL is an ``ObjectVersionStore`` (``rladapt.pool.objects``); ``open_store`` picks the kind
    from the text the user gave."""

    def __init__(self, root: Path | str, **kwargs: Any) -> None:
        text = str(root)
        if type(self) is VersionStore and "://" in text and not text.startswith("file://"):
            # a URL read as a directory would write to a folder named "memory:" beside the caller: refused
            raise UsageError(
                f"{text!r} is a URL: open it with rladapt.pool.open_store (a directory store takes a path)"
            )
        self.root = Path(text.removeprefix("file://"))

    # --- reading -------------------------------------------------------------------------------------------

    def versions(self) -> list[str]:
        folder = self.root / "versions"
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if _VERSION.match(p.name) and p.is_dir())

    def resolve(self, ref: str) -> str:
        """A version name from ``v00000003``, ``3`` or an alias name; a UsageError naming what exists."""
        if ref.isdigit():
            ref = version_name(int(ref))
        if _VERSION.match(ref):
            if not (self.root / "versions" / ref).is_dir():
                raise UsageError(f"the pool at {str(self.root)!r} has no version {ref}{self._known()}")
            return ref
        return self.alias_state(ref).version

    def manifest(self, ref: str) -> Manifest:
        return self._manifest(self.resolve(ref))

    def path(self, ref: str) -> Path:
        return self.root / "versions" / self.resolve(ref)

    def of_run(self, run_id: str) -> list[tuple[Manifest, list[str]]]:
        """The versions published from ``run_id``, oldest first, each with the aliases that name it."""
        named: dict[str, list[str]] = {}
        for alias, version in self.aliases().items():
            named.setdefault(version, []).append(alias)
        found = []
        for name in self.versions():
            try:
                manifest = self._manifest(name)
            except DamagedManifest:
                continue
            if manifest.source.run_id == run_id:
                found.append((manifest, sorted(named.get(name, []))))
        return found

    def verify(self, ref: str, *, hashes: bool = True) -> list[str]:
        """What is wrong with a version (empty when nothing): missing, extra, resized or changed files."""
        name = self.resolve(ref)
        try:
            manifest = self._manifest(name)
        except DamagedManifest as exc:
            return [exc.message]
        present = self._stored(name)
        problems = [f"{n}: not in the manifest" for n in sorted(set(present) - set(manifest.files))]
        for n, entry in sorted(manifest.files.items()):
            size = self._size(present[n]) if n in present else None
            if size is None:
                problems.append(f"{n}: missing")
            elif size != entry.size:
                problems.append(f"{n}: {size} bytes, the manifest says {entry.size}")
            elif hashes and self._sha256(present[n]) != entry.sha256:
                problems.append(f"{n}: sha256 differs from the manifest")
        return problems

    # the hooks every kind of store answers in its own way (``ObjectVersionStore``: on an fsspec filesystem);
    # reading, listing runs and verifying above are written once on them

    def _manifest(self, name: str) -> Manifest:
        """The manifest of the version ``name`` (a name ``resolve`` gave); a DamagedManifest when it is missing
        or unreadable."""
        return Manifest.read(self.root / "versions" / name)

    def _stored(self, name: str) -> dict[str, Any]:
        """The files the version ``name`` holds but its manifest, by name, each with where ``_size`` and
        ``_sha256`` find it."""
        return {p.name: p for p in (self.root / "versions" / name).iterdir() if p.name != MANIFEST}

    def _size(self, where: Any) -> int | None:
        """The size of a stored file; None when it is not a file."""
        return where.stat().st_size if where.is_file() else None

    def _sha256(self, where: Any) -> str:
        return file_entry(where).sha256

    # --- publishing ----------------------------------------------------------------------------------------

    def publish(
        self,
        folder: Path | Mapping[str, Path],
        files: Sequence[str] | None = None,
        *,
        source: Source | None = None,
        parent: str | None = None,
    ) -> tuple[Manifest, bool]:
        """Copy ``files`` of ``folder`` (default: its Hugging Face model files) into a new version; ``folder`` may
        also be a mapping of names in the version to files anywhere (what an adapter's ``weight_files`` returns).

        Returns the manifest and whether it is new: a second publish of the same run's same step returns the
        version the first made. The copy is hashed as it is written, verified against a re-read, fsynced, and
        renamed into ``versions/`` under the store lock; an error leaves no version and no temporary folder.
        """
        source = source or Source()
        if isinstance(folder, Mapping):
            sources = dict(folder)
        else:
            sources = {name: folder / name for name in (files if files is not None else hf_files(folder))}
        existing = self._by_source(source)
        if existing is not None:
            return existing, False
        tmp = self._tmp_folder()
        try:
            entries = {name: _copy(path, tmp / name) for name, path in sources.items()}
            for (
                name,
                entry,
            ) in entries.items():  # a copy that reads back different is a bad disk, not a version
                if file_entry(tmp / name) != entry:
                    raise OutputError(f"the copy of {name!r} in {str(tmp)!r} does not read back as written")
            with self._locked():
                existing = self._by_source(source)
                if existing is not None:
                    return existing, False
                number = self._next_number()
                name = version_name(number)
                manifest = Manifest(
                    version=name,
                    number=number,
                    created=_now(),
                    files=entries,
                    digest=content_digest(entries),
                    source=source,
                    parent=parent if parent is not None else self._lineage_parent(source),
                )
                write_text(tmp / MANIFEST, manifest.text(), what="version manifest")
                (tmp / ".publisher").unlink(missing_ok=True)
                _fsync_tree(tmp)
                target = self.root / "versions" / name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(tmp, target)
                sync_dir(target.parent)
                write_text(self.root / "counter", f"{number}\n", what="pool counter")
                return manifest, True
        except OSError as exc:
            raise OutputError(f"cannot publish into the pool at {str(self.root)!r}: {exc}") from None
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    # --- aliases -------------------------------------------------------------------------------------------

    def aliases(self) -> dict[str, str]:
        folder = self.root / "aliases"
        if not folder.is_dir():
            return {}
        found = {}
        for path in sorted(folder.glob("*.json")):
            state = self._read_alias(path.stem)
            if state is not None:
                found[state.name] = state.version
        return found

    def alias_state(self, name: str) -> AliasState:
        _check_name(name, "alias")
        state = self._read_alias(name)
        if state is None:
            known = ", ".join(sorted(self.aliases())) or "none"
            raise UsageError(f"the pool at {str(self.root)!r} has no alias {name!r} (aliases: {known})")
        return state

    def set_alias(
        self, name: str, ref: str, *, if_current: str | None = None, by: str | None = None
    ) -> AliasState:
        """Point ``name`` at a version; with ``if_current``, only if it names that version now (exit 1 if not).

        ``if_current="none"`` means "only if the alias does not exist yet".
        """
        _check_name(name, "alias")
        with self._locked():
            version = self.resolve(ref)
            state = self._read_alias(name)
            if if_current is not None:
                now_at = state.version if state else "none"
                wanted = if_current if if_current == "none" else self.resolve(if_current)
                if now_at != wanted:
                    raise AliasMoved(f"alias {name!r} names {now_at}, not {wanted}: not moved to {version}")
            # re-pointing at the version it already names is not a step to roll back over
            stack = [*state.previous, state.version] if state and state.version != version else []
            if state and state.version == version:
                stack = list(state.previous)
            history = [*state.history] if state else []
            history.append({"action": "set", "version": version, "at": _now(), "by": by})
            return self._write_alias(AliasState(name, version, tuple(stack), tuple(history)))

    def rollback(self, name: str, *, by: str | None = None) -> AliasState:
        """Point ``name`` back at what it named before the current version."""
        with self._locked():
            state = self.alias_state(name)
            if not state.previous:
                raise UsageError(f"alias {name!r} has named only {state.version}: nothing to roll back to")
            back = state.previous[-1]
            if not (self.root / "versions" / back).is_dir():
                raise UsageError(f"alias {name!r} would roll back to {back}, which is no longer in the pool")
            history = [*state.history, {"action": "rollback", "version": back, "at": _now(), "by": by}]
            return self._write_alias(AliasState(name, back, state.previous[:-1], tuple(history)))

    # --- leases --------------------------------------------------------------------------------------------

    def lease(self, ref: str, holder: str, ttl: float) -> Lease:
        """Keep a version alive for ``holder`` for ``ttl`` seconds (a second call renews)."""
        _check_name(holder, "lease holder")
        if not ttl > 0:
            raise UsageError(f"--ttl must be a positive number of seconds, not {ttl}")
        with self._locked():
            version = self.resolve(ref)
            lease = Lease(version, holder, time.time() + ttl, _now())
            write_text(self.root / "leases" / version / f"{holder}.json", json.dumps(lease.to_json()) + "\n",
                       what="lease", make_parents=True)  # fmt: skip
            return lease

    def release(self, ref: str, holder: str) -> bool:
        _check_name(holder, "lease holder")
        with self._locked():
            version = self.resolve(ref)
            path = self.root / "leases" / version / f"{holder}.json"
            existed = path.exists()
            path.unlink(missing_ok=True)
            return existed

    def leases(self) -> list[Lease]:
        found = []
        for path in sorted((self.root / "leases").glob("v*/*.json")):
            try:
                data = json.loads(path.read_text())
                found.append(Lease(str(data["version"]), str(data["holder"]), float(data["expires"]),
                                   str(data["taken"])))  # fmt: skip
            except (OSError, ValueError, KeyError, TypeError):
                # an unreadable lease keeps its version alive until it expires by age: never delete on doubt
                found.append(Lease(path.parent.name, path.stem, path.stat().st_mtime + 24 * 3600, "?"))
        return found

    # --- garbage collection --------------------------------------------------------------------------------

    def gc(self, *, keep_last: int, keep_every: int | None = None, verify: bool = False,
           dry_run: bool = False) -> GcReport:  # fmt: skip
        """Remove the versions nothing keeps: not among the newest ``keep_last``, not aliased (nor the version
        an alias's ``rollback`` would return to), not leased, not every ``keep_every``-th.

        A version whose files do not match its manifest is moved to ``quarantine/`` (unless something keeps it:
        then it is reported). Publish folders left by a dead process and the trash are swept.
        """
        _check_keep(keep_last, keep_every)
        report = GcReport(dry_run=dry_run)
        with self._locked():
            versions = self.versions()
            keep = self._keep(versions, sorted(self.aliases()), keep_last, keep_every)
            for name in versions:
                folder = self.root / "versions" / name
                problems = self.verify(name, hashes=verify)
                if problems:
                    if name in keep:
                        report.damaged_kept[name] = problems[0]
                    else:
                        report.quarantined[name] = problems[0]
                        if not dry_run:
                            _move(folder, self.root / "quarantine" / name)
                    continue
                if name in keep:
                    report.kept[name] = keep[name]
                else:
                    report.deleted.append(name)
                    if not dry_run:
                        _move(folder, self.root / "trash" / f"{name}.{uuid.uuid4().hex[:8]}")
            for lease_dir in sorted((self.root / "leases").glob("v*")):
                if not (self.root / "versions" / lease_dir.name).is_dir() and not dry_run:
                    shutil.rmtree(lease_dir, ignore_errors=True)
            report.swept = self._stale_tmp()
            if not dry_run:
                for leftover in report.swept:
                    shutil.rmtree(self.root / "tmp" / leftover, ignore_errors=True)
        if not dry_run:  # the deletes themselves need no lock: nothing can reach a trashed folder any more
            for path in (self.root / "trash").glob("*"):
                shutil.rmtree(path, ignore_errors=True)
        return report

    def _keep(
        self, versions: list[str], aliases: list[str], keep_last: int, keep_every: int | None
    ) -> dict[str, list[str]]:
        """What keeps each version GC must keep, of ``versions`` (oldest first) and the ``aliases`` by name."""
        keep: dict[str, list[str]] = {}
        for name in versions[-keep_last:]:
            keep.setdefault(name, []).append(f"among the newest {keep_last}")
        for alias in aliases:
            state = self._read_alias(alias)
            if state is None:
                continue
            keep.setdefault(state.version, []).append(f"alias {alias}")
            if state.previous:
                keep.setdefault(state.previous[-1], []).append(f"alias {alias} rolls back to it")
        at = time.time()
        for lease in self.leases():
            if lease.alive(at):
                keep.setdefault(lease.version, []).append(f"leased by {lease.holder}")
        if keep_every:
            for name in versions:
                if int(name[1:]) % keep_every == 0:
                    keep.setdefault(name, []).append(f"every {keep_every}th")
        return keep

    # --- internals -----------------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(f"cannot open the pool at {str(self.root)!r}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _known(self) -> str:
        versions = self.versions()
        if not versions:
            return " (it holds no versions)"
        return (
            f" (it holds {versions[0]} to {versions[-1]})"
            if len(versions) > 1
            else f" (it holds {versions[0]})"
        )

    def _by_source(self, source: Source) -> Manifest | None:
        key = source.key()
        if key is None:
            return None
        for name in reversed(self.versions()):
            try:
                manifest = self._manifest(name)
            except DamagedManifest:
                continue
            if manifest.source.key() == key:
                return manifest
        return None

    def _lineage_parent(self, source: Source) -> str | None:
        """The run's previous version: a run's versions form a line, whatever else the store holds."""
        if source.run_id is None:
            return None
        for name in reversed(self.versions()):
            try:
                if self._manifest(name).source.run_id == source.run_id:
                    return name
            except DamagedManifest:
                continue
        return None

    def _next_number(self) -> int:
        try:
            counter = int((self.root / "counter").read_text().strip() or 0)
        except FileNotFoundError:
            counter = 0
        except (OSError, ValueError):
            counter = 0  # rebuilt from the folders below: a number is never handed out twice either way
        seen = [int(m.group(1)) for d in ("versions", "quarantine", "trash") if (self.root / d).is_dir()
                for p in (self.root / d).iterdir() if (m := re.match(r"^v(\d{8})", p.name))]  # fmt: skip
        return max([counter, *seen]) + 1

    def _tmp_folder(self) -> Path:
        tmp = self.root / "tmp" / f"publish-{uuid.uuid4().hex}"
        try:
            tmp.mkdir(parents=True)
            (tmp / ".publisher").write_text(
                json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()})
            )
        except OSError as exc:
            raise OutputError(
                f"cannot write into the pool at {str(self.root)!r}: {exc.strerror or exc}"
            ) from None
        return tmp

    def _stale_tmp(self) -> list[str]:
        stale = []
        for path in sorted((self.root / "tmp").glob("*")):
            try:
                info = json.loads((path / ".publisher").read_text())
                host, pid, started = str(info["host"]), int(info["pid"]), float(info["started"])
            except (OSError, ValueError, KeyError, TypeError):
                host, pid, started = "?", -1, path.stat().st_mtime
            if host == socket.gethostname():
                if not alive(pid, None):
                    stale.append(path.name)
            elif time.time() - started > _FOREIGN_TMP_AGE:
                stale.append(path.name)
        return stale

    def _read_alias(self, name: str) -> AliasState | None:
        path = self.root / "aliases" / f"{name}.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise RladaptError(f"the alias file {str(path)!r} is damaged: {exc}") from None
        return AliasState(str(data["name"]), str(data["version"]), tuple(data.get("previous", ())),
                          tuple(data.get("history", ())))  # fmt: skip

    def _write_alias(self, state: AliasState) -> AliasState:
        write_text(self.root / "aliases" / f"{state.name}.json", json.dumps(state.to_json(), indent=2) + "\n",
                   what="alias", make_parents=True)  # fmt: skip
        return state


class AliasMoved(RladaptError):
    """A compare-and-swap on an alias lost: it names another version than the caller expected (exit 1)."""


def _check_keep(keep_last: int, keep_every: int | None) -> None:
    if keep_last < 1:
        raise UsageError(
            f"--keep-last must be at least 1 (the newest version is always kept), not {keep_last}"
        )
    if keep_every is not None and keep_every < 1:
        raise UsageError(f"--keep-every must be at least 1, not {keep_every}")


def _check_name(name: str, what: str) -> None:
    if not _NAME.match(name) or _VERSION.match(name):
        raise UsageError(
            f"{what} {name!r}: expected a letter then letters, digits, '.', '_' or '-' (at most 64), "
            "and not a version name like v00000001"
        )


def _copy(src: Path, dst: Path) -> FileEntry:
    if not src.is_file():
        raise UsageError(f"cannot publish {str(src)!r}: no such file")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return file_entry(dst)


def _move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.rename(src, dst)


def _fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    sync_dir(folder)
