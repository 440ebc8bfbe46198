"""Runs INSIDE the verl semantic venv (real verl + torch CPU): verl's own reward manager, loaded by verl's own
``load_reward_manager`` from a rendered launch's composed config, scores responses of given lengths.

stdin: JSON {"subdir", "config_name", "overrides", "model_dir", "prompt_length", "response_length", "lengths"};
stdout: JSON {"manager": class name, "rewards": [reward per length]}. Not a test module: the verl suite starts
it with the venv's interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path


def main() -> None:
    request = json.load(sys.stdin)
    os.environ["HF_HUB_OFFLINE"] = "1"
    from semantic_check import tiny_model  # type: ignore[import-not-found, unused-ignore]

    model = Path(request["model_dir"])
    tiny_model(model)
    import numpy as np  # type: ignore[import-not-found, unused-ignore]
    import torch  # type: ignore[import-not-found, unused-ignore]
    from hydra import compose, initialize_config_dir
    from transformers import AutoTokenizer  # type: ignore[import-not-found, unused-ignore]
    from verl import DataProto  # type: ignore[import-not-found, unused-ignore]
    from verl.trainer.ppo.reward import load_reward_manager  # type: ignore[import-not-found, unused-ignore]

    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    with initialize_config_dir(config_dir=str(package / request["subdir"]), version_base=None):
        cfg = compose(config_name=request["config_name"], overrides=request["overrides"])
    manager = load_reward_manager(cfg, AutoTokenizer.from_pretrained(model))
    prompt, width = request["prompt_length"], request["response_length"]
    rewards = []
    for length in request["lengths"]:
        mask = torch.tensor([[1] * prompt + [1] * length + [0] * (width - length)])
        data = DataProto.from_dict(
            tensors={
                "prompts": torch.zeros(1, prompt, dtype=torch.long),
                "responses": torch.randint(0, 60, (1, width)),
                "attention_mask": mask,
            },
            non_tensors={
                "data_source": np.array(["probe"], dtype=object),
                "reward_model": np.array([{"ground_truth": "1"}], dtype=object),
            },
        )
        out = manager.loop.run_until_complete(manager.run_single(data))  # the loop it runs its executor on
        rewards.append(float(out["reward_score"]))
    json.dump({"manager": type(manager).__name__, "rewards": rewards}, sys.stdout)


if __name__ == "__main__":
    main()
