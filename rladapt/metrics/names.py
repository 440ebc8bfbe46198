"""The neutral metric names: one name per quantity, whatever a framework calls it.

Each adapter maps its framework's logged names to these per version (``MetricMap``); a native metric with no
neutral meaning keeps its own name. A quantity a version does not log is absent, never approximated from another
one. The names belong to the plugin contract (``rladapt.plugins``: a ``MetricMap`` is checked against them) and are
re-exported here for existing imports.
"""

from __future__ import annotations

from collections.abc import Iterable

from rladapt.plugins.metrics import BY_NAME, NAMES, NEUTRAL, Neutral

__all__ = ["BY_NAME", "NAMES", "NEUTRAL", "Neutral", "no_such_metric"]


def no_such_metric(name: str, logged: Iterable[str], whose: str) -> str:
    """The message for ``--metric NAME`` that is neither neutral nor logged: what would have been accepted."""
    native = sorted(set(logged) - NAMES)
    return (
        f"--metric {name}: no such metric; expected a neutral name ({', '.join(n.name for n in NEUTRAL)})"
        + (f" or one {whose} logged ({', '.join(native)})" if native else "")
    )
