"""verl's model files in a checkpoint: ``global_step_N/actor/huggingface`` when the save included ``hf_model``.

``FSDPCheckpointManager.save_checkpoint`` writes, when ``hf_model`` is in the actor's
``checkpoint.save_contents``, the full state dict gathered on rank 0 with ``save_pretrained`` into
``<step>/actor/huggingface`` (safetensors), where the model config and tokenizer are saved on every save
(verl v0.7.0 ``verl/utils/checkpoint/fsdp_checkpoint_manager.py`` lines 309-365; the same in 0.8 and 0.9). Without
``hf_model`` the step holds only per-rank FSDP shards (``model_world_size_W_rank_R.pt``), which verl's own model
merger turns into a model folder.
"""

from __future__ import annotations

from pathlib import Path

from rladapt.plugins.checkpoints import Checkpoint
from rladapt.plugins.weights import NoWeights, hf_files


def files(root: Path, step: Checkpoint, version: str) -> dict[str, Path]:
    folder = step.path / "actor" / "huggingface"
    try:
        return hf_files(folder)
    except NoWeights as exc:
        raise NoWeights(
            f"verl {version} saved step {step.step} without Hugging Face weights ({exc.message}): set spec.checkpoint.save_hf: "
            "true (hf_model in actor_rollout_ref.actor.checkpoint.save_contents) for the next steps, or merge this one with verl's "
            f"model merger (python -m verl.model_merger merge --backend fsdp --local_dir {step.path / 'actor'} "
            "--target_dir DIR) and publish DIR"
        ) from None
