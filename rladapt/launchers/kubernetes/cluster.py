"""The ``kubernetes`` launcher's side of the API server: a client per kubeconfig context, and what a RayJob's
status and a pod's log mean to a run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rladapt.plugins import RunState, RunStatus
from rladapt.primitives.errors import LaunchError

from .manifest import kubernetes_module

API_TIMEOUT = (10.0, 60.0)

T = TypeVar("T")


@dataclass
class Cluster:
    """A client for one kubeconfig context, with every failure turned into a LaunchError."""

    api: Any
    host: str
    context: str | None
    kubeconfig: str | None
    namespace: str

    @classmethod
    def connect(cls, kubeconfig: str | None, context: str | None) -> Cluster:
        config = kubernetes_module().config
        # The client's default path is read once, when it is imported; resolve it here instead.
        path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
        first = path.split(os.pathsep)[0]
        if not Path(first).expanduser().is_file():
            raise LaunchError(
                f"no kubeconfig at {first}: the kubernetes launcher submits to a kubeconfig context; "
                "set KUBECONFIG or pass --launcher-opt kubeconfig=PATH"
            )
        try:
            contexts, active = config.list_kube_config_contexts(config_file=path)
            chosen = (
                active if context is None else next((x for x in contexts if x.get("name") == context), None)
            )
            if chosen is None:
                known = ", ".join(str(x.get("name")) for x in contexts) or "none"
                raise LaunchError(f"kubeconfig {path} has no context {context!r}; known contexts: {known}")
            api = config.new_client_from_config(
                config_file=path, context=chosen.get("name"), persist_config=False
            )
        except LaunchError:
            raise
        except Exception as exc:  # ConfigException, a malformed file: the message says which
            raise LaunchError(
                f"cannot use kubeconfig {path}" + (f" context {context!r}" if context else "") + f": {exc}"
            ) from exc
        namespace = (chosen.get("context") or {}).get("namespace") or "default"
        return cls(api, api.configuration.host, chosen.get("name"), path, namespace)

    def call(
        self, what: str, func: Callable[..., T], *args: Any, missing_ok: bool = False, **kwargs: Any
    ) -> T | None:
        from urllib3.exceptions import HTTPError

        api_exception = kubernetes_module().client.exceptions.ApiException

        kwargs.setdefault("_request_timeout", API_TIMEOUT)
        try:
            return func(*args, **kwargs)
        except api_exception as exc:
            if missing_ok and exc.status == 404:
                return None
            raise LaunchError(f"{what}: the API server at {self.host} refused: {_api_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise LaunchError(
                f"{what}: cannot reach the Kubernetes API server at {self.host} "
                f"(context {self.context}): {exc}"
            ) from None

    def custom(self) -> Any:
        return kubernetes_module().client.CustomObjectsApi(self.api)

    def core(self) -> Any:
        return kubernetes_module().client.CoreV1Api(self.api)


def _api_message(exc: Any) -> str:
    status, reason, message = exc.status, exc.reason, ""
    try:
        body = json.loads(exc.body or "{}")
        message = str(body.get("message") or "")
        reason = body.get("reason") or reason
    except (ValueError, AttributeError):
        message = str(exc.body or "")[:500]
    hint = {
        401: " (check the credentials of the kubeconfig context)",
        403: " (check your RBAC permissions, e.g. kubectl auth can-i create rayjobs.ray.io)",
        404: " (is the KubeRay operator, which defines RayJob, installed?)",
        409: " (an object of this name exists: stop the previous run or rename the job)",
    }.get(status, "")
    return f"{status} {reason}: {message}{hint}" if message else f"{status} {reason}{hint}"


def map_status(status: dict[str, Any]) -> RunStatus:
    """A RayJob's ``.status`` as a RunStatus. Only a terminal deployment status ends a run: with a backoffLimit, a
    FAILED Ray job is retried on a fresh cluster while the deployment status says Retrying."""
    job = status.get("jobStatus") or ""
    deployment = status.get("jobDeploymentStatus") or ""
    detail = "; ".join(str(x) for x in (status.get("reason"), status.get("message")) if x)
    where = f"jobDeploymentStatus={deployment or 'New'}, jobStatus={job or 'none'}"
    message = f"{where}: {detail}" if detail else where
    if deployment == "Complete":
        state: RunState = "SUCCEEDED" if job == "SUCCEEDED" else "STOPPED" if job == "STOPPED" else "FAILED"
        return RunStatus(state, message=message)
    if deployment == "Failed":
        return RunStatus("STOPPED" if job == "STOPPED" else "FAILED", message=message)
    if deployment in ("", "New", "Initializing", "Retrying", "Waiting", "Suspended", "Suspending"):
        return RunStatus("PENDING", message=message)
    if job in ("", "PENDING"):
        return RunStatus("PENDING", message=message)
    return RunStatus("RUNNING", message=message)


def newest_pod(pods: Any) -> Any | None:
    items = list(getattr(pods, "items", None) or [])
    if not items:
        return None
    return max(items, key=lambda p: (str(p.metadata.creation_timestamp or ""), p.metadata.name))


def log_lines(response: Any) -> Iterator[str]:
    """The log as lines, each with its newline (the last one may lack it)."""
    buffer = b""
    try:
        for chunk in response.stream(4096):
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for line in complete:
                yield line.decode("utf-8", "replace") + "\n"
        if buffer:
            yield buffer.decode("utf-8", "replace")
    finally:
        response.release_conn()
