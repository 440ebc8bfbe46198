"""Check a TRL NativeLaunch against the schema snapshot of the same version, in pure Python.

A ``GRPOConfig(**keys)`` with a key the version lacks fails only when the job starts (``TypeError: unexpected
keyword argument``), after the model and data are loaded; a value of the wrong type may pass and break later. Here
every key of the driver config's ``config`` block (from the spec or ``spec.native.trl``) must be a field of that
version's ``GRPOConfig`` / ``RLOOConfig`` (``rladapt/compat/matrix/snapshots/trl/``, read from the real classes)
with a value of its type, before launch. The deep check instantiates the real config class when the installed
``trl`` is the launch's version.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rladapt.primitives.errors import Problem

from .translate import FRAMEWORK

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch

SCOPE = {"grpo": "GRPOConfig", "rloo": "RLOOConfig"}


def driver_config(native: NativeLaunch) -> tuple[str, dict[str, Any]] | Problem:
    """The driver config file named by ``--config`` in ``native.argv`` and its content."""
    argv = list(native.argv)
    if "--config" not in argv or argv.index("--config") + 1 >= len(argv):
        return Problem("native.argv", f"{FRAMEWORK} needs --config <file> naming the generated driver config")
    path = argv[argv.index("--config") + 1]
    if path not in native.files:
        return Problem("native.argv", f"--config {path} is not one of the generated files")
    try:
        document = json.loads(native.files[path])
    except ValueError as exc:
        return Problem(f"native.files[{path}]", f"not JSON: {exc}")
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        return Problem(f"native.files[{path}]", "the driver config has no 'config' mapping")
    return path, document


def check_native(native: NativeLaunch) -> list[Problem]:
    from rladapt.compat.schema import NativeItem, check
    from rladapt.plugins.snapshots import find_snapshot, versions_having

    snap = find_snapshot(FRAMEWORK, native.version)
    if snap is None:
        return [Problem("native.version", f"no schema snapshot of {FRAMEWORK} {native.version}")]
    found = driver_config(native)
    if isinstance(found, Problem):
        return [found]
    _, document = found
    scope = SCOPE.get(str(document.get("trainer")), "GRPOConfig")
    items = [
        NativeItem(
            key=key, value=value, where=native.origins.get(key, f"{FRAMEWORK} config: {key}"), scope=scope
        )
        for key, value in document["config"].items()
    ]
    return check(
        snap,
        items,
        noun=f"{scope} field",
        other_versions=lambda key: versions_having(FRAMEWORK, key, native.version),
    )


def validate_native(native: NativeLaunch) -> list[Problem] | None:
    """The installed TRL's own judgement: its config class built from the keys (None: another version here)."""
    try:
        import trl
    except ImportError:
        return None
    if getattr(trl, "__version__", None) != native.version:
        return None
    found = driver_config(native)
    if isinstance(found, Problem):
        return [found]
    _, document = found
    try:
        if document.get("trainer") == "rloo":
            from trl import RLOOConfig as Config
        else:
            from trl import GRPOConfig as Config
        Config(**document["config"])
    except (TypeError, ValueError) as exc:
        return [Problem(f"{FRAMEWORK} config", f"{FRAMEWORK} {native.version} refuses the config: {exc}")]
    return []
