"""Generate the tiny model and prompt set the TRL example and the real-training tests use (fixed seed, no download).

    python scripts/make_tiny_model.py [OUT_DIR]      # default: examples/tiny

Writes ``OUT_DIR/model/`` (a 2-layer Qwen2 with hidden size 32 over a 64-symbol character vocabulary, its
tokenizer built in code with ``tokenizers``), ``OUT_DIR/prompts.jsonl`` (prompts of random letters) and
``OUT_DIR/val.jsonl`` (held-out prompts of the same kind, another seed: the continuous evaluation suite's). The
outputs are committed (about 200 KB); run this again to check they are reproduced byte for byte
(``tests/adapters/trl/test_trl_tiny_model.py`` does). Needs torch, transformers and tokenizers (``.[trl]``).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 1234
#: Special tokens first, so that their ids are fixed: pad 0, eos 1.
SPECIALS = ("<pad>", "<eos>")
#: 62 symbols: a-z, A-Z, 0-9 and nothing else, so that every character of a prompt or completion is one token.
SYMBOLS = tuple("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
PROMPTS = 64
#: the held-out prompts (val.jsonl): drawn with their own seed, so none is a training prompt by construction
VAL_SEED = SEED + 1
VAL_PROMPTS = 8
PROMPT_LETTERS = "bcdefghijklmnopqrstuvwxyz"


def make_tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate((*SPECIALS, *SYMBOLS))}
    assert len(vocab) == 64
    # BPE with no merges over single characters: one token per character, no pre-tokenizer, and Fuse joins
    # the tokens back without spaces on decode.
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=None))
    core.decoder = decoders.Fuse()
    # input ids and attention mask only, as Qwen2's own tokenizer: GRPOTrainer 0.23.1 passes every tokenizer output
    # to model.generate, which refuses token_type_ids
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        eos_token="<eos>",
        model_input_names=["input_ids", "attention_mask"],
    )
    tokenizer.model_max_length = 128
    tokenizer.save_pretrained(out)


def make_model(out: Path) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(SEED)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        torch_dtype="float32",
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 1
    model.save_pretrained(out, safe_serialization=True)


def make_prompts(path: Path, seed: int = SEED, count: int = PROMPTS) -> None:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        text = "".join(rng.choice(PROMPT_LETTERS) for _ in range(rng.randint(4, 8)))
        lines.append(json.dumps({"prompt": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "examples" / "tiny"
    (out / "model").mkdir(parents=True, exist_ok=True)
    make_tokenizer(out / "model")
    make_model(out / "model")
    make_prompts(out / "prompts.jsonl")
    make_prompts(out / "val.jsonl", VAL_SEED, VAL_PROMPTS)
    print(f"wrote {out}/model, {out}/prompts.jsonl and {out}/val.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
