"""A store-level index of what ``rladapt runs`` shows of each run, so that listing thousands of runs reads one
small file and a few directory entries per run instead of every record, checkpoint directory and events file.

One file per store (``<home>/runs-index.json``). Each entry is keyed by the run's directory name and holds the
*places* its value was computed from (the run directory, the checkpoint directory, the metrics directory: each a
path and how deep below it to look), a fingerprint of them (``fingerprint``: every entry's name, kind, size, inode
and modification time, to that depth) and the value itself, opaque here (the CLI's row and JSON object).

Never trusted blindly: an entry is used only while the fingerprint of its places, taken now, is the one stored; a
run directory, a checkpoint step or an events file changed since (written, appended, replaced, removed, added)
makes the caller compute the value again. The fingerprint is taken *before* the value is computed, so that what
is written while it is computed makes the next listing recompute it. What a depth does not reach is trusted: a
file deep inside a checkpoint step edited in place (its step directory's entries unchanged) is not seen; the
caller gives depths that reach what its value depends on in practice (see ``rladapt.cli.runs``).

Concurrent listings are safe: the file is replaced atomically (a reader sees one whole index), and an update lost
to another writer only costs the next listing a recomputation. A damaged or foreign index is ignored and
rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

INDEX_FILE = "runs-index.json"
FORMAT = 1

#: ``(path, depth)``: the entries of ``path`` and, ``depth`` levels down, of its subdirectories (None: all levels)
Place = tuple[str, int | None]


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _walk(
    path: str, depth: int | None, skip: frozenset[str], out: list[str], covered: frozenset[str]
) -> None:
    try:
        with os.scandir(path) as found:
            entries = sorted(found, key=_name)
    except FileNotFoundError:
        out.append(f"{path}\0missing")
        return
    except OSError as exc:
        out.append(f"{path}\0error {exc.errno}")
        return
    for entry in entries:
        if entry.name in skip:
            continue
        if (
            entry.path in covered
        ):  # a place of its own (the metrics directory inside the checkpoint directory)
            out.append(f"{entry.path}\0p")
            continue
        try:
            st = entry.stat()
        except OSError:
            out.append(f"{entry.path}\0gone")
            continue
        if entry.is_dir() and (depth is None or depth > 0):
            # its entries are listed: its own time (which a skipped file's replacement also moves) says nothing more
            out.append(f"{entry.path}\0d{st.st_ino}")
            _walk(entry.path, None if depth is None else depth - 1, skip, out, covered)
        else:
            out.append(f"{entry.path}\0{st.st_mode:o}:{st.st_size}:{st.st_ino}:{st.st_mtime_ns}")


def fingerprint(places: Iterable[Place], skip: Iterable[str] = ()) -> str:
    """A digest of every entry (name, kind, size, inode, modification time) under each place to its depth; names in
    ``skip`` (derived files such as a cache kept beside the record) are left out at every level."""
    out: list[str] = []
    skipped = frozenset(skip)
    places = list(places)
    covered = frozenset(p for p, _ in places)
    for path, depth in places:
        out.append(path)  # its entries say the rest (a place gone lists as missing)
        _walk(path, depth, skipped, out, covered)
    return hashlib.blake2b("\n".join(out).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


class RunIndex:
    """The index of a store whose root is ``root``: ``get`` an entry still valid, ``put`` a computed one, ``save``."""

    def __init__(self, root: Path) -> None:
        self.path = root / INDEX_FILE
        self.entries: dict[str, dict[str, Any]] = self._load()
        self.changed = False

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("runs"), dict)
        ):
            return {}
        return {k: v for k, v in data["runs"].items() if isinstance(v, dict)}

    def get(self, name: str, skip: Iterable[str] = ()) -> Any | None:
        """The value stored for run directory ``name`` when the fingerprint of its places is unchanged, else None."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        try:
            places = [(str(p), None if d is None else int(d)) for p, d in entry["places"]]
            stored = entry["fp"]
        except (KeyError, TypeError, ValueError):
            return None
        return entry.get("value") if fingerprint(places, skip) == stored else None

    def put(self, name: str, places: Sequence[Place], fp: str, value: Any) -> None:
        """Store ``value`` for ``name``, computed from ``places`` whose fingerprint was ``fp`` before computing it."""
        self.entries[name] = {"places": [list(p) for p in places], "fp": fp, "value": value}
        self.changed = True

    def drop(self, name: str) -> None:
        if self.entries.pop(name, None) is not None:
            self.changed = True

    def keep_only(self, names: Iterable[str]) -> None:
        """Forget the runs not in ``names`` (removed from the store)."""
        keep = set(names)
        for name in [n for n in self.entries if n not in keep]:
            self.drop(name)

    def save(self) -> None:
        """Write the index when it changed (atomically; best effort: a store this user cannot write is listed
        without one)."""
        if not self.changed:
            return
        from .store import write_atomic

        try:
            write_atomic(  # derived: a damaged index is ignored and rewritten, so no disk flush
                self.path,
                json.dumps({"format": FORMAT, "runs": self.entries}, separators=(",", ":")),
                durable=False,
            )
        except Exception:  # best effort, as above
            return
        self.changed = False
