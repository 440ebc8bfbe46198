"""A version store on an fsspec filesystem (``memory://``, an object store): no rename, no lock.

The same layout as a directory store, with a commit protocol that needs neither:

- a version appears when its ``manifest.json`` exists, and the manifest is written LAST, after every file was
  uploaded and its size read back. A reader lists manifests, never folders, so a half-uploaded version is invisible;
- numbers and publishes are claimed with an atomic create-if-absent (``open(mode="xb")``): ``claims/vNNNNNNNN.json``
  hands a number out once and for all, ``sources/RUN/STEP.json`` makes a second publish of one run's step wait for
  the version the first one claimed (and yield it);
- an alias is a log of immutable entries ``aliases/NAME/NNNNNNNN.json`` (the newest is what it names): a move
  creates the next entry if absent, so two movers cannot both win, and ``--if-current`` is a real compare-and-swap;
- a lease is its holder's own file; GC removes a version's manifest first, so it disappears before its files go.

The create-if-absent must be atomic, or none of this holds: it is for fsspec's local filesystem (``O_EXCL``) and its
in-memory one (one process). On any other filesystem, writes are refused with the reason (reading, listing and
verifying work everywhere). What stays weaker than the directory store: GC and a new lease are not one atomic step
(a lease taken while GC runs is checked against the version afterwards, and refused if the version went).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rladapt.plugins.weights import hf_files
from rladapt.primitives.errors import OutputError, RladaptError, UsageError

from .manifest import (
    MANIFEST,
    DamagedManifest,
    Manifest,
    Source,
    content_digest,
    file_entry,
    version_name,
)
from .store import (
    _FOREIGN_TMP_AGE,
    _VERSION,
    AliasMoved,
    AliasState,
    GcReport,
    Lease,
    VersionStore,
    _check_keep,
    _check_name,
    _now,
)

__all__ = [
    "CONDITIONAL_PROTOCOLS",
    "ObjectVersionStore",
    "open_store",
]

#: fsspec protocols whose ``open(path, "xb")`` is an atomic create-if-absent (the claims and alias entries need it).
CONDITIONAL_PROTOCOLS = frozenset({"file", "local", "memory"})
_CHUNK = 1 << 20
#: how long a second publish of one step waits for the version the first one claimed
_CLAIM_WAIT = 600.0


class ObjectVersionStore(VersionStore):
    """A store at an fsspec URL (``memory://pool``), or on a given fsspec filesystem and path."""

    def __init__(self, root: Path | str, *, fs: Any = None) -> None:
        text = str(root)
        if fs is None:
            try:
                from fsspec.core import url_to_fs  # type: ignore[import-untyped]
            except ImportError:
                raise UsageError(
                    f"pool store {text!r}: a URL store needs fsspec: pip install 'rladapt[fsspec]'"
                ) from None
            try:
                fs, text_path = url_to_fs(text)
            except (ImportError, ValueError) as exc:
                raise UsageError(f"pool store {text!r}: {exc}") from None
        else:
            text_path = text
        self.fs = fs
        self.base = str(text_path).rstrip("/")
        self.url = text
        #: for display only: an object store has no local folder (see ``path``)
        self.root = Path(text)
        protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
        self.protocol = str(protocols[0])
        self.conditional = bool(CONDITIONAL_PROTOCOLS.intersection(protocols))

    # --- paths and small files -------------------------------------------------------------------------------

    def _p(self, *parts: str) -> str:
        return "/".join([self.base, *parts])

    def _read(self, *parts: str) -> str | None:
        try:
            with self.fs.open(self._p(*parts), "rb") as handle:
                return bytes(handle.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def _create(self, text: str, *parts: str) -> bool:
        """Create the file if absent (atomically); False when it exists already."""
        self._need_conditional(parts[0])
        self.fs.makedirs(self._p(*parts[:-1]), exist_ok=True)
        try:
            with self.fs.open(self._p(*parts), "xb") as handle:
                handle.write(text.encode())
        except FileExistsError:
            return False
        return True

    def _need_conditional(self, what: str) -> None:
        if not self.conditional:
            raise UsageError(
                f"pool store {self.url!r}: writing {what} needs an atomic create-if-absent, which rladapt relies on "
                f"only for the {', '.join(sorted(CONDITIONAL_PROTOCOLS))} filesystems, not {self.protocol!r} "
                "(reading, listing and verifying work)"
            )

    def _names(self, *parts: str) -> list[str]:
        try:
            return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self._p(*parts), detail=False))
        except FileNotFoundError:
            return []

    @contextmanager
    def _locked(self) -> Iterator[None]:  # no lock: every shared change is a create-if-absent
        yield

    # --- reading -----------------------------------------------------------------------------------------------

    def versions(self) -> list[str]:
        return [
            n
            for n in self._names("versions")
            if _VERSION.match(n) and self.fs.exists(self._p("versions", n, MANIFEST))
        ]

    def resolve(self, ref: str) -> str:
        if ref.isdigit():
            ref = version_name(int(ref))
        if _VERSION.match(ref):
            if not self.fs.exists(self._p("versions", ref, MANIFEST)):
                raise UsageError(f"the pool at {self.url!r} has no version {ref}{self._known()}")
            return ref
        return self.alias_state(ref).version

    def _manifest(self, name: str) -> Manifest:
        text = self._read("versions", name, MANIFEST)
        if text is None:
            raise DamagedManifest(
                f"version {name} has no {MANIFEST} ({self._p('versions', name, MANIFEST)!r})"
            )
        return Manifest.parse(text, self._p("versions", name, MANIFEST))

    def path(self, ref: str) -> Path:
        raise UsageError(
            f"the pool at {self.url!r} is an object store: a version has no local folder to load or serve from "
            "(serve from a store on a mounted directory)"
        )

    def _stored(self, name: str) -> dict[str, Any]:
        present = {p.rsplit("/", 1)[-1]: p for p in self.fs.find(self._p("versions", name))}
        present.pop(MANIFEST, None)
        return present

    def _size(self, where: Any) -> int | None:
        return int(self.fs.info(where)["size"])

    def _sha256(self, where: Any) -> str:
        import hashlib

        digest = hashlib.sha256()
        with self.fs.open(where, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    # --- publishing --------------------------------------------------------------------------------------------

    def publish(
        self,
        folder: Path | Mapping[str, Path],
        files: Sequence[str] | None = None,
        *,
        source: Source | None = None,
        parent: str | None = None,
    ) -> tuple[Manifest, bool]:
        source = source or Source()
        if isinstance(folder, Mapping):
            sources = dict(folder)
        else:
            sources = {name: folder / name for name in (files if files is not None else hf_files(folder))}
        for src in sources.values():
            if not src.is_file():
                raise UsageError(f"cannot publish {str(src)!r}: no such file")
        existing = self._by_source(source)
        if existing is not None:
            return existing, False
        entries = {name: file_entry(src) for name, src in sources.items()}
        number = self._claim_number()
        name = version_name(number)
        key = source.key()
        if key is not None and not self._create(
            json.dumps({"version": name}), "sources", key[0], f"{key[1]}.json"
        ):
            return self._wait_for(key), False  # another publish of this step claimed it first: its version
        try:
            self.fs.makedirs(self._p("versions", name), exist_ok=True)
            for n, src in sources.items():
                self.fs.put_file(str(src), self._p("versions", name, n))
            for n, entry in entries.items():  # an upload that reads back another size is not a version
                size = int(self.fs.info(self._p("versions", name, n))["size"])
                if size != entry.size:
                    raise OutputError(
                        f"the upload of {n!r} to {self.url!r} has {size} bytes, not {entry.size}"
                    )
            manifest = Manifest(version=name, number=number, created=_now(), files=entries,
                                digest=content_digest(entries), source=source,
                                parent=parent if parent is not None else self._lineage_parent(source))  # fmt: skip
            # written last: the version appears now, whole
            if not self._create(manifest.text(), "versions", name, MANIFEST):
                raise OutputError(
                    f"{name} in {self.url!r} has a manifest already: its number was claimed twice"
                )
        except OSError as exc:
            raise OutputError(f"cannot publish into the pool at {self.url!r}: {exc}") from None
        return manifest, True

    def _claim_number(self) -> int:
        claimed = [int(m.group(1)) for n in self._names("claims") if (m := re.match(r"^v(\d{8})\.json$", n))]
        number = max([0, *claimed, *(int(v[1:]) for v in self._names("versions") if _VERSION.match(v))]) + 1
        info = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()})
        while not self._create(info, "claims", f"{version_name(number)}.json"):
            number += 1  # another publisher took it: numbers are handed out once, never reused
        return number

    def _wait_for(self, key: tuple[str, int]) -> Manifest:
        claim = json.loads(self._read("sources", key[0], f"{key[1]}.json") or "{}")
        name = str(claim.get("version"))
        deadline = time.monotonic() + _CLAIM_WAIT
        while time.monotonic() < deadline:
            if self.fs.exists(self._p("versions", name, MANIFEST)):
                return self._manifest(name)
            time.sleep(0.2)
        raise RladaptError(
            f"step {key[1]} of run {key[0]} was claimed by a publish of {name} that never completed: remove "
            f"{self._p('sources', key[0], f'{key[1]}.json')!r} to publish it again"
        )

    def _by_source(self, source: Source) -> Manifest | None:
        key = source.key()
        if key is None:
            return None
        claim = self._read("sources", key[0], f"{key[1]}.json")
        if claim is None:
            return None
        name = str(json.loads(claim).get("version"))
        return (
            self._manifest(name)
            if self.fs.exists(self._p("versions", name, MANIFEST))
            else self._wait_for(key)
        )

    # --- aliases -----------------------------------------------------------------------------------------------

    def aliases(self) -> dict[str, str]:
        found = {}
        for name in self._names("aliases"):
            state = self._read_alias(name)
            if state is not None:
                found[state.name] = state.version
        return found

    def _entries(self, name: str) -> list[int]:
        return sorted(
            int(m.group(1)) for n in self._names("aliases", name) if (m := re.match(r"^(\d{8})\.json$", n))
        )

    def _read_alias(self, name: str) -> AliasState | None:
        entries = self._entries(name)
        if not entries:
            return None
        for _ in range(50):  # the newest entry may be being written (created, not yet filled): read it again
            text = self._read("aliases", name, f"{entries[-1]:08d}.json")
            if text:
                data = json.loads(text)
                return AliasState(str(data["name"]), str(data["version"]), tuple(data.get("previous", ())),
                                  tuple(data.get("history", ())))  # fmt: skip
            time.sleep(0.05)
        raise RladaptError(
            f"the alias entry {self._p('aliases', name, f'{entries[-1]:08d}.json')!r} stays empty"
        )

    def _move(self, name: str, build: Any, *, cas: bool) -> AliasState:
        """Write the entry after the newest; ``build(state or None)`` makes it. Another mover first: AliasMoved
        under a compare-and-swap, else build again on what it wrote."""
        for _ in range(100):
            entries = self._entries(name)
            state = self._read_alias(name)
            new = build(state)
            following = (entries[-1] if entries else 0) + 1
            if self._create(
                json.dumps(new.to_json(), indent=2) + "\n", "aliases", name, f"{following:08d}.json"
            ):
                return new
            if cas:
                moved = self._read_alias(name)
                raise AliasMoved(
                    f"alias {name!r} was moved to {moved.version if moved else '?'} meanwhile: not moved"
                )
        raise RladaptError(f"alias {name!r} keeps moving under this writer: try again")

    def set_alias(
        self, name: str, ref: str, *, if_current: str | None = None, by: str | None = None
    ) -> AliasState:
        _check_name(name, "alias")
        self._need_conditional("an alias")
        version = self.resolve(ref)
        wanted = (
            None if if_current is None else (if_current if if_current == "none" else self.resolve(if_current))
        )

        def build(state: AliasState | None) -> AliasState:
            now_at = state.version if state else "none"
            if wanted is not None and now_at != wanted:
                raise AliasMoved(f"alias {name!r} names {now_at}, not {wanted}: not moved to {version}")
            stack = list(state.previous) if state else []
            if state and state.version != version:
                stack.append(state.version)
            history = [
                *(state.history if state else ()),
                {"action": "set", "version": version, "at": _now(), "by": by},
            ]
            return AliasState(name, version, tuple(stack), tuple(history))

        return self._move(name, build, cas=wanted is not None)

    def rollback(self, name: str, *, by: str | None = None) -> AliasState:
        self._need_conditional("an alias")
        self.alias_state(name)

        def build(state: AliasState | None) -> AliasState:
            assert state is not None
            if not state.previous:
                raise UsageError(f"alias {name!r} has named only {state.version}: nothing to roll back to")
            back = state.previous[-1]
            if not self.fs.exists(self._p("versions", back, MANIFEST)):
                raise UsageError(f"alias {name!r} would roll back to {back}, which is no longer in the pool")
            history = [*state.history, {"action": "rollback", "version": back, "at": _now(), "by": by}]
            return AliasState(name, back, state.previous[:-1], tuple(history))

        return self._move(name, build, cas=True)

    # --- leases ------------------------------------------------------------------------------------------------

    def lease(self, ref: str, holder: str, ttl: float) -> Lease:
        _check_name(holder, "lease holder")
        if not ttl > 0:
            raise UsageError(f"--ttl must be a positive number of seconds, not {ttl}")
        self._need_conditional("a lease")
        version = self.resolve(ref)
        lease = Lease(version, holder, time.time() + ttl, _now())
        path = self._p("leases", version, f"{holder}.json")
        self.fs.makedirs(self._p("leases", version), exist_ok=True)
        self.fs.pipe_file(path, (json.dumps(lease.to_json()) + "\n").encode())
        if not self.fs.exists(
            self._p("versions", version, MANIFEST)
        ):  # GC took it meanwhile: no lease on nothing
            self.fs.rm_file(path)
            raise UsageError(f"{version} was collected while the lease was taken")
        return lease

    def release(self, ref: str, holder: str) -> bool:
        _check_name(holder, "lease holder")
        path = self._p("leases", self.resolve(ref), f"{holder}.json")
        existed = bool(self.fs.exists(path))
        if existed:
            self.fs.rm_file(path)
        return existed

    def leases(self) -> list[Lease]:
        found = []
        for version in self._names("leases"):
            for holder_file in self._names("leases", version):
                text = self._read("leases", version, holder_file)
                try:
                    data = json.loads(text or "")
                    found.append(Lease(str(data["version"]), str(data["holder"]), float(data["expires"]),
                                       str(data["taken"])))  # fmt: skip
                except (ValueError, KeyError, TypeError):
                    # unreadable: keeps its version for a day, as in a directory store (never delete on doubt)
                    found.append(
                        Lease(version, holder_file.removesuffix(".json"), time.time() + 24 * 3600, "?")
                    )
        return found

    # --- garbage collection ------------------------------------------------------------------------------------

    def gc(self, *, keep_last: int, keep_every: int | None = None, verify: bool = False,
           dry_run: bool = False) -> GcReport:  # fmt: skip
        self._need_conditional("garbage collection")
        _check_keep(keep_last, keep_every)
        report = GcReport(dry_run=dry_run)
        versions = self.versions()
        keep = self._keep(versions, self._names("aliases"), keep_last, keep_every)
        for name in versions:
            problems = self.verify(name, hashes=verify)
            if problems:
                if name in keep:
                    report.damaged_kept[name] = problems[0]
                else:
                    report.quarantined[name] = problems[0]
                    if not dry_run:
                        self.fs.copy(self._p("versions", name), self._p("quarantine", name), recursive=True)
                        self._remove(name)
            elif name in keep:
                report.kept[name] = keep[name]
            else:
                report.deleted.append(name)
                if not dry_run:
                    self._remove(name)
        # an upload whose publisher never wrote the manifest: swept once it is old (its claim says when it began)
        for name in self._names("versions"):
            if _VERSION.match(name) and not self.fs.exists(self._p("versions", name, MANIFEST)):
                claim = json.loads(self._read("claims", f"{name}.json") or "{}")
                if time.time() - float(claim.get("started", 0)) > _FOREIGN_TMP_AGE:
                    report.swept.append(name)
                    if not dry_run:
                        self.fs.rm(self._p("versions", name), recursive=True)
        return report

    def _remove(self, name: str) -> None:
        self.fs.rm_file(
            self._p("versions", name, MANIFEST)
        )  # first: the version disappears before its files go
        self.fs.rm(self._p("versions", name), recursive=True)
        if self.fs.exists(self._p("leases", name)):
            self.fs.rm(self._p("leases", name), recursive=True)


def open_store(root: Path | str) -> VersionStore:
    """The store at ``root``: a directory (a path or a ``file://`` URL) or any other fsspec URL.

    Here, not in ``VersionStore``: an object store has no rename and no flock, so its commit protocol (manifest last,
    create-if-absent) is a class of its own, and the directory store need not know it exists.
    """
    text = str(root)
    if "://" in text and not text.startswith("file://"):
        return ObjectVersionStore(text)
    return VersionStore(root)
