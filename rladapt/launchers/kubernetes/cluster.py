"""The ``kubernetes`` launcher's side of the API server: a client per kubeconfig context, and what a RayJob's
status and a pod's log mean to a run.

Every answer the launcher relies on is checked here, in ``Cluster.call``, before anything reads it: the object
created or read is of the kind and apiVersion asked for, with the name asked for and a uid, and a RayJob's
``status`` has the shape KubeRay gives it. A server that is no Kubernetes API server (a proxy or catch-all web
server that answers ``200 {}`` to everything) is then a LaunchError naming it, not a run "submitted" with no
uid whose ``status``, ``stop`` and ``logs`` crash.
"""

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

#: (connect, read) seconds of every API request; the kubernetes client passes it to urllib3 as its timeout.
API_TIMEOUT = (10.0, 60.0)
#: The apiVersion of each kind the launcher creates, reads or lists.
API_VERSIONS = {
    "RayJob": "ray.io/v1",
    "ConfigMap": "v1",
    "PodList": "v1",
    # a service role beside the RayJob (manifest.py, Renderer.services)
    "Deployment": "apps/v1",
    "Job": "batch/v1",
    "Service": "v1",
    # a claim the launch creates when absent (manifest.py, Renderer.claims)
    "PersistentVolumeClaim": "v1",
}
#: Fields of a RayJob's ``.status`` that ``map_status`` and ``logs`` read: strings when present (KubeRay's
#: ``RayJobStatus``, ray-operator/apis/ray/v1/rayjob_types.go).
_STATUS_STRINGS = ("jobStatus", "jobDeploymentStatus", "reason", "message", "rayClusterName")

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
        path = kubeconfig_path(kubeconfig)
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
        self,
        what: str,
        func: Callable[..., T],
        *args: Any,
        missing_ok: bool = False,
        exists_ok: bool = False,
        kind: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> T | None:
        """``func(*args, **kwargs)`` with a timeout; every failure is a LaunchError saying ``what`` failed.

        With ``kind``, the answer must be an object of that kind (and ``name``, when given) or a list of that
        kind: anything else is a LaunchError naming the server. ``missing_ok`` turns a 404 into None,
        ``exists_ok`` a 409 (a creation whose object exists already).
        """
        # the client first: it names the extra when missing, and urllib3 comes with it
        api_exception = kubernetes_module().client.exceptions.ApiException
        from urllib3.exceptions import HTTPError

        kwargs.setdefault("_request_timeout", API_TIMEOUT)
        try:
            answer = func(*args, **kwargs)
        except api_exception as exc:
            if (missing_ok and exc.status == 404) or (exists_ok and exc.status == 409):
                return None
            raise LaunchError(f"{what}: the API server at {self.host} refused: {_api_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise LaunchError(
                f"{what}: cannot reach the Kubernetes API server at {self.host} "
                f"(context {self.context}): {exc}"
            ) from None
        except (ValueError, TypeError) as exc:  # the client's models refuse an answer missing required fields
            raise self._foreign(what, f"its answer does not fit the Kubernetes API ({exc})") from None
        if kind is not None:
            problem = _answer_problem(self._plain(answer), kind, name)
            if problem is not None:
                raise self._foreign(what, problem)
        return answer

    def _plain(self, answer: Any) -> Any:
        """The answer as JSON data: custom objects already are; the typed client's models are converted."""
        if isinstance(answer, (dict, list, str, int, float, bool)) or answer is None:
            return answer
        return self.api.sanitize_for_serialization(answer)

    def _foreign(self, what: str, problem: str) -> LaunchError:
        return LaunchError(
            f"{what}: the server at {self.host} (context {self.context}) does not answer like a Kubernetes "
            f"API server with KubeRay: {problem}; check the kubeconfig's server address"
        )

    def custom(self) -> Any:
        return kubernetes_module().client.CustomObjectsApi(self.api)

    def core(self) -> Any:
        return kubernetes_module().client.CoreV1Api(self.api)


def kubeconfig_path(kubeconfig: str | None) -> str:
    """The kubeconfig path list to use, each path absolute: ``status`` and ``stop`` may run from elsewhere.

    The option, else ``$KUBECONFIG``, else ``~/.kube/config`` (the client reads its own default once, when it
    is imported, so it is resolved here instead).
    """
    raw = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    return os.pathsep.join(str(Path(part).expanduser().absolute()) for part in raw.split(os.pathsep) if part)


def _answer_problem(data: Any, kind: str, name: str | None) -> str | None:
    """What is wrong with ``data`` as the API server's answer with an object (or list) of ``kind``; None if fine."""
    if data is None or data == {}:
        return f"expected a {kind} object, found an empty answer"
    if not isinstance(data, dict):
        return f"expected a {kind} object, found {type(data).__name__}"
    found_kind, found_version = data.get("kind"), data.get("apiVersion")
    if found_kind != kind or found_version != API_VERSIONS[kind]:
        return (
            f"expected kind {kind} of apiVersion {API_VERSIONS[kind]}, found kind {found_kind!r} of apiVersion "
            f"{found_version!r}"
        )
    if kind.endswith("List"):
        return None if isinstance(data.get("items"), list) else "the list has no items"
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return f"the {kind} has no metadata"
    uid = metadata.get("uid")
    if not isinstance(uid, str) or not uid:
        return f"the {kind} has no metadata.uid"
    if name is not None and metadata.get("name") != name:
        return f"expected the {kind} {name!r}, found metadata.name {metadata.get('name')!r}"
    status = data.get("status")
    if kind == "RayJob" and status is not None:
        if not isinstance(status, dict):
            return f"the RayJob's status is {type(status).__name__}, not an object"
        wrong = [
            key for key in _STATUS_STRINGS if status.get(key) is not None and not isinstance(status[key], str)
        ]
        if wrong:
            return "the RayJob's status." + ", status.".join(wrong) + " must be strings"
    return None


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
