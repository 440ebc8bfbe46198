"""The manifests of the ``kubernetes`` launcher: a KubeRay ``RayJob`` and the ConfigMap of the launch's files.

Pure: built with the official client's models (imported on first use) and serialized by its ``ApiClient``, so the
dry run shows what the API server receives.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from rladapt.launchers._common import PoolNeeds, pool_needs
from rladapt.launchers.ends_with_job import role_command
from rladapt.plugins import NativeLaunch, PoolSpec, ServiceRole
from rladapt.plugins.launcher import Command
from rladapt.primitives.errors import Problem, SpecError, UsageError
from rladapt.primitives.paths import input_kind, is_local, resolve

from .options import DEFAULT_WORKDIR, QUANTITY, KubernetesOptions, image_ok, label_key_ok, label_value_ok

GROUP, VERSION, PLURAL, KIND = "ray.io", "v1", "rayjobs", "RayJob"
RAYJOB_FILE = "rayjob.yaml"
CONFIGMAP_FILE = "configmap.yaml"

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
FRAMEWORK_LABEL = "rladapt.io/framework"
FRAMEWORK_VERSION_LABEL = "rladapt.io/framework-version"
RUN_ID_LABEL = "rladapt.io/run-id"
PATCHES_ANNOTATION = "rladapt.io/patches"
#: On a service role's workload, its pods and its Service: the workload's name (the Service's selector).
SERVICE_LABEL = "rladapt.io/service"
SERVICE_CONTAINER = "service"


def claim_file(name: str) -> str:
    """The artifact of one PersistentVolumeClaim the launch creates when absent (``spec.volumes`` with a size)."""
    return f"pvc-{name}.yaml"


def service_file(name: str) -> str:
    """The artifact of one service role: its workload, then its Service when it has ports (one YAML stream)."""
    return f"service-{name}.yaml"


#: Ray's head ports as KubeRay names them (``utils/constant.go``): it finds the dashboard by this port name.
RAY_PORTS: dict[str, int] = {"gcs-server": 6379, "dashboard": 8265, "client": 10001}
#: Modes whose submitter receives the entrypoint through container args (kubelet ``$(VAR)`` expansion applies).
_ARGS_MODES = frozenset({"K8sJobMode", "SidecarMode"})
HEAD_CONTAINER, WORKER_CONTAINER, SIDECAR_SUBMITTER = "ray-head", "ray-worker", "ray-job-submitter"
FILES_VOLUME = "rladapt-files"
#: KubeRay's MaxRayJobNameLength: the RayCluster it creates appends a suffix and must stay within 53.
MAX_NAME_LENGTH = 47
CONFIGMAP_LIMIT = 1024 * 1024
#: What the head pod requests when the head_cpu and head_memory options do not say: the head of KubeRay's own
#: sample cluster (ray-operator/config/samples/ray-cluster.sample.yaml, rayVersion 2.46.0: 1 CPU, 2G), with no
#: limit so that the driver may use more. KubeRay derives ``ray start --num-cpus`` from the CPU limit, and in
#: recent releases from the request when there is no limit (common/pod.go generateRayStartCommand): the head
#: then offers Ray the one CPU the sample's head offers; its --memory comes from the limit only, so none is set.
DEFAULT_HEAD_REQUESTS = {"cpu": "1", "memory": "2Gi"}

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_CONFIGMAP_KEY_CHARS = re.compile(r"[^-._a-zA-Z0-9]")
#: What a label key may be written as in a field path; any other key is shown as its repr.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./-]+")
#: The API server stores these RayJob fields as int32.
INT32_MAX = 2**31 - 1


def rayjob_name(job_name: str, run_id: str | None) -> str:
    """The run id (unique per launch; the job name in a dry run), fitted to what KubeRay accepts: a DNS-1035
    label of at most 47 characters. A run id's random tail is kept when it must be shortened."""
    name = run_id or job_name
    if len(name) <= MAX_NAME_LENGTH and _DNS1035.fullmatch(name):
        return name
    if not name[:1].isalpha():
        name = "rl-" + name
    if len(name) > MAX_NAME_LENGTH:
        head, dash, tail = name.rpartition("-")
        if run_id and head and len(tail) <= 16:
            name = head[: MAX_NAME_LENGTH - len(tail) - 1].rstrip("-") + dash + tail
        else:
            name = name[:MAX_NAME_LENGTH].rstrip("-")
    return name


