"""How OpenRLHF writes a checkpoint (DeepSpeed tags), what makes one complete, and how a resume picks it.

From the code of the pinned releases (0.5.9.post1 and 0.8.11 tags, the 0.11.2 wheel):

- the actor saves with ``strategy.save_ckpt(model, <ckpt_path>/_actor, tag="global_step<N>", ...)``, the critic
  (PPO with gae) the same under ``_critic`` (``openrlhf/trainer/ray/ppo_actor.py`` / ``ppo_critic.py``;
  ``openrlhf/trainer/ppo_trainer.py`` ``save_logs_and_checkpoints`` makes the tag). 0.11.2 also saves
  ``best_global_step<N>`` tags, without moving ``latest``.
- ``save_ckpt`` (``openrlhf/utils/deepspeed/deepspeed.py``) first deletes the oldest *subdirectories* of the
  save dir beyond ``max_ckpt_num``, whatever their names, then calls DeepSpeed's
  ``engine.save_checkpoint(save_dir, tag)``. That writes ``<tag>/mp_rank_00_model_states.pt`` (ZeRO-3:
  ``zero_pp_rank_<d>_mp_rank_00_model_states.pt`` per data-parallel rank) and
  ``<tag>/{bf16_}zero_pp_rank_<d>_mp_rank_00_optim_states.pt`` per rank, and only then, on rank 0, the file
  ``<save_dir>/latest`` holding the tag (DeepSpeed 0.16.3 and 0.18.9 ``deepspeed/runtime/engine.py``
  ``save_checkpoint``, ``_get_ckpt_name``, ``_get_rank_zero_ckpt_name``): ``latest`` is the commit point.
- a resume is ``--load_checkpoint`` (0.11: ``--ckpt.load_enable``) when ``<ckpt_path>/_actor`` exists:
  ``load_ckpt(model, <ckpt_path>/_actor)`` with no tag, so DeepSpeed loads the tag ``latest`` names. No flag
  chooses another tag: rladapt rewrites ``latest`` (the old one moved aside) to resume from an older step.
- ZeRO optimizer shards are per data-parallel rank: another world size cannot load them (no universal
  checkpoint is written).
- Partial tags are moved aside to ``<ckpt_path>/.rladapt-aside``, never inside ``_actor``: ``save_ckpt``'s
  rotation would delete a directory there.
- world size: ``_save_checkpoint`` puts ``dp_world_size`` (and ``mp_world_size``) into every model-states file
  (DeepSpeed 0.16.3 and 0.18.9 ``engine.py``); it is read from the file's pickle without loading a tensor
  (``rladapt.plugins.loadable.read_torch_object``), and every rank below it must have its optimizer shard
  (``_save_zero_checkpoint``: ``{bf16_}zero_pp_rank_<r>_mp_rank_00_optim_states.pt``) and, under ZeRO-3, its
  ``zero_pp_rank_<r>_mp_rank_00_model_states.pt``. When the model states cannot be read, the highest rank present
  + 1 is used.
- roles: the PPO critic is saved concurrently with the actor (``ppo_trainer.py`` calls both ``save_checkpoint``
  remotes), each into its own save dir with its own ``latest``; DeepSpeed loads each role's ``latest`` tag, so a
  step is complete only when ``_critic/latest`` reaches it too (the reward and reference models are not trained
  and not saved).
- content: every file of a tag must load (``rladapt.plugins.loadable``: ``torch.save`` zip files).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from rladapt.plugins.checkpoints import (
    Checkpoint,
    CheckpointScan,
    ResumePlan,
    numbered_dirs,
    partial_after,
    problems_reason,
    read_marker,
)
from rladapt.plugins.loadable import Stub, problem, read_torch_object

from . import versions

#: ZeRO optimizer shards are per data-parallel rank, and OpenRLHF writes no universal checkpoint.
CAN_RESHARD = False

ROLES = ("_actor", "_critic")
TAG = r"global_step(\d+)"
_MODEL = re.compile(r"(?:zero_pp_rank_(\d+)_)?mp_rank_00_model_states\.pt")
_OPTIM = re.compile(r"(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_00_optim_states\.pt")


def _recorded_world(tag_dir: Path, names: list[str]) -> int | None:
    """``dp_world_size`` as DeepSpeed recorded it in the tag's first loadable model-states file."""
    for name in names:
        try:
            state = read_torch_object(tag_dir / name)
        except (ValueError, OSError):
            continue
        world = state.get("dp_world_size") if isinstance(state, (dict, Stub)) else None
        if isinstance(world, int) and world > 0:
            return world
    return None


