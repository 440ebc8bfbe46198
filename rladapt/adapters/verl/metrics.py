"""What each pinned verl version logs the neutral metrics as (``rladapt metrics``, ``status``).

verl's trainer (trainer/ppo/ray_trainer.py ``fit``) logs one dict per step through ``Tracking.log`` (utils/
tracking.py), whose TensorBoard backend writes every key as its tag, unchanged. The actor's update metrics come
from the workers: the legacy ``dp_actor.py`` / ``fsdp_workers.py`` up to 0.7.1 (already prefixed ``actor/``), the
engine workers from 0.8.0 (``workers/utils/losses.py``, ``engine_workers.py``; ``ray_trainer.py`` adds the
``actor/`` prefix with ``rename_dict(actor_output, "actor/")``). Every file below is the pinned wheel's, checked
by tests/adapters/verl/test_verl_metrics.py.
"""

from __future__ import annotations

from packaging.version import Version

from rladapt.plugins import Entry, Logged, MetricMap

TRAINER = "verl/trainer/ppo/ray_trainer.py"
METRIC_UTILS = "verl/trainer/ppo/metric_utils.py"
DP_ACTOR = "verl/workers/actor/dp_actor.py"
FSDP_WORKERS = "verl/workers/fsdp_workers.py"
LOSSES = "verl/workers/utils/losses.py"
ENGINE_WORKERS = "verl/workers/engine_workers.py"
#: The KL of the policy from the reference in the loss (use_kl_loss); when the KL is in the reward instead,
#: apply_kl_penalty logs it (ray_trainer.py, 0.5.0 to 0.9.1).
REWARD_KL = Logged("actor/reward_kl_penalty", "actor/reward_kl_penalty", TRAINER, note="KL in the reward")


def names(version: str) -> MetricMap:
    v = Version(version)
    if v < Version("0.8.0"):
        # legacy workers (0.5.0 to 0.7.1): dp_actor.py update_policy logs "actor/pg_loss", "actor/kl_loss",
        # "actor/grad_norm"; fsdp_workers.py update_actor logs "actor/lr"
        actor: dict[str, Entry] = {
            "policy_loss": (Logged("actor/pg_loss", "actor/pg_loss", DP_ACTOR),),
            "kl": (Logged("actor/kl_loss", "actor/kl_loss", DP_ACTOR, note="KL in the loss"), REWARD_KL),
            "grad_norm": (Logged("actor/grad_norm", "actor/grad_norm", DP_ACTOR),),
            "lr": (Logged("actor/lr", "actor/lr", FSDP_WORKERS),),
        }
    else:
        # engine workers (0.8.0, 0.9.1): losses.py ppo_loss logs "actor/pg_loss" and "kl_loss";
        # engine_workers.py train_batch logs "grad_norm" and "lr"; ray_trainer.py prefixes them with actor/
        actor = {
            "policy_loss": (Logged("actor/pg_loss", "actor/pg_loss", LOSSES),),
            "kl": (Logged("actor/kl_loss", "kl_loss", LOSSES, note="KL in the loss"), REWARD_KL),
            "grad_norm": (Logged("actor/grad_norm", "grad_norm", ENGINE_WORKERS),),
            "lr": (Logged("actor/lr", "lr", ENGINE_WORKERS),),
        }
    entries: dict[str, Entry] = {
        **actor,
        # metric_utils.py compute_data_metrics: the sequence score (the reward function's output, before any KL)
        "reward_mean": (Logged("critic/score/mean", "critic/score/mean", METRIC_UTILS),),
        "response_length_mean": (Logged("response_length/mean", "response_length/mean", METRIC_UTILS),),
        "response_clip_ratio": (
            Logged("response_length/clip_ratio", "response_length/clip_ratio", METRIC_UTILS),
        ),
        # ray_trainer.py fit: the entropy of the old log-prob pass
        "entropy": (Logged("actor/entropy", "actor/entropy", TRAINER),),
        # metric_utils.py compute_throughout_metrics: total tokens / (step time * GPUs)
        "throughput_tokens_per_s_per_gpu": (Logged("perf/throughput", "perf/throughput", METRIC_UTILS),),
        # metric_utils.py compute_timing_metrics: timing_s/<name> for ray_trainer.py's marked_timer("step") and
        # marked_timer("gen")
        "step_time_s": (Logged("timing_s/step", "step", TRAINER, note="timing_s/<marked_timer name>"),),
        "generation_time_s": (Logged("timing_s/gen", "gen", TRAINER, note="timing_s/<marked_timer name>"),),
        # ray_trainer.py _validate: val-core/<data source>/<acc, else reward>/mean@<n>; with several data
        # sources the first one (sorted) is the score and the others keep their own names
        "val_score": (
            Logged(
                r"val-core/.+/(acc|reward)/mean@\d+",
                "val-core",
                TRAINER,
                pattern=True,
                note="mean validation reward (acc when the scorer returns one) of the first data source",
            ),
        ),
    }
    return MetricMap(framework="verl", version=version, entries=entries)
