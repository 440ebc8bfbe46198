"""What a TRL resume takes from the checkpoint rather than the spec, and what a run leaves to certify its resumes.

TRL's trainers resume through transformers' ``Trainer.train(resume_from_checkpoint=...)`` (transformers 4.57.6,
the version every pinned TRL, 0.23.1 to 1.16.0, is tested with; ``trainer.py``):

- ``_load_optimizer_and_scheduler`` loads ``optimizer.pt`` into the optimizer: its ``param_groups`` carry the
  learning rate and weight decay of the launch, which replace the ones built from the new arguments; and
  ``scheduler.pt`` into the scheduler: its ``base_lrs`` are the old learning rate, from which every later step's
  rate is computed. A warmup change applies (the schedule's function is built again, only its state is loaded).
- ``_inner_training_loop`` skips ``global_step % steps_per_epoch * gradient_accumulation_steps`` batches of the
  *new* dataloader (``skip_first_batches``), whose sampler is TRL's ``RepeatSampler`` seeded with ``args.seed``
  (trl ``trainer/utils.py``): with another batch size, group size or seed, or other data, the batches skipped are
  not the ones trained, so prompts are skipped or trained twice; ``compare_trainer_and_checkpoint_args`` only
  logs a warning about the batch size.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rladapt.files import read_json_lines
from rladapt.plugins.resumes import Restored, ResumeTrace

from .driver import METRICS_FILE, SAMPLES_FILE

_OPTIMIZER = (
    "transformers 4.57.6 trainer.py Trainer._load_optimizer_and_scheduler (optimizer.pt, scheduler.pt)"
)
_SKIP = "transformers 4.57.6 trainer.py Trainer._inner_training_loop (skip_first_batches); trl trainer/utils.py RepeatSampler"

RESTORED = (
    Restored(
        "spec.training.optimizer.lr",
        "the optimizer state and the scheduler's base_lrs in the checkpoint keep the launch's learning rate",
        _OPTIMIZER,
    ),
    Restored(
        "spec.training.optimizer.weight_decay",
        "the optimizer state's param_groups keep the launch's weight decay",
        _OPTIMIZER,
    ),
    *(
        Restored(
            name,
            "the resume skips as many batches of the new dataloader as were trained, so with another batch the "
            "prompts skipped are not the ones trained",
            _SKIP,
        )
        for name in (
            "spec.training.global_batch",
            "spec.training.mini_batch",
            "spec.training.micro_batch_per_gpu",
            "spec.algorithm.group_size",
        )
    ),
    *(
        Restored(
            name,
            "the resume skips the trained batches of a sampler seeded and shuffled as now: with another order "
            "or other data the prompts skipped are not the ones trained",
            _SKIP,
        )
        for name in ("spec.data.seed", "spec.data.shuffle", "spec.data.train")
    ),
)


def restores(version: str) -> tuple[Restored, ...]:
    return RESTORED


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def trace(root: Path, version: str) -> ResumeTrace:
    """Per step: the driver's progress line (loss, reward: the last logged, so a redone step counts as redone),
    the prompts the step consumed (from the last driver start that logged it), and the sha256 of the final
    checkpoint's weights (``model.safetensors`` of the highest ``checkpoint-N``)."""
    metrics: dict[int, dict[str, float | None]] = {}
    for entry in read_json_lines(root / METRICS_FILE):
        step = entry.get("step")
        if isinstance(step, int) and (entry.get("loss") is not None or entry.get("reward") is not None):
            metrics[step] = {"loss": _number(entry.get("loss")), "reward": _number(entry.get("reward"))}
    by_start: dict[int, dict[str, list[str]]] = {}
    for entry in read_json_lines(root / SAMPLES_FILE):
        step, start, prompts = entry.get("step"), str(entry.get("start")), entry.get("prompts")
        if isinstance(step, int) and isinstance(prompts, list) and entry.get("rank", 0) == 0:
            by_start.setdefault(step, {}).setdefault(start, []).extend(str(p) for p in prompts)
    # dicts keep insertion order: the last start of each step is the one that logged it last
    samples = {step: tuple(list(starts.values())[-1]) for step, starts in sorted(by_start.items())}
    notes = []
    steps = sorted(
        (int(p.name.split("-", 1)[1]), p)
        for p in root.glob("checkpoint-*")
        if p.is_dir() and p.name.split("-", 1)[1].isdigit()
    )
    weights = weights_from = None
    if steps:
        final = steps[-1][1]
        files = sorted(final.glob("*.safetensors"))
        if files:
            digest = hashlib.sha256()
            for f in files:
                with f.open("rb") as handle:
                    while block := handle.read(1 << 20):
                        digest.update(block)
            weights, weights_from = digest.hexdigest(), ", ".join(f"{final.name}/{f.name}" for f in files)
        else:
            notes.append(f"{final.name} holds no *.safetensors weights")
    else:
        notes.append(f"no checkpoint-N in {root}: no final weights to hash")
    return ResumeTrace(
        metrics=dict(sorted(metrics.items())),
        samples=samples,
        weights=weights,
        weights_from=weights_from,
        notes=tuple(notes),
    )
