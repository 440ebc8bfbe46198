"""Check a NeMo-RL NativeLaunch against the schema snapshot of the same version, in pure Python.

NeMo-RL itself never judges most of this: its TypedDicts are open, 0.7.0's ``MasterConfig`` allows extra keys,
and a key in a ``--config`` file is merged without struct mode, so a misspelt or moved key (``data.dataset_name``
on 0.6.0, NVIDIA-NeMo/RL issue 2719) is silently ignored. Here every key of the generated config and every
``spec.native["nemo-rl"]`` override must be a key of that version (``rladapt/compat/matrix/snapshots/nemo-rl/``, generated
from the tag's typed ``MasterConfig`` and example configs) with a value of its type, and the checks NeMo-RL only
makes inside ``setup()`` (after the cluster is up) run before launch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import yaml
from packaging.version import Version

from rladapt.primitives.errors import Problem

from .translate import FRAMEWORK, NATIVE_FIELD
from .versions import V0_4_0, V0_6_0

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch

_MAX_PROBLEMS = 20
#: A section marked so replaces the inherited one instead of merging into it (load_config, 0.6.0+).
OVERRIDE_MARKER = "_override_"


def leaves(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every dotted key holding a value (an empty mapping is a value)."""
    for key, value in tree.items():
        if key == OVERRIDE_MARKER:
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from leaves(value, path + ".")
        else:
            yield path, value


def config_file(native: NativeLaunch) -> str | None:
    argv = list(native.argv)
    if "--config" in argv and argv.index("--config") + 1 < len(argv):
        return argv[argv.index("--config") + 1]
    return next((a.split("=", 1)[1] for a in argv if a.startswith("--config=")), None)


def overrides(native: NativeLaunch) -> list[str]:
    argv = list(native.argv)
    if "--config" in argv:
        return argv[argv.index("--config") + 2 :]
    return [a for a in argv[4:] if not a.startswith("--config=")]


def _get(values: dict[str, Any], key: str) -> Any:
    node: Any = values
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


#: Keywords of NeMo-RL's dataset classes that no TypedDict declares: a dataset block (data.train, data.validation,
#: data.default) goes to the class as ``**data_config`` (load_response_dataset in
#: nemo_rl/data/datasets/response_datasets/__init__.py, 0.6.0 and 0.7.0), so they are real settings; ``repeat``:
#: AIME2024 (aime24.py 0.6.0, aime.py 0.7.0) and NemoGymDataset (nemogym_dataset.py), as the DeepScaleR recipes
#: (examples/configs/recipes/llm/grpo-deepscaler-1.5b-8K.yaml) set it.
DATASET_KWARGS = frozenset({"repeat"})
_DATASET_BLOCKS = ("data.train.", "data.validation.", "data.default.")


def _dataset_kwarg(key: str, version: Version) -> bool:
    block = next((b for b in _DATASET_BLOCKS if key.startswith(b)), None)
    return version >= V0_6_0 and block is not None and key[len(block) :] in DATASET_KWARGS


