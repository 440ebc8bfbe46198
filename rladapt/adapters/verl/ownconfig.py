"""A launch's own verl config file (``--config-path DIR --config-name NAME``): what it composes.

verl's examples keep configs of their own beside the scripts (``examples/sglang_multiturn/config/*.yaml``,
0.5.0 to 0.9.1): ``defaults: [ppo_trainer, _self_]`` (or ``ppo_megatron_trainer``) and the values the file sets,
found through ``hydra.searchpath: [file://verl/trainer/config]``. Hydra composes such a file as verl's packaged
config followed by the file's own values (``_self_`` after the config it builds on; a primary config that names
no ``_self_`` gets it last, hydra/_internal/defaults_list.py ``_validate_self``, Hydra 1.3), then the
command line's overrides. rladapt reads that shape; any other defaults entry (a group choice, a second config) is
refused by name, never composed differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rladapt.primitives.errors import UsageError, quote


@dataclass(frozen=True)
class OwnConfig:
    """The config file, the packaged config it builds on, and its own leaf values (``a.b.c`` -> value)."""

    file: str
    base: str
    values: Mapping[str, Any]


def config_file(folder: str, name: str) -> str:
    """The file Hydra reads for ``--config-path folder --config-name name`` (absolute ``folder``)."""
    return f"{folder.rstrip('/')}/{name.removesuffix('.yaml')}.yaml"


def read_own_config(file: str, packaged: tuple[str, ...]) -> OwnConfig:
    """The composition of the config ``file``; ``packaged`` are the config names of the entry module's own folder
    (the snapshot's scopes) it may build on. A usage error (exit 2) names the file and what it cannot read."""
    where = quote(file)
    try:
        data = yaml.safe_load(Path(file).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(
            f"--config-path: cannot read the launch's own config file {where} ({exc.strerror}): rladapt composes "
            "it to know what the launch runs; import on a machine that has it, or give its absolute path"
        ) from None
    except yaml.YAMLError as exc:
        raise UsageError(f"--config-path: {where} is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UsageError(f"--config-path: {where} is not a mapping of config keys")
    defaults = data.get("defaults", [])
    names = [d for d in defaults if d != "_self_"] if isinstance(defaults, list) else defaults
    self_first = isinstance(defaults, list) and "_self_" in defaults and defaults.index("_self_") == 0
    if not (isinstance(names, list) and len(names) == 1 and names[0] in packaged) or self_first:
        raise UsageError(
            f"--config-path: {where} has defaults {defaults!r}; rladapt composes a config of the launch's own "
            f"that builds on one packaged verl config ({', '.join(packaged)}) followed by its own values "
            "(defaults: [ppo_trainer, _self_]): keep running this launch natively"
        )
    values = _leaves({k: v for k, v in data.items() if k not in ("defaults", "hydra")})
    return OwnConfig(file=file, base=str(names[0]), values=values)


def _leaves(node: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict) and value:
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
