"""The Python modules verl is started with, and the config group that picks its engines: shared by translate, patches,
snapshot and validate, so that loading the patches (on every render, for every framework) does not import the
translator, and the snapshot generator and the validator need not import each other."""

from __future__ import annotations

MAIN_MODULE = "verl.trainer.main_ppo"
ONE_STEP_OFF_MODULE = "verl.experimental.one_step_off_policy.main_ppo"
FULLY_ASYNC_MODULE = "verl.experimental.fully_async_policy.fully_async_main"

#: The override that selects Megatron on ppo_trainer from verl 0.8.0 (``versions.Keys.megatron_by_engine_choice``).
MEGATRON_ENGINE = "model_engine=megatron"


#: The config group that picks every role's engine (verl 0.7.1+ trainer/config/ppo_trainer.yaml defaults:
#: ``model_engine: dp``, then ``actor@actor_rollout_ref.actor: ${model_engine}_actor`` and the same for the ref and
#: the critic); 0.8.0 added ``model_engine/megatron.yaml`` and made ppo_megatron_trainer.yaml ``ppo_trainer`` with
#: ``override model_engine: megatron``, marked "[Deprecated] ... python3 -m verl.trainer.main_ppo
#: model_engine=megatron" (0.8.0 and 0.9.1 trainer/config/ppo_megatron_trainer.yaml).
ENGINE_GROUP = "model_engine"


def engine_scope(config_name: str, engine: str) -> str:
    """The snapshot scope of ``config_name`` composed with ``model_engine=engine`` (not its own choice)."""
    return f"{config_name} {ENGINE_GROUP}={engine}"
