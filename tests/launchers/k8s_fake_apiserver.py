"""A tiny stand-in for the Kubernetes API server: no real one can run on these machines (no kube-apiserver in
Debian or PyPI, no container runtime for kind/k3s).

It serves just the endpoints the kubernetes launcher uses, over real HTTP, to the real ``kubernetes`` client:
RayJobs (create, get, delete with a uid precondition), ConfigMaps (create, patch, delete), pods (list by label,
log), a service role's objects and PersistentVolumeClaims (create, get, delete). Created RayJobs are checked against KubeRay's real CRD schema (unknown fields rejected) and refused with
422 like the API server does; tests play the operator by setting ``status`` and adding pods.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import yaml

from tests.launchers.k8s_schemas import crd_errors, k8s_errors

TOKEN = "fake-token"
_RAYJOBS = re.compile(r"^/apis/ray\.io/v1/namespaces/([^/]+)/rayjobs(?:/([^/]+))?$")
_CONFIGMAPS = re.compile(r"^/api/v1/namespaces/([^/]+)/configmaps(?:/([^/]+))?$")
_PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods$")
#: The kinds of a service role beside the RayJob (Deployment, Job, Service) and the claims a launch creates: created
#: objects are checked against the official Kubernetes schemas (kubernetes-validate, strict) and refused with 422
#: as the API server would.
_SERVICE_KINDS = {
    "Deployment": re.compile(r"^/apis/apps/v1/namespaces/([^/]+)/deployments(?:/([^/]+))?$"),
    "Job": re.compile(r"^/apis/batch/v1/namespaces/([^/]+)/jobs(?:/([^/]+))?$"),
    "Service": re.compile(r"^/api/v1/namespaces/([^/]+)/services(?:/([^/]+))?$"),
    "PersistentVolumeClaim": re.compile(r"^/api/v1/namespaces/([^/]+)/persistentvolumeclaims(?:/([^/]+))?$"),
}
_LOG = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")


@dataclass
class FakeCluster:
    rayjobs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    configmaps: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: kind -> (namespace, name) -> object, for Deployment, Job, Service and PersistentVolumeClaim
    objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(
        default_factory=lambda: {kind: {} for kind in _SERVICE_KINDS}
    )
    pods: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[tuple[str, str], str] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: (status, reason, message) to answer every RayJob creation with, instead of creating it.
    refuse_rayjobs: tuple[int, str, str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_pod(
        self, namespace: str, name: str, labels: dict[str, str], log: str, phase: str = "Running"
    ) -> None:
        with self.lock:
            self.pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "labels": labels,
                        "uid": str(uuid.uuid4()),
                        "creationTimestamp": f"2030-01-01T00:00:{len(self.pods):02d}Z",
                    },
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                    "status": {"phase": phase},
                }
            )
            self.logs[(namespace, name)] = log

    def add_service_pod(self, namespace: str, name: str, labels: dict[str, str], restarts: int) -> None:
        """A pod of a service role's workload, its container restarted ``restarts`` times (the kubelet's count)."""
        self.add_pod(namespace, name, labels, "")
        with self.lock:
            self.pods[-1]["status"]["containerStatuses"] = [
                {
                    "name": "service",
                    "image": "i",
                    "imageID": "",
                    "ready": True,
                    "restartCount": restarts,
                    "started": True,
                    "state": {"running": {}},
                    "lastState": {},
                }
            ]

    def set_object_status(self, kind: str, namespace: str, name: str, **status: Any) -> None:
        with self.lock:
            self.objects[kind][(namespace, name)]["status"] = dict(status)

    def set_status(self, namespace: str, name: str, **status: Any) -> None:
        with self.lock:
            self.rayjobs[(namespace, name)]["status"] = dict(status)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = _merge(base.get(key), value) if value is not None else None
        return {k: v for k, v in out.items() if v is not None}
    return patch


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _handler(cluster: FakeCluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures, not traffic
            pass

        def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            return json.loads(raw) if raw else None

        def _dispatch(self, method: str) -> None:
            url = urlparse(self.path)
            path, query = unquote(url.path), parse_qs(url.query)
            body = self._body() if method in ("POST", "PATCH", "DELETE") else None
            with cluster.lock:
                cluster.requests.append((method, path))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, _status(401, "Unauthorized", "Unauthorized"))
                return
            with cluster.lock:
                code, answer, kind = self._route(method, path, query, body)
            self._send(code, answer, kind)

        def _route(
            self, method: str, path: str, query: dict[str, list[str]], body: Any
        ) -> tuple[int, Any, str]:
            json_type = "application/json"
            if m := _RAYJOBS.match(path):
                return self._objects(
                    method, m.group(1), m.group(2), body, cluster.rayjobs, "RayJob", "rayjobs.ray.io"
                )
            if m := _CONFIGMAPS.match(path):
                return self._objects(
                    method, m.group(1), m.group(2), body, cluster.configmaps, "ConfigMap", "configmaps"
                )
            for kind, pattern in _SERVICE_KINDS.items():
                if m := pattern.match(path):
                    return self._objects(
                        method, m.group(1), m.group(2), body, cluster.objects[kind], kind, kind.lower() + "s"
                    )
            if (m := _PODS.match(path)) and method == "GET":
                selector = query.get("labelSelector", [""])[0]
                items = [
                    p
                    for p in cluster.pods
                    if p["metadata"]["namespace"] == m.group(1)
                    and _matches(p["metadata"]["labels"], selector)
                ]
                return 200, {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}, json_type
            if (m := _LOG.match(path)) and method == "GET":
                log = cluster.logs.get((m.group(1), m.group(2)))
                if log is None:
                    return 404, _status(404, "NotFound", f'pods "{m.group(2)}" not found'), json_type
                return 200, log.encode(), "text/plain"
            return (
                404,
                _status(404, "NotFound", f"the server could not find the requested resource ({path})"),
                json_type,
            )

        def _objects(
            self,
            method: str,
            ns: str,
            name: str | None,
            body: Any,
            table: dict[tuple[str, str], Any],
            kind: str,
            resource: str,
        ) -> tuple[int, Any, str]:
            j = "application/json"
            if method == "POST" and name is None:
                if kind == "RayJob" and cluster.refuse_rayjobs is not None:
                    code, reason, message = cluster.refuse_rayjobs
                    return code, _status(code, reason, message), j
                new_name = body["metadata"]["name"]
                if kind == "RayJob":
                    errors = crd_errors(body)
                    if errors:
                        return (
                            422,
                            _status(
                                422, "Invalid", f'RayJob.ray.io "{new_name}" is invalid: ' + "; ".join(errors)
                            ),
                            j,
                        )
                if kind in _SERVICE_KINDS:
                    errors = k8s_errors(body)
                    if errors:
                        return (
                            422,
                            _status(422, "Invalid", f'{kind} "{new_name}" is invalid: ' + "; ".join(errors)),
                            j,
                        )
                if body["metadata"].get("namespace", ns) != ns:
                    return 400, _status(400, "BadRequest", "the namespace of the object does not match"), j
                if (ns, new_name) in table:
                    return 409, _status(409, "AlreadyExists", f'{resource} "{new_name}" already exists'), j
                obj = json.loads(json.dumps(body))
                obj["metadata"].update(
                    namespace=ns,
                    uid=str(uuid.uuid4()),
                    resourceVersion="1",
                    creationTimestamp="2030-01-01T00:00:00Z",
                )
                table[(ns, new_name)] = obj
                return 201, obj, j
            if name is None or (ns, name) not in table:
                return 404, _status(404, "NotFound", f'{resource} "{name}" not found'), j
            obj = table[(ns, name)]
            if method == "GET":
                return 200, obj, j
            if method == "PATCH":
                table[(ns, name)] = _merge(obj, body)
                return 200, table[(ns, name)], j
            if method == "DELETE":
                wanted = ((body or {}).get("preconditions") or {}).get("uid")
                if wanted and wanted != obj["metadata"]["uid"]:
                    return (
                        409,
                        _status(
                            409,
                            "Conflict",
                            f"Precondition failed: UID in precondition: {wanted}, "
                            f"UID in object meta: {obj['metadata']['uid']}",
                        ),
                        j,
                    )
                del table[(ns, name)]
                if kind == "Service":  # the API server answers a Service's deletion with the Service
                    return 200, obj, j
                return (
                    200,
                    {
                        "apiVersion": "v1",
                        "kind": "Status",
                        "status": "Success",
                        "details": {"name": name, "uid": obj["metadata"]["uid"]},
                    },
                    j,
                )
            return 405, _status(405, "MethodNotAllowed", method), j

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

    return Handler


@contextmanager
def fake_apiserver() -> Iterator[tuple[FakeCluster, str]]:
    """A running fake API server on 127.0.0.1 and a free port: (its state, its URL)."""
    cluster = FakeCluster()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(cluster))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield cluster, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def write_kubeconfig(
    path: Path, server: str, namespace: str | None = None, contexts: tuple[str, ...] = ("fake",)
) -> Path:
    """A kubeconfig whose contexts all reach ``server`` with the fake's token; the first one is current."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server}}],
                "users": [{"name": "fake", "user": {"token": TOKEN}}],
                "contexts": [
                    {
                        "name": name,
                        "context": {
                            "cluster": "fake",
                            "user": "fake",
                            **({"namespace": namespace} if namespace else {}),
                        },
                    }
                    for name in contexts
                ],
                "current-context": contexts[0],
            }
        ),
        encoding="utf-8",
    )
    return path
