"""What each pinned TRL version logs the neutral metrics as (``rladapt metrics``, ``status``).

TRL's trainers collect their metrics in ``self._metrics[mode][name]`` and log their means through transformers'
``Trainer.log``; the Trainer adds ``loss``, ``grad_norm`` and ``learning_rate`` (transformers 4.57.6 trainer.py
``_maybe_log_save_evaluate``). The TensorBoard callback prefixes every name with ``train/``, and an evaluation's
(logged as ``eval_<name>``, grpo_trainer.py ``log``) with ``eval/`` (transformers integration_utils.py
``rewrite_logs``). GRPOTrainer and RLOOTrainer log the same names below (tests/adapters/trl/test_metrics.py
reads both files of every pinned version).
"""

from __future__ import annotations

from packaging.version import Version

from rladapt.plugins import Absent, Entry, Logged, MetricMap

GRPO = "trl/trainer/grpo_trainer.py"
TRAINER = "transformers/trainer.py"
TRANSFORMERS = "transformers"


def _trl(name: str, note: str = "", when: str = "") -> tuple[Logged, ...]:
    return (Logged(tag=f"train/{name}", logged=name, file=GRPO, note=note, when=when),)


def names(version: str) -> MetricMap:
    v = Version(version)
    entries: dict[str, Entry] = {
        # transformers 4.57.6 trainer.py: logs["loss"], the mean training loss since the last log. TRL's loss is
        # the policy loss plus beta * KL (grpo_trainer.py compute_loss; beta defaults to 0.0): the loss the update
        # minimised. 1.16.0's own "policy_loss" is logged only with an entropy bonus (entropy_coef), so not used.
        "policy_loss": (
            Logged(
                tag="train/loss",
                logged="loss",
                file=TRAINER,
                dist=TRANSFORMERS,
                note="the loss of the update: policy loss + beta * KL",
            ),
        ),
        # grpo_trainer.py: _metrics[mode]["kl"], logged only when beta != 0 (0.23.1 to 1.16.0)
        "kl": _trl("kl", when="only when beta != 0 (spec.algorithm.kl.coef > 0)"),
        # grpo_trainer.py: _metrics[mode]["reward"], the mean of the summed reward functions (0.23.1 to 1.16.0)
        "reward_mean": _trl("reward"),
        # grpo_trainer.py: _metrics[mode]["completions/mean_length"] and ["completions/clipped_ratio"]
        "response_length_mean": _trl("completions/mean_length"),
        "response_clip_ratio": _trl("completions/clipped_ratio"),
        # grpo_trainer.py: _metrics[mode]["entropy"] (0.23.1 to 1.16.0)
        "entropy": _trl("entropy"),
        # transformers 4.57.6 trainer.py: logs["grad_norm"] (before clipping: clip_grad_norm_'s return value)
        "grad_norm": (Logged(tag="train/grad_norm", logged="grad_norm", file=TRAINER, dist=TRANSFORMERS),),
        # transformers 4.57.6 trainer.py: logs["learning_rate"]
        "lr": (Logged(tag="train/learning_rate", logged="learning_rate", file=TRAINER, dist=TRANSFORMERS),),
        "throughput_tokens_per_s_per_gpu": Absent(
            "TRL logs num_tokens (tokens seen so far) but no rate per step; transformers' "
            "train_tokens_per_second is one figure at the end of training"
        ),
        "generation_time_s": Absent(
            "TRL times no generation on its own: it runs inside the training step (_prepare_inputs)"
        ),
        # grpo_trainer.py: the evaluation's _metrics["eval"]["reward"], logged as eval_reward (log, 0.23.1 to 1.16.0)
        "val_score": (
            Logged(tag="eval/reward", logged="reward", file=GRPO, note="mean reward on spec.data.val"),
        ),
    }
    if v >= Version("0.29.1"):
        # grpo_trainer.py training_step: _metrics["train"]["step_time"] (0.29.1, 1.16.0), generation included
        entries["step_time_s"] = _trl("step_time")
    else:
        entries["step_time_s"] = Absent(
            "TRL 0.23.1 logs no step time (its trainers have no step_time metric)"
        )
    return MetricMap(framework="trl", version=version, entries=entries)
