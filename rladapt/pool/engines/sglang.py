"""SGLang's side of a switch: ``update_weights_from_disk`` naming the version, with generation paused around it.

The routes and payloads, from SGLang's own code (sgl-project/sglang):

- ``python/sglang/srt/entrypoints/http_server.py`` (commit 9c0549b727fe222444495cea6b369697534d60f0):
  ``POST /pause_generation`` (body ``PauseGenerationReqInput``), ``POST /continue_generation``
  (``ContinueGenerationReqInput``), ``POST /update_weights_from_disk`` (``UpdateWeightFromDiskReqInput``) answering
  ``{"success", "message", "num_paused_requests"}`` with HTTP 400 when ``success`` is false, ``GET /model_info``
  with ``model_path`` and ``weight_version`` (``/get_model_info`` is its deprecated name; ``/weight_version`` was
  removed in favour of ``/model_info``), ``GET /health``.
- ``python/sglang/srt/managers/io_struct.py`` (commit f11d231cea29f76f78aaa524783d6556267e3b58):
  ``PauseGenerationReqInput.mode`` in ``abort | retract | in_place`` (``retract``: running requests go back to the
  waiting queue and are recomputed after ``continue_generation``, so the cache may be flushed by the reload);
  ``UpdateWeightFromDiskReqInput {model_path, load_format, abort_all_requests, weight_version, flush_cache, ...}``.
- The server takes its first version name from ``--weight-version`` (``server_args.weight_version``).
- The tokenizer manager's ``update_weights_from_disk`` sets its ``model_path`` (what ``/model_info`` reports) to
  the request's ``model_path`` only when the reload succeeded.

After the reload ``/model_info`` must report both the new ``weight_version`` and the version's folder as
``model_path``: an answer of success that left either behind is a failed switch.
"""

from __future__ import annotations

import sys

from ..store import VersionStore
from .base import Engine, EngineFailed, version_folder
from .http import call, paused, reported

__all__ = ["SglangEngine"]


class SglangEngine(Engine):
    name = "sglang"
    requires = "sglang"
    uses_gpu = True

    def command(self, store: VersionStore, version: str, *, host: str, port: int) -> list[str]:
        return [sys.executable, "-m", "sglang.launch_server", "--model-path", version_folder(store, version),
                "--weight-version", version, "--host", host, "--port", str(port)]  # fmt: skip

    def _info(self, url: str, timeout: float) -> dict[str, object]:
        return call(url, "/model_info", timeout=timeout)

    def served(self, url: str, *, timeout: float = 10.0) -> str | None:
        return reported(url, "/model_info", "weight_version", timeout=timeout)

    def holds(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 10.0) -> bool:
        info = self._info(url, timeout)
        return info.get("weight_version") == version and info.get("model_path") == version_folder(
            store, version
        )

    def commit(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 600.0) -> None:
        folder = version_folder(store, version)
        with paused(url, "/pause_generation", {"mode": "retract"}, "/continue_generation", timeout=timeout):
            answer = call(url, "/update_weights_from_disk", {"model_path": folder, "weight_version": version},
                          timeout=timeout)  # fmt: skip
        if answer.get("success") is False:
            raise EngineFailed(f"SGLang refused {version}: {answer.get('message')}")
        info = self._info(url, timeout)
        if info.get("model_path") != folder:
            raise EngineFailed(
                f"SGLang answered the reload of {version} but reports model_path {info.get('model_path')!r}, "
                f"not {folder!r}"
            )
