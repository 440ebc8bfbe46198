"""The reference engine: a real HTTP server that serves one pool version with transformers on CPU.

It exists so that the whole publish -> switch -> serve loop runs on a machine without a GPU, and so that what the
vLLM and SGLang adapters must do has a reference. Run it as ``python -m rladapt.pool.engine --store DIR --version V
--port P`` (``rladapt pool serve`` starts N of them).

Routes:

- ``POST /v1/completions`` (OpenAI-compatible: ``prompt``, ``max_tokens``, ``temperature``): the answer's ``model``
  and ``weight_version`` name the version that produced it.
- ``GET /version``: what is served and what is staged; ``GET /health``.
- ``POST /stage {"version"}``: re-hash the version's files against its manifest and load them beside the served
  model. Nothing served changes. 409 with the reason when the files do not verify or do not load.
- ``POST /commit {"version"}``: serve the staged version from the next request on. A request already running
  finishes on the model it started with: every answer comes from exactly one version.
- ``POST /abort``: drop what is staged.

Why stage and commit are separate: a switch across N replicas must not leave some serving the new version and some
the old when one of them cannot load it; the switch (``rladapt.pool.switch``) commits only when every replica staged.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rladapt.primitives.errors import RladaptError, UsageError

from .objects import open_store
from .store import VersionStore

__all__ = ["Loaded", "ReferenceEngine", "generate", "load_weights", "main", "torch_modules"]


@dataclass(frozen=True)
class Loaded:
    version: str
    model: Any
    tokenizer: Any


def torch_modules(who: str) -> tuple[Any, Any, Any]:
    """torch, AutoModelForCausalLM, AutoTokenizer; a UsageError naming the extra when they are not installed
    (``who``: what generates, for the message)."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise UsageError(
            f"{who} generates with transformers and torch ({exc}): install 'rladapt[engine]' "
            "(and torch: pip install torch==2.13.0)"
        ) from None
    return torch, AutoModelForCausalLM, AutoTokenizer


_WHO = "the reference engine"


def load_weights(folder: Path, who: str = _WHO) -> tuple[Any, Any]:
    """The model (on the CPU, in float32, in evaluation mode) and the tokenizer of the Hugging Face files in
    ``folder``; what ``from_pretrained`` raises goes to the caller."""
    torch, AutoModelForCausalLM, AutoTokenizer = torch_modules(who)
    # N replicas (or an evaluator beside the training) share the machine's cores; one thread each keeps them
    # from thrashing
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model.eval()
    return model, tokenizer


def generate(
    model: Any,
    tokenizer: Any,
    text: str,
    *,
    max_new_tokens: int,
    temperature: float,
    seed: int | None = None,
    who: str = _WHO,
) -> tuple[Any, int]:
    """The tokens ``model`` generates after ``text`` and the prompt's length in tokens: greedy at temperature 0,
    else sampled (from ``seed`` when given). The one generation of the pool's replicas and of the evaluator, so
    that the evaluator's answers are what a replica would return for the same prompt and settings."""
    torch = torch_modules(who)[0]
    inputs = tokenizer(text, return_tensors="pt")
    sample = temperature > 0
    if sample and seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature if sample else None,
            top_p=None,
            top_k=None,
            pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
        )
    prompt_tokens = int(inputs["input_ids"].shape[1])
    return out[0][prompt_tokens:], prompt_tokens


class ReferenceEngine:
    """The served and the staged version of one replica; switching is one reference assignment."""

    def __init__(self, store: VersionStore, version: str) -> None:
        self.store = store
        self.active = self._stage_load(version)
        self.staged: Loaded | None = None
        self._lock = threading.Lock()  # stage/commit/abort one at a time; generation never takes it

    def _stage_load(self, ref: str) -> Loaded:
        version = self.store.resolve(ref)
        problems = self.store.verify(version)
        if problems:
            raise RladaptError(f"{version} does not verify: {'; '.join(problems)}")
        return Loaded(version, *load_weights(self.store.path(version)))

    def stage(self, ref: str) -> str:
        with self._lock:
            loaded = self._stage_load(ref)
            self.staged = loaded
            return loaded.version

    def commit(self, version: str) -> str:
        with self._lock:
            if self.staged is None or self.staged.version != version:
                have = self.staged.version if self.staged else "nothing"
                raise RladaptError(f"cannot commit {version}: {have} is staged")
            self.active, self.staged = self.staged, None
            return version

    def abort(self) -> None:
        with self._lock:
            self.staged = None

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        loaded = self.active  # one read: the whole answer comes from this version, whatever commits meanwhile
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise UsageError("'prompt' must be a string")
        new, prompt_tokens = generate(
            loaded.model,
            loaded.tokenizer,
            prompt,
            max_new_tokens=int(body.get("max_tokens", 16)),
            temperature=float(body.get("temperature", 0.0)),
        )
        text = loaded.tokenizer.decode(new, skip_special_tokens=True)
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:12]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": loaded.version,
            "weight_version": loaded.version,
            "choices": [{"index": 0, "text": text, "token_ids": new.tolist(), "finish_reason": "length"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(new)},
        }

    def describe(self) -> dict[str, Any]:
        return {"version": self.active.version, "staged": self.staged.version if self.staged else None}


def _handler(engine: ReferenceEngine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown the replica's log

        def _send(self, code: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            data = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(data, dict):
                raise UsageError("the request body must be a JSON object")
            return data

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"ok": True})
            elif self.path == "/version":
                self._send(200, engine.describe())
            elif self.path == "/v1/models":
                self._send(
                    200, {"object": "list", "data": [{"id": engine.active.version, "object": "model"}]}
                )
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def do_POST(self) -> None:
            try:
                body = self._body()
                if self.path == "/v1/completions":
                    self._send(200, engine.complete(body))
                elif self.path == "/stage":
                    self._send(200, {"staged": engine.stage(str(body.get("version")))})
                elif self.path == "/commit":
                    self._send(200, {"version": engine.commit(str(body.get("version")))})
                elif self.path == "/abort":
                    engine.abort()
                    self._send(200, {"staged": None})
                else:
                    self._send(404, {"error": f"no route {self.path}"})
            except UsageError as exc:
                self._send(400, {"error": exc.message})
            except (RladaptError, OSError, ValueError) as exc:
                self._send(409, {"error": exc.message if isinstance(exc, RladaptError) else str(exc)})

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rladapt.pool.engine", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--store", required=True)
    parser.add_argument("--version", required=True, help="the version (or alias) to serve first")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        engine = ReferenceEngine(open_store(args.store), args.version)
    except RladaptError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    server = ThreadingHTTPServer((args.host, args.port), _handler(engine))
    server.daemon_threads = True
    print(f"serving {engine.active.version} on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
