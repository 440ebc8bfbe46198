"""Where ``Signature`` was defined before it joined the plugin contract: kept so that imports of
``rladapt.triage.signature`` go on working. A plugin imports it from ``rladapt.plugins``."""

from __future__ import annotations

from rladapt.plugins.signature import Detail, Found, Signature

__all__ = ["Detail", "Found", "Signature"]
