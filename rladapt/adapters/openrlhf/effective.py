"""OpenRLHF's effective configuration of a launch: the parsed namespace: every flag of the snapshot at its parser
default, with the flags given read as argparse reads them, then that version's own post-parse rules
(``rladapt.adapters.openrlhf.adjust``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rladapt.compat.schema import Snapshot
from rladapt.plugins.effective import ADJUSTED, Effective
from rladapt.plugins.snapshots import snapshot


def openrlhf_effective(
    version: str, args: Sequence[str], sources: Sequence[str] | None = None, snap: Snapshot | None = None
) -> Effective:
    """OpenRLHF's namespace for the flags ``args`` (after ``-m openrlhf.cli.train_ppo_ray``), keyed by option
    string; ``sources[i]`` names where the flag at ``args[i]`` came from (default: the flag as written).

    A flag this version does not have is kept under its own name with its values as written (OpenRLHF itself
    refuses it, so two launches differ there); a stray value is kept under ``(value)``."""
    from .adjust import adjust
    from .validate import read_flags

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
