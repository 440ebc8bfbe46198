"""The ``kubernetes`` launcher: a KubeRay ``RayJob`` submitted to the current kubeconfig context.

``render`` builds a ``ray.io/v1`` RayJob (a head group plus one worker group per GPU pool of the placement) and, when
the launch carries files, a ConfigMap mounted into every Ray pod; for each ``pvc`` volume with a ``size``, a
PersistentVolumeClaim that ``submit`` creates first when the namespace has none of that name, and that nothing of
rladapt deletes (no owner reference: checkpoints outlive the job). The pod templates are built with the official
``kubernetes`` client's models and serialized by its ``ApiClient``, so what the dry run prints is what the API
server receives. ``submit``, ``status``, ``logs`` and ``stop`` talk to the API server with the same client.

Two places of a RayJob are interpreted before the job sees them, and rendering keeps every value from the spec
literal through both:

* the kubelet expands ``$(VAR)`` in container ``env`` values and ``args``, and ``$$`` is its escape for ``$``;
  KubeRay's K8sJobMode / SidecarMode submitter passes ``spec.entrypoint`` inside its container args;
* the same submitter runs ``ray job submit --runtime-env-json "<runtimeEnvYAML as JSON>" -- <entrypoint>`` with
  ``bash -c`` (KubeRay ``common/job.go`` ``BuildJobSubmitCommand``): the entrypoint is shell-quoted here, but the
  runtime env sits inside double quotes, where ``$`` and backticks stay live. Environment variables therefore go
  into the containers' ``env`` (the driver and every Ray worker inherit them from the raylet), never into
  ``runtimeEnvYAML``, which only carries values that cannot be hostile.

``kubernetes`` is imported lazily (it costs about half a second): never when the CLI starts.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rladapt.plugins import (
    TERMINAL_STATES,
    Artifacts,
    Command,
    Launcher,
    NativeLaunch,
    RunState,
    RunStatus,
    ServiceStatus,
    hookimpl,
)
from rladapt.primitives.errors import LaunchError

from .options import OPTIONS, PLUGIN_NAME, SUBMISSION_MODES, KubernetesOptions

if TYPE_CHECKING:  # at run time these load on first use: module __getattr__ below
    from .cluster import Cluster, map_status
    from .manifest import (
        CONFIGMAP_FILE,
        MANAGED_BY_LABEL,
        RAYJOB_FILE,
        dump_manifest,
        kubelet_literal,
        rayjob_name,
    )

__all__ = [
    "CONFIGMAP_FILE",
    "MANAGED_BY_LABEL",
    "PLUGIN_NAME",
    "RAYJOB_FILE",
    "SUBMISSION_MODES",
    "KubernetesLauncher",
    "KubernetesOptions",
    "dump_manifest",
    "kubelet_literal",
    "map_status",
    "rayjob_name",
    "rladapt_register_launchers",
]

#: In the run directory: the last final state seen, for when the RayJob is gone.
FINAL_STATUS_FILE = "kubernetes-final-status.json"
POLL_SECONDS = 2.0


class KubernetesLauncher(Launcher):
    #: The Job or RayJob retries a failed pod: backoffLimit is lifecycle.max_restarts (manifest.py).
    RESTARTS_ITSELF = True
    PLUGIN_NAME = PLUGIN_NAME
    DESCRIPTION = "a KubeRay RayJob on the current kubeconfig context (needs the KubeRay operator)"
    OPTIONS = OPTIONS

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        from .manifest import (
            CONFIGMAP_FILE,
            GROUP,
            KIND,
            RAYJOB_FILE,
            VERSION,
            Renderer,
            claim_file,
            dump_manifest,
            service_file,
        )

        opts = KubernetesOptions.parse(self.merge_options(native, options), run_id)
        renderer = Renderer(native, opts, command)
        rayjob, configmap = renderer.render()
        files = {RAYJOB_FILE: dump_manifest(rayjob)}
        if configmap is not None:
            files[CONFIGMAP_FILE] = dump_manifest(configmap)
        for role, objects in renderer.service_manifests.items():
            files[service_file(role)] = "---\n".join(dump_manifest(obj) for obj in objects)
        for claim, obj in renderer.claim_manifests.items():
            files[claim_file(claim)] = dump_manifest(obj)
        request = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "name": rayjob["metadata"]["name"],
            "namespace": opts.namespace,
            "context": opts.context,
            "kubeconfig": opts.kubeconfig,
            "submissionMode": opts.submission_mode,
        }
        if native.services:  # beside the RayJob: one YAML stream each (manifest.py, Renderer.services)
            request["services"] = [
                {
                    "name": r.name,
                    "file": service_file(r.name),
                    "object": renderer.service_manifests[r.name][0]["metadata"]["name"],
                    "kinds": [obj["kind"] for obj in renderer.service_manifests[r.name]],
                    "outlives_job": r.outlives_job,
                }
                for r in native.services
            ]
        if renderer.claim_manifests:  # created before the RayJob when absent, never deleted (submit)
            request["claims"] = [
                {"name": claim, "file": claim_file(claim)} for claim in renderer.claim_manifests
            ]
        return Artifacts(launcher=PLUGIN_NAME, files=files, request=request, warnings=renderer.warnings)

    # --- side effects ---

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        from .cluster import Cluster
        from .manifest import CONFIGMAP_FILE, GROUP, KIND, PLURAL, RAYJOB_FILE, VERSION

        request = artifacts.request
        rayjob = yaml.safe_load(artifacts.files[RAYJOB_FILE])
        configmap = (
            yaml.safe_load(artifacts.files[CONFIGMAP_FILE]) if CONFIGMAP_FILE in artifacts.files else None
        )
        cluster = Cluster.connect(request.get("kubeconfig"), request.get("context"))
        namespace = request.get("namespace") or cluster.namespace
        name = rayjob["metadata"]["name"]
        rayjob["metadata"]["namespace"] = namespace
        custom, core = cluster.custom(), cluster.core()
        # Before anything else: the pods need their claims, and a refused claim leaves nothing of the run behind.
        claims, claim_warnings = _ensure_claims(cluster, artifacts, namespace)
        configmap_uid = None
        if configmap is not None:
            configmap["metadata"]["namespace"] = namespace
            created_cm: Any = cluster.call(
                f"creating ConfigMap {namespace}/{configmap['metadata']['name']}",
                core.create_namespaced_config_map,
                namespace,
                configmap,
                kind="ConfigMap",
                name=configmap["metadata"]["name"],
            )
            configmap_uid = getattr(getattr(created_cm, "metadata", None), "uid", None)
        try:
            created: Any = cluster.call(
                f"creating RayJob {namespace}/{name}",
                custom.create_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                rayjob,
                kind=KIND,
                name=name,
            )
        except LaunchError:
            if configmap is not None:  # leave nothing behind of a refused submission
                with contextlib.suppress(LaunchError):
                    cluster.call(
                        "removing the ConfigMap of the refused RayJob",
                        core.delete_namespaced_config_map,
                        configmap["metadata"]["name"],
                        namespace,
                        missing_ok=True,
                    )
            raise
        uid = created["metadata"]["uid"]  # checked by Cluster.call: a RayJob of this name, with a uid
        handle: dict[str, Any] = {
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "context": cluster.context,
            "kubeconfig": cluster.kubeconfig,
            "submissionMode": request.get("submissionMode")
            or rayjob["spec"].get("submissionMode", "K8sJobMode"),
        }
        if configmap is not None:
            cm_name = configmap["metadata"]["name"]
            handle["configmap"] = {"name": cm_name, "uid": configmap_uid}
            # Owned by the RayJob, the ConfigMap goes when the RayJob does (stop, or KubeRay's TTL).
            owner = {
                "metadata": {
                    "ownerReferences": [
                        {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "name": name, "uid": uid}
                    ]
                }
            }
            try:
                cluster.call(
                    f"linking ConfigMap {namespace}/{cm_name} to its RayJob",
                    core.patch_namespaced_config_map,
                    cm_name,
                    namespace,
                    owner,
                    kind="ConfigMap",
                    name=cm_name,
                )
            except LaunchError as exc:
                handle["warnings"] = [f"{exc.message}; stop will delete the ConfigMap itself"]
        if request.get("services"):
            owner_ref = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "name": name, "uid": uid}
            handle["services"] = _create_services(cluster, artifacts, namespace, owner_ref)
        if claims:  # what stop says it keeps; nothing of rladapt deletes them
            handle["claims"] = claims
        if claim_warnings:
            handle["warnings"] = [*handle.get("warnings", []), *claim_warnings]
        return handle

    def intent(self, artifacts: Artifacts, run_id: str) -> dict[str, Any]:
        from .cluster import kubeconfig_path
        from .manifest import CONFIGMAP_FILE

        request = artifacts.request
        intent: dict[str, Any] = {
            "namespace": request.get("namespace"),  # None: the context's, resolved as submit resolves it
            "name": request["name"],
            "run_id": run_id,
            "context": request.get("context"),
            "kubeconfig": kubeconfig_path(request.get("kubeconfig")),
            "submissionMode": request.get("submissionMode"),
        }
        if CONFIGMAP_FILE in artifacts.files:
            intent["configmap"] = yaml.safe_load(artifacts.files[CONFIGMAP_FILE])["metadata"]["name"]
        if request.get("services"):  # so that a run found again (find) still stops and shows them
            intent["services"] = [_service_entry(item) for item in request["services"]]
        if request.get("claims"):  # so that a run found again still says, at stop, which claims it keeps
            intent["claims"] = [str(item["name"]) for item in request["claims"]]
        return intent

    def find(self, intent: dict[str, Any], run_dir: Path) -> dict[str, Any] | None:
        from .cluster import Cluster
        from .manifest import RUN_ID_LABEL

        cluster = Cluster.connect(intent.get("kubeconfig"), intent.get("context"))
        namespace = intent.get("namespace") or cluster.namespace
        name = str(intent["name"])
        handle: dict[str, Any] = {
            "namespace": namespace,
            "name": name,
            "uid": None,
            "context": cluster.context,
            "kubeconfig": cluster.kubeconfig,
            "submissionMode": intent.get("submissionMode") or "K8sJobMode",
        }
        obj = self._get(cluster, handle)
        if obj is None:
            return None  # never created: the submission died before the API server accepted the RayJob
        labels = obj["metadata"].get("labels") or {}
        if intent.get("run_id") and labels.get(RUN_ID_LABEL) not in (None, intent["run_id"]):
            return None  # a RayJob of that name, but another run's
        handle["uid"] = obj["metadata"]["uid"]
        cm_name = intent.get("configmap")
        if cm_name:
            configmap: Any = cluster.call(
                f"reading ConfigMap {namespace}/{cm_name}",
                cluster.core().read_namespaced_config_map,
                cm_name,
                namespace,
                missing_ok=True,
                kind="ConfigMap",
                name=cm_name,
            )
            if configmap is not None:
                handle["configmap"] = {"name": cm_name, "uid": configmap.metadata.uid}
        if intent.get("services"):
            handle["services"] = list(intent["services"])
        if intent.get("claims"):  # whether this submission created them is not known: they exist or will not
            handle["claims"] = [{"name": str(claim)} for claim in intent["claims"]]
        return handle

    def _connect(self, handle: dict[str, Any]) -> Cluster:
        from .cluster import Cluster

        return Cluster.connect(handle.get("kubeconfig"), handle.get("context"))

    def _get(self, cluster: Cluster, handle: dict[str, Any]) -> dict[str, Any] | None:
        from .manifest import GROUP, KIND, PLURAL, VERSION

        ns, name = handle["namespace"], handle["name"]
        obj = cluster.call(
            f"reading RayJob {ns}/{name}",
            cluster.custom().get_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            name,
            missing_ok=True,
            kind=KIND,
            name=name,
        )
        if obj is None:
            return None
        if handle.get("uid") and (obj.get("metadata") or {}).get("uid") != handle["uid"]:
            return None  # a later RayJob of the same name: not this run's
        return dict(obj)

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        from .cluster import map_status

        cluster = self._connect(handle)
        obj = self._get(cluster, handle)
        if obj is None:
            final = _recalled(run_dir)
            if final is not None:  # stopped by us, or removed by KubeRay's TTL after we saw it end
                return final
            return RunStatus(
                "UNKNOWN",
                message=f"RayJob {handle['namespace']}/{handle['name']} of this run no longer "
                "exists (deleted, or removed by KubeRay after ttlSecondsAfterFinished)",
            )
        current = map_status(obj.get("status") or {})
        if current.terminal:
            _remember(run_dir, current)
        return current

    def services(self, handle: dict[str, Any], run_dir: Path) -> tuple[ServiceStatus, ...]:
        """Each role's workload as the API server reports it: a Job is active, succeeded or failed (a
        Deployment, of a run launched by an older rladapt, with a ready pod runs); restarts are its pods' container
        restarts. A role that ends with the job ends by itself (its wrapper watches the job's end marker); one
        still there when rladapt looks after the RayJob ended is deleted here."""
        entries = [e for e in handle.get("services") or [] if isinstance(e, dict)]
        if not entries:
            return ()
        cluster = self._connect(handle)
        ns = str(handle["namespace"])
        if any(not e.get("outlives_job") for e in entries) and self.status(handle, run_dir).terminal:
            # Kubernetes ends no workload with a RayJob that has finished (the RayJob stays until deleted): a
            # role that does not outlive the job and did not end by itself is deleted when rladapt looks
            for entry in entries:
                if not entry.get("outlives_job"):
                    _delete_service(cluster, ns, entry)
        return tuple(_service_status(cluster, ns, entry) for entry in entries)

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        from .cluster import map_status
        from .manifest import GROUP, PLURAL, VERSION, kubernetes_module

        client = kubernetes_module().client
        cluster = self._connect(handle)
        ns, name = handle["namespace"], handle["name"]
        obj = self._get(cluster, handle)
        before = map_status(obj.get("status") or {}) if obj is not None else None
        if obj is not None:
            # The uid precondition keeps a stop from deleting a newer RayJob that reuses the name.
            options = client.V1DeleteOptions(
                propagation_policy="Background", preconditions=client.V1Preconditions(uid=handle.get("uid"))
            )
            cluster.call(
                f"deleting RayJob {ns}/{name}",
                cluster.custom().delete_namespaced_custom_object,
                GROUP,
                VERSION,
                ns,
                PLURAL,
                name,
                body=options,
                missing_ok=True,
            )
        configmap = handle.get("configmap")
        if configmap:
            options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=configmap.get("uid")))
            cluster.call(
                f"deleting ConfigMap {ns}/{configmap['name']}",
                cluster.core().delete_namespaced_config_map,
                configmap["name"],
                ns,
                body=options,
                missing_ok=True,
            )
        for entry in handle.get("services") or []:
            _delete_service(cluster, ns, entry)
        kept = _kept_claims(handle)
        if before is None:
            recalled = _recalled(run_dir)
            state: RunState = recalled.state if recalled is not None else "STOPPED"
            return RunStatus(state, message=f"RayJob {ns}/{name} was already deleted{kept}")
        if before.terminal:
            result = RunStatus(before.state, message=f"{before.message}; RayJob {ns}/{name} deleted{kept}")
        else:
            result = RunStatus(
                "STOPPED", message=f"RayJob {ns}/{name} deleted (its RayCluster and pods go with it){kept}"
            )
        _remember(run_dir, result)
        return result

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        from .cluster import API_TIMEOUT, log_lines, map_status

        cluster = self._connect(handle)
        ns = handle["namespace"]
        core = cluster.core()
        # Following a K8sJobMode run waits for the submitter: the head's own log is Ray's, not the job's.
        head_ok = not follow or handle.get("submissionMode", "K8sJobMode") != "K8sJobMode"
        while True:
            pod, container = self._log_source(cluster, handle, head_ok)
            if pod is not None and not (follow and pod.status is not None and pod.status.phase == "Pending"):
                break
            obj = self._get(cluster, handle)
            state = map_status(obj.get("status") or {}) if obj is not None else None
            if not follow or state is None or state.terminal:
                if pod is not None:
                    break
                what = state.message if state is not None else "the RayJob no longer exists"
                raise LaunchError(
                    f"RayJob {ns}/{handle['name']} has no submitter or head pod to read logs from ({what})"
                )
            time.sleep(POLL_SECONDS)
        response = cluster.call(
            f"reading the log of pod {ns}/{pod.metadata.name}",
            core.read_namespaced_pod_log,
            pod.metadata.name,
            ns,
            container=container,
            follow=follow,
            _preload_content=False,
            _request_timeout=None if follow else API_TIMEOUT,
        )
        yield from log_lines(response)

    def _log_source(
        self, cluster: Cluster, handle: dict[str, Any], head_ok: bool
    ) -> tuple[Any | None, str | None]:
        """The pod whose log is the job's: KubeRay's submitter (it tails the Ray job), else the Ray head."""
        from .cluster import newest_pod
        from .manifest import HEAD_CONTAINER, SIDECAR_SUBMITTER

        ns, name = handle["namespace"], handle["name"]
        core = cluster.core()
        mode = handle.get("submissionMode", "K8sJobMode")
        if mode == "K8sJobMode":
            # KubeRay names the submitter Job after the RayJob; the Job controller labels its pods job-name.
            pods = cluster.call(
                f"listing the submitter pods of RayJob {ns}/{name}",
                core.list_namespaced_pod,
                ns,
                label_selector=f"job-name={name}",
                kind="PodList",
            )
            newest = newest_pod(pods)
            if newest is not None or not head_ok:
                return newest, None
        obj = self._get(cluster, handle)
        cluster_name = ((obj or {}).get("status") or {}).get("rayClusterName")
        if not cluster_name:
            return None, None
        pods = cluster.call(
            f"listing the head pod of RayJob {ns}/{name}",
            core.list_namespaced_pod,
            ns,
            label_selector=f"ray.io/cluster={cluster_name},ray.io/node-type=head",
            kind="PodList",
        )
        head = newest_pod(pods)
        return head, (SIDECAR_SUBMITTER if mode == "SidecarMode" else HEAD_CONTAINER)


def _apps(cluster: Cluster) -> Any:
    from .manifest import kubernetes_module

    return kubernetes_module().client.AppsV1Api(cluster.api)


def _batch(cluster: Cluster) -> Any:
    from .manifest import kubernetes_module

    return kubernetes_module().client.BatchV1Api(cluster.api)


#: kind -> (the API it is in, the client's method suffix)
_SERVICE_APIS: dict[str, tuple[Callable[[Cluster], Any], str]] = {
    "Deployment": (_apps, "deployment"),
    "Job": (_batch, "job"),
    "Service": (lambda cluster: cluster.core(), "service"),
}


def _service_objects(entry: Any) -> list[tuple[str, str]]:
    """(kind, name) of each object of one service role in a handle; nothing of a damaged entry."""
    if not isinstance(entry, dict):
        return []
    kinds = entry.get("kinds")
    obj_name = entry.get("object")
    if not isinstance(kinds, list) or not isinstance(obj_name, str):
        return []
    return [(str(kind), obj_name) for kind in kinds if kind in _SERVICE_APIS]


def _delete_service(cluster: Cluster, namespace: str, entry: Any) -> None:
    from .manifest import kubernetes_module

    client = kubernetes_module().client
    for kind, obj_name in _service_objects(entry):
        api, method = _SERVICE_APIS[kind]
        cluster.call(
            f"deleting {kind} {namespace}/{obj_name}",
            getattr(api(cluster), f"delete_namespaced_{method}"),
            obj_name,
            namespace,
            body=client.V1DeleteOptions(propagation_policy="Background"),
            missing_ok=True,
        )


def _ensure_claims(
    cluster: Cluster, artifacts: Artifacts, namespace: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Create each claim of the launch that the namespace lacks; one that exists is used as it is, never replaced
    (it may hold an earlier run's checkpoints), with a warning when its size, class or access mode differ from the
    spec's. No owner reference: the claim outlives the RayJob. (claims for the handle, warnings)"""
    core = cluster.core()
    claims, warnings = [], []
    for item in artifacts.request.get("claims") or []:
        wanted = yaml.safe_load(artifacts.files[str(item["file"])])
        claim = wanted["metadata"]["name"]
        wanted["metadata"]["namespace"] = namespace
        # 409 AlreadyExists: a claim of that name is there, and is used as it is
        created = cluster.call(
            f"creating PersistentVolumeClaim {namespace}/{claim}",
            core.create_namespaced_persistent_volume_claim,
            namespace,
            wanted,
            exists_ok=True,
            kind="PersistentVolumeClaim",
            name=claim,
        )
        found: Any = created or cluster.call(
            f"reading PersistentVolumeClaim {namespace}/{claim}",
            core.read_namespaced_persistent_volume_claim,
            claim,
            namespace,
            kind="PersistentVolumeClaim",
            name=claim,
        )
        if created is None:
            plain = cluster.api.sanitize_for_serialization(found)
            warnings.extend(_claim_differences(claim, namespace, wanted, plain))
        claims.append({"name": claim, "created": created is not None})
    return claims, warnings


def _claim_differences(
    claim: str, namespace: str, wanted: dict[str, Any], found: dict[str, Any]
) -> list[str]:
    """What the existing claim ``found`` has other than the spec asked (``wanted``), as warnings: it is used as it
    is (resizing or replacing it is the cluster admin's call, and would put its data at risk)."""
    from rladapt.launchers._common import size_bytes

    asked, has = wanted.get("spec") or {}, found.get("spec") or {}
    differences = []
    asked_size = ((asked.get("resources") or {}).get("requests") or {}).get("storage")
    has_size = ((has.get("resources") or {}).get("requests") or {}).get("storage")
    if asked_size is not None and (
        has_size is None or size_bytes(str(asked_size)) != size_bytes(str(has_size))
    ):
        differences.append(f"size {has_size} (the spec asks {asked_size})")
    if asked.get("storageClassName") is not None and asked["storageClassName"] != has.get("storageClassName"):
        differences.append(
            f"storage class {has.get('storageClassName')} (the spec asks {asked['storageClassName']})"
        )
    if asked.get("accessModes") and set(asked["accessModes"]) - set(has.get("accessModes") or ()):
        differences.append(
            f"access modes {', '.join(has.get('accessModes') or ()) or 'none'} "
            f"(the spec asks {', '.join(asked['accessModes'])})"
        )
    if not differences:
        return []
    return [
        f"PersistentVolumeClaim {namespace}/{claim} exists and is used as it is, with "
        + "; ".join(differences)
        + ": rladapt never replaces a claim (it may hold checkpoints); resize or replace it yourself, or name "
        "another claim in spec.volumes"
    ]


def _kept_claims(handle: dict[str, Any]) -> str:
    """What a stop's message says of the launch's claims: kept, with their data (nothing of rladapt deletes one)."""
    names = [str(c.get("name")) for c in handle.get("claims") or [] if isinstance(c, dict)]
    if not names:
        return ""
    return (
        f"; PersistentVolumeClaim {', '.join(names)} kept (rladapt never deletes a claim: delete it yourself)"
    )


def _create_services(
    cluster: Cluster, artifacts: Artifacts, namespace: str, owner: dict[str, Any]
) -> list[dict[str, Any]]:
    """Create each service role's objects after its RayJob. Those of a role that ends with the training, and
    every Service, are owned by the RayJob (they go when it is deleted: stop, or its TTL); the Job of a role that
    outlives the training is not, and ``stop`` deletes it."""
    created = []
    for item in artifacts.request.get("services") or []:
        objects = list(yaml.safe_load_all(artifacts.files[str(item["file"])]))
        kinds = []
        for obj in objects:
            kind, obj_name = obj["kind"], obj["metadata"]["name"]
            obj["metadata"]["namespace"] = namespace
            if kind != "Job" or not item.get("outlives_job"):
                obj["metadata"]["ownerReferences"] = [owner]
            api, method = _SERVICE_APIS[kind]
            cluster.call(
                f"creating {kind} {namespace}/{obj_name} (service {item['name']})",
                getattr(api(cluster), f"create_namespaced_{method}"),
                namespace,
                obj,
                kind=kind,
                name=obj_name,
            )
            kinds.append(kind)
        created.append(_service_entry(item))
    return created


def _service_entry(item: dict[str, Any]) -> dict[str, Any]:
    """What a handle keeps of a service role: its name, its objects' name and kinds, whether it outlives the job."""
    return {
        "name": item["name"],
        "object": item["object"],
        "kinds": list(item["kinds"]),
        "outlives_job": bool(item.get("outlives_job")),
    }


def _service_status(cluster: Cluster, namespace: str, entry: dict[str, Any]) -> ServiceStatus:
    from .manifest import SERVICE_LABEL

    objects = _service_objects(entry)
    name = str(entry.get("name"))
    if not objects:
        return ServiceStatus(name, "UNKNOWN", message="the run record does not say how it was created")
    kind, obj_name = objects[0]
    unit = f"{kind} {namespace}/{obj_name}"
    api, method = _SERVICE_APIS[kind]
    obj: Any = cluster.call(
        f"reading {unit}",
        getattr(api(cluster), f"read_namespaced_{method}"),
        obj_name,
        namespace,
        missing_ok=True,
    )
    if obj is None:
        return ServiceStatus(name, "STOPPED", 0, unit, "deleted")
    pods: Any = cluster.call(
        f"listing the pods of {unit}",
        cluster.core().list_namespaced_pod,
        namespace,
        label_selector=f"{SERVICE_LABEL}={obj_name}",
    )
    restarts = sum(
        int(getattr(status, "restart_count", 0) or 0)
        for pod in getattr(pods, "items", None) or []
        for status in (getattr(pod.status, "container_statuses", None) or [])
    )
    status = obj.status
    if kind == "Deployment":
        ready = int(getattr(status, "ready_replicas", 0) or 0)
        state: RunState = "RUNNING" if ready else "PENDING"
        return ServiceStatus(name, state, restarts, unit, "" if ready else "no ready pod yet")
    if getattr(status, "succeeded", 0):
        return ServiceStatus(name, "SUCCEEDED", restarts, unit)
    if getattr(status, "failed", 0) and not getattr(status, "active", 0):
        return ServiceStatus(name, "FAILED", restarts, unit, f"{status.failed} failed pod(s)")
    if getattr(status, "active", 0):
        return ServiceStatus(name, "RUNNING", restarts, unit)
    return ServiceStatus(name, "PENDING", restarts, unit)


def _remember(run_dir: Path, status: RunStatus) -> None:
    """Keep the final state in the run directory: the RayJob that holds it may be deleted later."""
    if run_dir.is_dir():
        from rladapt.runs import write_atomic  # the run store: only once a run exists

        data = {"state": status.state, "message": status.message}
        write_atomic(run_dir / FINAL_STATUS_FILE, json.dumps(data))


def _recalled(run_dir: Path) -> RunStatus | None:
    try:
        data = json.loads((run_dir / FINAL_STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("state") not in TERMINAL_STATES:
        return None
    return RunStatus(data["state"], message=str(data.get("message", "")))


@hookimpl
def rladapt_register_launchers() -> list[Launcher]:
    return [KubernetesLauncher()]


#: Public names of the cluster client and the manifest renderer, re-exported here; their modules load on first
#: use, so that registering the launcher (on every render) does not import them.
_LAZY_NAMES = {"map_status": "cluster"} | {
    name: "manifest"
    for name in (
        "CONFIGMAP_FILE",
        "MANAGED_BY_LABEL",
        "RAYJOB_FILE",
        "dump_manifest",
        "kubelet_literal",
        "rayjob_name",
    )
}


def __getattr__(name: str) -> Any:
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
