"""Every pinned TRL version's real ``GRPOConfig`` / ``RLOOConfig`` built from what rladapt renders.

For each case: every key the adapter sets is a field of that version's config class, the class accepts the whole
config (its ``__post_init__`` checks run), and the built object holds the spec's value. The expectations are
written from the spec and TRL's documented meaning of each field (grpo_config.py docstrings), not from the
adapter's tables.
"""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.primitives import RLJob

from .conftest import PINNED, build_configs, driver_config, job, render

pytestmark = pytest.mark.conformance

#: Values TrainingArguments normalises in __post_init__ (transformers 4.57.6 training_args.py): rendered -> held.
NORMALISED: dict[tuple[str, str], Any] = {("report_to", "none"): []}

CASES: dict[str, tuple[str, ...]] = {
    "example": (),
    "grpo-full": (
        "spec.algorithm.kl={coef: 0.04, in: loss}",
        "spec.algorithm.clip={low: 0.2, high: 0.28}",
        "spec.algorithm.ppo_epochs=2",
        "spec.training.optimizer={lr: 0.001, warmup_steps: 3, weight_decay: 0.1}",
        "spec.training.steps=null",
        "spec.training.epochs=2",
        "spec.training.global_batch=4",
        "spec.training.micro_batch_per_gpu=4",
        "spec.rollout.top_k=5",
        "spec.rollout.top_p=0.9",
        "spec.data.val=[examples/tiny/prompts.jsonl]",
        "spec.eval.every_steps=5",
        "spec.checkpoint.every_steps=0",
        "spec.model.gradient_checkpointing=true",
        "spec.logging.backends=[tensorboard]",
        "spec.placement.pools=[{name: one, nodes: 1, gpus_per_node: 1, roles: [actor, rollout, ref]}]",
    ),
    "grpo-no-std": ("spec.algorithm.normalize_by_group_std=false",),
    "grpo-warmup-ratio-clip": (
        "spec.training.optimizer={lr: 0.001, warmup_ratio: 0.25, max_grad_norm: 0.5}",
    ),
    "rloo": (
        "spec.algorithm={name: rloo, group_size: 4, kl: {coef: 0.05, in: reward}}",
        "spec.training.micro_batch_per_gpu=8",
        "spec.placement.pools=[{name: one, nodes: 1, gpus_per_node: 1, roles: [actor, rollout, ref]}]",
    ),
}


def expected(j: RLJob, version: str) -> dict[str, Any]:
    """What the config object must hold, from the spec (TRL counts completions where the spec counts prompts)."""
    s = j.spec
    g = s.algorithm.group_size
    tr = s.training
    out: dict[str, Any] = {
        "num_generations": g,
        "beta": s.algorithm.kl.coef,
        "epsilon": s.algorithm.clip.low,
        "epsilon_high": s.algorithm.clip.high,
        "num_iterations": s.algorithm.ppo_epochs,
        "learning_rate": tr.optimizer.lr,
        "per_device_train_batch_size": tr.micro_batch_per_gpu,
        # one optimizer step = mini_batch prompts x group_size completions
        "gradient_accumulation_steps": tr.mini_batch * g // tr.micro_batch_per_gpu,
        # one generation round = global_batch prompts x group_size completions
        "generation_batch_size": tr.global_batch * g,
        "max_completion_length": s.data.max_response_length,
        "temperature": s.rollout.temperature,
        "top_p": s.rollout.top_p,
        "output_dir": j.checkpoint_dir,
        "shuffle_dataset": s.data.shuffle,
        "bf16": False,  # the examples' float32
    }
    # top_k: -1 (off) is None in 0.23.1 and 0 from 0.29.1 (grpo_config.py of each)
    out["top_k"] = s.rollout.top_k if s.rollout.top_k >= 0 else (None if version == "0.23.1" else 0)
    if tr.steps is not None:
        out["max_steps"] = tr.steps
    else:
        out["num_train_epochs"] = float(tr.epochs or 1)
    if tr.optimizer.warmup_steps is not None:
        out["warmup_steps"] = tr.optimizer.warmup_steps
    if s.algorithm.normalize_by_group_std is not None:
        # scale_rewards: "group" divides by the group's std, "none" does not (grpo_config.py docstring)
        out["scale_rewards"] = "group" if s.algorithm.normalize_by_group_std else "none"
    if tr.optimizer.warmup_ratio is not None:
        out["warmup_ratio"] = tr.optimizer.warmup_ratio
    if tr.optimizer.weight_decay is not None:
        out["weight_decay"] = tr.optimizer.weight_decay
    if tr.optimizer.max_grad_norm is not None:
        out["max_grad_norm"] = tr.optimizer.max_grad_norm
    if s.data.seed is not None:
        out["seed"] = s.data.seed
    if s.checkpoint.every_steps:
        out["save_steps"] = s.checkpoint.every_steps
    if s.checkpoint.keep_last is not None:
        out["save_total_limit"] = s.checkpoint.keep_last
    if s.eval.every_steps:
        out["eval_steps"] = s.eval.every_steps
        out["eval_strategy"] = "steps"
    if s.model.gradient_checkpointing is not None:
        out["gradient_checkpointing"] = s.model.gradient_checkpointing
    if version == "0.23.1":
        out["max_prompt_length"] = s.data.max_prompt_length  # left truncation (removed in 0.29)
    return out


