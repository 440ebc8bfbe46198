"""A user's Python function that the spec names by a file and a name (``spec.reward.function``, a suite's
``scorer.function``), imported from that file.

One loader for the framework job's driver (``rladapt.adapters.trl.driver``, in the job's environment) and the
evaluator (``rladapt.evaluate.scorers``): both call the function the way TRL calls a reward function, so both must
find the same one. Standard library only, and errors that name the part of the reference that is wrong: each
caller words them for its own field.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["NotLoadable", "load_function"]


class NotLoadable(Exception):
    """The file or the name of a function reference is wrong; ``part`` says which (``path`` or ``name``)."""

    def __init__(self, part: str, message: str) -> None:
        super().__init__(message)
        self.part = part
        self.message = message


def load_function(path: str | Path, name: str, module: str, *, whence: str = "") -> Callable[..., Any]:
    """The function ``name`` of the Python file ``path`` (shown as given), imported as the module ``module``.

    A ``NotLoadable`` when there is no such file (``whence`` is added to that message), it is not a Python file or
    it defines no such function; whatever importing the file raises goes to the caller, who knows whether to word
    it or let it show."""
    shown = str(path)
    if not Path(path).is_file():
        raise NotLoadable("path", f"no such file {shown!r}{whence}")
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None:
        raise NotLoadable("path", f"{shown!r} is not a Python file")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    func = getattr(loaded, name, None)
    if not callable(func):
        raise NotLoadable("name", f"{shown!r} defines no function {name!r}")
    return func
