"""Fake vLLM and SGLang servers: vLLM and SGLang need a GPU, so these stand in for them in the tests. Each
implements exactly the routes and payload shapes the adapters cite from the engines' code
(``rladapt/pool/engines/vllm.py``, ``rladapt/pool/engines/sglang.py``) and nothing else, over real HTTP.

The fake's "weights" are the sha256 of the folder's ``model.safetensors`` as it was when the fake last loaded it:
a reload that does not happen leaves them as they were, which is what the switch must notice.

``behaviour``: ``ok``; ``stale`` (answers every reload with success and keeps the old weights); ``fail`` (the
reload answers an error, as an engine out of memory does); ``unnamed`` (SGLang only: reloads the weights but keeps
the old version name, as a server that ignores ``weight_version`` would). Run as a module it serves one fake on a port, so a
``ServeGroup`` can start it as a replica process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse


def weights_of(folder: str) -> str:
    return hashlib.sha256((Path(folder) / "model.safetensors").read_bytes()).hexdigest()


class FakeEngine:
    kind = ""

    def __init__(self, model: str, *, version: str | None = None, behaviour: str = "ok") -> None:
        self.model = model
        self.version = version
        self.weights = weights_of(model)
        self.behaviour = behaviour
        self.paused = False
        #: (method, path with its query, body) of every request, in order
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []
        self.server: ThreadingHTTPServer | None = None

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self, port: int = 0) -> FakeEngine:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                parsed = urlparse(self.path)
                fake.calls.append((method, self.path, body))
                code, answer = fake.handle(method, parsed.path, parse_qs(parsed.query), body)
                data = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def routes(self) -> list[str]:
        """The routes called, in order, without the read-only ones."""
        return [path for method, path, _ in self.calls if method == "POST"]


class FakeVllm(FakeEngine):
    """vLLM's OpenAI server with its development routes (``VLLM_SERVER_DEV_MODE=1``; ``dev_mode=False`` is a
    server started without it: those routes are not mounted)."""

    kind = "vllm"

    def __init__(self, model: str, *, dev_mode: bool = True, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.dev_mode = dev_mode
        self.pending = model

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        if (method, path) == ("GET", "/health"):
            return 200, None
        if not self.dev_mode:
            return 404, {"detail": "Not Found"}
        if (method, path) == ("GET", "/weight_info"):
            return 200, {"weight_version": self.version}
        if (method, path) == ("POST", "/pause"):
            if query.get("mode", ["abort"])[0] not in ("abort", "wait", "keep"):
                return 400, {"error": f"bad mode {query.get('mode')}"}
            self.paused = True
            return 200, {"status": "paused"}
        if (method, path) == ("POST", "/resume"):
            self.paused = False
            return 200, {"status": "resumed"}
        if (method, path) == ("POST", "/update_weight_version"):
            self.version = body["new_version"]
            return 200, {"success": True, "new_version": body["new_version"]}
        if (method, path) == ("POST", "/weight_checker"):
            if self.paused:
                return 409, {"detail": "weight_checker requires an awake, unpaused engine"}
            return 200, {"checksums": {"model.embed_tokens.weight": self.weights}}
        if (method, path) == ("POST", "/collective_rpc"):
            if body.get("method") == "update_config":
                self.pending = body["args"][0]["model_config"]["model"]
                return 200, None
            if body.get("method") == "reload_weights":
                if self.behaviour == "fail":
                    return 500, {"detail": "CUDA out of memory"}
                if self.behaviour == "ok":
                    self.model, self.weights = self.pending, weights_of(self.pending)
                return 200, None
            return 400, {"detail": f"no method {body.get('method')!r} in this fake"}
        return 404, {"detail": "Not Found"}


class FakeSglang(FakeEngine):
    kind = "sglang"

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        if (method, path) == ("GET", "/health"):
            return 200, None
        if (method, path) == ("GET", "/model_info"):
            return 200, {"model_path": self.model, "tokenizer_path": self.model, "is_generation": True,
                         "preferred_sampling_params": None, "weight_version": self.version}  # fmt: skip
        if (method, path) == ("POST", "/pause_generation"):
            if body.get("mode", "abort") not in ("abort", "retract", "in_place"):
                return 400, {"detail": "Invalid mode"}
            self.paused = True
            return 200, {"message": "Generation paused successfully.", "status": "ok"}
        if (method, path) == ("POST", "/continue_generation"):
            self.paused = False
            return 200, {"message": "Generation continued successfully.", "status": "ok"}
        if (method, path) == ("POST", "/update_weights_from_disk"):
            if self.behaviour == "fail":
                return 400, {"success": False, "message": "Failed to update weights: CUDA out of memory",
                             "num_paused_requests": 0}  # fmt: skip
            if self.behaviour in ("ok", "unnamed"):
                self.model, self.weights = body["model_path"], weights_of(body["model_path"])
                if body.get("weight_version") is not None and self.behaviour != "unnamed":
                    self.version = body["weight_version"]
            return 200, {
                "success": True,
                "message": "Succeeded to update model weights.",
                "num_paused_requests": 0,
            }
        return 404, {"detail": "Not Found"}


def main() -> None:  # pragma: no cover - run as a replica process by the ServeGroup test
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["vllm", "sglang"])
    parser.add_argument("--model", required=True)
    parser.add_argument("--version")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    fake = (FakeVllm if args.kind == "vllm" else FakeSglang)(args.model, version=args.version)
    fake.start(args.port)
    assert fake.server is not None
    threading.Event().wait()


if __name__ == "__main__":  # pragma: no cover
    main()
