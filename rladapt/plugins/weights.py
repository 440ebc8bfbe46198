"""Which files of a checkpoint are the model a serving engine loads: the contract of ``weight_files``.

A pool version holds a Hugging Face model folder's files: safetensors weights, ``config.json`` and the tokenizer.
An adapter's ``weight_files`` says where a complete step of its framework keeps them (a folder of the step, or
files from two folders: NeMo-RL keeps the tokenizer beside the weights), or raises ``NoWeights`` saying why the step
holds none and what would make the framework write them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rladapt.primitives.errors import UsageError

__all__ = ["HF_FILES", "NoWeights", "hf_files"]

#: The files of a Hugging Face model folder a loader reads: weights, config and tokenizer. Optimizer state, RNG
#: states and trainer bookkeeping in the same folder (a TRL ``checkpoint-N``) are not the model.
HF_FILES = re.compile(
    r"^(.*\.safetensors|.*\.safetensors\.index\.json|config\.json|generation_config\.json|tokenizer\.json"
    r"|tokenizer_config\.json|special_tokens_map\.json|added_tokens\.json|vocab\.(json|txt)|merges\.txt"
    r"|tokenizer\.model|chat_template\.(jinja|json)|preprocessor_config\.json)$"
)


class NoWeights(UsageError):
    """A checkpoint that holds no model an engine can load, with the reason (exit 2: nothing was published)."""


def hf_files(folder: Path, *, tokenizer: Path | None = None) -> dict[str, Path]:
    """The model files of ``folder`` by name (and the tokenizer files of ``tokenizer`` when it is elsewhere).

    Raises ``NoWeights`` unless there is ``config.json``, safetensors weights and, for sharded weights, every
    shard the index names.
    """
    if not folder.is_dir():
        raise NoWeights(f"{str(folder)!r} is not a directory")
    found = {p.name: p for p in sorted(folder.iterdir()) if p.is_file() and HF_FILES.match(p.name)}
    if tokenizer is not None and tokenizer.is_dir():
        for path in sorted(tokenizer.iterdir()):
            if path.is_file() and HF_FILES.match(path.name) and not path.name.endswith(".safetensors"):
                found.setdefault(path.name, path)
    if "config.json" not in found:
        raise NoWeights(f"{str(folder)!r} holds no config.json: not a Hugging Face model folder")
    if not any(name.endswith(".safetensors") for name in found):
        raise NoWeights(
            f"{str(folder)!r} holds no *.safetensors weights (found: {', '.join(found) or 'nothing'}); "
            "the pool stores safetensors only"
        )
    for index in (name for name in found if name.endswith(".safetensors.index.json")):
        try:
            shards = set(json.loads(found[index].read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise NoWeights(f"cannot read the shard index {str(found[index])!r}: {exc}") from None
        missing = sorted(shards - set(found))
        if missing:
            raise NoWeights(f"{str(folder)!r} lacks shards its {index} names: {', '.join(missing)}")
    return found
