"""OpenRLHF's native launch -> RLJob spec fields (not yet: see the import report)."""
