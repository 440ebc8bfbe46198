"""Offline validation of Kubernetes manifests: the real KubeRay CRD schemas and the official Kubernetes schemas.

No API server can run on the CI machines, so a rendered manifest is checked the way the API server and the KubeRay
operator would check it, as far as that is possible without them:

* the RayJob against the ``openAPIV3Schema`` of KubeRay's own CRD (``../shared/fixtures/k8s-crds/``), with
  ``additionalProperties: false`` added wherever the CRD lists properties and does not preserve unknown fields, so
  that a misspelt field is an error (the API server would silently prune it);
* every pod template and ConfigMap against the official schemas with ``kubernetes-validate --strict``;
* the operator's own checks that no schema holds (``validation.go`` of KubeRay): ``kuberay_rule_violations``.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

CRDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "k8s-crds"
RAYJOB_CRD = "kuberay-v1.7.0-ray.io_rayjobs.json"
#: The oldest Kubernetes we check against and the newest kubernetes-validate knows.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def strict(schema: Any) -> Any:
    """A copy of ``schema`` in which every object with listed properties rejects unlisted ones."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@cache
def crd_validator(filename: str = RAYJOB_CRD, version: str = "v1") -> jsonschema.Draft7Validator:
    path = CRDS / filename
    crd = json.loads(path.read_text(encoding="utf-8"))
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = strict(copy.deepcopy(entry["schema"]["openAPIV3Schema"]))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def crd_errors(obj: dict[str, Any], filename: str = RAYJOB_CRD) -> list[str]:
    validator = crd_validator(filename)
    return [
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    ]


def k8s_errors(obj: dict[str, Any]) -> list[str]:
    """Strict validation of a built-in kind against every version in K8S_VERSIONS."""
    errors = []
    for version in K8S_VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in getattr(exc, "path", []))
            errors.append(f"{obj.get('kind')} against Kubernetes {version}: {path}: {exc.message}")
    return errors


def pod_templates(rayjob: dict[str, Any]) -> dict[str, dict[str, Any]]:
    cluster = rayjob["spec"]["rayClusterSpec"]
    out = {"head": cluster["headGroupSpec"]["template"]}
    for group in cluster.get("workerGroupSpecs", []):
        out[group["groupName"]] = group["template"]
    return out


def as_pod(template: dict[str, Any], name: str) -> dict[str, Any]:
    """A pod template as the Pod it becomes (what kubernetes-validate knows how to check)."""
    metadata = {**template.get("metadata", {}), "name": name}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def metadata_errors(metadata: dict[str, Any]) -> list[str]:
    """The RayJob CRD says only ``metadata: {type: object}``; check it as the ObjectMeta it is."""
    return k8s_errors({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})


def kuberay_rule_violations(rayjob: dict[str, Any]) -> list[str]:
    """What KubeRay v1.7.0's ``ValidateRayJobMetadata`` / ``ValidateRayJobSpec`` reject beyond the schema."""
    spec, out = rayjob["spec"], []
    name = rayjob["metadata"].get("name", "")
    if len(name) > 47 or not _DNS1035.match(name):
        out.append(f"name {name!r} is not a DNS-1035 label of at most 47 characters")
    if not spec.get("shutdownAfterJobFinishes") and spec.get("ttlSecondsAfterFinished", 0) > 0:
        out.append("ttlSecondsAfterFinished without shutdownAfterJobFinishes")
    if spec.get("submissionMode", "K8sJobMode") not in (
        "K8sJobMode",
        "HTTPMode",
        "InteractiveMode",
        "SidecarMode",
    ):
        out.append(f"submissionMode {spec['submissionMode']!r}")
    if "activeDeadlineSeconds" in spec and spec["activeDeadlineSeconds"] <= 0:
        out.append("activeDeadlineSeconds must be positive")
    if spec.get("backoffLimit", 0) < 0:
        out.append("backoffLimit must not be negative")
    if "runtimeEnvYAML" in spec and not isinstance(yaml.safe_load(spec["runtimeEnvYAML"]), dict):
        out.append("runtimeEnvYAML is not a YAML mapping")
    cluster = spec["rayClusterSpec"]
    if not cluster["headGroupSpec"]["template"]["spec"].get("containers"):
        out.append("the head group has no container")
    names = [g["groupName"] for g in cluster.get("workerGroupSpecs", [])]
    if len(set(names)) != len(names):
        out.append(f"worker group names repeat: {names}")
    for group in cluster.get("workerGroupSpecs", []):
        low, high, replicas = group.get("minReplicas"), group.get("maxReplicas"), group.get("replicas")
        if low is None or high is None:
            out.append(f"worker group {group['groupName']} lacks minReplicas/maxReplicas")
        elif not (0 <= low <= (replicas if replicas is not None else low) <= high):
            out.append(f"worker group {group['groupName']}: replicas outside [minReplicas, maxReplicas]")
        if not group["template"]["spec"].get("containers"):
            out.append(f"worker group {group['groupName']} has no container")
    return out
