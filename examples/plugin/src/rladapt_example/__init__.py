"""An example rladapt plugin, as a team would ship one in its own repository.

It registers a framework adapter for a toy in-house trainer (``echo-rl``) and joins two policy hooks: every job
must carry a ``team`` label (a preflight check), and every launch gets the org's NCCL settings.

The adapter ships a schema snapshot per version (``snapshots/<version>.json``: every config key echo-rl accepts,
with its type and default), so every render is checked offline against it, ``rladapt render --explain`` shows
echo-rl's own defaults, and ``rladapt matrix snapshot -f echo-rl==VERSION --source defaults.json`` writes a new
one from a release's ``defaults.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from rladapt.compat.schema import KeySpec, NativeItem, Snapshot, check
from rladapt.plugins import FrameworkAdapter, FrameworkVersion, NativeLaunch, Problem, RLJob, hookimpl

#: The one file echo-rl reads.
CONFIG = "echo-rl.json"
#: JSON type -> the snapshot format's type name (``rladapt.compat.schema``).
_TYPES = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    list: "list",
    dict: "dict",
    type(None): "null",
}

_CAPABILITIES = frozenset(
    {
        "placement.colocated",
        "rollout.sync",
        "rollout.async",
        "rollout.engine.vllm",
        "backend.fsdp",
        "backend.fsdp2",
        "algorithm.grpo",
        "algorithm.rloo",
        "kl.loss",
        "reward.function",
        "checkpoint.keep_last",
        "eval.before_training",
    }
)


class EchoRLAdapter(FrameworkAdapter):
    PLUGIN_NAME = "echo-rl"
    DESCRIPTION = "Toy in-house trainer that reads one JSON config (example plugin)."

    # The versions come from the plugin's own matrix file, as the built-in adapters' do.
    MATRIX = resources.files("rladapt_example") / "matrix.toml"
    # One schema snapshot per version, as the built-in adapters' (written by `rladapt matrix snapshot`).
    SNAPSHOTS = resources.files("rladapt_example") / "snapshots"
    SNAPSHOT_SOURCE = "echo-rl's defaults.json of that release"

    def capabilities(self, version: str) -> frozenset[str]:
        return _CAPABILITIES - {"rollout.async"} if version == "1.0.0" else _CAPABILITIES

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        spec = job.spec
        config = {
            "model": spec.model.path,
            "algorithm": spec.algorithm.name,
            "samples_per_prompt": spec.algorithm.group_size,
            "train_files": spec.data.train,
            "batch_size": spec.training.global_batch,
            "lr": spec.training.optimizer.lr,
            "checkpoint_dir": job.checkpoint_dir,
            "rollout_tp": spec.rollout.tensor_parallel,
            "temperature": spec.rollout.temperature,
            "nodes": job.placement.pools[0].nodes,
            "gpus_per_node": job.placement.pools[0].gpus_per_node,
        }
        origins = {
            "model": "spec.model.path",
            "algorithm": "spec.algorithm.name",
            "samples_per_prompt": "spec.algorithm.group_size",
            "train_files": "spec.data.train",
            "batch_size": "spec.training.global_batch",
            "lr": "spec.training.optimizer.lr",
            "checkpoint_dir": "spec.checkpoint.dir",
            "rollout_tp": "spec.rollout.tensor_parallel",
            "temperature": "spec.rollout.temperature",
            "nodes": "spec.placement.pools[0].nodes",
            "gpus_per_node": "spec.placement.pools[0].gpus_per_node",
        }
        if spec.checkpoint.keep_last is not None:  # null: echo-rl keeps every checkpoint
            config["keep_last"] = spec.checkpoint.keep_last
            origins["keep_last"] = "spec.checkpoint.keep_last"
        if spec.training.optimizer.warmup_steps is not None:  # null: echo-rl's own (its snapshot's default)
            config["warmup_steps"] = spec.training.optimizer.warmup_steps
            origins["warmup_steps"] = "spec.training.optimizer.warmup_steps"
        # spec.native.echo-rl: KEY=VALUE items set config keys verbatim (the value read as JSON, else text)
        items = spec.native.get(self.PLUGIN_NAME, [])
        for i, item in enumerate(items):
            key, _, text = str(item).partition("=")
            config[key] = _value(text)
            origins[key] = f"spec.native.{self.PLUGIN_NAME}[{i}]"
        return NativeLaunch.from_job(
            job,
            framework=self.PLUGIN_NAME,
            version=version.version,
            argv=("python3", "-m", "echo_rl.train", "--config", CONFIG),
            files={CONFIG: json.dumps(config, indent=2, sort_keys=True) + "\n"},
            passthrough=tuple(str(i) for i in items),
            origins=origins,
        )

    def check_native(self, native: NativeLaunch) -> list[Problem] | None:
        """Every config key against the version's snapshot: a misspelled or mistyped key fails the render."""
        snap = self.find_snapshot(native.version)
        if snap is None:
            return None
        config = json.loads(native.files[CONFIG])
        items = [
            NativeItem(key, value, where=native.origins.get(key, f"echo-rl config: {key}"))
            for key, value in config.items()
        ]
        return check(snap, items, other_versions=lambda key: self.versions_having(key, native.version))

    def explain_entries(self, native: NativeLaunch) -> Iterable[tuple[str, Any, str]]:
        """``render --explain``: each key of the config file, its value and the spec field it comes from."""
        config = json.loads(native.files[CONFIG])
        return [(key, value, native.origins.get(key, "")) for key, value in config.items()]

    def framework_default_keys(self, job: RLJob, version: str) -> Mapping[str, tuple[str, ...]]:
        """The keys the spec never sets: ``render --explain`` lists them with echo-rl's own default."""
        return {"echo-rl's warm-up (no spec field)": ("warmup_steps",)}

    def generate_snapshot(self, version: str, source: Path) -> Snapshot:
        """The snapshot of ``version`` from its release's ``defaults.json`` (key -> default)."""
        try:
            defaults = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{source.name} is not echo-rl's defaults.json ({exc})") from None
        if not isinstance(defaults, dict):
            raise ValueError(f"{source.name} is not echo-rl's defaults.json (not a mapping)")
        keys = {
            key: KeySpec(type=_TYPES.get(type(value), "any"), default=value)
            for key, value in defaults.items()
        }
        return Snapshot(framework=self.PLUGIN_NAME, version=version, source=source.name, scopes=(), keys=keys)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@hookimpl
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    return [EchoRLAdapter()]


@hookimpl
def rladapt_add_checks(job: RLJob) -> list[Problem]:
    if "team" not in job.metadata.labels:
        return [
            Problem("metadata.labels.team", "org policy: every job names its team", "a team label", "none")
        ]
    return []


@hookimpl
def rladapt_modify_native(native: NativeLaunch) -> NativeLaunch:
    return native.with_env({"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5"})
