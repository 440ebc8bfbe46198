"""Releases on PyPI newer than the newest pinned version of each framework (``rladapt matrix outdated``).

Reads PyPI's JSON API, ``GET <index>/<project>/json`` (https://docs.pypi.org/api/json/: ``releases`` maps each
version to its files, each with a ``yanked`` flag). The index is ``RLADAPT_PYPI_URL`` when set (a mirror, a test
server). The only network use of rladapt's maintainer commands; every failure is one clear message.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from rladapt.plugins import get_registry
from rladapt.primitives.errors import RladaptError, UsageError

__all__ = ["DEFAULT_INDEX", "INDEX_ENV", "NetworkError", "Outdated", "newer_releases", "outdated"]

DEFAULT_INDEX = "https://pypi.org/pypi"
INDEX_ENV = "RLADAPT_PYPI_URL"


class NetworkError(RladaptError):
    """PyPI could not be asked or answered with something that is not its JSON API."""


@dataclass(frozen=True)
class Outdated:
    framework: str
    newest_pinned: str
    newer: tuple[str, ...] = ()
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "newest_pinned": self.newest_pinned,
            "newer": list(self.newer),
            "note": self.note,
        }


def index_url(index: str | None = None) -> str:
    """The JSON API base: ``index``, else ``RLADAPT_PYPI_URL``, else PyPI; only http(s) (urlopen would also read
    ``file:`` URLs, which are not an index)."""
    url = (index or os.environ.get(INDEX_ENV) or DEFAULT_INDEX).rstrip("/")
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        where = "--index" if index else INDEX_ENV
        raise UsageError(f"{where} {url!r}: expected an http:// or https:// URL, e.g. {DEFAULT_INDEX}")
    return url


def newer_releases(project: str, than: str, *, index: str | None = None, timeout: float = 10.0) -> list[str]:
    """Final releases of ``project`` newer than ``than``, oldest first (pre-releases and fully yanked ones left out)."""
    url = f"{index_url(index)}/{project}/json"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read(50 * 1024 * 1024)
    except urllib.error.HTTPError as exc:
        raise NetworkError(f"cannot read {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NetworkError(
            f"cannot reach {url} ({reason}): `rladapt matrix outdated` needs the network "
            f"(or {INDEX_ENV} naming a reachable index)"
        ) from None
    try:
        data = json.loads(body)
        releases = data["releases"]
        if not isinstance(releases, dict):
            raise TypeError("releases is not a mapping")
    except (ValueError, KeyError, TypeError) as exc:
        raise NetworkError(f"{url} did not answer with PyPI's JSON API ({exc})") from None
    floor = Version(than)
    out = []
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if version.is_prerelease or version.is_devrelease or version <= floor:
            continue
        if isinstance(files, list) and files and all(isinstance(f, dict) and f.get("yanked") for f in files):
            continue
        out.append(version)
    return [str(v) for v in sorted(out)]


def outdated(pinned: dict[str, str], *, index: str | None = None, timeout: float = 10.0) -> list[Outdated]:
    """For each framework -> its newest pinned version: the newer releases (or why they cannot be asked)."""
    rows = []
    frameworks = get_registry().frameworks
    for framework, newest in pinned.items():
        # the adapter's PyPI distribution (DISTRIBUTION); without one, where its releases are (RELEASES)
        adapter = frameworks[framework].obj if framework in frameworks else None
        project = framework if adapter is None else adapter.DISTRIBUTION
        if project is None:
            note = (
                adapter.RELEASES if adapter is not None else None
            ) or f"{framework} names no PyPI distribution"
            rows.append(Outdated(framework, newest, note=note))
            continue
        rows.append(
            Outdated(framework, newest, tuple(newer_releases(project, newest, index=index, timeout=timeout)))
        )
    return rows
