"""Checks a framework version's metric mapping (``rladapt.metrics.MetricMap``) against that version's real source:
every native name it maps is still logged, as a string literal, in the file it cites."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from rladapt.metrics import NAMES, MetricMap


def literal_in(name: str, text: str) -> bool:
    """Whether ``name`` is a whole string literal of ``text``, or the text of an f-string up to a ``{``."""
    return bool(re.search(r"""["']""" + re.escape(name) + r"""["'{]""", text))


def missing_names(mapping: MetricMap, roots: Mapping[str | None, Path]) -> list[str]:
    """What ``mapping`` cites that the source does not log: ``roots`` maps a distribution (None: the framework)
    to the directory holding its package. Every neutral name must be mapped or declared absent."""
    problems = [f"{n}: neither mapped nor declared absent" for n in sorted(NAMES - set(mapping.entries))]
    for neutral, logged in mapping.logged():
        path = roots[logged.dist] / logged.file
        if not path.is_file():
            problems.append(
                f"{neutral}: {logged.file} does not exist in {mapping.framework} {mapping.version}"
            )
        elif not literal_in(logged.logged, path.read_text(encoding="utf-8")):
            problems.append(
                f"{neutral}: {logged.logged!r} is not logged in {logged.file} ({mapping.version})"
            )
    return problems
