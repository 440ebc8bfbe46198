"""verl's effective configuration of a launch: the leaves of the composed Hydra config of that version (the
snapshot's defaults for the config the launch names), with the launch's overrides applied in order (``k=v``,
``+k=v``, ``++k=v``, ``~k``), then OmegaConf interpolations resolved where they resolve offline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rladapt.adapters.common import hydra_item
from rladapt.compat.schema import Snapshot
from rladapt.plugins.effective import INTERPOLATED, Effective
from rladapt.plugins.snapshots import snapshot

#: Keys verl reads as a list, a string being the list of that one item, so ``k=x`` and ``k=[x]`` are one run:
#: trainer.logger goes to Tracking (``if isinstance(default_backend, str): default_backend = [default_backend]``,
#: verl/utils/tracking.py), the data files to RLHFDataset (``if not isinstance(data_files, list | ListConfig):
#: data_files = [data_files]``, verl/utils/dataset/rl_dataset.py); both 0.5.0 to 0.9.1.
ONE_OR_LIST = ("trainer.logger", "data.train_files", "data.val_files")


def verl_effective(
    version: str,
    config_name: str,
    overrides: Sequence[str],
    sources: Sequence[str] | None = None,
    snap: Snapshot | None = None,
    own: Mapping[str, Any] | None = None,
    own_source: str = "",
) -> Effective:
    """verl's composed config for ``config_name`` with ``overrides``; ``sources[i]`` names where item i came from.
    ``own``: the leaf values of a launch's own config file that builds on ``config_name`` (``ownconfig``),
    merged over it before the overrides, as Hydra composes ``defaults: [config_name, _self_]``."""
    snap = snap or snapshot("verl", version)
    scope = config_name if config_name in snap.scopes else None
    index = snap.scope_index(scope)
    values: dict[str, Any] = {
        key: spec.default_in(index)
        for key, spec in snap.keys.items()
        if not spec.type.startswith("dict") and snap.in_scope(spec, scope)
    }
    origin: dict[str, str] = {}
    for key, value in (own or {}).items():
        for below in [k for k in values if k.startswith(key + ".")]:
            del values[below]  # a node the file gives one value (or an empty mapping) replaces
        values[key] = value
        origin[key] = own_source
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
    for key in ONE_OR_LIST:
        one = values.get(key)
        if isinstance(one, str) and "${" not in one:
            values[key] = [one]
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
    absent = object()
    for key in pending:
        try:
            resolved = OmegaConf.select(cfg, key, default=absent, throw_on_resolution_failure=True)
        except Exception:  # a custom resolver of verl's (only registered when verl runs): left as written
            continue
        if resolved is absent:  # a key the tree could not hold (a value beside a node): left as written
            continue
        if OmegaConf.is_config(resolved):
            resolved = OmegaConf.to_container(resolved, resolve=False)
        # null from a default's ``${oc.select:...}`` is kept as written (the text is what a fix-up can restore:
        # many of verl's integer keys refuse an explicit null); null from ``${oc.env:VAR,null}`` of a variable
        # unset here (rladapt's Slurm CPU patch outside Slurm, patches.SLURM_NUM_CPUS) is the value verl composes
        # too: kept as text, the import cancelled the patch with a ``=null`` native item
        if resolved is not None or values[key] is None or "oc.env:" in str(values[key]):
            out[key] = resolved
    return out
