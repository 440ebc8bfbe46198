"""How verl writes a checkpoint, what makes one complete, and its own resume arguments.

From verl's save and load code, the same in every pinned version (0.5.0 and 0.9.1 read; the lines below hold
for ``verl/trainer/ppo/ray_trainer.py`` ``_save_checkpoint``/``_load_checkpoint`` of both, and for
``verl/trainer/ppo/v1/trainer_base.py`` of 0.9.1):

- a step is ``<trainer.default_local_dir>/global_step_<N>/``: ``actor/`` (the actor's checkpoint manager), then
  ``critic/`` when a critic is used (``str(Role.Critic)``, ``verl/trainer/ppo/utils.py`` 0.9.1), then
  ``data.pt`` (the dataloader state), and only then ``latest_checkpointed_iteration.txt`` is rewritten with N:
  the marker is the commit point. (0.9.1 skips the marker when ``actor.checkpoint.async_save`` is set.)
- an FSDP ``actor/`` holds, per rank r of W, ``model_world_size_W_rank_r.pt``, ``optim_world_size_W_rank_r.pt``
  and ``extra_state_world_size_W_rank_r.pt`` (``verl/utils/checkpoint/fsdp_checkpoint_manager.py``
  ``save_checkpoint``, 0.5.0 and 0.9.1; optimizer and extra only when in ``save_contents``), and
  ``huggingface/`` (config and tokenizer, always, on rank 0), and ``fsdp_config.json`` (``FSDP_version`` and
  ``world_size``, on rank 0). A Megatron ``actor/`` holds ``dist_ckpt/``. World size: W of the file names, which
  ``fsdp_config.json``'s ``world_size`` must match when it is there; every rank 0..W-1 must have each kind.
  W must also be the run's own world size, recorded at launch (``CheckpointScan.judged``): ``load_checkpoint``
  opens ``*_world_size_<its W>_rank_<its rank>.pt``, so shards of another W do not load.
- ``resume_mode=auto`` loads the step the marker names (``find_latest_ckpt_path`` in
  ``verl/utils/checkpoint/checkpoint_manager.py``; a marker naming a missing step starts from scratch);
  ``resume_mode=resume_path`` with ``resume_from_path=<dir containing global_step_>`` loads that one.
- the FSDP files are per rank and are loaded by the rank of the same number: verl cannot reshard an FSDP
  checkpoint to another world size (the file names carry W, and ``load_checkpoint`` opens its own rank's).
- roles: ``actor/`` always, ``critic/`` when the job trains a critic (``use_critic``). A step without ``critic/``
  in a directory whose other steps have one was cut off (the critic is saved after the actor). A reward model is
  not saved by verl (it is not trained).
- content: every file must load (``rladapt.plugins.loadable``): the shards and ``data.pt`` are ``torch.save``
  zip files (``torch.save`` in ``fsdp_checkpoint_manager.py`` and ``ray_trainer._save_checkpoint``), the
  ``huggingface/`` JSON files parse; a Megatron ``dist_ckpt/`` is a torch distributed checkpoint whose
  ``.metadata`` names every rank's ``.distcp`` file and how far it reaches.
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
    read_marker,
)
from rladapt.plugins.loadable import dcp_problems, problem, tree_problems

#: FSDP shards are per rank (model_world_size_W_rank_R.pt): verl loads them only on the same world size.
CAN_RESHARD = False
MARKER = "latest_checkpointed_iteration.txt"
STEP_DIR = r"global_step_(\d+)"
_SHARD = re.compile(r"(model|optim|extra_state)_world_size_(\d+)_rank_(\d+)\.pt")


def _is_dcp(folder: Path) -> bool:
    return (folder / ".metadata").exists() or any(folder.glob("*.distcp"))


def _recorded_world(role_dir: Path) -> int | None:
    """``world_size`` of ``fsdp_config.json``, which rank 0 writes beside the shards (``FSDPCheckpointManager``)."""
    try:
        recorded = json.loads((role_dir / "fsdp_config.json").read_text(encoding="utf-8")).get("world_size")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return None
    return recorded if isinstance(recorded, int) and recorded > 0 else None


def _role_problems(role_dir: Path, role: str) -> list[str]:
    """What is missing in one role's directory (``actor``, ``critic``) of a step."""
    if (role_dir / "dist_ckpt").exists():  # Megatron
        return [
            *(f"{role}/{name}" for name in missing(role_dir, ["dist_ckpt", "huggingface"])),
            # the torch_dist format (a torch distributed checkpoint); another Megatron format is checked by presence
            *(dcp_problems(dist, f"{role}/dist_ckpt/") if _is_dcp(dist := role_dir / "dist_ckpt") else ()),
            *tree_problems(role_dir / "huggingface", f"{role}/huggingface/"),
        ]
    shards: dict[str, set[tuple[int, int]]] = {}
    for entry in role_dir.iterdir() if role_dir.is_dir() else ():
        found = _SHARD.fullmatch(entry.name)
        if found:  # an empty or cut shard is named by its content check below
            shards.setdefault(found.group(1), set()).add((int(found.group(2)), int(found.group(3))))
    if not shards:
        return [f"{role}/model_world_size_W_rank_R.pt"]
    shards.setdefault("model", set())  # every rank's model shard is needed, whatever else was saved
    sizes = {w for kind in shards.values() for w, _ in kind}
    if len(sizes) != 1:
        return [f"{role}/ shards of one world size (found {sorted(sizes)})"]
    world = sizes.pop()
    out = []
    recorded = _recorded_world(role_dir)
    if recorded is not None and recorded != world:
        out.append(f"{role}/fsdp_config.json: world_size {recorded}, shards of world size {world}")
        world = max(world, recorded)
    for kind, have in sorted(shards.items()):
        out += [
            f"rank {r} of {world}: {role}/{kind}_world_size_{world}_rank_{r}.pt missing"
            for r in range(world)
            if (world, r) not in have
        ]
    out += [f"{role}/{name}" for name in missing(role_dir, ["huggingface"])]
    return out + tree_problems(role_dir, f"{role}/")


