"""The built-in catalogue as a plugin: registered by the registry like any plugin's signatures (``BUILTIN_PLUGINS``
names this module ``triage``), so that the registry, part of the plugin contract, never imports the triage tool.
"""

from __future__ import annotations

from rladapt.plugins import Signature, hookimpl

__all__ = ["rladapt_register_signatures"]


@hookimpl
def rladapt_register_signatures() -> list[Signature]:
    # Imported here, the first time ``rladapt triage`` collects signatures, and not with this module: every
    # registry load (every render) imports the built-in plugins, and a render must not import the catalogue.
    from .catalogue import BUILTIN

    return list(BUILTIN)
