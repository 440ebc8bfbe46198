"""``rladapt matrix outdated`` against a real local HTTP server serving PyPI's JSON API answers (canned JSON).

The only command that needs the network: without it, one clear message and exit 1. Before this change there was
no ``matrix outdated`` (click: "No such command", exit 2): every test here fails on the code before it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.wheels import REPO

#: What https://pypi.org/pypi/<name>/json answers, trimmed to what the command reads (``releases``, ``yanked``).
RELEASES: dict[str, dict[str, Any]] = {
    "verl": {
        "releases": {
            "0.8.0": [{"yanked": False}],
            "0.9.1": [{"yanked": False}],
            "0.9.2": [{"yanked": False}],
            "0.9.3": [{"yanked": True}],  # every file yanked: not a release to onboard
            "0.10.0rc1": [{"yanked": False}],  # a pre-release
            "0.10.0": [{"yanked": False}],
            "not-a-version": [],
        }
    },
    "openrlhf": {"releases": {"0.10.2": [{"yanked": False}], "0.11.2": [{"yanked": False}]}},
}


class _PyPI(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        body = (
            RELEASES.get(parts[1]) if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json" else None
        )
        if body is None:
            self.send_response(404, "Not Found")
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def index() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PyPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/pypi"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def rladapt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_outdated_lists_final_releases_newer_than_the_newest_pinned(index: str) -> None:
    res = rladapt("matrix", "outdated", "--format", "json", env={"RLADAPT_PYPI_URL": index})
    assert res.returncode == 0, res.stderr
    rows = {r["framework"]: r for r in json.loads(res.stdout)}
    assert rows["verl"] == {
        "framework": "verl",
        "newest_pinned": "0.9.1",
        "newer": ["0.9.2", "0.10.0"],
        "note": None,
    }
    assert rows["openrlhf"]["newest_pinned"] == "0.11.2" and rows["openrlhf"]["newer"] == []
    assert rows["nemo-rl"]["newer"] == [] and "placeholder on PyPI" in rows["nemo-rl"]["note"]


def test_outdated_text_names_the_onboard_command(index: str) -> None:
    res = rladapt("matrix", "outdated", "--index", index)
    assert res.returncode == 0, res.stderr
    assert (
        "verl      pinned 0.9.1: newer on PyPI: 0.9.2, 0.10.0 (rladapt matrix onboard -f verl==0.10.0)"
        in res.stdout
    )
    assert "openrlhf  pinned 0.11.2: current" in res.stdout
    assert "nemo-rl   pinned 0.7.0: not checked: NeMo-RL publishes only a placeholder" in res.stdout


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_outdated_without_the_network_exits_1_with_one_message() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/pypi"
    res = rladapt("matrix", "outdated", env={"RLADAPT_PYPI_URL": url})
    assert res.returncode == 1
    assert res.stderr.startswith(f"error: cannot reach {url}/verl/json (")
    assert "needs the network" in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""


def test_outdated_an_index_that_is_not_pypi_exits_1(index: str) -> None:
    res = rladapt("matrix", "outdated", "--index", index + "/missing")
    assert res.returncode == 1
    assert "HTTP 404" in res.stderr and "Traceback" not in res.stderr


def test_outdated_refuses_a_non_http_index() -> None:
    res = rladapt("matrix", "outdated", "--index", "file:///etc")
    assert res.returncode == 2
    assert "--index 'file:///etc': expected an http:// or https:// URL" in res.stderr
