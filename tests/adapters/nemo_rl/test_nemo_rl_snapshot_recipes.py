"""The NeMo-RL snapshot generator reads every GRPO-family config of a tag, recipes included (issue 22: a recipe's
keys, such as ``data.validation.repeat`` of the AIME dataset, were missing and its import was refused)."""

from __future__ import annotations

from pathlib import Path

from rladapt.adapters.nemo_rl.snapshot import generate

GRPO = """
from typing import Any, NotRequired, TypedDict


class GRPOConfig(TypedDict):
    num_prompts_per_step: int
    reasoning_parser: NotRequired[str]


class DataConfig(TypedDict):
    max_input_seq_length: int
    validation: NotRequired[dict[str, Any] | None]


class MasterConfig(TypedDict):
    grpo: GRPOConfig
    data: DataConfig
"""


def _tree(root: Path) -> Path:
    (root / "nemo_rl" / "algorithms").mkdir(parents=True)
    (root / "nemo_rl" / "algorithms" / "grpo.py").write_text(GRPO)
    configs = root / "examples" / "configs"
    (configs / "recipes" / "llm").mkdir(parents=True)
    (configs / "grpo_math_1B.yaml").write_text(
        "grpo:\n  num_prompts_per_step: 32\ndata:\n  max_input_seq_length: 8\n"
    )
    # a recipe: a key no typed config declares, a section replaced by merge_with_override's marker
    (configs / "recipes" / "llm" / "grpo-deepscaler.yaml").write_text(
        "defaults: ../../base_of_recipe.yaml\n"
        "data:\n  _override_: true\n  max_input_seq_length: 16\n"
        "policy:\n  sequence_packing:\n    fuse_loss: true\n"
        "grpo:\n  reasoning_parser: null\n"
    )
    # extended by the recipe: read although its name says nothing of GRPO
    (configs / "base_of_recipe.yaml").write_text(
        "defaults: grpo_math_1B.yaml\nenv:\n  math:\n    num_workers: 8\n"
    )
    # not of the GRPO family: its keys stay out
    (configs / "sft.yaml").write_text("sft:\n  max_num_steps: 10\n")
    return root


def test_recipes_and_what_they_extend_give_their_keys(tmp_path: Path) -> None:
    snap = generate(_tree(tmp_path), "0.7.0")
    assert snap.has("policy.sequence_packing.fuse_loss")
    assert snap.has("env.math.num_workers")
    assert not snap.has("sft.max_num_steps")
    assert not snap.has("data._override_")  # a directive of the loader, no key
    # annotated a string, written null by a recipe: the tag composes null there
    assert snap.keys["grpo.reasoning_parser"].type == "str|null"
    # the base example still gives the defaults, and the scopes stay the configs the adapter emits
    assert snap.default("grpo.num_prompts_per_step") == 32
    assert snap.scopes == ("nemo_rl/algorithms/grpo.py:MasterConfig", "examples/configs/grpo_math_1B.yaml")
