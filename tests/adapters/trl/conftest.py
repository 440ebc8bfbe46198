"""Fixtures of the TRL suite: each pinned version's real ``trl`` package (its wheel, unzipped once under the wheel
cache) and a way to build that version's real ``GRPOConfig`` / ``RLOOConfig`` from rendered configs.

The test venv has one transformers (the trl extra pins it, as the matrix's ``tested_with`` does) and one installed
trl; the other pinned versions are pure Python and import from their unzipped wheel put first on ``sys.path`` in a
subprocess, so every pinned version's own dataclasses judge the rendered keys (no AST reading needed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rladapt import compat
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, load_registry
from rladapt.primitives import RLJob, load_job
from tests.support.wheels import CACHE, REPO, download_wheel, extract

PINNED: list[str] = [entry.version for entry in compat.pinned("trl")]
EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"
REGISTRY = load_registry(use_entry_points=False)

# Runs in the subprocess: for each {"trainer", "config"} of stdin, the config class built from the keys, and
# for each key: whether it is a field, its declared type's names and the value the built object holds.
_BUILD = r"""
import dataclasses, enum, json, sys, typing
import trl
from trl import GRPOConfig, RLOOConfig

out = {"trl": trl.__version__, "results": []}
for case in json.load(sys.stdin):
    cls = GRPOConfig if case["trainer"] == "grpo" else RLOOConfig
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    try:
        obj = cls(**case["config"])
    except Exception as exc:
        out["results"].append({"error": f"{type(exc).__name__}: {exc}"})
        continue
    values = {}
    for key in case["config"]:
        value = getattr(obj, key, None)
        if isinstance(value, enum.Enum):
            value = value.value
        values[key] = {"field": key in fields, "type": str(hints.get(key)), "value": value}
    out["results"].append({"error": None, "values": values})
print(json.dumps(out, default=str))
"""


def trl_root(version: str) -> Path:
    """The directory holding that version's ``trl/`` package (its wheel, unzipped once)."""
    return extract(download_wheel("trl", version), CACHE / "extracted" / f"trl-{version}")


def build_configs(version: str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case's config built by trl ``version``'s real config class (one subprocess for all cases)."""
    root = trl_root(version)
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["trl"] == version, f"imported trl {data['trl']} instead of {version} from {root}"
    results: list[dict[str, Any]] = data["results"]
    return results


def job(*overrides: str) -> RLJob:
    return load_job(EXAMPLE, list(overrides))


def render(j: RLJob, version: str) -> NativeLaunch:
    return render_native(j, f"trl=={version}", REGISTRY).native


def driver_config(native: NativeLaunch) -> dict[str, Any]:
    path = native.argv[native.argv.index("--config") + 1]
    document: dict[str, Any] = json.loads(native.files[path])
    return document


@pytest.fixture(scope="session")
def tiny_example() -> Path:
    return EXAMPLE
