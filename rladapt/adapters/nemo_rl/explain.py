"""What ``render --explain`` lists of a NeMo-RL launch: the generated config file's keys, then the overrides."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from rladapt.adapters.common import hydra_entries
from rladapt.plugins.native import NativeLaunch

from .validate import config_file, leaves, overrides


def entries(native: NativeLaunch) -> Iterator[tuple[str, Any, str]]:
    """(native key, value, origin) of every key of the generated config, then of every override."""
    path = config_file(native)
    if path is not None and path in native.files:
        document = yaml.safe_load(native.files[path]) or {}
        body = {k: v for k, v in document.items() if k != "defaults"}
        for key, value in leaves(body):
            yield key, value, native.origins.get(key, "")
    # NeMo-RL applies overrides in order after loading the file; they are all spec.native items
    native = native.model_copy(update={"passthrough": tuple(overrides(native))})
    yield from hydra_entries(native.passthrough, native)
