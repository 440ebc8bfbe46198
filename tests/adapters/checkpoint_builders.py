"""Checkpoint directories laid out as each pinned framework version writes them, with real files.

Every file is written by the writer the framework uses (``torch.save``'s zip format, ``safetensors``, JSON), with
the file names of the save code cited in each adapter's ``checkpoints.py``, so that the content checks of
``rladapt.plugins.loadable`` see what a real save leaves. Tensors are tiny: only the layout and the formats matter.
The damage helpers do what a fault does to a file: cut it (SIGKILL mid-write, a full disk), overwrite it with
random bytes of the same size (a bad copy), empty it (opened, never written).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file


def _dir(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_torch(path: Path, obj: Any = None) -> Path:
    torch.save({"w": torch.arange(64, dtype=torch.float32)} if obj is None else obj, _dir(path))
    return path


def write_json(path: Path, obj: Any) -> Path:
    _dir(path).write_text(json.dumps(obj))
    return path


def write_safetensors(path: Path) -> Path:
    save_file({"w": torch.arange(64, dtype=torch.float32), "b": torch.zeros(3)}, str(_dir(path)))
    return path


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def overwrite_random(path: Path, seed: int = 7) -> None:
    """Random bytes of the same size (never starting like a zip or a pickle: a copy of something else)."""
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(path.stat().st_size))
    path.write_bytes(b"\x00" + data[1:])


def empty(path: Path) -> None:
    path.write_bytes(b"")


# --- verl: ray_trainer._save_checkpoint, FSDPCheckpointManager.save_checkpoint (0.5.0, 0.9.1) ---------------------


def verl_step(root: Path, step: int, world: int = 2, *, critic: bool = False, marker: bool = True) -> Path:
    step_dir = root / f"global_step_{step}"
    for role in ("actor", "critic") if critic else ("actor",):
        for rank in range(world):
            write_torch(step_dir / role / f"model_world_size_{world}_rank_{rank}.pt")
            write_torch(
                step_dir / role / f"optim_world_size_{world}_rank_{rank}.pt",
                {"state": {}, "param_groups": []},
            )
            write_torch(
                step_dir / role / f"extra_state_world_size_{world}_rank_{rank}.pt",
                {"lr_scheduler": {"last_epoch": step}, "rng": {"cpu": torch.get_rng_state()}},
            )
        write_json(step_dir / role / "huggingface" / "config.json", {"model_type": "qwen2"})
        write_json(step_dir / role / "fsdp_config.json", {"FSDP_version": 1, "world_size": world})
    write_torch(step_dir / "data.pt", {"dataloader": {"_num_yielded": step}})
    if marker:
        (root / "latest_checkpointed_iteration.txt").write_text(str(step))
    return step_dir


def verl_megatron_step(root: Path, step: int, world: int = 2, *, marker: bool = True) -> Path:
    """``MegatronCheckpointManager.save_checkpoint``: ``actor/dist_ckpt`` in Megatron's torch_dist format (a torch
    distributed checkpoint) and ``actor/huggingface``."""
    step_dir = root / f"global_step_{step}"
    dcp_folder(step_dir / "actor" / "dist_ckpt", world)
    write_json(step_dir / "actor" / "huggingface" / "config.json", {"model_type": "qwen2"})
    write_torch(step_dir / "data.pt", {"dataloader": {"_num_yielded": step}})
    if marker:
        (root / "latest_checkpointed_iteration.txt").write_text(str(step))
    return step_dir


# --- OpenRLHF: strategy.save_ckpt -> DeepSpeed engine.save_checkpoint (DeepSpeed 0.16.3 / 0.18.9) ---------------


def deepspeed_tag(
    root: Path, step: int, dp: int = 2, *, role: str = "_actor", latest: bool = True, zero3: bool = False
) -> Path:
    """``engine._save_checkpoint`` (model states, with ``dp_world_size``) and ``_save_zero_checkpoint`` (optimizer
    shards) of every data-parallel rank, then ``latest`` on rank 0."""
    tag = root / role / f"global_step{step}"
    states = {
        "module": {"w": torch.zeros(4)},
        "global_steps": step,
        "dp_world_size": dp,
        "mp_world_size": 1,
        "ds_version": "0.16.3",
    }
    if zero3:
        for rank in range(dp):
            write_torch(tag / f"zero_pp_rank_{rank}_mp_rank_00_model_states.pt", states)
    else:
        write_torch(tag / "mp_rank_00_model_states.pt", states)
    for rank in range(dp):
        write_torch(
            tag / f"bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt",
            {"optimizer_state_dict": {"partition_count": dp}, "ds_version": "0.16.3"},
        )
    if latest:
        (root / role / "latest").write_text(f"global_step{step}")
    return tag


# --- NeMo-RL: CheckpointManager.init_tmp_checkpoint / finalize_checkpoint, grpo_train (v0.2.1 .. v0.7.0) ---------


def dcp_folder(folder: Path, world: int) -> None:
    """A torch distributed checkpoint of ``world`` ranks as ``FileSystemWriter`` lays it out: a ``.distcp`` per
    rank and a ``.metadata`` naming each rank's file, offset and length (built from a real one-rank save, whose
    metadata is re-pointed at one file per rank)."""
    import pickle

    import torch.distributed.checkpoint as dcp

    folder.mkdir(parents=True, exist_ok=True)
    # one tensor per rank at least, so that every rank's file holds an item
    dcp.save(
        {f"layer{i}": torch.arange(16, dtype=torch.float32) + i for i in range(4)}, checkpoint_id=str(folder)
    )
    if world == 1:
        return
    meta = pickle.loads((folder / ".metadata").read_bytes())
    data = (folder / "__0_0.distcp").read_bytes()
    items = list(meta.storage_data.items())
    for rank in range(world):
        (folder / f"__{rank}_0.distcp").write_bytes(data)
    for index, (key, info) in enumerate(items):
        info.relative_path = f"__{index % world}_0.distcp"
        meta.storage_data[key] = info
    # every rank's file holds the same bytes: each entry still fits whichever file it now names
    (folder / ".metadata").write_bytes(pickle.dumps(meta))


def nemo_step(root: Path, step: int, *, tmp: bool = False, world: int = 1) -> Path:
    step_dir = root / (f"tmp_step_{step}" if tmp else f"step_{step}")
    write_json(step_dir / "training_info.json", {"step": step})
    _dir(step_dir / "config.yaml").write_text("policy: {}\n")
    dcp_folder(step_dir / "policy" / "weights", world)
    dcp_folder(step_dir / "policy" / "optimizer", world)
    write_json(step_dir / "policy" / "tokenizer" / "tokenizer_config.json", {})
    write_torch(step_dir / "train_dataloader.pt", {"_num_yielded": step})
    return step_dir


# --- TRL: transformers Trainer._save_checkpoint (4.56.1, 4.57.6) ---------------------------------------------------


def trl_step(root: Path, step: int, world: int = 1) -> Path:
    step_dir = root / f"checkpoint-{step}"
    write_safetensors(step_dir / "model.safetensors")
    write_json(step_dir / "config.json", {"model_type": "qwen2"})
    write_torch(step_dir / "training_args.bin", {"lr": 1e-5})
    write_torch(step_dir / "optimizer.pt", {"state": {}, "param_groups": [{"lr": 1e-5}]})
    write_torch(step_dir / "scheduler.pt", {"last_epoch": step})
    names = ["rng_state.pth"] if world <= 1 else [f"rng_state_{rank}.pth" for rank in range(world)]
    for name in names:
        write_torch(step_dir / name, {"python": None, "cpu": torch.get_rng_state()})
    write_json(step_dir / "trainer_state.json", {"global_step": step, "log_history": []})
    return step_dir
