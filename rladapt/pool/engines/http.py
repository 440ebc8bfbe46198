"""The small JSON-over-HTTP client every engine adapter talks through (stdlib only: a switch must not need more
than the store does), and the two steps the vLLM and SGLang adapters share: reading the version a replica reports
(``reported``) and keeping generation paused around a reload (``paused``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rladapt.primitives.errors import RladaptError

__all__ = ["EngineCallFailed", "call", "paused", "reported"]


class EngineCallFailed(RladaptError):
    """An engine's route answered an error or could not be reached; the message names the route and why."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        #: the HTTP status, None when the replica could not be reached at all
        self.status = status


def call(
    url: str,
    route: str,
    body: dict[str, Any] | None = None,
    *,
    method: str | None = None,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """``route`` of the replica at ``url``: POST with ``body`` as JSON (GET when ``body`` is None and no method
    is given); the decoded answer, ``{}`` for an empty one. An ``EngineCallFailed`` naming the route otherwise."""
    data = None if body is None else json.dumps(body).encode()
    verb = method or ("GET" if body is None else "POST")
    request = urllib.request.Request(
        url.rstrip("/") + route, data=data, method=verb, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        try:
            decoded = json.loads(text)
            reason = decoded.get("error") or decoded.get("detail") or decoded.get("message") or text
        except (ValueError, AttributeError):
            reason = text.strip() or exc.reason
        raise EngineCallFailed(f"{verb} {route}: HTTP {exc.code}: {reason}", status=exc.code) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise EngineCallFailed(f"{verb} {route}: unreachable: {getattr(exc, 'reason', exc)}") from None
    if not raw.strip():
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError:
        raise EngineCallFailed(f"{verb} {route}: the answer is not JSON: {raw[:200]!r}") from None
    return decoded if isinstance(decoded, dict) else {"value": decoded}


def reported(url: str, route: str, key: str, *, timeout: float) -> str | None:
    """The version the replica at ``url`` names under ``key`` of ``route``'s answer (None when it names none)."""
    version = call(url, route, timeout=timeout).get(key)
    return str(version) if version is not None else None


@contextmanager
def paused(url: str, pause: str, body: dict[str, Any], resume: str, *, timeout: float) -> Iterator[None]:
    """Generation paused (``pause`` with ``body``) for the block, resumed (``resume``) however the block ends:
    the requests the engine held go on, on whatever is loaded then."""
    call(url, pause, body, timeout=timeout)
    try:
        yield
    finally:
        call(url, resume, {}, timeout=timeout)
