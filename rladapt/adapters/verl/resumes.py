"""What a verl resume takes from the checkpoint rather than the spec, and the launches verl resumes wrongly.

From verl's load code (``verl/trainer/ppo/ray_trainer.py`` ``_load_checkpoint`` and
``verl/utils/checkpoint/fsdp_checkpoint_manager.py`` ``load_checkpoint``, 0.5.0 to 0.9.1; 0.9.1 lines 1102-1115
and 237/254): each role's ``optim_*`` shard is loaded into its optimizer (whose ``param_groups`` carry the
launch's learning rate and weight decay) and its ``extra_state_*`` into its LR scheduler (``base_lrs``), and
``data.pt`` into the ``StatefulDataLoader``, whose state counts the batches already yielded: with another batch
size, seed, shuffle or data the position it restores is not where training stopped.

The launches verl resumes wrongly: ``actor_rollout_ref.actor.checkpoint.async_save=true`` on a strategy other
than Megatron (verl issue 7952). From 0.7.1 on, the trainer skips writing ``latest_checkpointed_iteration.txt``
whenever ``async_save`` is set (0.7.1 ``ray_trainer.py`` line 909; 0.8.0 ``ray_trainer.py`` 1029 and
``main_ppo_sync.py`` 849; 0.9.1 ``ray_trainer.py`` 1038 and ``ppo/v1/trainer_base.py`` 1012), leaving it to the
checkpoint manager; only ``megatron_checkpoint_manager.py`` writes it (its finalize step), and
``fsdp_checkpoint_manager.py`` has no ``async_save`` at all (read in the 0.7.1, 0.8.0 and 0.9.1 wheels). So no step
is ever committed: ``resume_mode=auto`` finds no marker and starts from step 0 over the run's checkpoints.
0.5.0 and 0.6.1 write the marker whatever ``async_save`` says (``ray_trainer.py`` ``_save_checkpoint``).
"""

from __future__ import annotations

from packaging.version import Version

from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.resumes import Restored
from rladapt.primitives.errors import Problem

from .entrypoints import FULLY_ASYNC_MODULE
from .settings import native_settings
from .validate import parse_argv

_LOAD = "verl ray_trainer.py _load_checkpoint, fsdp_checkpoint_manager.py load_checkpoint (0.5.0 to 0.9.1)"
_OPTIM = "the role's optimizer and LR scheduler state (optim_*, extra_state_*) keep the launch's value"
_DATA = (
    "data.pt restores the StatefulDataLoader's count of batches yielded: with another batch, order or data "
    "the position it restores is not where training stopped"
)

RESTORED = (
    Restored("spec.training.optimizer.lr", _OPTIM, _LOAD),
    Restored("spec.training.optimizer.weight_decay", _OPTIM, _LOAD),
    Restored("spec.training.critic_optimizer.lr", _OPTIM, _LOAD),
    Restored("spec.training.critic_optimizer.weight_decay", _OPTIM, _LOAD),
    *(
        Restored(name, _DATA, _LOAD)
        for name in ("spec.training.global_batch", "spec.data.seed", "spec.data.shuffle", "spec.data.train")
    ),
)

ASYNC_SAVE = "actor_rollout_ref.actor.checkpoint.async_save"
STRATEGY = "actor_rollout_ref.actor.strategy"
#: the first verl whose trainer skips the resume tracker when async_save is set (see above)
SKIPS_TRACKER_FROM = Version("0.7.1")


def restores(version: str) -> tuple[Restored, ...]:
    return RESTORED


def _truthy(value: object) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def hazards(native: NativeLaunch) -> list[Problem]:
    if Version(native.version) < SKIPS_TRACKER_FROM:
        return []
    invocation = parse_argv(native.argv)
    if invocation.module == FULLY_ASYNC_MODULE:  # its trainer writes the tracker itself
        return []
    found = {s.key: s for s in native_settings(native)}
    setting = found.get(ASYNC_SAVE)
    if setting is None or not _truthy(setting.value):
        return []
    saving = found.get("trainer.save_freq")
    if saving is not None and str(saving.value).strip() in ("-1", "0"):
        return []  # no checkpoints: nothing to resume from
    strategy_set = found.get(STRATEGY)
    strategy = (
        str(strategy_set.value)
        if strategy_set is not None
        # Megatron by its config (up to 0.7.1: ppo_megatron_trainer) or by model_engine=megatron (0.8.0+)
        else (
            "megatron" if "megatron" in invocation.config_name or invocation.engine == "megatron" else "fsdp"
        )
    )
    if strategy == "megatron":
        return []
    return [
        Problem(
            setting.where,
            f"verl {native.version} never writes latest_checkpointed_iteration.txt when {ASYNC_SAVE} is set on "
            f"the {strategy} strategy (only Megatron's checkpoint manager writes it; verl issue 7952): every "
            "resume would start from step 0 over this run's checkpoints",
            expected=f"{ASYNC_SAVE}=false or the megatron strategy",
            found=f"{ASYNC_SAVE}={setting.value}",
        )
    ]
