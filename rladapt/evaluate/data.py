"""A suite's prompts: the rows of its data files, in the formats the spec's data files take.

Each row needs a ``prompt`` (a string, or a list of chat messages the model's chat template renders); every other
column is passed to the scorer by name, as TRL passes a dataset's columns to a reward function.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from rladapt.primitives.errors import UsageError

__all__ = ["load_rows"]


def load_rows(paths: list[str], *, field: str) -> list[dict[str, Any]]:
    """Every row of ``paths`` in order; a UsageError naming ``field`` and the file when one cannot be read."""
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(paths):
        path = Path(name)
        where = f"{field}[{i}]"
        try:
            found = _read(path)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{where}: cannot read {name!r}: {exc}") from None
        for j, row in enumerate(found):
            prompt = row.get("prompt") if isinstance(row, dict) else None
            if not isinstance(prompt, (str, list)):
                raise UsageError(
                    f"{where}: row {j + 1} of {name!r} has no prompt (expected a 'prompt' string or chat messages)"
                )
            rows.append(row)
    if not rows:
        raise UsageError(f"{field}: the files hold no prompts")
    return rows


def _read(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if suffix == ".json":
        data = json.loads(path.read_text())
        if not isinstance(data, list):
            raise ValueError("expected a JSON list of rows")
        return data
    if suffix == ".parquet":
        try:
            parquet = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise ValueError("reading parquet needs pyarrow (pip install pyarrow)") from None
        return list(parquet.read_table(path).to_pylist())
    raise ValueError("expected a .jsonl, .json or .parquet file")
