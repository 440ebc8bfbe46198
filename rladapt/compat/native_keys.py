"""The native keys one launch sets, with their values, as the framework reads them: what upgrades and onboarding
compare between versions.

The reading is the offline check's (``check_native`` of each built-in adapter): verl's Hydra overrides, OpenRLHF's
flags taken with the nargs its snapshot records, NeMo-RL's generated config file plus its overrides. Nothing of a
framework is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rladapt.plugins import NativeLaunch

__all__ = ["NativeSetting", "settings"]


@dataclass(frozen=True)
class NativeSetting:
    key: str
    value: Any
    #: the spec field, ``spec.native.<fw>[i]`` entry or patch that produced it
    where: str
    #: the framework config it lands in (verl: the Hydra config name), None when the framework has one
    scope: str | None = None


def settings(native: NativeLaunch) -> dict[str, NativeSetting]:
    """Every native key ``native`` sets (the last setting wins, as in the framework), by key."""
    if native.framework == "verl":
        found = _verl(native)
    elif native.framework == "openrlhf":
        found = _openrlhf(native)
    elif native.framework == "nemo-rl":
        found = _nemo_rl(native)
    else:
        raise ValueError(f"no native key reader for {native.framework!r}")
    return {s.key: s for s in found}


def _verl(native: NativeLaunch) -> list[NativeSetting]:
    from rladapt.adapters.verl.validate import parse_argv

    invocation = parse_argv(native.argv)
    out = []
    for item in invocation.overrides:
        lhs, sep, rhs = item.partition("=")
        key = lhs.lstrip("+~")
        # the same exclusions as verl's check_native: Hydra's own keys and config-group choices are not config keys
        if not key or key.startswith("hydra.") or "/" in key or "@" in key:
            continue
        if item in native.passthrough:
            where = f"spec.native.verl[{native.passthrough.index(item)}]"
        else:
            where = native.origins.get(key, f"verl argv: {key}")
        out.append(NativeSetting(key, _value(lhs, sep, rhs), where, invocation.config_name))
    return out


def _openrlhf(native: NativeLaunch) -> list[NativeSetting]:
    from rladapt.adapters.openrlhf.validate import _convert, _passthrough_entries, _values
    from rladapt.compat.schema import find_snapshot
    from rladapt.compat.schema._values import UNKNOWN

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


def _nemo_rl(native: NativeLaunch) -> list[NativeSetting]:
    import yaml

    from rladapt.adapters.nemo_rl.validate import config_file, leaves, overrides

    out = []
    path = config_file(native)
    if path is not None and path in native.files:
        document = yaml.safe_load(native.files[path]) or {}
        if isinstance(document, dict):
            body = {k: v for k, v in document.items() if k != "defaults"}
            for key, value in leaves(body):
                out.append(NativeSetting(key, value, native.origins.get(key, f"nemo-rl config: {key}")))
    for i, item in enumerate(overrides(native)):
        prefix = item[: len(item) - len(item.lstrip("+~"))]
        key, sep, rhs = item[len(prefix) :].partition("=")
        out.append(NativeSetting(key, _value(prefix, sep, rhs), f"spec.native.nemo-rl[{i}]"))
    return out


#: What a Hydra ``~key`` override sets: the key is taken out of the config.
DELETED = "<deleted>"


def _value(lhs: str, sep: str, rhs: str) -> Any:
    """A Hydra override's value as the framework reads it; its text where the reader cannot tell (an interpolation)."""
    from rladapt.compat.schema._values import UNKNOWN, hydra_value

    if lhs.startswith("~"):
        return DELETED
    if not sep:
        return None
    value = hydra_value(rhs)
    return rhs if value is UNKNOWN else value
