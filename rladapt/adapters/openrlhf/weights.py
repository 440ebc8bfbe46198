"""OpenRLHF's model files in a checkpoint: ``<ckpt_path>/global_step<N>_hf`` when ``--save_hf_ckpt`` is set.

``PolicyModelActor.save_checkpoint`` saves the DeepSpeed state under ``<ckpt_path>/_actor/<tag>`` and, with
``--save_hf_ckpt``, the model (the EMA model with ``--enable_ema``) and tokenizer with ``strategy.save_model`` into
``<ckpt_path>/<tag>_hf`` (OpenRLHF v0.9.9 ``openrlhf/trainer/ray/ppo_actor.py`` lines 608-630, ``save_model`` in
``openrlhf/utils/deepspeed/deepspeed.py`` calls ``save_pretrained``). Without it the step holds DeepSpeed ZeRO shards
only (DeepSpeed's ``zero_to_fp32.py`` in the tag folder consolidates them).
"""

from __future__ import annotations

from pathlib import Path

from rladapt.plugins.checkpoints import Checkpoint
from rladapt.plugins.weights import NoWeights, hf_files


def files(root: Path, step: Checkpoint, version: str) -> dict[str, Path]:
    folder = root / f"{step.path.name}_hf"
    try:
        return hf_files(folder)
    except NoWeights as exc:
        raise NoWeights(
            f"OpenRLHF {version} saved step {step.step} without Hugging Face weights ({exc.message}): set "
            "spec.checkpoint.save_hf: true (--save_hf_ckpt) for the next steps, or consolidate this one with DeepSpeed's zero_to_fp32.py in "
            f"{step.path} and publish the folder it writes"
        ) from None
