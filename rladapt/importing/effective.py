"""The effective native configuration of a launch, computed offline from its argv and the version's snapshot.

What the framework would run with, key by key, and where each value came from:

- verl: the leaves of the composed Hydra config of that version (the snapshot's defaults for the config the
  launch names), with the launch's overrides applied in order (``k=v``, ``+k=v``, ``++k=v``, ``~k``), then
  OmegaConf interpolations resolved where they resolve offline;
- OpenRLHF: the parsed namespace: every flag of the snapshot at its parser default, with the flags given read
  as argparse reads them, then that version's own post-parse rules (``rladapt.adapters.openrlhf.adjust``);
- NeMo-RL: the config after its ``defaults:`` chain, with the overrides applied.

Two launches are the same run exactly when their effective configurations are equal (``rladapt diff``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rladapt.compat.schema import Snapshot, snapshot
from rladapt.compat.schema._values import COMPUTED, UNKNOWN, hydra_value
from rladapt.primitives.errors import UsageError, quote

#: Where a value came from when the launch does not set it.
DEFAULT = "default"
#: The source of a default that is an interpolation of another key: this prefix, then the interpolation.
INTERPOLATED = "= "
#: The source of a value the framework itself rewrote after reading the launch: this prefix, then the rule.
ADJUSTED = "after parsing: "


def derived(source: str) -> bool:
    """Whether a source names no launch item: a default, an interpolation or a post-parse rule."""
    return source == DEFAULT or source.startswith((INTERPOLATED, ADJUSTED))


@dataclass(frozen=True)
class Effective:
    """Key -> value of one launch, and key -> where the value came from (``default`` or the launch item)."""

    framework: str
    version: str
    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)

    def source(self, key: str) -> str:
        return self.sources.get(key, DEFAULT)


def same(a: Any, b: Any) -> bool:
    """Equal as the framework reads them: 1 and 1.0 are one number, True is not 1, lists compare item by item.

    A default the framework computes when it starts (the snapshot's ``<computed: EXPR>``, OpenRLHF's run name
    from the clock) is no value before the run: it equals any text."""
    if _computed(a) or _computed(b):
        return isinstance(a, str) and isinstance(b, str)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _computed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(COMPUTED)


# --- verl ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HydraItem:
    """One Hydra override: ``op`` is ``set`` (k=v), ``add`` (+k=v), ``force`` (++k=v) or ``delete`` (~k[=v])."""

    op: str
    key: str
    text: str  # the right-hand side as written ('' for a bare delete)
    item: str  # the whole override as written

    @property
    def value(self) -> Any:
        parsed = hydra_value(self.text)
        return self.text if parsed is UNKNOWN else parsed


def hydra_item(item: str, where: str) -> HydraItem:
    key, sep, text = item.partition("=")
    if key.startswith("++"):
        op, key = "force", key[2:]
    elif key.startswith("+"):
        op, key = "add", key[1:]
    elif key.startswith("~"):
        op, key = "delete", key[1:]
    else:
        op = "set"
    if not key or (op != "delete" and not sep):
        raise UsageError(
            f"{where}: {quote(item)} is not a Hydra override; expected KEY=VALUE, +KEY=VALUE or ~KEY"
        )
    return HydraItem(op=op, key=key.strip(), text=text, item=item)


def verl_effective(
    version: str,
    config_name: str,
    overrides: Sequence[str],
    sources: Sequence[str] | None = None,
    snap: Snapshot | None = None,
) -> Effective:
    """verl's composed config for ``config_name`` with ``overrides``; ``sources[i]`` names where item i came from."""
    snap = snap or snapshot("verl", version)
    scope = config_name if config_name in snap.scopes else None
    values: dict[str, Any] = {
        key: spec.default
        for key, spec in snap.keys.items()
        if not spec.type.startswith("dict") and snap.in_scope(spec, scope)
    }
    origin: dict[str, str] = {}
    for i, raw in enumerate(overrides):
        where = sources[i] if sources is not None else f"argv item {raw}"
        item = hydra_item(raw, where)
        below = item.key + "."
        if item.op == "delete":
            for key in [k for k in values if k == item.key or k.startswith(below)]:
                del values[key]
                origin[key] = where
            continue
        value = item.value
        for key in [k for k in values if k.startswith(below)]:
            del values[key]  # a whole node replaced by one value
        if isinstance(value, dict) and value == {} and item.text.strip() not in ("{}", ""):
            value = item.text  # a mapping the grammar reader does not take apart: compared as written
        values[item.key] = value
        origin[item.key] = where
    resolved = _resolved(values)
    for key, raw in values.items():
        if key not in origin and isinstance(raw, str) and "${" in raw:
            origin[key] = INTERPOLATED + raw
    return Effective("verl", version, resolved, origin)


