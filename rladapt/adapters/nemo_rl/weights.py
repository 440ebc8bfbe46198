"""NeMo-RL's model files in a checkpoint: a consolidated safetensors folder under ``policy/weights``, with the
tokenizer from ``policy/tokenizer``.

NeMo-RL saves the policy's weights with NeMo Automodel's checkpointer into ``step_N/policy/weights`` and the
tokenizer into ``step_N/policy/tokenizer``; with ``checkpointing.save_consolidated: true`` (default false,
``examples/configs/grpo_math_1B.yaml`` v0.7.0 line 98; passed through in ``nemo_rl/models/automodel/checkpoint.py``)
and the safetensors format, Automodel also writes a Hugging Face bundle into a ``consolidated`` folder of the model
save (Automodel ``docs/guides/checkpointing.md``). Without it the step holds DCP shards only.
"""

from __future__ import annotations

from pathlib import Path

from rladapt.plugins.checkpoints import Checkpoint
from rladapt.plugins.weights import NoWeights, hf_files


def files(root: Path, step: Checkpoint, version: str) -> dict[str, Path]:
    weights = step.path / "policy" / "weights"
    bundles = sorted(p for p in weights.rglob("consolidated") if p.is_dir()) if weights.is_dir() else []
    if not bundles:
        raise NoWeights(
            f"NeMo-RL {version} saved step {step.step} without a consolidated Hugging Face bundle under "
            f"{str(weights)!r}: set spec.checkpoint.save_hf: true (checkpointing.save_consolidated, with "
            "model_save_format: safetensors) "
            "for the next steps"
        )
    return hf_files(bundles[0], tokenizer=step.path / "policy" / "tokenizer")
