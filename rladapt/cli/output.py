"""What the CLI prints as JSON: one dump for every verb, so ``--format json`` is always JSON.

Python's ``json`` writes ``NaN`` and ``Infinity`` for non-finite floats unless told not to, and neither is JSON
(RFC 8259, section 6): a consumer such as ``jq`` or a strict parser rejects the whole document. Options are
refused before they get here (``Option.parse``); this is the last guard, naming the field that slipped through
instead of printing a document that lies about being JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from rladapt.primitives.errors import UsageError

__all__ = ["dump_json"]


def dump_json(value: Any, *, what: str, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``value`` as JSON text; a UsageError naming the first non-finite number's path when there is one.

    ``what`` names the document in the message ("the render", "the plugins report").
    """
    try:
        return json.dumps(value, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError:
        where = next(_non_finite_paths(value, ""), None)
        if where is None:  # a ValueError json raises for another reason (a circular reference) is a bug
            raise
        path, number = where
        raise UsageError(
            f"cannot print {what} as JSON: {(path or '<root>')!r} is {number!r}, which JSON cannot hold; "
            "give a finite number"
        ) from None


def _non_finite_paths(value: Any, path: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, float) and not math.isfinite(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _non_finite_paths(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _non_finite_paths(item, f"{path}[{index}]")
