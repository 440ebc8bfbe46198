"""What a version is: its files with their hashes, where it came from, and its place in the lineage.

A manifest is written once, inside the temporary folder, before the folder is renamed into ``versions/``: a
version that can be seen always has one, and nothing ever rewrites it. ``digest`` hashes the sorted file list
(name, size, sha256), so two publishes of the same weights have the same digest whatever their times.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rladapt.primitives.errors import RladaptError

__all__ = ["MANIFEST", "DamagedManifest", "FileEntry", "Manifest", "Source", "file_entry", "version_name"]

#: The manifest's file name inside a version folder; never listed among the version's own files.
MANIFEST = "manifest.json"
FORMAT = 1
_CHUNK = 1 << 20


def version_name(number: int) -> str:
    """``v00000012``: fixed width, so a plain listing sorts versions in publishing order."""
    return f"v{number:08d}"


class DamagedManifest(RladaptError):
    """A version's manifest is missing or unreadable: the version cannot be trusted (exit 1)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileEntry(_Frozen):
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Source(_Frozen):
    """Where the weights came from; every field optional, since ``pool publish DIR`` may know only the folder."""

    run_id: str | None = None
    step: int | None = None
    framework: str | None = None
    framework_version: str | None = None
    spec_hash: str | None = None
    checkpoint: str | None = None

    def key(self) -> tuple[str, int] | None:
        """What makes two publishes the same publish: one run's one step (None when either is unknown)."""
        if self.run_id is None or self.step is None:
            return None
        return (self.run_id, self.step)


class Manifest(_Frozen):
    format: int = FORMAT
    version: str
    number: int = Field(ge=1)
    created: str
    files: dict[str, FileEntry]
    digest: str
    source: Source = Source()
    parent: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DamagedManifest(f"version {folder.name} has no {MANIFEST} ({str(path)!r})") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise DamagedManifest(f"cannot read {str(path)!r}: {exc}") from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, path: str) -> Manifest:
        """The manifest in ``text`` (read from ``path``, which messages name); a DamagedManifest if it is not one."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DamagedManifest(f"cannot read {path!r}: {exc}") from None
        if isinstance(data, dict) and data.get("format") not in (None, FORMAT):
            raise DamagedManifest(
                f"{path!r} has format {data.get('format')!r}; this rladapt reads format {FORMAT}"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise DamagedManifest(f"{path!r}: field {where!r}: {first['msg']}") from None


def file_entry(path: Path) -> FileEntry:
    """Size and sha256 of one file, read in chunks (weights are gigabytes)."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return FileEntry(size=size, sha256=digest.hexdigest())


def content_digest(files: Mapping[str, FileEntry] | Iterable[tuple[str, FileEntry]]) -> str:
    items = sorted(files.items() if isinstance(files, Mapping) else files)
    digest = hashlib.sha256()
    for name, entry in items:
        digest.update(f"{name}\0{entry.size}\0{entry.sha256}\n".encode())
    return "sha256:" + digest.hexdigest()
