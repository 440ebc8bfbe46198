"""Failure triage: match a run's logs against a catalogue of known failure signatures (``rladapt triage``).

``Signature`` is the record a plugin registers through ``rladapt_register_signatures``; ``BUILTIN`` is the built-in
catalogue (``catalogue``); ``triage`` matches lines against signatures. The catalogue and the matcher import no
framework: a log is text, and the schema snapshots are read only when an unknown key is to be named.
"""

from __future__ import annotations

from .catalogue import BUILTIN
from .match import MAX_EVIDENCE, Match, triage
from .signature import Detail, Found, Signature

__all__ = ["BUILTIN", "MAX_EVIDENCE", "Detail", "Found", "Match", "Signature", "triage"]
