"""The ``kubernetes`` launcher: a KubeRay ``RayJob`` submitted to the current kubeconfig context.

``render`` builds a ``ray.io/v1`` RayJob (a head group plus one worker group per GPU pool of the placement) and, when
the launch carries files, a ConfigMap mounted into every Ray pod. The pod templates are built with the official
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
import json
import os
import posixpath
import re
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml

from rladapt.bootstrap import PATCHES_ENV, WORKER_SETUP_HOOK, bootstrap_argv
from rladapt.launchers._shell import run_id_option
from rladapt.plugins import TERMINAL_STATES, Artifacts, Launcher, NativeLaunch, RunState, RunStatus, hookimpl
from rladapt.primitives.errors import LaunchError, Problem, SpecError, UsageError

PLUGIN_NAME = "kubernetes"

GROUP, VERSION, PLURAL, KIND = "ray.io", "v1", "rayjobs", "RayJob"
RAYJOB_FILE = "rayjob.yaml"
CONFIGMAP_FILE = "configmap.yaml"
#: In the run directory: the last final state seen, for when the RayJob is gone.
FINAL_STATUS_FILE = "kubernetes-final-status.json"

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
FRAMEWORK_LABEL = "rladapt.io/framework"
FRAMEWORK_VERSION_LABEL = "rladapt.io/framework-version"
RUN_ID_LABEL = "rladapt.io/run-id"
PATCHES_ANNOTATION = "rladapt.io/patches"

#: Ray's head ports as KubeRay names them (``utils/constant.go``): it finds the dashboard by this port name.
RAY_PORTS: dict[str, int] = {"gcs-server": 6379, "dashboard": 8265, "client": 10001}
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "SidecarMode")
#: Modes whose submitter receives the entrypoint through container args (kubelet ``$(VAR)`` expansion applies).
_ARGS_MODES = frozenset({"K8sJobMode", "SidecarMode"})
HEAD_CONTAINER, WORKER_CONTAINER, SIDECAR_SUBMITTER = "ray-head", "ray-worker", "ray-job-submitter"
FILES_VOLUME = "rladapt-files"
#: Where generated files land when runtime.working_dir is relative and no ``workdir`` option says where it is.
DEFAULT_WORKDIR = "/workspace"
#: KubeRay's MaxRayJobNameLength: the RayCluster it creates appends a suffix and must stay within 53.
MAX_NAME_LENGTH = 47
CONFIGMAP_LIMIT = 1024 * 1024
API_TIMEOUT = (10.0, 60.0)
POLL_SECONDS = 2.0

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_QUANTITY = re.compile(
    r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$"
)
_CONFIGMAP_KEY_CHARS = re.compile(r"[^-._a-zA-Z0-9]")
#: What a label key may be written as in a field path; any other key is shown as its repr.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./-]+")
#: rayVersion: KubeRay compares it with Ray's own version, e.g. 2.49.0.
_RAY_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}")
#: The API server stores these RayJob fields as int32.
INT32_MAX = 2**31 - 1
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")

T = TypeVar("T")


# --- options ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KubernetesOptions:
    """``spec.launcher.kubernetes`` merged with ``--launcher-opt``, checked and typed."""

    image: str | None = None
    namespace: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    image_pull_policy: str | None = None
    service_account: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[tuple[str, str | None, str | None], ...] = ()
    priority_class: str | None = None
    cpu: str | None = None
    memory: str | None = None
    head_cpu: str | None = None
    head_memory: str | None = None
    head_gpus: int = 0
    gpu_resource: str = "nvidia.com/gpu"
    submission_mode: str = "K8sJobMode"
    ray_version: str | None = None
    workdir: str | None = None
    run_id: str | None = None

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> KubernetesOptions:
        text = {
            key: _text(key, value) for key, value in raw.items() if value is not None and key != "head_gpus"
        }

        def choice(key: str, allowed: tuple[str, ...]) -> str | None:
            value = text.get(key)
            if value is not None and value not in allowed:
                raise UsageError(
                    f"kubernetes launcher option {key}={value!r}: expected one of {', '.join(allowed)}"
                )
            return value

        for key in ("cpu", "memory", "head_cpu", "head_memory"):
            if key in text and not _QUANTITY.fullmatch(text[key]):
                raise UsageError(
                    f"kubernetes launcher option {key}={text[key]!r}: expected a Kubernetes quantity "
                    "such as 8, 500m or 64Gi"
                )
        for key in ("namespace", "service_account", "priority_class"):
            if key in text and not _DNS1123_SUBDOMAIN.fullmatch(text[key]):
                raise UsageError(
                    f"kubernetes launcher option {key}={text[key]!r}: expected a DNS name "
                    "(lowercase letters, digits, '-' and '.')"
                )
        if "image" in text and not _image_ok(text["image"]):
            raise UsageError(
                f"kubernetes launcher option image={text['image']!r}: expected an image reference such as "
                "registry.example.com/team/rl:1.0, with no whitespace or control characters"
            )
        if "gpu_resource" in text and not _resource_name_ok(text["gpu_resource"]):
            raise UsageError(
                f"kubernetes launcher option gpu_resource={text['gpu_resource']!r}: expected an extended "
                "resource name DOMAIN/NAME such as nvidia.com/gpu or amd.com/gpu"
            )
        if "ray_version" in text and not _RAY_VERSION.fullmatch(text["ray_version"]):
            raise UsageError(
                f"kubernetes launcher option ray_version={text['ray_version']!r}: expected the Ray version "
                "inside the image, digits and dots such as 2.49.0"
            )
        if "workdir" in text and not text["workdir"].startswith("/"):
            raise UsageError(
                f"kubernetes launcher option workdir={text['workdir']!r}: expected an absolute path"
            )
        gpus = raw.get("head_gpus", 0)
        try:
            head_gpus = int(gpus)
        except (TypeError, ValueError):
            raise UsageError(
                f"kubernetes launcher option head_gpus={gpus!r}: expected a whole number"
            ) from None
        if head_gpus < 0 or isinstance(gpus, bool) or (isinstance(gpus, float) and not gpus.is_integer()):
            raise UsageError(f"kubernetes launcher option head_gpus={gpus!r}: expected a whole number >= 0")
        return cls(
            image=text.get("image"),
            namespace=text.get("namespace"),
            context=text.get("context"),
            kubeconfig=text.get("kubeconfig"),
            image_pull_policy=choice("image_pull_policy", _PULL_POLICIES),
            service_account=text.get("service_account"),
            node_selector=_parse_node_selector(text.get("node_selector", "")),
            tolerations=_parse_tolerations(text.get("tolerations", "")),
            priority_class=text.get("priority_class"),
            cpu=text.get("cpu"),
            memory=text.get("memory"),
            head_cpu=text.get("head_cpu"),
            head_memory=text.get("head_memory"),
            head_gpus=head_gpus,
            gpu_resource=text.get("gpu_resource", cls.gpu_resource),
            submission_mode=choice("submission_mode", SUBMISSION_MODES) or cls.submission_mode,
            ray_version=text.get("ray_version"),
            workdir=text.get("workdir"),
            run_id=run_id_option(raw, PLUGIN_NAME),
        )


def _text(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UsageError(f"kubernetes launcher option {key}={value!r}: expected a string")
    return str(value).strip()


def _parse_node_selector(text: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not _label_key_ok(key) or not _label_value_ok(value):
            raise UsageError(
                f"kubernetes launcher option node_selector: {item!r} is not a node label KEY=VALUE"
            )
        pairs.append((key, value))
    return tuple(pairs)


def _parse_tolerations(text: str) -> tuple[tuple[str, str | None, str | None], ...]:
    """``key[=value][:Effect]`` items, the syntax of ``kubectl taint``."""
    out = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        rest, _, effect = item.rpartition(":") if ":" in item else (item, "", "")
        key, sep, value = rest.partition("=")
        if (
            not _label_key_ok(key)
            or (sep and not _label_value_ok(value))
            or (effect and effect not in _EFFECTS)
        ):
            raise UsageError(
                f"kubernetes launcher option tolerations: {item!r} is not key[=value][:Effect] "
                f"with Effect one of {', '.join(_EFFECTS)}"
            )
        out.append((key, value if sep else None, effect or None))
    return tuple(out)


def _label_key_ok(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.fullmatch(name))


def _label_value_ok(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_LABEL_NAME.fullmatch(value)))


def _image_ok(image: str) -> bool:
    """An image reference the kubelet can pull: not empty, no whitespace, no control characters."""
    return bool(image) and all(ch.isprintable() and not ch.isspace() for ch in image)


def _resource_name_ok(name: str) -> bool:
    """A fully qualified extended resource name: DNS subdomain prefix, '/', name (outside kubernetes.io)."""
    prefix, slash, _ = name.partition("/")
    if not slash or prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return False
    return _label_key_ok(name)


# --- rendering -------------------------------------------------------------------------------------------------


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


class _Renderer:
    """Builds the manifests of one NativeLaunch; collects every problem of the spec before raising."""

    def __init__(self, native: NativeLaunch, opts: KubernetesOptions) -> None:
        self.client = _kubernetes().client
        self.native = native
        self.opts = opts
        self.problems: list[Problem] = []

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
            if not _label_key_ok(key) or not _label_value_ok(value):
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
            if value and _label_value_ok(value):
                labels[key] = value
        return labels

    def secrets(self) -> list[Any]:
        c = self.client
        out = []
        for index, ref in enumerate(self.native.secrets):
            path = f"spec.secrets[{index}].from"
            if ref.kind != "k8s_secret":
                where = (
                    "an environment variable of your shell" if ref.kind == "env" else "a file on this machine"
                )
                self.problem(
                    path,
                    f"secret {ref.env} comes from {where} ({ref.name}), which a Kubernetes cluster "
                    "cannot read",
                    "from: {k8s_secret: {name: SECRET, key: KEY}}",
                    ref.kind,
                )
                continue
            if not ref.key:
                self.problem(path, f"secret {ref.env} names no key of Kubernetes Secret {ref.name}", "a key")
                continue
            selector = c.V1SecretKeySelector(name=ref.name, key=ref.key)
            out.append(c.V1EnvVar(name=ref.env, value_from=c.V1EnvVarSource(secret_key_ref=selector)))
        return out

    def env(self) -> list[Any]:
        c = self.client
        runtime_vars = self.native.runtime_env.get("env_vars") or {}
        values: dict[str, str] = {str(k): str(v) for k, v in runtime_vars.items()}
        values.update(self.native.env)
        if self.native.runtime_patches:
            values[PATCHES_ENV] = ",".join(self.native.runtime_patches)
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
        if self.native.runtime_patches:
            runtime_env["worker_process_setup_hook"] = WORKER_SETUP_HOOK
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

    # --- the whole ---

    def render(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        c, native, opts = self.client, self.native, self.opts
        image = opts.image or native.image
        if not image:
            raise UsageError(
                "the kubernetes launcher needs a container image with rladapt and the framework "
                "installed: set spec.runtime.image or pass --launcher-opt image=REGISTRY/IMAGE:TAG"
            )
        if not _image_ok(image):
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
        if self.problems:
            raise SpecError(self.problems, "the kubernetes launcher cannot render this job")

        def container(cname: str, ports: list[Any], resources: Any | None) -> Any:
            return c.V1Container(
                name=cname,
                image=image,
                image_pull_policy=opts.image_pull_policy,
                env=env or None,
                ports=ports or None,
                resources=resources,
                volume_mounts=mounts or None,
                working_dir=workdir,
            )

        head_ports = [
            c.V1ContainerPort(name=pname, container_port=number, protocol="TCP")
            for pname, number in ray_ports.items()
        ] + extra_ports
        head = container(
            HEAD_CONTAINER, head_ports, self.resources(opts.head_cpu, opts.head_memory, opts.head_gpus)
        )
        api = c.ApiClient()
        sanitize: Callable[[Any], Any] = api.sanitize_for_serialization
        workers = []
        for pool in native.pools:
            worker = container(
                WORKER_CONTAINER, extra_ports, self.resources(opts.cpu, opts.memory, pool.gpus_per_node)
            )
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
        entrypoint = shlex.join(bootstrap_argv(native))
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


def _kubernetes() -> Any:
    """The official client, imported on first use; a missing install is a usage error, not a traceback."""
    try:
        import kubernetes.client
        import kubernetes.config
    except ImportError as exc:
        raise UsageError(
            f"the kubernetes launcher needs the official client: pip install 'rladapt[kubernetes]' ({exc})"
        ) from None
    return kubernetes


# --- the API server --------------------------------------------------------------------------------------------


@dataclass
class _Cluster:
    """A client for one kubeconfig context, with every failure turned into a LaunchError."""

    api: Any
    host: str
    context: str | None
    kubeconfig: str | None
    namespace: str

    @classmethod
    def connect(cls, kubeconfig: str | None, context: str | None) -> _Cluster:
        config = _kubernetes().config
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

        api_exception = _kubernetes().client.exceptions.ApiException

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
        return _kubernetes().client.CustomObjectsApi(self.api)

    def core(self) -> Any:
        return _kubernetes().client.CoreV1Api(self.api)


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


# --- the launcher ----------------------------------------------------------------------------------------------


class KubernetesLauncher(Launcher):
    PLUGIN_NAME = PLUGIN_NAME
    DESCRIPTION = "a KubeRay RayJob on the current kubeconfig context (needs the KubeRay operator)"
    OPTIONS: ClassVar[dict[str, str]] = {
        "image": "container image of every Ray pod, with rladapt and the framework installed "
        "(default: spec.runtime.image)",
        "namespace": "namespace of the RayJob (default: the kubeconfig context's namespace, else default)",
        "context": "kubeconfig context to submit to (default: the current context)",
        "kubeconfig": "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)",
        "image_pull_policy": "Always, IfNotPresent or Never",
        "service_account": "service account of the Ray pods",
        "node_selector": "node labels the Ray pods need: key=value[,key=value...]",
        "tolerations": "taints the Ray pods tolerate: key[=value][:Effect][,...]",
        "priority_class": "priorityClassName of the Ray pods",
        "cpu": "CPUs of each worker pod (request = limit), e.g. 32",
        "memory": "memory of each worker pod (request = limit), e.g. 256Gi",
        "head_cpu": "CPUs of the head pod (request = limit)",
        "head_memory": "memory of the head pod (request = limit)",
        "head_gpus": "GPUs of the head pod (default 0: the head runs the driver, the pools' workers the GPU work)",
        "gpu_resource": "extended resource name of one GPU (default nvidia.com/gpu)",
        "submission_mode": "KubeRay submissionMode: K8sJobMode (default), HTTPMode or SidecarMode",
        "ray_version": "rayClusterSpec.rayVersion: the Ray version inside the image",
        "workdir": "absolute directory of the image that runtime.working_dir is relative to (default: the "
        f"image's WORKDIR, or {DEFAULT_WORKDIR} when generated files are mounted)",
    }

    def render(self, native: NativeLaunch, options: dict[str, Any]) -> Artifacts:
        opts = KubernetesOptions.parse(KubernetesLauncher.merge_options(native, options))
        rayjob, configmap = _Renderer(native, opts).render()
        files = {RAYJOB_FILE: dump_manifest(rayjob)}
        if configmap is not None:
            files[CONFIGMAP_FILE] = dump_manifest(configmap)
        request = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "name": rayjob["metadata"]["name"],
            "namespace": opts.namespace,
            "context": opts.context,
            "kubeconfig": opts.kubeconfig,
            "submissionMode": opts.submission_mode,
        }
        return Artifacts(launcher=PLUGIN_NAME, files=files, request=request)

    # --- side effects ---

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        request = artifacts.request
        rayjob = yaml.safe_load(artifacts.files[RAYJOB_FILE])
        configmap = (
            yaml.safe_load(artifacts.files[CONFIGMAP_FILE]) if CONFIGMAP_FILE in artifacts.files else None
        )
        cluster = _Cluster.connect(request.get("kubeconfig"), request.get("context"))
        namespace = request.get("namespace") or cluster.namespace
        name = rayjob["metadata"]["name"]
        rayjob["metadata"]["namespace"] = namespace
        custom, core = cluster.custom(), cluster.core()
        configmap_uid = None
        if configmap is not None:
            configmap["metadata"]["namespace"] = namespace
            created_cm = cluster.call(
                f"creating ConfigMap {namespace}/{configmap['metadata']['name']}",
                core.create_namespaced_config_map,
                namespace,
                configmap,
            )
            configmap_uid = getattr(getattr(created_cm, "metadata", None), "uid", None)
        try:
            created = cluster.call(
                f"creating RayJob {namespace}/{name}",
                custom.create_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                rayjob,
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
        uid = ((created or {}).get("metadata") or {}).get("uid")
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
                )
            except LaunchError as exc:
                handle["warnings"] = [f"{exc.message}; stop will delete the ConfigMap itself"]
        return handle

    def _connect(self, handle: dict[str, Any]) -> _Cluster:
        return _Cluster.connect(handle.get("kubeconfig"), handle.get("context"))

    def _get(self, cluster: _Cluster, handle: dict[str, Any]) -> dict[str, Any] | None:
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
        )
        if obj is None:
            return None
        if handle.get("uid") and (obj.get("metadata") or {}).get("uid") != handle["uid"]:
            return None  # a later RayJob of the same name: not this run's
        return dict(obj)

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
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

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        client = _kubernetes().client
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
        if before is None:
            recalled = _recalled(run_dir)
            state: RunState = recalled.state if recalled is not None else "STOPPED"
            return RunStatus(state, message=f"RayJob {ns}/{name} was already deleted")
        if before.terminal:
            result = RunStatus(before.state, message=f"{before.message}; RayJob {ns}/{name} deleted")
        else:
            result = RunStatus(
                "STOPPED", message=f"RayJob {ns}/{name} deleted (its RayCluster and pods go with it)"
            )
        _remember(run_dir, result)
        return result

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
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
        yield from _lines(response)

    def _log_source(
        self, cluster: _Cluster, handle: dict[str, Any], head_ok: bool
    ) -> tuple[Any | None, str | None]:
        """The pod whose log is the job's: KubeRay's submitter (it tails the Ray job), else the Ray head."""
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
            )
            newest = _newest(pods)
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
        )
        head = _newest(pods)
        return head, (SIDECAR_SUBMITTER if mode == "SidecarMode" else HEAD_CONTAINER)


def _newest(pods: Any) -> Any | None:
    items = list(getattr(pods, "items", None) or [])
    if not items:
        return None
    return max(items, key=lambda p: (str(p.metadata.creation_timestamp or ""), p.metadata.name))


def _remember(run_dir: Path, status: RunStatus) -> None:
    """Keep the final state in the run directory: the RayJob that holds it may be deleted later."""
    if run_dir.is_dir():
        data = {"state": status.state, "message": status.message}
        (run_dir / FINAL_STATUS_FILE).write_text(json.dumps(data), encoding="utf-8")


def _recalled(run_dir: Path) -> RunStatus | None:
    try:
        data = json.loads((run_dir / FINAL_STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("state") not in TERMINAL_STATES:
        return None
    return RunStatus(data["state"], message=str(data.get("message", "")))


def _lines(response: Any) -> Iterator[str]:
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


@hookimpl
def rladapt_register_launchers() -> list[Launcher]:
    return [KubernetesLauncher()]