def validate_native(native: NativeLaunch) -> list[Problem]:
    from rladapt.compat.schema import NativeItem, Op, check
    from rladapt.compat.schema._values import UNKNOWN, hydra_value
    from rladapt.plugins.snapshots import snapshot, versions_having

    version = native.version
    snap = snapshot(FRAMEWORK, version)
    path = config_file(native)
    if path is None or path not in native.files:
        return [
            Problem("native.argv", f"{FRAMEWORK} needs --config <file> naming one of the generated files")
        ]
    try:
        document = yaml.safe_load(native.files[path]) or {}
    except yaml.YAMLError as exc:
        return [Problem(f"native.files[{path}]", f"not YAML: {exc}")]
    if not isinstance(document, dict):
        return [Problem(f"native.files[{path}]", "the config must be a mapping")]
    body = {k: v for k, v in document.items() if k != "defaults"}
    emitted = dict(leaves(body))
    items = [
        NativeItem(key=key, value=value, where=native.origins.get(key, f"{FRAMEWORK} config: {key}"))
        for key, value in emitted.items()
    ]
    problems: list[Problem] = []
    for i, item in enumerate(overrides(native)):
        prefix = item[: len(item) - len(item.lstrip("+~"))]
        key, sep, rhs = item[len(prefix) :].partition("=")
        where = f"{NATIVE_FIELD}[{i}]"
        if prefix == "+" and key in emitted:
            problems.append(
                Problem(
                    where,
                    f"+{key} adds a key the config already has (Hydra refuses it); drop the '+'",
                    found=item,
                )
            )
            continue
        if prefix == "~" and key in emitted and (emitted[key] is None or sep):
            # Hydra deletes only what OmegaConf.select finds non-null, and `~k=v` only when the value is v
            # (hydra 1.3.8 _internal/config_loader_impl.py _apply_overrides_to_config, lines 348-360: "Could
            # not delete from config"); NeMo-RL applies overrides with it (parse_hydra_overrides).
            current = emitted[key]
            if current is None or hydra_value(rhs) != current:
                problems.append(
                    Problem(
                        where,
                        f'~{key} fails in {FRAMEWORK}\'s loader ("Could not delete from config"): rladapt writes '
                        f"{key}: {'null' if current is None else repr(current)} in the config"
                        + (" and Hydra deletes no null key" if current is None else ""),
                        f"{key}=<value> to replace it" + ("" if current is None else f", or ~{key}"),
                        item,
                    )
                )
                continue
        if _dataset_kwarg(key, Version(version)) and key not in snap.keys:
            continue  # a keyword of the dataset class the block names, which NeMo-RL passes through
        # NeMo-RL merges overrides without struct mode: a '+' key it does not know is still silently ignored
        op: Op = "delete" if prefix.startswith("~") else "set"
        value = hydra_value(rhs) if sep else UNKNOWN
        items.append(NativeItem(key=key, value=value, where=where, found=item, op=op))
    problems.extend(
        check(
            snap,
            items,
            noun="config key",
            other_versions=lambda key: versions_having(FRAMEWORK, key, version),
        )
    )
    problems.extend(semantic(body, Version(version)))
    return problems[:_MAX_PROBLEMS]


def semantic(cfg: dict[str, Any], version: Version) -> list[Problem]:
    """The checks NeMo-RL makes in ``grpo.setup`` / the run scripts, on what the config file sets."""
    out: list[Problem] = []
    where = f"{FRAMEWORK} config"

    def bad(key: str, message: str) -> None:
        out.append(Problem(f"{where}: {key}", f"{FRAMEWORK} {version} {message}"))

    metric = _get(cfg, "checkpointing.metric_name")
    if version >= V0_4_0 and isinstance(metric, str) and not metric.startswith(("val:", "train:")):
        bad("checkpointing.metric_name", "expects 'val:<metric>' or 'train:<metric>' (PR 1291)")
    if _get(cfg, "policy.dynamic_batching.enabled") and _get(cfg, "policy.sequence_packing.enabled"):
        bad("policy.sequence_packing.enabled", "cannot pack sequences and batch dynamically at once")
    if _get(cfg, "policy.dtensor_cfg.enabled") and _get(cfg, "policy.megatron_cfg.enabled"):
        bad(
            "policy.megatron_cfg.enabled",
            "trains with one backend: dtensor_cfg and megatron_cfg are both enabled",
        )
    nodes = _get(cfg, "cluster.num_nodes")
    per_node = _get(cfg, "cluster.gpus_per_node")
    if _get(cfg, "policy.generation.colocated.enabled") is False and isinstance(nodes, int):
        res = "policy.generation.colocated.resources"
        gen_nodes = _get(cfg, f"{res}.num_nodes")
        gen_gpus = _get(cfg, f"{res}.gpus_per_node")
        if nodes == 1:
            if not gen_gpus or gen_nodes not in (None, 1):
                bad(res, "on one node needs resources.gpus_per_node > 0 and resources.num_nodes null or 1")
        elif not gen_nodes or gen_gpus != per_node:
            bad(
                res,
                "on several nodes needs resources.num_nodes > 0 and gpus_per_node = cluster.gpus_per_node",
            )
        elif gen_nodes >= nodes:
            bad(res, "leaves no node for training (resources.num_nodes >= cluster.num_nodes)")
        if _get(cfg, "policy.generation.backend") == "megatron":
            bad("policy.generation.backend", "cannot run megatron generation on a separate pool")
    if _get(cfg, "grpo.async_grpo.enabled"):
        if _get(cfg, "policy.generation.colocated.enabled") is not False:
            bad("grpo.async_grpo.enabled", "runs async GRPO only with non-colocated generation")
        for feature in (
            "grpo.use_dynamic_sampling",
            "grpo.reward_scaling.enabled",
            "grpo.reward_shaping.enabled",
        ):
            if _get(cfg, feature):
                bad(feature, "does not support it with async GRPO (examples/run_grpo.py)")
    return out
