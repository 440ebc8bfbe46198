"""Options of the ``kubernetes`` launcher: declared for ``Launcher.merge_options``, and the rules they follow."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rladapt.launchers._common import check_run_id
from rladapt.plugins.launcher import Option
from rladapt.primitives.errors import UsageError

PLUGIN_NAME = "kubernetes"
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "SidecarMode")
#: Where generated files land when runtime.working_dir is relative and no ``workdir`` option says where it is.
DEFAULT_WORKDIR = "/workspace"

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
QUANTITY = re.compile(r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$")
#: rayVersion: KubeRay compares it with Ray's own version, e.g. 2.49.0.
_RAY_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")


def _validator(check: Callable[[str], bool], expected: str) -> Callable[[Any], str | None]:
    return lambda value: None if check(value) else expected


_QUANTITY_TEXT = "a Kubernetes quantity such as 8, 500m or 64Gi"
_DNS_TEXT = "a DNS name (lowercase letters, digits, '-' and '.')"
_IMAGE_TEXT = (
    "an image reference such as registry.example.com/team/rl:1.0, with no whitespace or control characters"
)
#: The options of the kubernetes launcher, parsed by ``Launcher.merge_options``; ``KubernetesOptions`` holds them.
OPTIONS = (
    Option(
        "image",
        str,
        "container image of every Ray pod, with rladapt and the framework installed (default: spec.runtime.image)",
        validator=_validator(lambda v: image_ok(v), _IMAGE_TEXT),
    ),
    Option(
        "namespace",
        str,
        "namespace of the RayJob (default: the kubeconfig context's namespace, else default)",
        pattern=DNS1123_SUBDOMAIN.pattern,
        expected=_DNS_TEXT,
    ),
    Option("context", str, "kubeconfig context to submit to (default: the current context)"),
    Option("kubeconfig", str, "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)", path=True),
    Option("image_pull_policy", str, "image pull policy of the Ray pods", choices=_PULL_POLICIES),
    Option(
        "service_account",
        str,
        "service account of the Ray pods",
        pattern=DNS1123_SUBDOMAIN.pattern,
        expected=_DNS_TEXT,
    ),
    Option("node_selector", str, "node labels the Ray pods need: key=value[,key=value...]"),
    Option("tolerations", str, "taints the Ray pods tolerate: key[=value][:Effect][,...]"),
    Option(
        "priority_class",
        str,
        "priorityClassName of the Ray pods",
        pattern=DNS1123_SUBDOMAIN.pattern,
        expected=_DNS_TEXT,
    ),
    Option(
        "cpu",
        str,
        "CPUs of each worker pod (request = limit), e.g. 32 (default: spec.roles.<role>.cpus_per_gpu times "
        "the pool's GPUs per node)",
        pattern=QUANTITY.pattern,
        expected=_QUANTITY_TEXT,
    ),
    Option(
        "memory",
        str,
        "memory of each worker pod (request = limit), e.g. 256Gi (default: the largest "
        "spec.roles.<role>.memory of the pool)",
        pattern=QUANTITY.pattern,
        expected=_QUANTITY_TEXT,
    ),
    Option(
        "head_cpu",
        str,
        "CPUs of the head pod (request = limit)",
        pattern=QUANTITY.pattern,
        expected=_QUANTITY_TEXT,
    ),
    Option(
        "head_memory",
        str,
        "memory of the head pod (request = limit)",
        pattern=QUANTITY.pattern,
        expected=_QUANTITY_TEXT,
    ),
    Option(
        "head_gpus",
        int,
        "GPUs of the head pod (0: the head runs the driver, the pools' workers the GPU work)",
        default=0,
        minimum=0,
        expected="a whole number >= 0",
    ),
    Option(
        "gpu_resource",
        str,
        "extended resource name of one GPU",
        default="nvidia.com/gpu",
        validator=_validator(
            lambda v: _resource_name_ok(v),
            "an extended resource name DOMAIN/NAME such as nvidia.com/gpu or amd.com/gpu",
        ),
    ),
    Option("submission_mode", str, "KubeRay submissionMode", default="K8sJobMode", choices=SUBMISSION_MODES),
    Option(
        "ray_version",
        str,
        "rayClusterSpec.rayVersion: the Ray version inside the image",
        pattern=_RAY_VERSION.pattern,
        expected="the Ray version inside the image, digits and dots such as 2.49.0",
    ),
    Option(
        "workdir",
        str,
        "absolute directory of the image that runtime.working_dir is relative to (default: the image's WORKDIR, "
        f"or {DEFAULT_WORKDIR} when generated files are mounted)",
        validator=_validator(lambda v: v.startswith("/"), "an absolute path"),
    ),
)


@dataclass(frozen=True)
class KubernetesOptions:
    """The options of one render: ``Launcher.merge_options``'s typed values, with the lists parsed."""

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
    def parse(cls, merged: dict[str, Any], run_id: str | None = None) -> KubernetesOptions:
        """From ``merged`` (typed by ``merge_options``), with the node selector and tolerations lists parsed, for
        the run ``run_id`` (None: a dry run)."""
        fields = {o.name: merged[o.name] for o in OPTIONS if o.name in merged}
        fields["node_selector"] = _parse_node_selector(merged.get("node_selector", ""))
        fields["tolerations"] = _parse_tolerations(merged.get("tolerations", ""))
        return cls(**fields, run_id=check_run_id(run_id, PLUGIN_NAME))


def _parse_node_selector(text: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not label_key_ok(key) or not label_value_ok(value):
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
            not label_key_ok(key)
            or (sep and not label_value_ok(value))
            or (effect and effect not in _EFFECTS)
        ):
            raise UsageError(
                f"kubernetes launcher option tolerations: {item!r} is not key[=value][:Effect] "
                f"with Effect one of {', '.join(_EFFECTS)}"
            )
        out.append((key, value if sep else None, effect or None))
    return tuple(out)


def label_key_ok(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.fullmatch(name))


def label_value_ok(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_LABEL_NAME.fullmatch(value)))


def image_ok(image: str) -> bool:
    """An image reference the kubelet can pull: not empty, no whitespace, no control characters."""
    return bool(image) and all(ch.isprintable() and not ch.isspace() for ch in image)


def _resource_name_ok(name: str) -> bool:
    """A fully qualified extended resource name: DNS subdomain prefix, '/', name (outside kubernetes.io)."""
    prefix, slash, _ = name.partition("/")
    if not slash or prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return False
    return label_key_ok(name)
