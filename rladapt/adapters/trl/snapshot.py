"""The TRL snapshot generator: every field of that version's real ``GRPOConfig`` and ``RLOOConfig``.

Both are dataclasses deriving from transformers' ``TrainingArguments``, so the generator imports them (in a
subprocess, with the wheel's ``trl`` package first on ``sys.path``) under the transformers this interpreter has,
and reads ``dataclasses.fields`` with their resolved type hints: the inherited fields are part of the surface a
config sets. The snapshot's ``source`` names the transformers version it was read with (the matrix pins it in
``tested_with``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from rladapt.compat.schema._format import KeySpec, Snapshot, merge_scopes

SCOPES = ("GRPOConfig", "RLOOConfig")

# Runs in the subprocess: prints {"transformers": version, "trl": version, "GRPOConfig": {field: {...}}, ...}.
_READER = r"""
import dataclasses, enum, json, sys, types, typing
import transformers
import trl
from trl import GRPOConfig, RLOOConfig

NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "null"}

def names(tp):
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        out = []
        for arg in typing.get_args(tp):
            for n in names(arg):
                if n not in out:
                    out.append(n)
        return out
    if origin is typing.Literal:
        return sorted({NAMES.get(type(a), "any") for a in typing.get_args(tp)})
    if origin in (list, tuple, set):
        return ["list"]
    if origin is dict:
        return ["dict"]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return ["str"]
    return [NAMES.get(tp, "any")]

def plain(value):
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value

out = {"transformers": transformers.__version__, "trl": trl.__version__}
for cls in (GRPOConfig, RLOOConfig):
    hints = typing.get_type_hints(cls)
    table = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = plain(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = plain(f.default_factory())
        else:
            default = None
        table[f.name] = {"type": "|".join(names(hints.get(f.name, typing.Any))), "default": default}
    out[cls.__name__] = table
print(json.dumps(out))
"""


def _package_root(source: Path, into: Path) -> Path:
    """The directory holding ``trl/`` for ``source``: a wheel (unzipped into ``into``) or an unpacked tree."""
    if source.is_file() and source.suffix == ".whl":
        with zipfile.ZipFile(source) as archive:
            archive.extractall(into)
        return into
    if (source / "trl" / "trainer" / "grpo_config.py").is_file():
        return source
    raise ValueError(f"{source} is neither a trl wheel nor a directory holding trl/trainer/grpo_config.py")


def read_fields(root: Path) -> dict[str, Any]:
    """What ``_READER`` prints for the ``trl`` package under ``root``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _READER], capture_output=True, text=True, env=env, check=False, timeout=300
    )
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:]) or "no output"
        raise ValueError(f"importing trl's config classes from {root} failed: {tail}")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def generate(source: Path, version: str) -> Snapshot:
    """The snapshot of trl ``version`` from ``source`` (its wheel, or a directory holding ``trl/``)."""
    with tempfile.TemporaryDirectory(prefix="rladapt-trl-") as tmp:
        data = read_fields(_package_root(source, Path(tmp)))
    if data["trl"] != version:
        raise ValueError(f"{source} holds trl {data['trl']}, not {version}")
    per_scope = [
        (
            scope,
            {
                name: KeySpec(type=f["type"], default=f["default"], declared="dataclass")
                for name, f in data[scope].items()
            },
        )
        for scope in SCOPES
    ]
    scopes, merged = merge_scopes(per_scope)
    return Snapshot(
        framework="trl",
        version=version,
        source=f"{source.name} (with transformers {data['transformers']})",
        scopes=scopes,
        keys=merged,
    )
