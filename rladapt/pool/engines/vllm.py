"""vLLM's side of a switch: a disk reload through its development routes, the version stamped and read back.

The routes and payloads, from vLLM's own code (vllm-project/vllm):

- ``vllm/entrypoints/serve/dev/rlhf/api_router.py`` (commit 6fbea1171830682c53ecb7d3ae67495fa799e62f):
  ``POST /pause?mode=keep`` (requests stay queued and go on after ``/resume``; answers ``{"status": "paused"}``),
  ``POST /resume``, ``POST /update_weight_version {"new_version"}``, ``GET /weight_info`` ->
  ``{"weight_version"}``, ``POST /weight_checker {"action": "checksum"}`` -> ``{"checksums": {name: sha256}}``
  (409 while paused). The transfer protocol of the same file (``init_weight_transfer_engine`` ->
  ``start_weight_update`` -> ``update_weights`` -> ``finish_weight_update {"weight_version"}``) moves tensors from
  a trainer's process group; a pool version is files on shared storage, so rladapt reloads from disk instead.
- ``vllm/frontend/entrypoints/serve/dev/rpc/api_router.py`` (commit 055e47c28003156421365af985d676fc921cb075):
  ``POST /collective_rpc {"method", "args", "kwargs", "timeout"}`` calls the method on every worker.
- ``vllm/v1/worker/gpu_worker.py`` (commit 35d5cda123ec28581759b6d34cde8052314fb1e6): ``Worker.update_config
  (overrides)`` (``{"model_config": {"model": PATH}}`` points the loader at the version's folder) and
  ``Worker.reload_weights()`` (re-reads the weights in place through the model loader).
- The model runner's ``update_config`` takes only ``load_config`` and ``model_config`` overrides (an assertion
  names the others); the V2 model runner (``VLLM_USE_V2_MODEL_RUNNER``) raises ``NotImplementedError`` on
  ``reload_weights``, which fails the commit (and commits the other replicas back) rather than half-switching.
- These routes are mounted only when the server runs with ``VLLM_SERVER_DEV_MODE=1`` (``env`` sets it).

Why the checksum: ``update_weight_version`` only *names* a version; a reload that answers 200 and changes nothing
would still report the new name. So the weights' checksums are taken before and after the reload: when the
version's files differ from the old version's, the checksums must differ too, or the switch fails.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from ..store import VersionStore
from .base import Engine, EngineFailed, version_folder
from .http import EngineCallFailed, call, paused, reported

__all__ = ["VllmEngine"]


class VllmEngine(Engine):
    name = "vllm"
    requires = "vllm"
    uses_gpu = True

    def command(self, store: VersionStore, version: str, *, host: str, port: int) -> list[str]:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", version_folder(store, version),
                "--served-model-name", "pool", "--host", host, "--port", str(port)]  # fmt: skip

    def env(self) -> Mapping[str, str]:
        return {"VLLM_SERVER_DEV_MODE": "1"}

    def started(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 60.0) -> None:
        # vLLM starts with no version name: the first one is stamped here, then read back like every switch
        call(url, "/update_weight_version", {"new_version": version}, timeout=timeout)
        if self.served(url, timeout=timeout) != version:
            raise EngineFailed(f"{url} does not report {version} after it was named so")

    def served(self, url: str, *, timeout: float = 10.0) -> str | None:
        return reported(url, "/weight_info", "weight_version", timeout=timeout)

    def _checksums(self, url: str, timeout: float) -> dict[str, str] | None:
        """The weights' checksums, or None on a vLLM without the checker route (older than the check)."""
        try:
            answer = call(url, "/weight_checker", {"action": "checksum"}, timeout=timeout)
        except EngineCallFailed as exc:
            if exc.status == 404:
                return None
            raise
        checksums = answer.get("checksums")
        return dict(checksums) if isinstance(checksums, dict) else None

    def commit(self, url: str, store: VersionStore | None, version: str, *, timeout: float = 600.0) -> None:
        before = self._checksums(url, timeout)
        old = self.served(url, timeout=timeout)
        with paused(url, "/pause?mode=keep", {}, "/resume", timeout=timeout):
            folder = version_folder(store, version)
            call(url, "/collective_rpc", {"method": "update_config", "args": [{"model_config": {"model": folder}}]},
                 timeout=timeout)  # fmt: skip
            call(url, "/collective_rpc", {"method": "reload_weights"}, timeout=timeout)
            call(url, "/update_weight_version", {"new_version": version}, timeout=timeout)
        after = self._checksums(url, timeout)
        if before is not None and after == before and old is not None and _differ(store, old, version):
            # name it for what it still serves, so that nothing reads the new name off the old weights
            call(url, "/update_weight_version", {"new_version": old}, timeout=timeout)
            raise EngineFailed(
                f"vLLM answered the reload of {version} but its weights' checksums did not change: it still "
                f"serves {old}'s weights"
            )


def _differ(store: VersionStore | None, old: str, new: str) -> bool:
    """Whether two versions hold different weights (their manifests' content digests)."""
    if store is None:
        return True
    try:
        return store.manifest(old).digest != store.manifest(new).digest
    except (
        Exception
    ):  # an old version already collected: assume they differ, the check is then on the safe side
        return True
