"""Built-in framework adapters, one sub-package per framework, each a pluggy plugin."""
