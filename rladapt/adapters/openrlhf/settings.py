"""The native keys an OpenRLHF launch sets, as OpenRLHF reads them (``rladapt upgrade``, ``matrix onboard``): its
flags taken with the nargs its snapshot records."""

from __future__ import annotations

from typing import Any

from rladapt.compat.schema._values import UNKNOWN
from rladapt.plugins.adapter import NativeSetting
from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.snapshots import find_snapshot

from .validate import _convert, _passthrough_entries, _values


def native_settings(native: NativeLaunch) -> list[NativeSetting]:
    snap = find_snapshot("openrlhf", native.version)
    args = list(native.argv[3:])
    entry_of = _passthrough_entries(native, len(args))
    keys = snap.keys if snap is not None else {}
    canonical = {alias: key for key, spec in keys.items() for alias in (key, *spec.aliases)}
    out = []
    i = 0
    while i < len(args):
        token = args[i]
        where = entry_of.get(i)
        if not token.startswith("--"):
            i += 1
            continue
        flag, eq, inline = token.partition("=")
        key = canonical.get(flag)
        spec = keys.get(key) if key is not None else None
        values, i = _values(args, i + 1, spec, inline if eq else None)
        value: Any = _convert(values, spec) if spec is not None else (" ".join(values) or True)
        if value is UNKNOWN or (spec is not None and spec.type == "bool" and not values):
            value = True  # a switch given
        out.append(
            NativeSetting(key or flag, value, where or native.origins.get(flag, f"openrlhf argv: {flag}"))
        )
    return out
