"""Failure triage: match a run's logs against a catalogue of known failure signatures (``rladapt triage``).

``Signature`` is the record a plugin registers through ``rladapt_register_signatures`` (it belongs to the plugin
contract, ``rladapt.plugins``; it is re-exported here for existing imports). ``catalogue.BUILTIN`` is the built-in
catalogue, registered like a plugin's by the built-in plugin ``triage`` (``plugin``); ``triage`` matches lines
against signatures. The catalogue and the matcher import no framework: a log is text, and the schema snapshots are
read only when an unknown key is to be named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rladapt.plugins.signature import Detail, Found, Signature

from .match import MAX_EVIDENCE, Match, triage

if TYPE_CHECKING:
    from .catalogue import BUILTIN

__all__ = ["BUILTIN", "MAX_EVIDENCE", "Detail", "Found", "Match", "Signature", "triage"]


def __getattr__(name: str) -> tuple[Signature, ...]:
    # Every registry load imports this package (its built-in plugin module lives here), and a render must not
    # import the catalogue: ``rladapt.triage.BUILTIN`` is read from ``catalogue`` on first use (PEP 562).
    if name == "BUILTIN":
        from .catalogue import BUILTIN

        return BUILTIN
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
