"""Runs INSIDE the verl semantic venv (real verl + torch CPU): compose each case with verl's installed config
tree exactly as its ``@hydra.main`` entrypoint does, then run verl's own ``validate_config``.

stdin: JSON {"cases": [{"name", "subdir", "config_name", "overrides"}], "model_dir"}; stdout: JSON {name: verdict}.
Not a test module: the verl suite starts it with the venv's interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path


def tiny_model(path: Path) -> None:
    """A config + tokenizer verl's HFModelConfig accepts (no weights are read by validation)."""
    # tokenizers, transformers and verl exist in the semantic venv (.ci/verl-semantic.sh), not where mypy runs
    from tokenizers import Tokenizer, models, pre_tokenizers  # type: ignore[import-not-found, unused-ignore]
    from transformers import PreTrainedTokenizerFast, Qwen2Config  # type: ignore[import-not-found, unused-ignore]

    Qwen2Config(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        architectures=["Qwen2ForCausalLM"],
    ).save_pretrained(path)
    vocab = {f"w{i}": i for i in range(60)} | {"<unk>": 60, "<pad>": 61, "<s>": 62, "</s>": 63}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    ).save_pretrained(path)


def main() -> None:
    request = json.load(sys.stdin)
    os.environ["HF_HUB_OFFLINE"] = "1"
    tiny_model(Path(request["model_dir"]))
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from verl.trainer.ppo.utils import need_critic, need_reference_policy  # type: ignore[import-not-found, unused-ignore]
    from verl.utils.config import validate_config  # type: ignore[import-not-found, unused-ignore]

    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as cwd:
        os.chdir(cwd)  # not a verl checkout: CWD-relative search paths must not resolve
        for case in request["cases"]:
            GlobalHydra.instance().clear()
            try:
                with initialize_config_dir(config_dir=str(package / case["subdir"]), version_base=None):
                    cfg = compose(config_name=case["config_name"], overrides=case["overrides"])
                validate_config(
                    config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg)
                )
                out[case["name"]] = "VALID"
            except BaseException as exc:  # every verdict is reported; the caller asserts
                out[case["name"]] = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:600]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