def kubelet_literal(value: str) -> str:
    """``value`` escaped so that the kubelet's ``$(VAR)`` expansion gives it back unchanged."""
    return value.replace("$", "$$")


class _ManifestDumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (files, runtimeEnvYAML) in block style, for a readable dry run."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_ManifestDumper.add_representer(str, _represent_str)


def dump_manifest(obj: dict[str, Any]) -> str:
    return yaml.dump(
        obj,
        Dumper=_ManifestDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )


class Renderer:
    """Builds the manifests of one NativeLaunch; collects every problem of the spec before raising."""

    def __init__(self, native: NativeLaunch, opts: KubernetesOptions, command: Command) -> None:
        self.client = kubernetes_module().client
        self.native = native
        self.opts = opts
        self.command = command
        self.problems: list[Problem] = []
        #: Artifacts.warnings: what renders, but a cluster admin would send back (``launch --strict`` refuses).
        self.warnings: list[str] = []
        #: Each service role's objects (``services``), by role name, once ``render`` has run.
        self.service_manifests: dict[str, list[dict[str, Any]]] = {}
        #: Each PersistentVolumeClaim the launch creates when absent (``claims``), by claim name.
        self.claim_manifests: dict[str, dict[str, Any]] = {}

    def problem(self, path: str, message: str, expected: str | None = None, found: str | None = None) -> None:
        self.problems.append(Problem(path, message, expected, found))

    # --- pieces ---

    def check_name(self) -> str:
        name = rayjob_name(self.native.job_name, self.opts.run_id)
        if not _DNS1035.fullmatch(name):
            self.problem(
                "metadata.name",
                "KubeRay needs a RayJob name that is a DNS-1035 label of at most "
                f"{MAX_NAME_LENGTH} characters",
                "a lowercase letter first, then letters, digits, '-'",
                self.opts.run_id or self.native.job_name,
            )
        return name

    def labels(self) -> dict[str, str]:
        labels = {}
        for key, value in self.native.labels.items():
            if not label_key_ok(key) or not label_value_ok(value):
                # repr: a key or value may hold a newline, which would forge lines of the error report.
                self.problem(
                    f"metadata.labels.{key}" if _PLAIN_KEY.fullmatch(key) else f"metadata.labels[{key!r}]",
                    "not a valid Kubernetes label",
                    "a key [prefix/]name and a value of at most 63 letters, digits, '-', '_', '.'",
                    f"{key!r}: {value!r}",
                )
            else:
                labels[key] = value
        labels[MANAGED_BY_LABEL] = "rladapt"
        generated = (
            (FRAMEWORK_LABEL, self.native.framework),
            (FRAMEWORK_VERSION_LABEL, self.native.version),
            (RUN_ID_LABEL, self.opts.run_id or ""),
        )
        for key, value in generated:
            if value and label_value_ok(value):
                labels[key] = value
        return labels

    def secrets(self) -> list[Any]:
        """Each secret from its first Kubernetes-secret source (a pod reads no other): a ``secretKeyRef``, which
        is also what the dry run shows as the source picked."""
        c = self.client
        out = []
        for index, secret in enumerate(self.native.secrets):
            path = f"spec.secrets[{index}].from"
            ref = secret.first(("k8s_secret",))
            if ref is None:
                self.problem(
                    path,
                    f"secret {secret.env}: a Kubernetes cluster can read none of its sources ({secret.labels}); "
                    "it reads Kubernetes secrets only",
                    "a source {k8s_secret: {name: SECRET, key: KEY}} in the list (sources are tried in order)",
                    ", ".join(s.kind for s in secret.sources),
                )
                continue
            if not ref.key:
                self.problem(
                    path, f"secret {secret.env} names no key of Kubernetes Secret {ref.name}", "a key"
                )
                continue
            selector = c.V1SecretKeySelector(name=ref.name, key=ref.key)
            out.append(c.V1EnvVar(name=secret.env, value_from=c.V1EnvVarSource(secret_key_ref=selector)))
        return out

    def env(self) -> list[Any]:
        c = self.client
        runtime_vars = self.native.runtime_env.get("env_vars") or {}
        values: dict[str, str] = {str(k): str(v) for k, v in runtime_vars.items()}
        values.update(self.native.env)
        values.update(self.command.env)
        secret_names = {ref.env for ref in self.native.secrets}
        plain = [
            c.V1EnvVar(name=k, value=kubelet_literal(v)) for k, v in values.items() if k not in secret_names
        ]
        return plain + self.secrets()

    def working_dirs(self) -> tuple[str | None, str | None]:
        """(container working directory, runtime_env working_dir URI)."""
        wd = self.native.working_dir
        if "://" in wd:
            if self.native.files:
                self.problem(
                    "spec.runtime.working_dir",
                    "a remote working_dir cannot be combined with the files "
                    "this launch generates (Ray would run the job inside the downloaded directory)",
                    "an absolute directory inside the image",
                    wd,
                )
            return self.opts.workdir, wd
        if wd.startswith("/"):
            return posixpath.normpath(wd), None
        if self.opts.workdir is None and wd in ("", ".") and not self.native.files:
            return None, None  # the image's own WORKDIR
        return posixpath.normpath(posixpath.join(self.opts.workdir or DEFAULT_WORKDIR, wd)), None

    def runtime_env(self, uri: str | None) -> str | None:
        extra = {
            k: v
            for k, v in self.native.runtime_env.items()
            if k not in ("env_vars", "working_dir", "excludes", "worker_process_setup_hook")
        }
        runtime_env: dict[str, Any] = dict(extra)
        if uri is not None:
            runtime_env["working_dir"] = uri
        runtime_env.update(self.command.ray_runtime_env)
        for path, text in _strings(runtime_env, "runtime_env"):
            if "$" in text or "`" in text:
                self.problem(
                    "spec.runtime.working_dir" if path == "runtime_env.working_dir" else path,
                    "KubeRay's submitter passes the runtime env to bash inside double quotes, where "
                    "'$' and '`' would run as shell code",
                    "no '$' or '`'",
                    text,
                )
        if not runtime_env:
            return None
        return yaml.safe_dump(runtime_env, sort_keys=True, default_flow_style=False)

    def ports(self) -> tuple[dict[str, int], dict[str, str], list[Any]]:
        """(Ray head ports by name, rayStartParams for moved Ray ports, the spec's other ports)."""
        ray_ports = dict(RAY_PORTS)
        start_params: dict[str, str] = {}
        for port in self.native.ports:
            # A spec port for Ray's own GCS or dashboard moves that port rather than opening another one.
            if port.purpose == "ray" and port.port != RAY_PORTS["gcs-server"]:
                ray_ports["gcs-server"], start_params["port"] = port.port, str(port.port)
            elif port.purpose == "dashboard" and port.port != RAY_PORTS["dashboard"]:
                ray_ports["dashboard"], start_params["dashboard-port"] = port.port, str(port.port)
        taken = {number: name for name, number in ray_ports.items()}
        extra = []
        for index, port in enumerate(self.native.ports):
            if port.purpose in ("ray", "dashboard"):
                continue
            if port.name in ray_ports or port.port in taken:
                clash = port.name if port.name in ray_ports else taken[port.port]
                self.problem(
                    f"spec.ports[{index}]",
                    f"clashes with Ray's {clash} port on the head",
                    f"a name other than {', '.join(ray_ports)} and a number other than "
                    f"{', '.join(str(n) for n in ray_ports.values())}",
                    f"{port.name}: {port.port}",
                )
                continue
            extra.append(
                self.client.V1ContainerPort(name=port.name, container_port=port.port, protocol=port.protocol)
            )
        return ray_ports, start_params, extra

    def volumes(self) -> tuple[list[Any], list[Any]]:
        c = self.client
        volumes, mounts = [], []
        seen_names: set[str] = {FILES_VOLUME}
        seen_paths: set[str] = set()
        for index, vol in enumerate(self.native.volumes):
            if vol.name in seen_names or vol.mount in seen_paths:
                self.problem(
                    f"spec.volumes[{index}]",
                    "a volume name or mount path used twice"
                    + (f" ({FILES_VOLUME} is reserved)" if vol.name == FILES_VOLUME else ""),
                    found=f"{vol.name} at {vol.mount}",
                )
                continue
            seen_names.add(vol.name)
            seen_paths.add(vol.mount)
            read_only = True if vol.read_only else None
            if vol.kind == "pvc":
                source = {
                    "persistent_volume_claim": c.V1PersistentVolumeClaimVolumeSource(
                        claim_name=vol.source, read_only=read_only
                    )
                }
            elif vol.kind == "nfs":
                server, _, path = vol.source.partition(":")
                source = {"nfs": c.V1NFSVolumeSource(server=server, path=path or "/", read_only=read_only)}
            elif vol.kind == "host_path":
                source = {"host_path": c.V1HostPathVolumeSource(path=vol.source)}
            else:  # memory: a tmpfs, which is what /dev/shm needs for NCCL and vLLM
                source = {"empty_dir": c.V1EmptyDirVolumeSource(medium="Memory", size_limit=vol.source)}
            volumes.append(c.V1Volume(name=vol.name, **source))
            mounts.append(c.V1VolumeMount(name=vol.name, mount_path=vol.mount, read_only=read_only))
        return volumes, mounts

    def claims(self, labels: dict[str, str]) -> dict[str, dict[str, Any]]:
        """The PersistentVolumeClaim of each ``pvc`` volume with a size, which submit creates when the namespace
        has no claim of that name (an existing one is used as it is) and nothing of rladapt ever deletes: no
        owner reference, so checkpoints outlive the RayJob, ``rladapt stop`` and KubeRay's TTL.

        Access mode, when the spec gives none: ReadWriteMany when more than one pod mounts the claim (the head,
        each worker, each service role's pod: they are in general on different nodes, and a ReadWriteOnce volume
        attaches to one node only, so the other pods would wait on a Multi-Attach error); ReadWriteOnce when the
        head pod alone mounts it. The storage class must support the mode; the claim shows what was chosen."""
        c = self.client
        pods = 1 + sum(pool.nodes for pool in self.native.pools) + len(self.native.services)
        default_mode = "ReadWriteMany" if pods > 1 else "ReadWriteOnce"
        out: dict[str, dict[str, Any]] = {}
        wanted: dict[str, tuple[str | None, str | None, str]] = {}
        # not the run id label: the claim outlives the run that created it, and is not one run's object
        claim_labels = {k: v for k, v in labels.items() if k != RUN_ID_LABEL}
        for index, vol in enumerate(self.native.volumes):
            if not vol.creates_claim:
                continue
            mode = vol.access_mode or default_mode
            asked = (vol.size, vol.storage_class, mode)
            if vol.source in wanted:
                if wanted[vol.source] != asked:
                    self.problem(
                        f"spec.volumes[{index}].source",
                        f"claim {vol.source} is asked for twice with different size, storage_class or "
                        "access_mode",
                        "the same values, or one of the two without size (the claim then exists)",
                        f"{asked} and {wanted[vol.source]}",
                    )
                continue
            wanted[vol.source] = asked
            claim = c.V1PersistentVolumeClaim(
                api_version="v1",
                kind="PersistentVolumeClaim",
                metadata=c.V1ObjectMeta(name=vol.source, namespace=self.opts.namespace, labels=claim_labels),
                spec=c.V1PersistentVolumeClaimSpec(
                    access_modes=[mode],
                    resources=c.V1VolumeResourceRequirements(requests={"storage": vol.size}),
                    storage_class_name=vol.storage_class,
                ),
            )
            out[vol.source] = c.ApiClient().sanitize_for_serialization(claim)
        return out

    def files(self, name: str, workdir: str | None, labels: dict[str, str]) -> tuple[Any | None, list[Any]]:
        """The ConfigMap holding NativeLaunch.files and one read-only mount per file under the working directory."""
        if not self.native.files:
            return None, []
        c = self.client
        data: dict[str, str] = {}
        mounts = []
        for index, (rel, text) in enumerate(self.native.files.items()):
            parts = Path(rel).parts
            if rel.startswith("/") or ".." in parts or not parts:
                self.problem(
                    f"files.{rel}", "a generated file must be a relative path inside the working directory"
                )
                continue
            key = f"{index:02d}-" + _CONFIGMAP_KEY_CHARS.sub("_", rel)[-240:]
            data[key] = text
            mounts.append(
                c.V1VolumeMount(
                    name=FILES_VOLUME,
                    mount_path=posixpath.join(workdir or "/", rel),
                    sub_path=key,
                    read_only=True,
                )
            )
        size = sum(len(k) + len(v.encode()) for k, v in data.items())
        if size > CONFIGMAP_LIMIT:
            self.problem(
                "files",
                "the generated files exceed the 1 MiB a Kubernetes ConfigMap can hold",
                found=f"{size} bytes",
            )
        configmap = c.V1ConfigMap(
            api_version="v1",
            kind="ConfigMap",
            metadata=c.V1ObjectMeta(name=f"{name}-files", namespace=self.opts.namespace, labels=labels),
            data=data,
        )
        return configmap, mounts

    def lifecycle(self) -> dict[str, int]:
        """spec.lifecycle's numbers for the RayJob fields that hold them, each a non-negative int32."""
        out = {}
        defaults = {"ttl_seconds_after_finish": 600, "timeout_seconds": 0, "max_restarts": 0}
        for key, default in defaults.items():
            raw = self.native.lifecycle.get(key)
            value = default if raw is None else raw
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
                self.problem(
                    f"spec.lifecycle.{key}",
                    "the RayJob field it sets is a 32-bit integer",
                    f"a whole number from 0 to {INT32_MAX}",
                    repr(value),
                )
                value = default
            out[key] = value
        return out

    def pool_needs(self) -> dict[str, PoolNeeds]:
        """What each pool's roles ask of a node (spec.roles.<role>.cpus_per_gpu, .memory), as problems if bad."""
        try:
            needs = pool_needs(self.native)
        except SpecError as exc:
            self.problems.extend(exc.problems)
            return {}
        for pool_need in needs.values():
            if pool_need.memory is not None and not QUANTITY.fullmatch(pool_need.memory):
                self.problem(
                    f"spec.roles.{pool_need.memory_role}.memory",
                    "a pod's memory is a Kubernetes quantity",
                    "a size such as 200Gi or 64G",
                    repr(pool_need.memory),
                )
        return needs

    def worker_resources(self, pool: PoolSpec, needs: PoolNeeds | None) -> Any | None:
        """A worker pod's resources: the options, else what the pool's roles ask (CPUs per GPU times its GPUs).

        A pool whose roles ask for no CPUs or memory gets no invented amount: its Ray workers would be told
        that many CPUs (KubeRay derives ``--num-cpus`` from the container's CPU), and a framework's placement
        groups that need more would hang. It is a warning instead, naming the fields to set."""
        cpu, memory = self.opts.cpu, self.opts.memory
        if cpu is None and needs is not None and needs.cpus_per_gpu is not None:
            cpu = str(needs.cpus_per_gpu * pool.gpus_per_node)
        if memory is None and needs is not None:
            memory = needs.memory
        missing = [
            f"{what} (spec.roles.<role>.{field} of its roles {', '.join(pool.roles)}, or -o {option}=)"
            for what, field, option, value in (
                ("CPUs", "cpus_per_gpu", "cpu", cpu),
                ("memory", "memory", "memory", memory),
            )
            if value is None
        ]
        if missing:
            self.warnings.append(
                f"the worker pods of pool {pool.name} request no {' and no '.join(missing)}: a cluster with a "
                "LimitRange or ResourceQuota refuses or throttles them, and the scheduler may pack them onto "
                "nodes without room"
            )
        return self.resources(cpu, memory, pool.gpus_per_node)

    def head_resources(self) -> Any:
        """The head pod's resources: the options (request = limit), else a request of ``DEFAULT_HEAD_CPU`` and
        ``DEFAULT_HEAD_MEMORY`` without a limit (the head runs the driver and Ray's control processes)."""
        o = self.opts
        amounts = {"cpu": o.head_cpu, "memory": o.head_memory}
        limits = {k: v for k, v in amounts.items() if v is not None}
        requests = {**DEFAULT_HEAD_REQUESTS, **limits}
        if o.head_gpus:
            limits[o.gpu_resource] = requests[o.gpu_resource] = str(o.head_gpus)
        return self.client.V1ResourceRequirements(limits=limits or None, requests=requests)

    def resources(self, cpu: str | None, memory: str | None, gpus: int) -> Any | None:
        amounts: dict[str, str] = {}
        if cpu:
            amounts["cpu"] = cpu
        if memory:
            amounts["memory"] = memory
        if gpus:
            amounts[self.opts.gpu_resource] = str(gpus)
        if not amounts:
            return None
        # Requests equal to limits: GPUs require it, and it gives the pods Guaranteed QoS.
        return self.client.V1ResourceRequirements(limits=dict(amounts), requests=dict(amounts))

    @staticmethod
    def in_pod(path: str, workdir: str | None) -> str | None:
        """Where ``path`` (as written in the spec) is in the pods: absolute, or under their working directory;
        None when no one knows (relative to the image's own WORKDIR, or under a home directory)."""
        if path.startswith("/"):
            return posixpath.normpath(path)
        if workdir is None or path == "~" or path.startswith("~/"):
            return None
        return posixpath.normpath(posixpath.join(workdir, path))

    def on_volume(self, in_pod: str | None, files: Sequence[str] = ()) -> bool:
        """Whether ``in_pod`` lies on a volume the pods mount and that outlives them (any kind but memory), or
        is one of the launch's own ``files`` (mounted from its ConfigMap)."""
        if in_pod is None:
            return False
        durable = [vol for vol in self.native.volumes if vol.kind != "memory" and vol.mount.startswith("/")]
        return in_pod in files or any(
            in_pod == posixpath.normpath(v.mount)
            or in_pod.startswith(posixpath.normpath(v.mount).rstrip("/") + "/")
            for v in durable
        )

    def off_volume(self, path: str, workdir: str | None, files: Sequence[str] = ()) -> str | None:
        """None when ``path`` (as written in the spec) is ``on_volume`` in the pods; else how a warning shows it:
        as written, and where it is in the pods when that differs."""
        in_pod = self.in_pod(path, workdir)
        if self.on_volume(in_pod, files):
            return None
        return path if in_pod is None or in_pod == path else f"{path} (in the pods: {in_pod})"

    def check_storage(self, workdir: str | None) -> None:
        """A warning when the checkpoint directory (with the metrics and evaluation results under it) or the
        model pool's store is on no volume the pods mount: it would be written to one pod's ephemeral disk and go
        with the pod, and the other pods (the evaluator, the serving group) would each see an empty one."""
        publish = self.native.publish or {}
        store = publish.get("store") if isinstance(publish.get("store"), str) else None
        for field, where, what in (
            ("spec.checkpoint.dir", self.native.checkpoint_dir, "checkpoints and metrics"),
            ("spec.pool.store", store, "the published versions (which the evaluator and serving pods read)"),
        ):
            if not where or "://" in where:
                continue  # none, or remote storage the framework writes to itself
            shown = self.off_volume(where, workdir)
            if shown is None:
                continue
            self.warnings.append(
                f"{field} {shown} is on no volume: {what} would land on the pod's ephemeral disk and be lost "
                "with it; mount a volume over it (spec.volumes: a pvc claim, nfs or host_path) or give an "
                "absolute path under one"
            )

    def check_inputs(self, workdir: str | None, uri: str | None) -> None:
        """A warning for each local path the job reads (``NativeLaunch.inputs``) that is on no volume the pods
        mount: nothing of this machine reaches the pods, so the file must already be in the image.

        Left out: the interpreter (the image provides it), remote URLs and Hugging Face Hub ids (the framework
        downloads them; a value that could be either is a Hub id unless it exists here, as ``rladapt validate``
        judges it), and relative paths when the working directory is a remote package (Ray downloads it and the
        job reads them there)."""
        wd = self.native.working_dir
        base = Path.cwd() if "://" in wd else resolve(wd, Path.cwd())
        files = [posixpath.normpath(posixpath.join(workdir or "/", rel)) for rel in self.native.files]
        for field, value in self.native.inputs.items():
            kind = input_kind(field)
            if kind == "interpreter" or not is_local(value, kind, base):
                continue
            if uri is not None and not value.startswith(("/", "~")):
                continue
            shown = self.off_volume(value, workdir, files)
            if shown is None:
                continue
            self.warnings.append(
                f"{field} {shown} is on no volume: the pods read it from the image, where it must already be "
                "(nothing of this machine is shipped to them); mount a volume over it (spec.volumes: a pvc "
                "claim, nfs or host_path), or build it into the image"
            )

    def container(
        self,
        name: str,
        image: str,
        env: list[Any],
        ports: list[Any],
        resources: Any | None,
        mounts: list[Any],
        workdir: str | None,
        command: list[str] | None = None,
    ) -> Any:
        """One container of the launch's pods (Ray head, Ray worker, a service role's): the image, the job's
        environment, mounts and working directory; empty lists are left out of the manifest."""
        return self.client.V1Container(
            name=name,
            image=image,
            image_pull_policy=self.opts.image_pull_policy,
            command=command,
            env=env or None,
            ports=ports or None,
            resources=resources,
            volume_mounts=mounts or None,
            working_dir=workdir,
        )

    def pod_template(self, container: Any, volumes: list[Any], labels: dict[str, str]) -> Any:
        c, o = self.client, self.opts
        tolerations = [
            c.V1Toleration(
                key=key, operator="Equal" if value is not None else "Exists", value=value, effect=effect
            )
            for key, value, effect in o.tolerations
        ]
        spec = c.V1PodSpec(
            containers=[container],
            volumes=volumes or None,
            service_account_name=o.service_account,
            node_selector=dict(o.node_selector) or None,
            tolerations=tolerations or None,
            priority_class_name=o.priority_class,
        )
        return c.V1PodTemplateSpec(metadata=c.V1ObjectMeta(labels=dict(labels)), spec=spec)

    def services(
        self,
        name: str,
        image: str,
        labels: dict[str, str],
        env: list[Any],
        volumes: list[Any],
        mounts: list[Any],
        workdir: str | None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Each service role's objects beside the RayJob: a Job (restarted in its pod when it fails, with
        ``restart: on-failure``; ``never``: no retry), and a Service for its ports. A role that ends with the job
        runs under the wrapper that ends it when the job's end marker says so (``ends_with_job.role_command``):
        its Job then completes, and its pod and what it reserved go, without rladapt looking at the run (no
        Kubernetes object ends with a RayJob that has finished). A role that outlives the job finishes its work
        and completes. Its pods get the job's
        environment, volumes and mounts (checkpoint and pool stores, the launch's files) and working directory,
        the role's own environment over the job's, and requests equal to limits of what the role asks."""
        c = self.client
        api = c.ApiClient()
        out: dict[str, list[dict[str, Any]]] = {}
        seen: set[str] = set()
        for role in self.native.services:
            path = f"services.{role.name}"
            unit = f"{name}-{role.name}"
            if role.name in seen:
                self.problem(path, "two service roles of one name", "unique names", role.name)
                continue
            seen.add(role.name)
            if len(unit) > 63 or not _DNS1035.fullmatch(unit):
                self.problem(
                    f"{path}.name",
                    "the RayJob's name and the role's name make its Job and Service name, a DNS-1035 "
                    "label of at most 63 characters",
                    "a shorter metadata.name (or run id) or role name",
                    unit,
                )
                continue
            if role.memory is not None and not QUANTITY.fullmatch(role.memory):
                self.problem(
                    f"{path}.memory", "a pod's memory is a Kubernetes quantity", "e.g. 4Gi", repr(role.memory)
                )
                continue
            role_env = {k: v for k, v in role.env.items()}
            env_vars = [e for e in env if e.name not in role_env] + [
                c.V1EnvVar(name=k, value=kubelet_literal(v)) for k, v in role_env.items()
            ]
            ports = [
                c.V1ContainerPort(name=p.name, container_port=p.port, protocol=p.protocol) for p in role.ports
            ]
            container = self.container(
                SERVICE_CONTAINER,
                image,
                env_vars,
                ports,
                self.resources(str(role.cpus), role.memory, role.gpus),
                mounts,
                workdir,
                # the kubelet expands $(VAR) in command too: every word is kept literal
                command=[kubelet_literal(word) for word in role_command(self.native, role)],
            )
            pod_labels = {**labels, SERVICE_LABEL: unit}
            template = self.pod_template(container, volumes, pod_labels)
            meta = c.V1ObjectMeta(name=unit, namespace=self.opts.namespace, labels=pod_labels)
            workload = self.service_workload(role, meta, template)
            objects = [api.sanitize_for_serialization(workload)]
            if role.ports:
                service = c.V1Service(
                    api_version="v1",
                    kind="Service",
                    metadata=meta,  # the workload's: its name, namespace and labels
                    spec=c.V1ServiceSpec(
                        selector={SERVICE_LABEL: unit},
                        ports=[
                            c.V1ServicePort(name=p.name, port=p.port, target_port=p.port, protocol=p.protocol)
                            for p in role.ports
                        ],
                    ),
                )
                objects.append(api.sanitize_for_serialization(service))
            out[role.name] = objects
        return out

    def service_workload(self, role: ServiceRole, meta: Any, template: Any) -> Any:
        """A role's Job: the role's own end (or its wrapper's, at the job's end) completes it."""
        c = self.client
        template.spec.restart_policy = "OnFailure" if role.restart == "on-failure" else "Never"
        # on-failure: Kubernetes' default number of retries; never: none
        spec = c.V1JobSpec(backoff_limit=6 if role.restart == "on-failure" else 0, template=template)
        return c.V1Job(api_version="batch/v1", kind="Job", metadata=meta, spec=spec)

    # --- the whole ---

    def render(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        c, native, opts = self.client, self.native, self.opts
        image = opts.image or native.image
        if not image:
            raise UsageError(
                "the kubernetes launcher needs a container image with rladapt and the framework "
                "installed: set spec.runtime.image or pass --launcher-opt image=REGISTRY/IMAGE:TAG"
            )
        if not image_ok(image):
            self.problem(
                "spec.runtime.image",
                "not a container image reference",
                "no whitespace or control characters",
                repr(image),
            )
        lifecycle = self.lifecycle()
        name = self.check_name()
        labels = self.labels()
        env = self.env()
        workdir, uri = self.working_dirs()
        runtime_env = self.runtime_env(uri)
        ray_ports, start_params, extra_ports = self.ports()
        volumes, mounts = self.volumes()
        configmap, file_mounts = self.files(name, workdir, labels)
        if configmap is not None:
            volumes.append(
                c.V1Volume(
                    name=FILES_VOLUME, config_map=c.V1ConfigMapVolumeSource(name=configmap.metadata.name)
                )
            )
        mounts = mounts + file_mounts
        pool_paths = {}
        for index, pool in enumerate(native.pools):
            if len(pool.name) > 63 or not _DNS1123_LABEL.fullmatch(pool.name):
                self.problem(
                    f"spec.placement.pools[{index}].name",
                    "a pool becomes a KubeRay worker group, whose name must be a DNS label",
                    "lowercase letters, digits and '-'",
                    pool.name,
                )
            pool_paths[pool.name] = index
        needs = self.pool_needs()
        services = self.services(name, image, labels, env, volumes, mounts, workdir)
        claims = self.claims(labels)
        if self.problems:
            raise SpecError(self.problems, "the kubernetes launcher cannot render this job")
        self.service_manifests = services
        self.claim_manifests = claims

        head_ports = [
            c.V1ContainerPort(name=pname, container_port=number, protocol="TCP")
            for pname, number in ray_ports.items()
        ] + extra_ports
        head = self.container(HEAD_CONTAINER, image, env, head_ports, self.head_resources(), mounts, workdir)
        self.check_storage(workdir)
        self.check_inputs(workdir, uri)
        api = c.ApiClient()
        sanitize: Callable[[Any], Any] = api.sanitize_for_serialization
        workers = []
        for pool in native.pools:
            resources = self.worker_resources(pool, needs.get(pool.name))
            worker = self.container(WORKER_CONTAINER, image, env, extra_ports, resources, mounts, workdir)
            workers.append(
                {
                    "groupName": pool.name,
                    "replicas": pool.nodes,
                    "minReplicas": pool.nodes,
                    "maxReplicas": pool.nodes,
                    "rayStartParams": {},
                    "template": sanitize(self.pod_template(worker, volumes, labels)),
                }
            )
        cluster: dict[str, Any] = {}
        if opts.ray_version:
            cluster["rayVersion"] = opts.ray_version
        cluster["headGroupSpec"] = {
            "rayStartParams": start_params,
            "template": sanitize(self.pod_template(head, volumes, labels)),
        }
        if workers:
            cluster["workerGroupSpecs"] = workers

        shutdown = bool(native.lifecycle.get("shutdown_after_finish", True))
        entrypoint = shlex.join(self.command.argv)
        spec: dict[str, Any] = {
            "entrypoint": kubelet_literal(entrypoint) if opts.submission_mode in _ARGS_MODES else entrypoint,
        }
        if runtime_env is not None:
            spec["runtimeEnvYAML"] = runtime_env
        spec["submissionMode"] = opts.submission_mode
        spec["shutdownAfterJobFinishes"] = shutdown
        if shutdown:  # KubeRay rejects a TTL without shutdownAfterJobFinishes
            spec["ttlSecondsAfterFinished"] = lifecycle["ttl_seconds_after_finish"]
        if lifecycle["timeout_seconds"]:
            spec["activeDeadlineSeconds"] = lifecycle["timeout_seconds"]
        spec["backoffLimit"] = lifecycle["max_restarts"]
        spec["rayClusterSpec"] = cluster

        annotations = {PATCHES_ANNOTATION: ",".join(native.patches)} if native.patches else None
        meta = c.V1ObjectMeta(name=name, namespace=opts.namespace, labels=labels, annotations=annotations)
        rayjob = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": sanitize(meta), "spec": spec}
        return rayjob, (sanitize(configmap) if configmap is not None else None)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def kubernetes_module() -> Any:
    """The official client, imported on first use; a missing install is a usage error, not a traceback."""
    try:
        import kubernetes.client
        import kubernetes.config
    except ImportError as exc:
        raise UsageError(
            f"the kubernetes launcher needs the official client: pip install 'rladapt[kubernetes]' ({exc})"
        ) from None
    return kubernetes
