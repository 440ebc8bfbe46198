"""The Python modules verl is started with: shared by translate and patches, so that loading the patches (on
every render, for every framework) does not import the translator."""

from __future__ import annotations

MAIN_MODULE = "verl.trainer.main_ppo"
ONE_STEP_OFF_MODULE = "verl.experimental.one_step_off_policy.main_ppo"
FULLY_ASYNC_MODULE = "verl.experimental.fully_async_policy.fully_async_main"

#: The override that selects Megatron on ppo_trainer from verl 0.8.0 (``versions.Keys.megatron_by_engine_choice``).
MEGATRON_ENGINE = "model_engine=megatron"
