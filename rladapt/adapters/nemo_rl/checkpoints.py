"""How NeMo-RL writes a checkpoint, what makes one complete, and what its automatic resume picks.

From ``nemo_rl/utils/checkpoint.py`` (``CheckpointManager``) and ``nemo_rl/algorithms/grpo.py`` of the pinned
tags (v0.2.1, v0.4.0 and v0.7.0 read; the lines below hold for all three):

- ``init_tmp_checkpoint`` makes ``<checkpoint_dir>/tmp_step_<N>/`` and writes ``training_info.json`` and
  ``config.yaml`` there; ``grpo_train`` then saves ``policy/weights``, ``policy/optimizer`` (unless
  ``save_optimizer`` is off, v0.6+) and ``policy/tokenizer``, then ``train_dataloader.pt``
  (``train_dataloader_<task>.pt`` with several dataloaders, v0.6+); ``finalize_checkpoint`` renames
  ``tmp_step_N`` to ``step_N`` (an existing ``step_N`` goes to ``old_step_N`` first and is deleted after). The
  rename is the commit point: ``tmp_step_N`` is being written or was cut off.
- ``get_latest_checkpoint_path`` resumes, always, from the highest ``step_*`` (v0.2.1: ``glob("step_*")``,
  v0.4.0+: names that fullmatch ``step_\\d+``), whatever is inside: a ``step_N`` copied in half, or left by
  another model, is loaded as it is (NVIDIA-NeMo/RL issues 345, 415). There is no resume flag, so a resume
  from another step moves the newer ones aside.
- DTensor checkpoints are torch distributed checkpoints, which load on another world size.
- per rank: ``policy/weights`` and ``policy/optimizer`` are written with ``torch.distributed.checkpoint.save``
  (``nemo_rl/utils/native_checkpoint.py`` ``save_checkpoint``): one ``__<rank>_0.distcp`` per rank and, last, a
  ``.metadata`` naming each rank's file, offset and length. That metadata is the world size: every file it names
  must be there and reach the offsets it gives (``rladapt.plugins.loadable.dcp_problems``). A ``policy/weights``
  saved in HF form (safetensors) is checked file by file instead.
- roles: the policy is the only trained role in GRPO (no critic); the dataloader state (``train_dataloader*.pt``,
  ``torch.save``) is a role of its own: a step without it cannot resume the data order.
- content: every file must load (``rladapt.plugins.loadable``): the dataloader state is a ``torch.save`` zip file,
  ``training_info.json`` parses, safetensors headers fit their files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rladapt.plugins.checkpoints import (
    Checkpoint,
    CheckpointScan,
    ResumePlan,
    missing,
    numbered_dirs,
    problems_reason,
)
from rladapt.plugins.loadable import dcp_problems, tree_problems

#: DTensor checkpoints are torch distributed checkpoints (torch.distributed.checkpoint), which reshard on load.
CAN_RESHARD = True

STEP_DIR = r"step_(\d+)"
TMP_DIR = r"tmp_step_(\d+)"


def _problems(path: Path) -> list[str]:
    out = missing(path, ["training_info.json", "config.yaml", "policy/weights", "policy/tokenizer"])
    if not any(p.is_file() and p.stat().st_size > 0 for p in path.glob("train_dataloader*.pt")):
        out.append("train_dataloader.pt")
    if "training_info.json" not in " ".join(out):
        try:
            json.loads((path / "training_info.json").read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            out.append("training_info.json (not JSON)")
    for part in ("policy/weights", "policy/optimizer"):
        folder = path / part
        if any(folder.glob("*.distcp")) or (folder / ".metadata").exists():
            out += dcp_problems(folder, f"{part}/")
    # every other file by its format (a .distcp shard's content is checked above, through .metadata)
    out += [p for p in tree_problems(path) if not p.startswith("training_info.json: ")]
    return out


def scan(root: Path, version: str) -> CheckpointScan:
    found: dict[int, Checkpoint] = {}
    for step, path in numbered_dirs(root, TMP_DIR):
        found[step] = Checkpoint(
            step, path, False, "being written or cut off: NeMo-RL renames tmp_step_N to step_N when complete"
        )
    for step, path in numbered_dirs(root, STEP_DIR):
        reason = problems_reason(_problems(path))
        found[step] = Checkpoint(step, path, reason is None, reason)
    steps = sorted(found.values(), key=lambda c: c.step)
    finals = [c for c in steps if c.path.name.startswith("step_")]
    return CheckpointScan(root, tuple(steps), finals[-1] if finals else None)


def plan_resume(
    argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
) -> ResumePlan:
    # NeMo-RL always loads its highest step_N and has no flag for another: every step above the chosen one,
    # complete or not, is moved aside (a partial tmp_step_N too, so a save of that step starts clean).
    floor = -1 if chosen is None else chosen.step
    return ResumePlan(
        tuple(argv), tuple(c.path for c in scan.checkpoints if c.step > floor and c.path.exists())
    )