@pytest.mark.parametrize("version", PINNED)
def test_the_real_config_class_holds_the_spec_values(version: str) -> None:
    jobs = {name: job(*overrides) for name, overrides in CASES.items()}
    if version == "1.16.0":
        jobs["entropy"] = job("spec.algorithm.entropy_coef=0.01")
    natives = {name: render(j, version) for name, j in jobs.items()}
    documents = {name: driver_config(n) for name, n in natives.items()}
    built = build_configs(
        version, [{"trainer": d["trainer"], "config": d["config"]} for d in documents.values()]
    )
    failures = []
    for (name, document), result in zip(documents.items(), built, strict=True):
        where = f"trl {version}, {name}"
        if result["error"]:
            failures.append(f"{where}: the config class refuses the config: {result['error']}")
            continue
        values = result["values"]
        for key, rendered in document["config"].items():
            if not values[key]["field"]:
                failures.append(f"{where}: {key} is not a field of the config class")
                continue
            held = values[key]["value"]
            want = NORMALISED.get((key, rendered), rendered) if isinstance(rendered, str) else rendered
            if held != want:
                failures.append(f"{where}: {key} rendered {rendered!r}, the object holds {held!r}")
        for key, want in expected(jobs[name], version).items():
            if key not in values:
                failures.append(f"{where}: {key} (from the spec) is not set")
            elif values[key]["value"] != want:
                failures.append(f"{where}: {key} is {values[key]['value']!r}, the spec asks for {want!r}")
        if name == "entropy" and values.get("entropy_coef", {}).get("value") != 0.01:
            failures.append(f"{where}: entropy_coef did not reach the config")
        if name == "rloo" and document["trainer"] != "rloo":
            failures.append(f"{where}: rloo rendered the {document['trainer']} trainer")
    assert not failures, "\n".join(failures)


def test_max_prompt_length_spans_the_config_change() -> None:
    """0.23.1 truncates with GRPOConfig.max_prompt_length; 0.29.1 and 1.16.0 have no such field, so the driver
    drops longer prompts, and the render says so."""
    j = job("spec.data.max_prompt_length=12")
    old, new = render(j, "0.23.1"), render(j, "1.16.0")
    assert driver_config(old)["config"]["max_prompt_length"] == 12
    assert driver_config(old)["data"]["drop_prompts_longer_than"] is None
    assert "max_prompt_length" not in driver_config(new)["config"]
    assert driver_config(new)["data"]["drop_prompts_longer_than"] == 12
    assert any("drops prompts longer than spec.data.max_prompt_length=12" in n for n in new.notes)
