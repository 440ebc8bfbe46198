"""The effective native configuration of a launch: what the framework would run with, key by key, and where each
value came from (``FrameworkAdapter.launch_importer``: ``rladapt import`` and ``rladapt diff`` read it).

Each adapter computes its framework's offline from the launch's argv and the version's snapshot (the built-in ones
in ``rladapt/adapters/<fw>/effective.py``); this module is the vocabulary they share. Two launches are the same run
exactly when their effective configurations are equal (``rladapt diff``).

.. versionadded:: 0.3
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from rladapt.compat.schema._values import COMPUTED

#: Where a value came from when the launch does not set it.
DEFAULT = "default"
#: The source of a default that is an interpolation of another key: this prefix, then the interpolation.
INTERPOLATED = "= "
#: The source of a value the framework itself rewrote after reading the launch: this prefix, then the rule.
ADJUSTED = "after parsing: "


def derived(source: str) -> bool:
    """Whether a source names no launch item: a default, an interpolation or a post-parse rule."""
    return source == DEFAULT or source.startswith((INTERPOLATED, ADJUSTED))


#: The source prefix of a value set by a config file the launch reads (then the file's path): NeMo-RL's
#: ``defaults:`` chain.
CONFIG_FILE = "config "
_TENSORBOARD = "tensorboard"


def read_back_only(keys: Collection[str], key: str, a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` of ``key`` differ only in the TensorBoard sink rladapt adds to read the metrics back
    (``keys``: the adapter's ``READ_BACK_KEYS``): a list of backends only in TensorBoard (another backend missing
    is a real difference), or a switch or directory one side leaves unset. A location both name differently is a
    real difference: adding a sink is no change of the run, moving a location the launch chose is (DESIGN.md)."""
    if key not in keys:
        return False
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and {*a} - {_TENSORBOARD} == {*b} - {_TENSORBOARD}
    return _unset(a) or _unset(b)


def _unset(value: Any) -> bool:
    return value is None or value is False or value == ""


@dataclass(frozen=True)
class Effective:
    """Key -> value of one launch, and key -> where the value came from (``default`` or the launch item)."""

    framework: str
    version: str
    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)

    def source(self, key: str) -> str:
        return self.sources.get(key, DEFAULT)


def same(a: Any, b: Any) -> bool:
    """Equal as the framework reads them: 1 and 1.0 are one number, True is not 1, lists compare item by item.

    A default the framework computes when it starts (the snapshot's ``<computed: EXPR>``, OpenRLHF's run name
    from the clock) is no value before the run: it equals any text."""
    if _computed(a) or _computed(b):
        return isinstance(a, str) and isinstance(b, str)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _computed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(COMPUTED)