def _tag_problems(tag_dir: Path, role: str) -> list[str]:
    where = f"{role}/{tag_dir.name}/"
    model: dict[int, str] = {}
    zero3 = False
    optim: dict[int, str] = {}
    bad: list[str] = []
    for entry in sorted(tag_dir.iterdir()):
        if not entry.is_file():
            continue
        if found := _MODEL.fullmatch(entry.name):
            model[int(found.group(1) or 0)] = entry.name
            zero3 = zero3 or found.group(1) is not None
        elif found := _OPTIM.fullmatch(entry.name):
            optim[int(found.group(1))] = entry.name
        else:
            continue
        if (reason := problem(entry)) is not None:
            bad.append(f"{where}{entry.name}: {reason}")
    out = []
    if not model:
        out.append(f"{where}mp_rank_00_model_states.pt")
    if not optim:
        out.append(f"{where}zero_pp_rank_D_mp_rank_00_optim_states.pt")
    if model or optim:
        world = _recorded_world(tag_dir, [model[r] for r in sorted(model)]) or max([*model, *optim]) + 1
        prefix = next(iter(optim.values()), "zero_pp_rank_0").split("zero_pp_rank_")[0]
        for rank in range(world):
            if rank not in optim:
                out.append(
                    f"rank {rank} of {world}: {where}{prefix}zero_pp_rank_{rank}_mp_rank_00_optim_states.pt missing"
                )
            if zero3 and rank not in model:
                out.append(
                    f"rank {rank} of {world}: {where}zero_pp_rank_{rank}_mp_rank_00_model_states.pt missing"
                )
    return out + bad


def data_parallel_size(step_dir: Path) -> int | None:
    """How many ZeRO optimizer shards the tag has (its data-parallel world size)."""
    ranks = {int(m.group(1)) for e in step_dir.iterdir() if (m := _OPTIM.fullmatch(e.name))}
    return max(ranks) + 1 if ranks else None


def _committed(role_dir: Path, notes: list[str]) -> tuple[int | None, str | None]:
    latest = read_marker(role_dir / "latest")
    if latest is None:
        return None, None
    found_tag = re.fullmatch(TAG, latest)
    if found_tag:
        return int(found_tag.group(1)), latest
    notes.append(f"{role_dir.name}/latest names {latest[:40]!r}, not a global_stepN tag rladapt knows")
    return None, latest


def scan(root: Path, version: str) -> CheckpointScan:
    actor = root / "_actor"
    critic = root / "_critic"
    notes: list[str] = []
    committed, latest = _committed(actor, notes)
    critic_committed, critic_latest = _committed(critic, notes) if critic.is_dir() else (None, None)
    found: list[Checkpoint] = []
    for step, path in numbered_dirs(actor, TAG):
        problems = _tag_problems(path, "_actor")
        if critic.is_dir():
            tag = critic / path.name
            problems += _tag_problems(tag, "_critic") if tag.is_dir() else [f"_critic/{path.name}/"]
        reason = problems_reason(problems)
        if reason is None and (committed is None or step > committed):
            reason = "not committed: _actor/latest " + (
                "is absent" if committed is None else f"names {latest}"
            )
        if reason is None and critic.is_dir() and (critic_committed is None or step > critic_committed):
            # the critic's save of this step did not reach its commit point (cut off, or still running)
            reason = "not committed by the critic: _critic/latest " + (
                "is absent" if critic_latest is None else f"names {critic_latest}, actor at global_step{step}"
            )
        found.append(Checkpoint(step, path, reason is None, reason))
    pick = None
    if committed is not None:
        pick = next((c for c in found if c.step == committed), None)
        if pick is None:
            pick = Checkpoint(
                committed,
                actor / f"global_step{committed}",
                False,
                f"_actor/latest names global_step{committed}, which does not exist",
            )
            found.append(pick)
    found.sort(key=lambda c: c.step)
    return CheckpointScan(root, tuple(found), pick, tuple(notes))


def latest_files(root: Path) -> list[Path]:
    """The ``latest`` file of each role that saves: what a resume from another step rewrites."""
    return [root / role / "latest" for role in ROLES if (root / role).is_dir()]


def plan_resume(
    argv: Sequence[str], version: str, scan: CheckpointScan, chosen: Checkpoint | None
) -> ResumePlan:
    flag = versions.spell(version, "load_checkpoint")
    aside = tuple(partial_after(scan, chosen))
    if chosen is None:
        if not (scan.root / "_actor").is_dir():
            return ResumePlan(tuple(argv), aside)  # OpenRLHF starts fresh without _actor, flag or not
        # Only partial tags: a `latest` left naming one would make DeepSpeed fail to load, so do not ask it to.
        return ResumePlan(tuple(a for a in argv if a != flag), aside)
    # DeepSpeed loads the tag `latest` names and no flag names another: point `latest` at the chosen one.
    tag = chosen.path.name
    rewrite = {
        path: tag
        for path in latest_files(scan.root)
        if (path.read_text().strip() if path.is_file() else None) != tag
    }
    return ResumePlan(tuple(argv) if flag in argv else (*argv, flag), aside, rewrite)
