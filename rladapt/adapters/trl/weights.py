"""TRL's model files in a checkpoint: ``checkpoint-N`` is itself a Hugging Face model folder.

transformers' ``Trainer._save_checkpoint`` calls ``save_model(output_dir)``, which ``save_pretrained``s the model
(safetensors by default, ``save_safetensors=True``) and saves the processing class (tokenizer) into the same
``checkpoint-N`` folder (transformers 4.57.6 ``trainer.py`` ``_save_checkpoint`` / ``_save``), beside
``optimizer.pt``, ``scheduler.pt``, ``rng_state*.pth`` and ``trainer_state.json``, which are not the model.
"""

from __future__ import annotations

from pathlib import Path

from rladapt.plugins.checkpoints import Checkpoint
from rladapt.plugins.weights import hf_files


def files(root: Path, step: Checkpoint, version: str) -> dict[str, Path]:
    return hf_files(step.path)
