"""Real HTTP servers in a thread, on 127.0.0.1, that misbehave the way a broken or foreign endpoint does.

- ``stalling_dashboard``: answers ``/api/version`` like a Ray dashboard once, then accepts every next request
  and never answers it (until the server shuts down), as an overloaded or wedged dashboard does;
- ``yes_server``: answers ``200 {}`` to every request, whatever its method and path, as a catch-all web server
  or proxy does; it is no Kubernetes API server and must not be taken for one.

Both count the requests they got, so a test can tell that the client did reach them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: How long a stalled request is held at most: longer than any timeout under test, short enough to end.
STALL_SECONDS = 120.0
RAY_VERSION_ANSWER = {"version": "4", "ray_version": "2.60.0", "ray_commit": "0" * 40}


@dataclass
class Seen:
    requests: list[tuple[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _send(handler: BaseHTTPRequestHandler, code: int, body: Any) -> None:
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _stalling_handler(seen: Seen) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _any(self) -> None:
            with seen.lock:
                first = not seen.requests
                seen.requests.append((self.command, self.path))
            if first and self.path.startswith("/api/version"):
                _send(self, 200, RAY_VERSION_ANSWER)
                return
            seen.release.wait(STALL_SECONDS)  # accepted, read, never answered
            self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    return Handler


def _yes_handler(seen: Seen) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with seen.lock:
                seen.requests.append((self.command, self.path))
            _send(self, 200, {})

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    return Handler


@contextmanager
def _serve(handler: type[BaseHTTPRequestHandler], seen: Seen) -> Iterator[tuple[Seen, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield seen, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        seen.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def stalling_dashboard() -> Iterator[tuple[Seen, str]]:
    """(what it saw, its URL): a Ray dashboard that answers /api/version once, then stalls."""
    seen = Seen()
    with _serve(_stalling_handler(seen), seen) as served:
        yield served


@contextmanager
def yes_server() -> Iterator[tuple[Seen, str]]:
    """(what it saw, its URL): a server that answers 200 {} to everything."""
    seen = Seen()
    with _serve(_yes_handler(seen), seen) as served:
        yield served
