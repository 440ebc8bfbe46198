"""The neutral job spec: ``RLJob``, loading with overrides, validation and its JSON Schema."""

from __future__ import annotations

import json
from typing import Any

from .errors import (
    LaunchError,
    OutputError,
    PluginError,
    Problem,
    RladaptError,
    SpecError,
    UnsupportedError,
    UsageError,
    field_path,
    quote,
)
from .loading import load_job, load_job_text, read_spec_text, validate_data
from .paths import JobInput, is_remote, job_inputs, missing_inputs
from .spec import API_VERSION, ROLE_NAMES, Placement, Pool, RLJob, Spec


def json_schema() -> dict[str, Any]:
    """JSON Schema of RLJob, by alias, for editors' YAML language servers."""
    schema = RLJob.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://rladapt.dev/schemas/rladapt-v1alpha1-rljob.json"
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True)


__all__ = [
    "API_VERSION",
    "ROLE_NAMES",
    "JobInput",
    "LaunchError",
    "OutputError",
    "Placement",
    "PluginError",
    "Pool",
    "Problem",
    "RLJob",
    "RladaptError",
    "Spec",
    "SpecError",
    "UnsupportedError",
    "UsageError",
    "field_path",
    "is_remote",
    "job_inputs",
    "json_schema",
    "json_schema_text",
    "load_job",
    "load_job_text",
    "missing_inputs",
    "quote",
    "read_spec_text",
    "validate_data",
]
