"""How TRL (through the transformers ``Trainer``) writes a checkpoint, what makes one complete, how it resumes.

TRL's trainers (``GRPOTrainer``, ``RLOOTrainer`` of 0.23.1, 0.29.1 and 1.16.0) save through
``transformers.Trainer``; from ``transformers/trainer.py`` ``Trainer._save_checkpoint`` of 4.57.6 (the
tested_with of every pinned TRL version; 4.56.1 reads the same):

- a step is ``<output_dir>/checkpoint-<global_step>/`` (``PREFIX_CHECKPOINT_DIR`` in ``trainer_utils.py``);
- written in this order: the weights (``save_model``: ``model.safetensors``, or a sharded
  ``model.safetensors.index.json``, ``pytorch_model.bin`` without safetensors, ``adapter_model.*`` for PEFT),
  then ``optimizer.pt`` and ``scheduler.pt`` (``_save_optimizer_and_scheduler``), ``rng_state.pth``
  (``rng_state_<rank>.pth`` with several processes, ``_save_rng_state``), and last ``trainer_state.json``
  (``TrainerState.save_to_json``, ``trainer_callback.py``), whose ``global_step`` is N: the commit point. A
  directory without it, or with a ``global_step`` other than its name's, was cut off.
- ``train(resume_from_checkpoint=True)`` takes the highest-numbered ``checkpoint-N`` directory, complete or not
  (``get_last_checkpoint`` in ``trainer_utils.py``); a path loads that one. rladapt always passes the path it
  checked, as the driver's ``--resume-from <dir>`` (``rladapt.adapters.trl.translate.RESUME_ARG``), which the
  driver hands to ``trainer.train(resume_from_checkpoint=...)``; without it the driver's ``resume: auto`` calls
  ``get_last_checkpoint`` itself, so partial steps are moved aside first.
- with ``save_only_model`` there are no optimizer, scheduler or RNG files: such a step cannot resume training
  exactly and is reported partial.
- per process: ``_save_rng_state`` writes ``rng_state.pth`` when ``args.world_size <= 1`` and
  ``rng_state_<process_index>.pth`` otherwise (transformers 4.57.6 ``trainer.py`` line 3372; 4.56.1 the same);
  ``_load_rng_state`` (line 3231) reads its own process's file, and only logs when it is absent. Nothing in the step records the world size, so it is decided from the files: the
  highest rank present + 1, and every rank below it must have its file (a missing *last* rank cannot be seen from
  the files alone: the run's own number of processes, recorded at launch, catches it through
  ``CheckpointScan.judged``). A step holding both forms mixes two runs' files.
- content: every file must load (``rladapt.plugins.loadable``): ``optimizer.pt``, ``scheduler.pt``,
  ``rng_state*.pth`` and ``training_args.bin`` are ``torch.save`` zip files, the weights safetensors (each shard a
  sharded ``model.safetensors.index.json`` names must be there), ``trainer_state.json`` and the config JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from rladapt.plugins.checkpoints import (
    Checkpoint,
    CheckpointScan,
    ResumePlan,
    missing,
    numbered_dirs,
    partial_after,
    problems_reason,
)
from rladapt.plugins.loadable import tree_problems

#: Without FSDP/DeepSpeed, optimizer.pt holds the whole optimizer state: another number of processes loads it.
CAN_RESHARD = True

STEP_DIR = r"checkpoint-(\d+)"
#: The driver's resume argument: ``translate.RESUME_ARG`` (not imported: the job's bootstrap loads this module).
RESUME_FLAG = "--resume-from"
STATE = "trainer_state.json"
_WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "adapter_model.safetensors",
    "adapter_model.bin",
)


_RNG = re.compile(r"rng_state_(\d+)\.pth")


def _rng_problems(path: Path) -> list[str]:
    ranks = {int(m.group(1)) for p in path.iterdir() if (m := _RNG.fullmatch(p.name))}
    single = (path / "rng_state.pth").exists()
    if not ranks:
        return [] if single else ["rng_state.pth"]
    if single:
        return ["rng_state.pth: beside per-process rng_state_R.pth files (two runs' files mixed)"]
    world = max(ranks) + 1
    return [f"rank {r} of {world}: rng_state_{r}.pth missing" for r in range(world) if r not in ranks]


def _files_world(path: Path) -> int | None:
    """The processes whose RNG files the step holds: 1 for ``rng_state.pth``, the highest rank + 1 otherwise."""
    ranks = [int(m.group(1)) for p in path.iterdir() if (m := _RNG.fullmatch(p.name))]
    if ranks:
        return max(ranks) + 1
    return 1 if (path / "rng_state.pth").exists() else None


def _index_problems(path: Path) -> list[str]:
    """Each shard a sharded checkpoint's ``*.index.json`` names must be there (its content is checked with the rest)."""
    out = []
    for index in path.glob("*.index.json"):
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values())
        except (ValueError, AttributeError, UnicodeDecodeError, OSError):
            continue  # reported by the JSON check
        out += [
            f"{name} (named by {index.name})" for name in sorted(shards) if not (path / str(name)).is_file()
        ]
    return out


def _problems(path: Path, step: int) -> list[str]:
    out = []
    if all(missing(path, [name]) for name in _WEIGHTS):
        out.append("the model weights (model.safetensors)")
    out += missing(path, ["optimizer.pt", "scheduler.pt"])
    out += _rng_problems(path)
    out += _index_problems(path)
    out += tree_problems(path)
    state = missing(path, [STATE])
    if state:
        return [*out, *state]
    try:
        saved = json.loads((path / STATE).read_text(encoding="utf-8")).get("global_step")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return (
            out
            if any(p.startswith(STATE) for p in out)
            else [*out, f"{STATE}: not JSON (cut off while written?)"]
        )
    if saved != step:
        out.append(f"a matching {STATE} (its global_step is {saved!r}, the directory says {step})")
    return out


def scan(root: Path, version: str) -> CheckpointScan:
    found = []
    for step, path in numbered_dirs(root, STEP_DIR):
        if not path.is_dir():
            continue
        reason = problems_reason(_problems(path, step))
        found.append(Checkpoint(step, path, reason is None, reason, world_size=_files_world(path)))
    # what train(resume_from_checkpoint=True) would take: the highest number, whatever its state
    return CheckpointScan(root, tuple(found), found[-1] if found else None)


def resume_argv(argv: Sequence[str], chosen: Checkpoint | None) -> list[str]:
    """``argv`` without any ``--resume-from``, then with ``chosen``'s path when there is one."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == RESUME_FLAG:
            skip = True
            continue
        if arg.startswith(RESUME_FLAG + "="):
            continue
        out.append(arg)
    return out if chosen is None else [*out, RESUME_FLAG, str(chosen.path)]


def plan_resume(
    argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
) -> ResumePlan:
    # The driver would take the highest checkpoint-N by itself (get_last_checkpoint): partial ones go aside, and the
    # checked step is named.
    return ResumePlan(tuple(resume_argv(argv, chosen)), tuple(partial_after(scan, chosen)))
