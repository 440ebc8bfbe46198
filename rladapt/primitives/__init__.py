"""The neutral job spec: ``RLJob``, loading with overrides, validation and its JSON Schema.

The errors and the job's paths are imported with the package; the spec models and their loader (pydantic, YAML)
on first use of one of their names (PEP 562 ``__getattr__``, with plain imports that the layers contract reads):
``import rladapt.primitives.errors``, which every verb does, runs this file, and a verb that reads no spec (``runs``,
``metrics``, ``--help``) must not pay for building the spec's models (benchmarks/cold_start.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from .paths import JobInput, is_remote, job_inputs, missing_inputs

if TYPE_CHECKING:
    from .loading import load_job, load_job_text, read_spec_text, validate_data
    from .spec import API_VERSION, ROLE_NAMES, Placement, Pool, RLJob, Spec

#: the names loaded on first use, by module
_LOADING = frozenset({"load_job", "load_job_text", "read_spec_text", "validate_data"})
_SPEC = frozenset({"API_VERSION", "ROLE_NAMES", "Placement", "Pool", "RLJob", "Spec"})


def __getattr__(name: str) -> Any:
    if name in _LOADING:
        from . import loading

        value = getattr(loading, name)
    elif name in _SPEC:
        from . import spec

        value = getattr(spec, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # resolved once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def json_schema() -> dict[str, Any]:
    """JSON Schema of RLJob, by alias, for editors' YAML language servers."""
    from .spec import RLJob

    schema = RLJob.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://rladapt.dev/schemas/rladapt-v1alpha1-rljob.json"
    return schema


def json_schema_text() -> str:
    import json

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
