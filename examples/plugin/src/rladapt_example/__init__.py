"""An example rladapt plugin, as a team would ship one in its own repository.

It registers a framework adapter for a toy in-house trainer (``echo-rl``) and joins two policy hooks: every job
must carry a ``team`` label (a preflight check), and every launch gets the org's NCCL settings.
"""

from __future__ import annotations

import json
from importlib import resources

from rladapt.plugins import FrameworkAdapter, FrameworkVersion, NativeLaunch, Problem, RLJob, hookimpl

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
            "extra": spec.native.get(self.PLUGIN_NAME, []),
        }
        return NativeLaunch.from_job(
            job,
            framework=self.PLUGIN_NAME,
            version=version.version,
            argv=("python3", "-m", "echo_rl.train", "--config", "echo-rl.json"),
            files={"echo-rl.json": json.dumps(config, indent=2, sort_keys=True) + "\n"},
        )


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
