"""What ``render --explain`` lists of a verl launch: its Hydra overrides, in launch order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rladapt.adapters.common import hydra_entries
from rladapt.plugins.native import NativeLaunch

from .validate import parse_argv


def entries(native: NativeLaunch) -> Iterator[tuple[str, Any, str]]:
    """(native key, value, origin) of every override of ``native``."""
    yield from hydra_entries(parse_argv(native.argv).overrides, native)
