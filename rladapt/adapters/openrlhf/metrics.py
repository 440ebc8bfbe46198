"""What each pinned OpenRLHF version logs the neutral metrics as (``rladapt metrics``, ``status``).

OpenRLHF's PPO trainer (trainer/ppo_trainer.py) writes every key of a step's status as the TensorBoard tag
``train/<key>`` and every key of an evaluation as ``eval/<key>`` (``save_logs_and_checkpoints`` up to 0.8.11,
utils/logging_utils.py ``TensorboardLogger`` from 0.9.10). The status holds the actor's training metrics
(trainer/ray/ppo_actor.py; ppo_trainer.py in 0.5.9.post1) and the means of each experience's ``info``
(trainer/ppo_utils/experience_maker.py). Every file below is the pinned wheel's, checked by
tests/adapters/openrlhf/test_openrlhf_metrics.py.
"""

from __future__ import annotations

from packaging.version import Version

from rladapt.plugins import Absent, Entry, Logged, MetricMap

TRAINER = "openrlhf/trainer/ppo_trainer.py"
ACTOR = "openrlhf/trainer/ray/ppo_actor.py"
EXPERIENCE = "openrlhf/trainer/ppo_utils/experience_maker.py"
#: The first pinned version with rollout statistics, timings, the actor's grad norm (0.9.10).
ROLLOUT_STATS = Version("0.9.10")
#: The first pinned version whose PPO trainer evaluates (0.5.9.post1: "# TODO: Add evaluation mechanism for PPO").
EVALUATES = Version("0.7.5")


def _train(key: str, file: str, note: str = "") -> Logged:
    return Logged(tag=f"train/{key}", logged=key, file=file, note=note)


def names(version: str) -> MetricMap:
    v = Version(version)
    # the actor's loop: ppo_trainer.py training_step in 0.5.9.post1, ray/ppo_actor.py from 0.7.5
    actor = TRAINER if v < EVALUATES else ACTOR
    entries: dict[str, Entry] = {
        "policy_loss": (_train("policy_loss", actor),),
        # experience_maker.py: info "kl", the mean KL of the policy from the reference per sequence
        "kl": (_train("kl", EXPERIENCE),),
        "lr": (_train("actor_lr", actor),),
        "throughput_tokens_per_s_per_gpu": Absent("OpenRLHF logs no token throughput"),
    }
    if v >= EVALUATES:
        # ray/ppo_actor.py: the mean token entropy, computed (and logged) only with --entropy_loss_coef
        entries["entropy"] = (_train("entropy_loss", ACTOR, note="logged with an entropy coefficient only"),)
        # ppo_trainer.py evaluate: eval_<data source>_pass1, the mean reward of the samples per prompt; with
        # several data sources the first one (sorted) is the score
        entries["val_score"] = (
            Logged(r"eval/eval_.+_pass1", "eval_", TRAINER, pattern=True, note="eval_<data source>_pass1"),
        )
    else:
        entries["entropy"] = Absent(f"OpenRLHF {version} computes no entropy (no entropy loss before 0.7.5)")
        entries["val_score"] = Absent(
            f"OpenRLHF {version}'s PPO trainer does not evaluate (ppo_trainer.py: evaluation is a TODO)"
        )
    if v >= ROLLOUT_STATS:
        # ppo_trainer.py _compute_rollout_stats: over every sample of the step, before dynamic batching;
        # the per-experience "reward" mean stays under its own name (train/reward)
        entries["reward_mean"] = (_train("rollout/reward_mean", TRAINER), _train("reward", EXPERIENCE))
        entries["response_length_mean"] = (_train("rollout/response_length_mean", TRAINER),)
        entries["response_clip_ratio"] = (_train("rollout/truncated_rate", TRAINER),)
        # ray/ppo_actor.py: the actor's gradient norm (strategy.get_grad_norm), the step's last
        entries["grad_norm"] = (_train("actor_grad_norm", ACTOR),)
        # ppo_trainer.py fit: timing/generation, and timing/step_total (the sum of the step's timing/* phases)
        entries["step_time_s"] = (_train("timing/step_total", TRAINER),)
        entries["generation_time_s"] = (_train("timing/generation", TRAINER),)
    else:
        entries["reward_mean"] = (_train("reward", EXPERIENCE),)
        entries["response_length_mean"] = (_train("response_length", EXPERIENCE),)
        why = f"OpenRLHF {version} does not log it (first logged in 0.9.10)"
        entries["response_clip_ratio"] = Absent(f"{why}: no share of truncated responses")
        entries["grad_norm"] = Absent(f"{why}: no gradient norm")
        entries["step_time_s"] = Absent(f"{why}: no step timing")
        entries["generation_time_s"] = Absent(
            f"{why}: generation time only in --perf statistics (perf/experience_maker), which rladapt does not set"
        )
    return MetricMap(framework="openrlhf", version=version, entries=entries)