def _resolved(values: dict[str, Any]) -> dict[str, Any]:
    """Interpolations (``${data.max_response_length}``) replaced by what they point at, where that resolves."""
    pending = [k for k, v in values.items() if isinstance(v, str) and "${" in v]
    if not pending:
        return values
    from omegaconf import OmegaConf

    tree: dict[str, Any] = {}
    for key, value in values.items():
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[parts[-1]] = value
    try:
        cfg = OmegaConf.create(tree)
    except Exception:  # a tree OmegaConf cannot hold: the raw values are the best offline answer
        return values
    out = dict(values)
    for key in pending:
        try:
            resolved = OmegaConf.select(cfg, key, throw_on_resolution_failure=True)
        except Exception:  # a custom resolver of verl's (only registered when verl runs): left as written
            continue
        if OmegaConf.is_config(resolved):
            resolved = OmegaConf.to_container(resolved, resolve=False)
        if resolved is not None or values[key] is None:
            out[key] = resolved
    return out


# --- OpenRLHF --------------------------------------------------------------------------------------------------


def openrlhf_effective(
    version: str, args: Sequence[str], sources: Sequence[str] | None = None, snap: Snapshot | None = None
) -> Effective:
    """OpenRLHF's namespace for the flags ``args`` (after ``-m openrlhf.cli.train_ppo_ray``), keyed by option
    string; ``sources[i]`` names where the flag at ``args[i]`` came from (default: the flag as written).

    A flag this version does not have is kept under its own name with its values as written (OpenRLHF itself
    refuses it, so two launches differ there); a stray value is kept under ``(value)``."""
    from rladapt.adapters.openrlhf.adjust import adjust
    from rladapt.adapters.openrlhf.validate import read_flags

    snap = snap or snapshot("openrlhf", version)
    negation = negations(snap)
    values: dict[str, Any] = {key: spec.default for key, spec in snap.keys.items() if key not in negation}
    origin: dict[str, str] = {}
    for flag in read_flags(args, snap):
        where = sources[flag.at] if sources is not None else item_text(flag.tokens)
        if flag.key is None:
            key = flag.flag if flag.flag.startswith("--") else "(value)"
            raw = list(flag.values) if flag.flag.startswith("--") else [flag.flag]
            values[key] = True if not raw else raw[0] if len(raw) == 1 else raw
        else:
            spec = snap.keys[flag.key]
            key = negation.get(flag.key, flag.key)
            if spec.type == "bool":
                values[key] = spec.action != "store_false" if not flag.values else list(flag.values)
            else:
                values[key] = flag.value
        origin[key] = where
    for key, why in adjust(values, version).items():
        # a flag the launch gave keeps its item as the source (the launch set it; OpenRLHF rewrote it)
        origin[key] = f"{origin[key]}, then {ADJUSTED}{why}" if key in origin else ADJUSTED + why
    return Effective("openrlhf", version, values, origin)


def negations(snap: Snapshot) -> dict[str, str]:
    """``--x.no_y`` -> ``--x.y`` where a store_false flag negates a store_true sibling: argparse gives both one
    attribute (OpenRLHF 0.10.2 on: ``--actor.muon.no_nesterov``, ``dest="actor.muon.nesterov"``)."""
    out = {}
    for key, spec in snap.keys.items():
        head, dot, last = key.rpartition(".") if "." in key else ("--", "", key[2:])
        if spec.action != "store_false" or not last.startswith("no_"):
            continue
        sibling = f"{head}{dot}{last[3:]}"
        if snap.keys.get(sibling) is not None and snap.keys[sibling].action == "store_true":
            out[key] = sibling
    return out


def item_text(tokens: Sequence[str]) -> str:
    """One flag and its values as one ``spec.native.openrlhf`` item (shell words, quoted where needed)."""
    import shlex

    return shlex.join(tokens)
