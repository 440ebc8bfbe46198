"""Options of the ``kubernetes`` launcher: ``spec.launcher.kubernetes`` under ``--launcher-opt``, checked and typed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rladapt.launchers._common import run_id_option
from rladapt.primitives.errors import UsageError

PLUGIN_NAME = "kubernetes"
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "SidecarMode")
#: Where generated files land when runtime.working_dir is relative and no ``workdir`` option says where it is.
DEFAULT_WORKDIR = "/workspace"

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_QUANTITY = re.compile(
    r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$"
)
#: rayVersion: KubeRay compares it with Ray's own version, e.g. 2.49.0.
_RAY_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")


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
            if key in text and not DNS1123_SUBDOMAIN.fullmatch(text[key]):
                raise UsageError(
                    f"kubernetes launcher option {key}={text[key]!r}: expected a DNS name "
                    "(lowercase letters, digits, '-' and '.')"
                )
        if "image" in text and not image_ok(text["image"]):
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