def world_size(step_dir: Path) -> int | None:
    """W of an FSDP step's actor shards, None for Megatron or when there are none."""
    for entry in (step_dir / "actor").iterdir() if (step_dir / "actor").is_dir() else ():
        found = _SHARD.fullmatch(entry.name)
        if found:
            return int(found.group(2))
    return None


def scan(root: Path, version: str) -> CheckpointScan:
    marker_text = read_marker(root / MARKER)
    committed: int | None = None
    notes: list[str] = []
    if marker_text is not None:
        if marker_text.isdigit():
            committed = int(marker_text)
        else:
            notes.append(
                f"{MARKER} holds {marker_text[:40]!r}, not a step number: verl would fail to read it"
            )
    found: list[Checkpoint] = []
    steps = list(numbered_dirs(root, STEP_DIR))
    # the job trains a critic when any step saved one: every step must then have it
    critic = any((path / "critic").exists() for _, path in steps)
    for step, path in steps:
        problems = _role_problems(path / "actor", "actor")
        if critic:
            problems += (
                _role_problems(path / "critic", "critic")
                if (path / "critic").exists()
                else ["critic/ (other steps of this directory saved a critic)"]
            )
        problems += missing(path, ["data.pt"])
        if (path / "data.pt").is_file() and (bad := problem(path / "data.pt")) not in (None, "empty"):
            problems.append(f"data.pt: {bad}")
        reason = problems_reason(problems)
        if reason is None and (committed is None or step > committed):
            # data.pt is written before the marker: a step the marker does not reach may still be finishing.
            reason = f"not committed: {MARKER} " + (
                "is absent" if committed is None else f"names step {committed}"
            )
        found.append(Checkpoint(step, path, reason is None, reason, world_size=world_size(path)))
    pick: Checkpoint | None = None
    if committed is not None:
        pick = next((c for c in found if c.step == committed), None)
        if pick is None:
            # verl's find_latest_ckpt_path then starts from scratch: listed so that nobody mistakes it for a step.
            pick = Checkpoint(
                committed,
                root / f"global_step_{committed}",
                False,
                f"{MARKER} names step {committed}, but global_step_{committed}/ does not exist",
            )
            found.append(pick)
    found.sort(key=lambda c: c.step)
    return CheckpointScan(root, tuple(found), pick, tuple(notes))


def resume_argv(argv: Sequence[str], chosen: Checkpoint | None) -> list[str]:
    """``argv`` with verl's own resume settings: ``resume_path`` for ``chosen``, ``disable`` for a fresh start.

    The path is given explicitly rather than left to ``resume_mode=auto``, so verl loads the step rladapt
    checked, whatever the marker says.
    """
    kept = [a for a in argv if not a.startswith(("trainer.resume_mode=", "trainer.resume_from_path="))]
    if chosen is None:
        return [*kept, "trainer.resume_mode=disable"]
    return [*kept, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={chosen.path}"]


def plan_resume(
    argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
) -> ResumePlan:
    aside = tuple(partial_after(scan, chosen))
    pick = scan.native_pick
    if "trainer.resume_mode=auto" in argv and (
        (chosen is None and (pick is None or pick.path in aside or not pick.path.exists()))
        or (chosen is not None and pick == chosen)
    ):
        # verl's own auto resume lands on the same step (a marker naming a moved-aside step starts fresh): the
        # command stays as rendered.
        return ResumePlan(tuple(argv), aside)
    # Otherwise the step is named explicitly (resume_mode=resume_path): the marker cannot send verl elsewhere.
    return ResumePlan(tuple(resume_argv(argv, chosen)), aside)
