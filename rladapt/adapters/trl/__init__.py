"""The built-in TRL adapter: a pluggy plugin registering framework ``trl``.

A job becomes ``<python> -m rladapt.adapters.trl.driver --config .rladapt/trl/<job>-<digest>.json [--resume-from PATH]``:
the driver (``driver.py``) loads the model, the data files and the reward, builds that TRL version's
``GRPOConfig`` / ``RLOOConfig`` from the config's keys and calls ``trainer.train``. TRL runs on a CPU, so this is
the adapter whose jobs really train in the tests and in the README's first command.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from rladapt.compat import bundled, bundled_snapshots
from rladapt.plugins import CheckpointLayout, FrameworkAdapter, FrameworkVersion, Patch, hookimpl

from ..folder import FolderAdapter
from .patches import PATCHES
from .versions import capabilities

if TYPE_CHECKING:
    from pathlib import Path

    from rladapt.plugins.native import NativeLaunch
    from rladapt.plugins.resumes import ResumeTrace
    from rladapt.primitives import Problem, RLJob

_LAZY_SUBMODULES = frozenset({"translate", "validate"})


#: trl/trainer/grpo_trainer.py (0.23.1 to 1.16.0): "if self.use_vllm and self.vllm_importance_sampling_correction"
_TRL_IS = (
    "TRL corrects the rollout mismatch only with vLLM generation (vllm_importance_sampling_*, applied when "
    "use_vllm), which rladapt does not map; its hf generation samples with the trained model itself"
)
_CORRECTIONS = (
    "token.truncate",
    "token.mask",
    "sequence.truncate",
    "sequence.mask",
    "sequence_geometric_mean.truncate",
    "sequence_geometric_mean.mask",
    "truncate_min",
)


class TrlAdapter(FolderAdapter):
    PLUGIN_NAME = "trl"
    DISTRIBUTION = "trl"
    DESCRIPTION = (
        "TRL (huggingface/trl): python -m rladapt.adapters.trl.driver --config <GRPOConfig/RLOOConfig keys>"
    )

    MATRIX = bundled("trl")
    SNAPSHOTS = bundled_snapshots("trl")
    SNAPSHOT_SOURCE = (
        "the trl wheel (or a directory holding trl/), imported with this interpreter's transformers"
    )
    #: Capabilities no pinned TRL version has, and why (shown with the refusal).
    WHY_NOT = {
        "data.builtin": "rladapt's TRL driver loads the files of spec.data.train; name them there",
        "runtime.entrypoint": "rladapt runs TRL through its own driver (rladapt/adapters/trl/driver.py); leave "
        "spec.runtime.entrypoint null",
        "weight_sync.run_ahead_fraction": "TRL generates and trains in one process, one after the other",
        **{f"off_policy_correction.{k}": _TRL_IS for k in _CORRECTIONS},
        "weight_sync.partial_rollout": "TRL generates and trains in one process, one after the other",
        "algorithm.ppo": "TRL's PPOTrainer scores with a reward model and a value model (nn.Modules), not a "
        "reward function; 0.26 moved it to trl.experimental.ppo (trl/trainer/ppo_trainer.py 0.26.2 is a "
        "deprecation shim), 0.29.1 has it only there and 1.16.0 not at all; rladapt does not map it",
        "reward.builtin.by_data_source": "TRL ships no scorer chosen by a sample's data source",
        "reward.builtin.math_dapo": "TRL ships no DAPO answer check (trl/rewards: accuracy_reward, "
        "think_format_reward, ...)",
        "reward.builtin.gsm8k": "TRL ships no GSM8K '#### ' answer check",
        # trl/trainer/grpo_trainer.py: 0.23.1 generates one completion per prompt; 0.29.1 and 1.16.0 take
        # tools=[Python callables], environment_factory and rollout_func as constructor arguments and cap the calls
        # by GRPOConfig.max_tool_calling_iterations
        "multi_turn": "TRL's tool calling (0.29.1+: GRPOTrainer tools=[Python functions], "
        "max_tool_calling_iterations) is not wired into rladapt's driver; its tools are Python callables, not a "
        "tool config file",
        "multi_turn.max_user_turns": "TRL caps tool-calling iterations only (0.29.1+), not the environment's turns",
        "multi_turn.tools": "TRL takes tools as Python callables passed to GRPOTrainer (0.29.1+), never a tool "
        "config file",
        "multi_turn.interaction": "TRL has no simulated-user interaction config",
        "multi_turn.tool_call_format": "TRL parses tool calls with the chat template's own format (0.29.1+); "
        "there is no parser to choose",
        "rollout.agent": "TRL's rollout_func / environment_factory (0.29.1+, experimental) are Python objects "
        "passed to GRPOTrainer, not an agent file; rladapt's driver does not pass them",
        "rollout.engine.vllm": "TRL's vLLM generation (use_vllm, vllm_mode) is not mapped; use rollout.engine hf",
    }

    def capabilities(self, version: str) -> frozenset[str]:
        return capabilities(version)

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        from . import translate as _translate

        return _translate.translate(job, version)

    def check_native(self, native: NativeLaunch) -> list[Problem] | None:
        from . import validate as _validate

        return _validate.check_native(native)

    def validate_native(self, native: NativeLaunch) -> list[Problem] | None:
        from . import validate as _validate

        return _validate.validate_native(native)

    def resume_trace(self, checkpoint_dir: Path, version: str) -> ResumeTrace:
        from . import resumes

        return resumes.trace(checkpoint_dir, version)

    def checkpoint_layout(self, native: NativeLaunch) -> CheckpointLayout:
        from .translate import RESUME_ARG

        argv = list(native.argv)
        resume = (
            tuple(argv[argv.index(RESUME_ARG) : argv.index(RESUME_ARG) + 2]) if RESUME_ARG in argv else ()
        )
        return CheckpointLayout(
            root=native.checkpoint_dir or "checkpoints",
            step_dir_pattern="checkpoint-{step}",
            latest_marker=None,
            resume_args=resume,
            notes=(
                "checkpoint-N/ (N = the global optimizer step) holds the model (model.safetensors, config.json), "
                "trainer_state.json, optimizer.pt, scheduler.pt, rng_state.pth and training_args.bin "
                "(transformers trainer.py _save_checkpoint)",
                "resume: the driver's --resume-from checkpoint-N becomes trainer.train(resume_from_checkpoint=...); "
                "with resume: auto and no --resume-from the driver takes the highest checkpoint-N in output_dir "
                "(transformers get_last_checkpoint, which does not check that it is complete)",
                "save_steps = spec.checkpoint.every_steps (0: only at the end), save_total_limit = keep_last",
            ),
        )


@hookimpl
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    return [TrlAdapter()]


@hookimpl
def rladapt_register_patches() -> list[Patch]:
    return list(PATCHES)


def __getattr__(name: str) -> ModuleType:
    # translate and validate load on first use (a render of another framework never needs them)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
