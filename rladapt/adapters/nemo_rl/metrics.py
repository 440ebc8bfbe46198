"""What each pinned NeMo-RL tag logs the neutral metrics as (``rladapt metrics``, ``status``).

NeMo-RL's GRPO loop (nemo_rl/algorithms/grpo.py) logs dicts through ``Logger.log_metrics(metrics, step,
prefix=...)``, whose TensorBoard backend writes ``<prefix>/<name>`` (nemo_rl/utils/logger.py
``TensorboardLogger.log_metrics``): ``train/`` for the step's metrics (the loss function's per-micro-batch
metrics and the rollout metrics merged in), ``timing/train/`` for its timers, ``performance/`` for throughput
(from v0.4.0) and ``validation/`` for an evaluation. The files are the tags' (v0.2.1 to v0.7.0); NeMo-RL has no
wheel, so tests/adapters/nemo_rl/test_nemo_rl_metrics.py checks them against the string literals of those files
(tests/adapters/nemo_rl/metric_literals.json, derived from the tags).
"""

from __future__ import annotations

from packaging.version import Version

from rladapt.plugins import Absent, Entry, Logged, MetricMap

GRPO = "nemo_rl/algorithms/grpo.py"
ROLLOUTS = "nemo_rl/experience/rollouts.py"
UTILS = "nemo_rl/algorithms/utils.py"
#: The loss functions moved into a package of their own in v0.6.0.
LOSS_UNTIL_0_5 = "nemo_rl/algorithms/loss_functions.py"
LOSS_FROM_0_6 = "nemo_rl/algorithms/loss/loss_functions.py"
#: The first pinned tag with performance metrics (``performance/`` prefix; algorithms/utils.py).
PERFORMANCE = Version("0.4.0")


def loss_file(version: str) -> str:
    return LOSS_FROM_0_6 if Version(version) >= Version("0.6.0") else LOSS_UNTIL_0_5


def _at(prefix: str, name: str, file: str, note: str = "") -> Logged:
    return Logged(tag=f"{prefix}/{name}", logged=name, file=file, note=note)


def names(version: str) -> MetricMap:
    loss = loss_file(version)
    entries: dict[str, Entry] = {
        # grpo.py: metrics["loss"], the loss function's total: the clipped policy loss plus the KL penalty
        "policy_loss": (_at("train", "loss", GRPO, note="the loss of the update: policy loss + KL penalty"),),
        # loss_functions.py ClippedPGLossFn: "kl_penalty", the KL from the reference (divided back by its coef)
        "kl": (_at("train", "kl_penalty", loss),),
        # grpo.py: metrics["reward"], the mean reward of the step's rollouts
        "reward_mean": (_at("train", "reward", GRPO),),
        # experience/rollouts.py: rollout metrics merged into the step's
        "response_length_mean": (_at("train", "mean_gen_tokens_per_sample", ROLLOUTS),),
        "response_clip_ratio": (_at("train", "truncation_rate", ROLLOUTS),),
        # loss_functions.py ClippedPGLossFn: "approx_entropy", NeMo-RL's estimate from the sampled tokens
        "entropy": (
            _at("train", "approx_entropy", loss, note="estimated from the sampled tokens' log-probs"),
        ),
        # grpo.py: metrics["grad_norm"] and the worker's "lr" (averaged per step in grpo.py)
        "grad_norm": (_at("train", "grad_norm", GRPO),),
        "lr": (_at("train", "lr", GRPO),),
        # grpo.py: timer.time("total_step_time") and timer.time("generation"), logged with prefix timing/train
        "step_time_s": (_at("timing/train", "total_step_time", GRPO),),
        "generation_time_s": (_at("timing/train", "generation", GRPO),),
        # grpo.py validate: val_metrics["accuracy"], the mean reward on the validation set
        "val_score": (_at("validation", "accuracy", GRPO, note="mean validation reward"),),
    }
    if Version(version) >= PERFORMANCE:
        # algorithms/utils.py: "tokens_per_sec_per_gpu", end-to-end tokens per second per GPU
        entries["throughput_tokens_per_s_per_gpu"] = (_at("performance", "tokens_per_sec_per_gpu", UTILS),)
    else:
        entries["throughput_tokens_per_s_per_gpu"] = Absent(
            f"NeMo-RL {version} logs no throughput (performance metrics arrived in v0.4.0)"
        )
    return MetricMap(framework="nemo-rl", version=version, entries=entries)
