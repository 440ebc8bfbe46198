"""What ``render --explain`` lists of a TRL launch: the keys of the driver's config file."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rladapt.plugins.native import NativeLaunch

from .validate import driver_config


def entries(native: NativeLaunch) -> Iterator[tuple[str, Any, str]]:
    """(native key, value, origin) of every ``<trainer>Config`` key the driver's config sets."""
    found = driver_config(native)
    if isinstance(found, tuple):
        for key, value in found[1]["config"].items():
            yield key, value, native.origins.get(key, "")
