"""The compatibility matrix: ``compat-matrix/<framework>.toml``, read as data (shipped in the wheel)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from rladapt.plugins.adapter import FrameworkVersion
from rladapt.primitives.errors import PluginError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class MatrixEntry:
    version: str
    status: str
    python: str | None
    tested_with: dict[str, str] = field(default_factory=dict)
    notes: str = ""


@cache
def pinned(framework: str) -> tuple[MatrixEntry, ...]:
    """The pinned versions of ``framework``, oldest first, as the bundled matrix lists them."""
    ref = resources.files("rladapt.compat").joinpath("matrix").joinpath(f"{framework}.toml")
    try:
        data: dict[str, Any] = tomllib.loads(ref.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PluginError(
            f"no compatibility matrix for {framework!r} (compat-matrix/{framework}.toml)"
        ) from None
    entries = []
    for i, row in enumerate(data.get("versions", [])):
        if "version" not in row:
            raise PluginError(f"compat-matrix/{framework}.toml: versions[{i}] has no 'version'")
        entries.append(
            MatrixEntry(
                version=str(row["version"]),
                status=str(row.get("status", "supported")),
                python=row.get("python"),
                tested_with={str(k): str(v) for k, v in row.get("tested_with", {}).items()},
                notes=str(row.get("notes", "")),
            )
        )
    from packaging.version import Version

    return tuple(sorted(entries, key=lambda e: Version(e.version)))


def framework_versions(
    framework: str, capabilities: Callable[[str], frozenset[str]]
) -> list[FrameworkVersion]:
    """FrameworkVersions from the matrix, with capabilities from the adapter's own per-version knowledge."""
    return [
        FrameworkVersion(
            version=e.version,
            capabilities=capabilities(e.version),
            status="deprecated" if e.status == "deprecated" else "supported",
            tested_with=e.tested_with,
        )
        for e in pinned(framework)
    ]
