"""What a NeMo-RL resume takes from the checkpoint rather than the spec, and the launches it resumes wrongly.

From NeMo-RL's load code (0.4.0 and 0.7.0 read): the policy worker's ``load_checkpoint``
(``nemo_rl/models/policy/dtensor_policy_worker.py``; ``nemo_rl/utils/native_checkpoint.py`` restores the optimizer
and its ``sched`` state) keeps the launch's learning rate and weight decay, and ``grpo.py`` ``setup`` loads
``train_dataloader.pt`` into the ``StatefulDataLoader`` (``load_dataloader_state`` in 0.7.0), whose state counts
the batches of ``grpo.num_prompts_per_step`` prompts already yielded.

The launches NeMo-RL resumes wrongly: asynchronous GRPO (``grpo.async_grpo.enabled``, 0.4.0 to 0.7.0, NeMo-RL
pull request 3599). ``async_grpo_train`` saves the trajectory collector's dataloader state at the checkpoint
(``nemo_rl/algorithms/grpo.py``: ``trajectory_collector.get_dataloader_state``, 0.7.0 line 4188;
``async_utils/trajectory_collector.py`` ``get_dataloader_state`` returns ``self.dataloader.state_dict()``), and
the collector's cursor has already moved past the prompts still being generated, which no part of the checkpoint
holds (the replay buffer saved with it holds finished trajectories only): every resume skips those prompts.
"""

from __future__ import annotations

from rladapt.plugins.adapter import NativeSetting
from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.resumes import Restored
from rladapt.primitives.errors import Problem

from .settings import native_settings

_LOAD = "nemo_rl models/policy/dtensor_policy_worker.py load_checkpoint, utils/native_checkpoint.py, algorithms/grpo.py setup (0.4.0, 0.7.0)"
_OPTIM = "the policy's optimizer and scheduler state (policy/optimizer) keep the launch's value"
_DATA = (
    "train_dataloader.pt restores the StatefulDataLoader's count of batches yielded: with another batch, order "
    "or data the position it restores is not where training stopped"
)

RESTORED = (
    Restored("spec.training.optimizer.lr", _OPTIM, _LOAD),
    Restored("spec.training.optimizer.weight_decay", _OPTIM, _LOAD),
    *(
        Restored(name, _DATA, _LOAD)
        for name in ("spec.training.global_batch", "spec.data.seed", "spec.data.shuffle", "spec.data.train")
    ),
)

ASYNC_GRPO = "grpo.async_grpo.enabled"


def restores(version: str) -> tuple[Restored, ...]:
    return RESTORED


def _setting(native: NativeLaunch, key: str) -> NativeSetting | None:
    """The last setting of ``key`` (the generated config, then the overrides: later ones win)."""
    found = None
    for setting in native_settings(native):
        if setting.key == key:
            found = setting
    return found


def hazards(native: NativeLaunch) -> list[Problem]:
    saving = _setting(native, "checkpointing.enabled")
    if saving is not None and str(saving.value).strip().lower() in ("false", "0", "no"):
        return []  # no checkpoints: nothing to resume from
    setting = _setting(native, ASYNC_GRPO)
    if setting is None or str(setting.value).strip().lower() not in ("true", "1", "yes"):
        return []
    where, value = setting.where, setting.value
    return [
        Problem(
            where,
            f"NeMo-RL {native.version}'s asynchronous GRPO saves the dataloader position past the prompts still "
            "being generated, which the checkpoint does not hold (NeMo-RL pull request 3599): every resume "
            "would skip them",
            expected="synchronous GRPO (spec.weight_sync.max_staleness: 0) to resume",
            found=f"{ASYNC_GRPO}={value}",
        )
    ]
