"""The native keys a verl launch sets, as verl reads them (``rladapt upgrade``, ``matrix onboard``): the Hydra
overrides, read as verl's ``check_native`` reads them."""

from __future__ import annotations

from rladapt.adapters.common import override_value
from rladapt.plugins.adapter import NativeSetting
from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.snapshots import find_snapshot

from .validate import ROLE_GROUPS, on_packaged, parse_argv


def native_settings(native: NativeLaunch) -> list[NativeSetting]:
    given = parse_argv(native.argv)
    invocation = on_packaged(given) or given
    snap = find_snapshot("verl", native.version)
    scopes = snap.scopes if snap is not None else ()
    scope = invocation.scope(scopes)
    out = []
    for item in invocation.overrides:
        lhs, sep, rhs = item.partition("=")
        key = lhs.lstrip("+~")
        # the same exclusions as verl's check_native: Hydra's own keys and config-group choices are not config keys
        if not key or key.startswith("hydra.") or "/" in key or "@" in key or lhs.strip() in ROLE_GROUPS:
            continue
        if item in native.passthrough:
            where = f"spec.native.verl[{native.passthrough.index(item)}]"
        else:
            where = native.origins.get(key, f"verl argv: {key}")
        out.append(
            NativeSetting(key, override_value(lhs, sep, rhs), where, invocation.key_scope(key, scopes, scope))
        )
    return out
