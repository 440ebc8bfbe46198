"""Reading a compatibility matrix file: the TOML that lists the versions an adapter supports.

The built-in adapters' matrices ship in ``rladapt/compat/matrix``; an external adapter points ``MATRIX`` at its
own file in the same format::

    [[versions]]
    version = "1.1.0"            # required, a PEP 440 version
    status = "supported"         # or "deprecated"; default "supported"
    python = ">=3.10"            # optional
    notes = "..."                # optional
    [versions.tested_with]       # optional: distribution -> version or specifier
    torch = "2.6.0"
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from rladapt.primitives.errors import PluginError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

_STATUSES = ("supported", "deprecated")


@dataclass(frozen=True)
class MatrixEntry:
    """One ``[[versions]]`` row of a matrix file."""

    version: str
    status: str
    python: str | None
    tested_with: dict[str, str] = field(default_factory=dict)
    notes: str = ""


def read_matrix(ref: Traversable, label: str | None = None) -> tuple[MatrixEntry, ...]:
    """The rows of the matrix file ``ref``, oldest version first; ``label`` names the file in errors.

    A missing, unreadable or malformed file is a ``PluginError`` naming the file and, where there is one, the row.
    """
    name = label or str(ref)
    try:
        text = ref.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PluginError(f"{name}: no such compatibility matrix file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(f"{name}: cannot read the compatibility matrix ({exc})") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PluginError(f"{name}: not valid TOML ({exc})") from None
    rows = data.get("versions", [])
    if not isinstance(rows, list):
        raise PluginError(f"{name}: 'versions' must be an array of tables ([[versions]])")
    entries = [_entry(name, i, row) for i, row in enumerate(rows)]
    return tuple(sorted(entries, key=lambda e: Version(e.version)))


def _entry(name: str, i: int, row: object) -> MatrixEntry:
    where = f"{name}: versions[{i}]"
    if not isinstance(row, dict):
        raise PluginError(f"{where} is not a table")
    if "version" not in row:
        raise PluginError(f"{where} has no 'version'")
    version = str(row["version"])
    try:
        Version(version)
    except InvalidVersion:
        raise PluginError(f"{where}: {version!r} is not a version") from None
    status = str(row.get("status", "supported"))
    if status not in _STATUSES:
        raise PluginError(f"{where}: status {status!r} is not one of {', '.join(_STATUSES)}")
    tested_with = row.get("tested_with", {})
    if not isinstance(tested_with, dict):
        raise PluginError(f"{where}: 'tested_with' must be a table")
    python = row.get("python")
    return MatrixEntry(
        version=version,
        status=status,
        python=None if python is None else str(python),
        tested_with={str(k): str(v) for k, v in tested_with.items()},
        notes=str(row.get("notes", "")),
    )
