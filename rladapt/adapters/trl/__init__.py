"""The TRL adapter (its translation lives on the trl-adapter branch; this package holds its checkpoint layout)."""
