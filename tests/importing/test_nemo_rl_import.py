"""NeMo-RL: import(launch) renders to the same effective config as the launch, on the oldest supported and newer tags.

The tag's configs are the real upstream files (``tests/adapters/nemo_rl/conftest.py``: the fixtures of each tag,
``examples/configs/grpo_math_*.yaml``); each test runs from that folder as a launch runs from a NeMo-RL checkout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.adapters.nemo_rl import importer as fw
from rladapt.adapters.nemo_rl.effective import nemo_rl_effective
from rladapt.importing.diff import compare, side
from rladapt.importing.importer import Imported, build, differences, launch_effective, read_native
from rladapt.importing.script import read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import UsageError, load_job_text
from tests.adapters.nemo_rl.conftest import tag

#: the oldest supported tag, the first with run_grpo.py, the first with data blocks, the newest
VERSIONS = ["0.4.0", "0.5.0", "0.6.0", "0.7.0"]

# every spec field the NeMo-RL adapter maps on a colocated DTensor job, set through a real launch script's idioms
SCRIPT = r"""#!/usr/bin/env bash
set -euo pipefail
export HF_HOME=/cache/hf
MODEL=${MODEL_PATH:-Qwen/Qwen2.5-1.5B-Instruct}
NAME=qwen-math
DATA=/data/math
PROMPTS=64
GROUP=8
COMMON=(
    cluster.num_nodes=2
    "cluster.gpus_per_node=8"
)
uv run python @SCRIPT@ \
    --config examples/configs/grpo_math_1B.yaml \
    "${COMMON[@]}" \
    policy.model_name=$MODEL \
    policy.tokenizer.name=Qwen/Qwen2.5-1.5B \
    grpo.num_prompts_per_step=$PROMPTS \
    grpo.num_generations_per_prompt=$GROUP \
    policy.train_global_batch_size=$((PROMPTS * GROUP / 2)) \
    policy.train_micro_batch_size=4 \
    policy.logprob_batch_size=4 \
    grpo.max_num_steps=200 \
    grpo.seed=7 \
    loss_fn.reference_policy_kl_penalty=0.001 \
    loss_fn.ratio_clip_max=0.28 \
    policy.optimizer.kwargs.lr=3e-6 \
    policy.optimizer.kwargs.weight_decay=0.05 \
    policy.dtensor_cfg.tensor_parallel_size=2 \
    policy.dtensor_cfg.activation_checkpointing=true \
    policy.max_total_sequence_length=2048 \
    data.max_input_seq_length=512 \
    policy.generation.temperature=0.9 \
    policy.generation.top_p=0.95 \
    policy.generation.top_k=50 \
    policy.generation.vllm_cfg.tensor_parallel_size=2 \
    policy.generation.vllm_cfg.gpu_memory_utilization=0.7 \
    policy.generation.vllm_cfg.async_engine=true \
    data.shuffle=false \
    @DATA@ \
    env.math.math_verify_impl=dapo_math_verify \
    checkpointing.checkpoint_dir=results/${NAME} \
    checkpointing.save_period=20 \
    checkpointing.keep_top_k=2 \
    checkpointing.metric_name=null \
    checkpointing.save_consolidated=true \
    grpo.val_period=10 \
    grpo.val_at_start=true \
    logger.wandb_enabled=true \
    logger.wandb.project=math-rl \
    logger.wandb.name=$NAME \
    logger.tensorboard_enabled=true @EXTRA@ "$@" 2>&1 | tee train.log
"""

#: how each tag names one training and one validation file (the flat keys before 0.6.0, the data blocks after)
FLAT = (
    "data.dataset_name=ResponseDataset +data.train_data_path=$DATA/train.jsonl "
    "+data.val_data_path=$DATA/val.jsonl +data.input_key=question +data.output_key=answer"
)
BLOCKS = (
    "data.train.dataset_name=ResponseDataset +data.train.data_path=$DATA/train.jsonl "
    "+data.train.input_key=question +data.train.output_key=answer data.train.split_validation_size=0 "
    '"data.validation={dataset_name:ResponseDataset,data_path:$DATA/val.jsonl,input_key:question,output_key:answer}"'
)


def script(version: str, extra: str = "") -> str:
    blocks = version >= "0.6.0"
    name = "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"
    if version >= "0.5.0":
        extra = (
            "loss_fn.reference_policy_kl_type=k1 ++policy.dtensor_cfg.lora_cfg.enabled=true "
            "++policy.dtensor_cfg.lora_cfg.dim=16 ++policy.dtensor_cfg.lora_cfg.alpha=32 " + extra
        )
    return (
        SCRIPT.replace("@SCRIPT@", name)
        .replace("@DATA@", BLOCKS if blocks else FLAT)
        .replace("@EXTRA@", extra)
    )


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"nemo-rl": "rladapt.adapters.nemo_rl"}, use_entry_points=False)


@pytest.fixture
def checkout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tag's folder as the working directory: a launch's config paths are relative to its checkout."""
    root = tag(str(request.param)).root
    monkeypatch.chdir(root)
    return root


def _imported(registry: Registry, version: str, text: str, source: str = "run.sh") -> Imported:
    launch = read_native(fw, text, source, {}, version)
    return build(fw, version, list(launch.argv), source=source, registry=registry, env=launch.env, header="h")


def _round_trip(registry: Registry, version: str, imported: Imported) -> list[str]:
    job = load_job_text(imported.text, [], "imported.yaml")
    final = launch_effective(fw, render_native(job, f"nemo-rl=={version}", registry).native)
    return differences(imported.target, final)


def _spec(imported: Imported) -> dict[str, Any]:
    return dict(yaml.safe_load(imported.text)["spec"])


@pytest.mark.parametrize("checkout", VERSIONS, indirect=True)
def test_script_round_trips_and_lands_in_spec_fields(checkout: Path, registry: Registry) -> None:
    version = checkout.name.removeprefix("v")
    imported = _imported(registry, version, script(version))
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    assert spec["model"]["path"] == "Qwen/Qwen2.5-1.5B-Instruct"  # ${MODEL_PATH:-...}
    assert spec["model"]["tokenizer"] == "Qwen/Qwen2.5-1.5B"
    assert spec["model"]["gradient_checkpointing"] is True
    assert spec["algorithm"]["group_size"] == 8
    assert spec["algorithm"]["kl"]["coef"] == pytest.approx(0.001)
    assert spec["algorithm"]["clip"] == {"high": 0.28}  # low is rladapt's 0.2, as NeMo-RL's
    training = spec["training"]
    assert (training["global_batch"], training["mini_batch"], training["micro_batch_per_gpu"]) == (64, 32, 4)
    assert training["steps"] == 200
    # NeMo-RL stops at whichever of max_num_steps / max_num_epochs comes first, as the spec's pair does
    assert training["epochs"] == tag(version).base()["grpo"]["max_num_epochs"]
    assert training["optimizer"]["lr"] == pytest.approx(3e-6)
    assert training["optimizer"]["weight_decay"] == pytest.approx(0.05)
    assert "parallel" not in training  # the spec holds tp > 1 for megatron only: DTensor's TP stays native
    rollout = spec["rollout"]
    assert rollout["tensor_parallel"] == 2 and rollout["mode"] == "async"
    assert (rollout["temperature"], rollout["top_p"], rollout["top_k"]) == (0.9, 0.95, 50)
    assert rollout["gpu_memory_utilization"] == pytest.approx(0.7)
    data = spec["data"]
    assert data["train"] == ["/data/math/train.jsonl"] and data["val"] == ["/data/math/val.jsonl"]
    assert data["prompt_key"] == "question" and data["shuffle"] is False
    # generation.max_new_tokens is the example config's ${policy.max_total_sequence_length}: a response may take
    # the whole length, the prompt and it sharing one budget
    assert (data["max_prompt_length"], data["max_response_length"], data["max_length"]) == (512, 2048, 2048)
    assert data["seed"] == 7
    assert spec["reward"] == {"builtin": {"name": "math_dapo"}}
    ck = spec["checkpoint"]
    assert (ck["dir"], ck["every_steps"], ck["keep_last"], ck["save_hf"]) == (
        "results/qwen-math",
        20,
        2,
        True,
    )
    assert spec["eval"] == {"every_steps": 10, "before_training": True}
    assert spec["logging"]["backends"] == ["console", "wandb", "tensorboard"]
    assert (spec["logging"]["project"], spec["logging"]["experiment"]) == ("math-rl", "qwen-math")
    # the launch's own folder of logs (the example config's "logs"): a spec field, not a native item
    assert spec["logging"]["dir"] == "logs"
    assert not any("log_dir" in item for item in spec["native"]["nemo-rl"])
    assert spec["placement"]["pools"][0] | {"roles": None} == {
        "name": "default",
        "nodes": 2,
        "gpus_per_node": 8,
        "roles": None,
    }
    assert spec["env"] == {"HF_HOME": "/cache/hf"}
    if version >= "0.5.0":
        assert spec["algorithm"]["kl"]["estimator"] == "k1"
        lora = spec["model"]["lora"]
        assert (lora["rank"], lora["alpha"]) == (16, 32)
        # 0.6.0's example config has a lora_cfg (match_all_linear: true); 0.5.0's has none, so no targets
        assert lora.get("target_modules") == (None if version == "0.5.0" else "all-linear")
    # the answer column has no spec field: the launch's value stays, as an override of the rendered config
    native = spec["native"]["nemo-rl"]
    assert any(item.endswith("output_key=answer") for item in native)
    assert "policy.dtensor_cfg.tensor_parallel_size=2" in native
    assert not any(item.startswith(("grpo.max_num_epochs", "grpo.max_num_steps")) for item in native)


@pytest.mark.parametrize("checkout", ["0.4.0", "0.7.0"], indirect=True)
def test_tag_defaults_that_differ_from_rladapts_are_written_out(checkout: Path, registry: Registry) -> None:
    """The upstream example as it ships: every spec default NeMo-RL does not share is written with its value."""
    version = checkout.name.removeprefix("v")
    launch = (
        "uv run python examples/run_grpo_math.py"
        if version < "0.5.0"
        else "uv run python examples/run_grpo.py"
    )
    imported = _imported(registry, version, launch + "\n")
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    base = tag(version).base()
    # rladapt's defaults: kl 0.0, gpu_memory_utilization 0.5, global_batch 256; NeMo-RL's example config:
    assert spec["algorithm"]["kl"]["coef"] == base["loss_fn"]["reference_policy_kl_penalty"]
    assert (
        spec["rollout"]["gpu_memory_utilization"]
        == base["policy"]["generation"]["vllm_cfg"]["gpu_memory_utilization"]
    )
    assert spec["training"]["global_batch"] == base["grpo"]["num_prompts_per_step"]
    assert spec["algorithm"]["group_size"] == base["grpo"]["num_generations_per_prompt"]
    # both run limits of the example config are spec fields (every NeMo-RL config sets both), not native items
    assert (spec["training"]["steps"], spec["training"]["epochs"]) == (
        base["grpo"]["max_num_steps"],
        base["grpo"]["max_num_epochs"],
    )
    # the launch's own logging folder is a spec field, and the metrics are read from there
    assert spec["logging"]["dir"] == base["logger"]["log_dir"]
    rendered = render_native(load_job_text(imported.text, [], "job.yaml"), f"nemo-rl=={version}", registry)
    assert rendered.native.metrics_dir == base["logger"]["log_dir"]
    # the built-in dataset: spec.data.builtin (data.train names it from 0.6.0, data.dataset_name before)
    native = spec.get("native", {}).get("nemo-rl", [])
    assert not any(item.startswith(("grpo.max_num_epochs", "grpo.max_num_steps")) for item in native)
    assert not any("log_dir" in item for item in native)
    assert spec["data"]["builtin"]["name"] == "OpenMathInstruct-2" and "train" not in spec["data"]
    assert not any("dataset_name" in item for item in native)


@pytest.mark.parametrize("checkout", ["0.4.0", "0.7.0"], indirect=True)
def test_megatron_example_config_round_trips(checkout: Path, registry: Registry) -> None:
    version = checkout.name.removeprefix("v")
    name = "run_grpo_math.py" if version < "0.5.0" else "run_grpo.py"
    text = (
        f"uv run python examples/{name} --config examples/configs/grpo_math_1B_megatron.yaml \\\n"
        "  cluster.gpus_per_node=8 policy.megatron_cfg.tensor_model_parallel_size=2 \\\n"
        "  policy.megatron_cfg.optimizer.lr=2e-6\n"
    )
    imported = _imported(registry, version, text)
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    assert spec["training"]["backend"] == "megatron"
    assert spec["training"]["parallel"]["tp"] == 2
    assert spec["training"]["optimizer"]["lr"] == pytest.approx(2e-6)


@pytest.mark.parametrize("checkout", ["0.4.0", "0.7.0"], indirect=True)
def test_separate_generation_and_async_grpo_round_trip(checkout: Path, registry: Registry) -> None:
    version = checkout.name.removeprefix("v")
    name = "run_grpo_math.py" if version < "0.5.0" else "run_grpo.py"
    text = (
        f"uv run python examples/{name} cluster.num_nodes=3 cluster.gpus_per_node=8 \\\n"
        "  policy.generation.colocated.enabled=false policy.generation.colocated.resources.num_nodes=1 \\\n"
        "  policy.generation.colocated.resources.gpus_per_node=8 policy.generation.vllm_cfg.async_engine=true \\\n"
        "  grpo.async_grpo.enabled=true grpo.async_grpo.max_trajectory_age_steps=2 \\\n"
        "  loss_fn.use_importance_sampling_correction=true\n"
    )
    imported = _imported(registry, version, text)
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    pools = {p["name"]: (p["nodes"], p["roles"]) for p in spec["placement"]["pools"]}
    assert pools["rollout"] == (1, ["rollout"]) and pools["default"][0] == 2
    # async_grpo_train reads max_num_steps only: the example's max_num_epochs is no spec epochs there
    base = tag(version).base()["grpo"]
    assert spec["training"]["steps"] == base["max_num_steps"] and "epochs" not in spec["training"]
    assert f"grpo.max_num_epochs={base['max_num_epochs']}" in spec["native"]["nemo-rl"]
    assert spec["weight_sync"] == {"max_staleness": 2}


@pytest.mark.parametrize("checkout", ["0.4.0", "0.6.0"], indirect=True)
def test_config_file_with_its_defaults_chain_and_overrides(
    checkout: Path, registry: Registry, tmp_path: Path
) -> None:
    """A team's own config inheriting the tag's example; ``_override_`` replaces a section from 0.6.0."""
    version = checkout.name.removeprefix("v")
    config = tmp_path / "team.yaml"
    body: dict[str, Any] = {
        "defaults": str(checkout / "examples" / "configs" / "grpo_math_1B.yaml"),
        "grpo": {"num_prompts_per_step": 16, "val_period": 4},
        "policy": {
            "model_name": "Qwen/Qwen2.5-0.5B",
            "train_global_batch_size": 256,
            "optimizer": {"kwargs": {"lr": 1.0e-6}},
        },
    }
    if version >= "0.6.0":
        body["logger"] = {"_override_": True, "log_dir": "team-logs", "wandb_enabled": False}
    config.write_text(yaml.safe_dump(body))
    launch = read_native(fw, config.read_text(), str(config), {}, version, ("grpo.max_num_steps=50",))
    target = fw.effective(list(launch.argv), version)
    assert target.values["grpo.num_prompts_per_step"] == 16
    assert target.sources["grpo.num_prompts_per_step"] == f"config {config}"
    assert target.values["grpo.max_num_steps"] == 50
    if version >= "0.6.0":  # the whole logger section replaced: upstream's keys under it are gone
        assert not any(k.startswith("logger.tensorboard") for k in target.values)
    imported = build(fw, version, list(launch.argv), source=str(config), registry=registry, header="h")
    assert _round_trip(registry, version, imported) == []
    assert _spec(imported)["training"]["global_batch"] == 16
    assert _spec(imported)["logging"]["dir"] == ("team-logs" if version >= "0.6.0" else "logs")


def test_nested_defaults_resolve_against_the_first_files_folder_before_0_6_0(tmp_path: Path) -> None:
    """load_config_with_inheritance passes the first file's folder down before 0.6.0 (nemo_rl/utils/config.py)."""
    for version, works in (("0.5.0", False), ("0.6.0", True)):
        config = tmp_path / f"team-{version}.yaml"
        parent = tag(version).root / "examples" / "configs" / "grpo_math_8B.yaml"
        config.write_text(f"defaults: {parent}\ngrpo:\n  val_period: 3\n")
        if works:
            eff = nemo_rl_effective(version, str(config), [])
            assert eff.values["policy.model_name"] == "meta-llama/Llama-3.1-8B-Instruct"
            assert eff.values["grpo.val_period"] == 3
            continue
        with pytest.raises(
            UsageError, match=rf"{tmp_path}/grpo_math_1B.yaml: no such NeMo-RL config \(named by"
        ):
            nemo_rl_effective(version, str(config), [])


@pytest.mark.parametrize("checkout", ["0.4.0"], indirect=True)
def test_loader_refusals_name_the_line_and_the_item(checkout: Path) -> None:
    """Hydra deletes no null key and adds no key that exists (hydra 1.3.8 _apply_overrides_to_config): the
    launch fails in NeMo-RL's loader, so import refuses it at its line."""
    text = "X=1\nuv run python examples/run_grpo_math.py \\\n  ~checkpointing.checkpoint_must_save_by\n"
    with pytest.raises(UsageError, match="Could not delete from config") as info:
        launch = read_launch(text, "run.sh", fw.match)
        fw.effective(list(launch.argv), "0.4.0")
    assert "~checkpointing.checkpoint_must_save_by" in str(info.value)
    text = "uv run python examples/run_grpo_math.py +grpo.val_period=3\n"
    with pytest.raises(UsageError, match="Could not append to config"):
        fw.effective(list(read_launch(text, "run.sh", fw.match).argv), "0.4.0")


@pytest.mark.parametrize("checkout", ["0.7.0"], indirect=True)
def test_a_checkout_of_another_tag_is_refused(checkout: Path) -> None:
    with pytest.raises(UsageError, match=r"is not NeMo-RL 0\.4\.0's: .* at tag v0\.4\.0"):
        fw.effective(["uv", "run", "python", "examples/run_grpo_math.py"], "0.4.0")


@pytest.mark.parametrize("checkout", ["0.7.0"], indirect=True)
def test_diff_compares_key_by_key_with_sources(checkout: Path, registry: Registry, tmp_path: Path) -> None:
    a = tmp_path / "a.sh"
    b = tmp_path / "b.sh"
    a.write_text("uv run python examples/run_grpo.py --config examples/configs/grpo_math_8B.yaml\n")
    b.write_text(
        "STEPS=9\nuv run python examples/run_grpo.py --config examples/configs/grpo_math_8B.yaml \\\n"
        "  grpo.max_num_steps=$STEPS\n"
    )
    left = side(str(a), "nemo-rl", "0.7.0", {}, registry)
    right = side(str(b), "nemo-rl", "0.7.0", {}, registry)
    diffs = compare(left, right)
    assert [(d.key, d.a, d.b) for d in diffs] == [("grpo.max_num_steps", 1000000, 9)]
    assert diffs[0].source_a == "nemo-rl 0.7.0 default" and diffs[0].source_b == f"{b}:2"
    assert left.source("policy.model_name") == "examples/configs/grpo_math_8B.yaml"
    # a deleted section: every key it held is absent on that side, blamed on the deleting line
    b.write_text(
        "uv run python examples/run_grpo.py --config examples/configs/grpo_math_8B.yaml \\\n  ~logger.mlflow\n"
    )
    gone = compare(left, side(str(b), "nemo-rl", "0.7.0", {}, registry))
    assert gone and all(d.key.startswith("logger.mlflow.") and not d.in_b for d in gone)
    assert {d.source_b for d in gone} == {f"{b}:1"}


def rladapt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_cli_import_then_diff_is_equal_and_errors_exit_2(tmp_path: Path) -> None:
    root = tag("0.7.0").root
    launch = tmp_path / "run.sh"
    launch.write_text(script("0.7.0"))
    out = tmp_path / "job.yaml"
    res = rladapt(root, "import", "-f", "nemo-rl==0.7.0", str(launch), "-o", str(out))
    assert res.returncode == 0, res.stderr
    head = out.read_text().splitlines()[:2]
    assert str(launch) in head[0] and "nemo-rl 0.7.0" in head[0]
    res = rladapt(root, "diff", str(out), str(launch), "-f", "nemo-rl==0.7.0", "--exit-code")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "same effective configuration" in res.stdout
    res = rladapt(root, "render", "-f", "nemo-rl==0.7.0", "--explain", str(out))
    assert res.returncode == 0, res.stderr
    assert "policy.model_name" in res.stdout and "<- spec field spec.model.path" in res.stdout
    assert "<- spec.native.nemo-rl[" in res.stdout  # the launch's settings without a spec field, by index
    # a variable only the caller's environment has: the line and the variable, nothing written
    bad = tmp_path / "bad.sh"
    bad.write_text("uv run python examples/run_grpo.py \\\n  grpo.max_num_steps=$STEPS\n")
    res = rladapt(root, "import", "-f", "nemo-rl==0.7.0", str(bad), "-o", str(tmp_path / "bad.yaml"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{bad}:1: variable STEPS cannot be resolved" in res.stderr
    # a deletion NeMo-RL's loader refuses, at its line
    bad.write_text("uv run python examples/run_grpo.py \\\n  ~grpo.no_such_key\n")
    res = rladapt(root, "import", "-f", "nemo-rl==0.7.0", str(bad), "-o", str(tmp_path / "bad.yaml"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{bad}:1:" in res.stderr and "~grpo.no_such_key" in res.stderr
    assert not (tmp_path / "bad.yaml").exists()
    # not run from a checkout: the config it would inherit is named, and the checkout asked for
    res = rladapt(tmp_path, "import", "-f", "nemo-rl==0.7.0", str(launch), "-o", str(tmp_path / "bad.yaml"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "examples/configs/grpo_math_1B.yaml: no such NeMo-RL config" in res.stderr
    assert "checkout of v0.7.0" in res.stderr and not (tmp_path / "bad.yaml").exists()


def test_0_2_1_launches_import_with_their_builtin_dataset(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.2.1 trains only on the datasets its run script names (data.dataset_name): spec.data.builtin, so its
    launches import and round-trip like the later tags'."""
    monkeypatch.chdir(tag("0.2.1").root)
    argv = [
        "uv",
        "run",
        "python",
        "examples/run_grpo_math.py",
        "grpo.val_period=3",
        "data.dataset_name=DeepScaler",
    ]
    assert fw.effective(argv, "0.2.1").values["grpo.val_period"] == 3
    imported = build(fw, "0.2.1", argv, source="run.sh", registry=registry)
    spec = _spec(imported)
    assert spec["data"]["builtin"] == {"name": "DeepScaler"}
    assert "train" not in spec["data"] and spec["eval"]["every_steps"] == 3
    assert not [
        item for item in spec.get("native", {}).get("nemo-rl", []) if item.startswith(("data.", "~data."))
    ]
    assert _round_trip(registry, "0.2.1", imported) == []


#: a team's reward-model config in the shape of upstream's grpo_rm_1B.yaml (0.4.0), on a node of its own
REWARD_MODEL: dict[str, Any] = {
    "model_name": "Skywork/Skywork-Reward-V2-Qwen3-0.6B",
    "tokenizer": {"name": "${env.reward_model.model_name}"},
    "precision": "bfloat16",
    "batch_size": 8,
    "checkpoint_path": None,
    "max_model_len": 2048,
    "resources": {"gpus_per_node": 8, "num_nodes": 1},
    "dtensor_cfg": {
        "_v2": True,
        "enabled": True,
        "sequence_parallel": False,
        "tensor_parallel_size": 1,
        "context_parallel_size": 1,
        "custom_parallel_plan": None,
        "cpu_offload": False,
        "activation_checkpointing": False,
    },
    "reward_model_cfg": {"enabled": True, "reward_model_type": "bradley_terry"},
    "dynamic_batching": {"enabled": False},
    "sequence_packing": {"enabled": False},
    "max_grad_norm": None,
}


@pytest.mark.parametrize("checkout", ["0.4.0", "0.7.0"], indirect=True)
def test_reward_model_config_round_trips(checkout: Path, registry: Registry, tmp_path: Path) -> None:
    """0.4.0 enables the reward model in env.reward_model and runs run_grpo_rm.py; 0.7.0 names the environment
    in the data config (data.default.env_name) and runs run_grpo.py."""
    version = checkout.name.removeprefix("v")
    rm = dict(REWARD_MODEL)
    body: dict[str, Any] = {
        "defaults": str(checkout / "examples" / "configs" / "grpo_math_1B.yaml"),
        "cluster": {"num_nodes": 2, "gpus_per_node": 8},
        "env": {"reward_model": rm},
    }
    if version < "0.5.0":
        rm["enabled"] = True
    else:
        body["data"] = {"default": {"env_name": "reward_model"}}
    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump(body))
    launch = read_native(fw, config.read_text(), str(config), {}, version)
    assert launch.argv[3] == ("examples/run_grpo_rm.py" if version < "0.5.0" else "examples/run_grpo.py")
    imported = build(fw, version, list(launch.argv), source=str(config), registry=registry, header="h")
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    assert spec["reward"] == {"model": {"path": REWARD_MODEL["model_name"], "micro_batch_per_gpu": 8}}
    pools = {p["name"]: (p["nodes"], p["roles"]) for p in spec["placement"]["pools"]}
    assert pools["reward"] == (1, ["reward"])


#: one launch per remaining mapped spec field: (tag, overrides, spec field -> the value the import must give)
VARIANTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "rloo": ("0.4.0", "grpo.normalize_rewards=false", {"algorithm.name": "rloo"}),
    "dapo": ("0.4.0", "grpo.use_dynamic_sampling=true", {"algorithm.name": "dapo"}),
    "gspo": (
        "0.7.0",
        "loss_fn.sequence_level_importance_ratios=true loss_fn.token_level_loss=false",
        {"algorithm.name": "gspo"},
    ),
    "reinforce_pp": (
        "0.6.0",
        "grpo.adv_estimator.name=reinforce_plus_plus grpo.adv_estimator.minus_baseline=false "
        "grpo.use_leave_one_out_baseline=false grpo.normalize_rewards=false",
        {"algorithm.name": "reinforce_pp"},
    ),
    "reinforce_pp_baseline": (
        "0.7.0",
        "grpo.adv_estimator.name=reinforce_plus_plus grpo.adv_estimator.minus_baseline=true "
        "grpo.use_leave_one_out_baseline=false grpo.normalize_rewards=false",
        {"algorithm.name": "reinforce_pp_baseline"},
    ),
    "kl_in_reward": ("0.7.0", "loss_fn.use_kl_in_reward=true", {"algorithm.kl.in": "reward"}),
    "clip_low": ("0.4.0", "loss_fn.ratio_clip_min=0.1", {"algorithm.clip.low": 0.1}),
    "dynamic_batch": (
        "0.4.0",
        "policy.dynamic_batching.enabled=true policy.dynamic_batching.train_mb_tokens=8192 "
        "policy.dynamic_batching.logprob_mb_tokens=8192",
        {"training.dynamic_batch": {"enabled": True, "max_tokens_per_gpu": 8192}},
    ),
    "epochs": ("0.5.0", "grpo.max_num_epochs=3 grpo.max_num_steps=2147483647", {"training.epochs": 3}),
    "max_tokens": (
        "0.7.0",
        "policy.max_total_sequence_length=1024 data.max_input_seq_length=256 policy.generation.max_new_tokens=512",
        {"data.max_prompt_length": 256, "data.max_response_length": 768, "rollout.max_tokens": 512},
    ),
    "dtype": ("0.4.0", "policy.precision=float16", {"model.dtype": "float16"}),
    "context_parallel": (
        "0.7.0",
        "cluster.gpus_per_node=4 policy.dtensor_cfg.context_parallel_size=2",
        {"training.parallel": {"cp": 2}},
    ),
    "sglang": ("0.7.0", "policy.generation.backend=sglang", {"rollout.engine": "sglang"}),
    "mlflow": (
        "0.5.0",
        "logger.mlflow_enabled=true logger.mlflow.experiment_name=exp logger.mlflow.run_name=run1",
        {
            "logging": {
                "backends": ["console", "mlflow"],
                "project": "exp",
                "experiment": "run1",
                "dir": "logs",
            }
        },
    ),
    "log_dir": ("0.7.0", "logger.log_dir=/logs/team", {"logging.dir": "/logs/team"}),
    "lora_targets": (
        "0.6.0",
        "policy.dtensor_cfg.lora_cfg.enabled=true policy.dtensor_cfg.lora_cfg.match_all_linear=false "
        "policy.dtensor_cfg.lora_cfg.target_modules=[q_proj,v_proj]",
        {"model.lora.target_modules": ["q_proj", "v_proj"]},
    ),
    "max_grad_norm": ("0.5.0", "policy.max_grad_norm=0.5", {"training.optimizer.max_grad_norm": 0.5}),
    "megatron_max_grad_norm": (
        "0.7.0",
        "--config examples/configs/grpo_math_1B_megatron.yaml cluster.gpus_per_node=8 policy.max_grad_norm=0.25",
        {"training.optimizer.max_grad_norm": 0.25},
    ),
    "megatron_pp_cp": (
        "0.7.0",
        "--config examples/configs/grpo_math_1B_megatron.yaml cluster.gpus_per_node=8 "
        "policy.megatron_cfg.pipeline_model_parallel_size=2 policy.megatron_cfg.context_parallel_size=2 "
        "policy.megatron_cfg.activation_checkpointing=true policy.megatron_cfg.optimizer.weight_decay=0.02",
        {
            "training.parallel": {"pp": 2, "cp": 2},
            "model.gradient_checkpointing": True,
            "training.optimizer.weight_decay": 0.02,
        },
    ),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_mapped_field_round_trips(
    name: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    version, items, expected = VARIANTS[name]
    monkeypatch.chdir(tag(version).root)
    script_ = "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"
    imported = _imported(registry, version, f"uv run python {script_} {items}\n")
    assert _round_trip(registry, version, imported) == []
    spec = _spec(imported)
    for path, value in expected.items():
        node: Any = spec
        for part in path.split("."):
            node = node[part]
        assert node == value, path


@pytest.mark.parametrize("version", ["0.4.0", "0.7.0"])
def test_the_tags_own_resolvers_resolve_and_are_removed_after(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``${mul:...}`` resolves as in the tag's run (examples/run_grpo*.py registers mul at 0.4.0; config.py's
    register_omegaconf_resolvers mul/div/max from 0.6.0), and no other framework's config sees the resolver."""
    from omegaconf import OmegaConf

    monkeypatch.chdir(tag(version).root)
    script_ = "examples/run_grpo_math.py" if version < "0.5.0" else "examples/run_grpo.py"
    argv = ["uv", "run", "python", script_, "policy.max_total_sequence_length=1000"]
    # tests/adapters/nemo_rl/test_nemo_rl_conformance.py registers mul for the whole process when it is imported
    # into the same worker: what the import adds, it removes, and it leaves a resolver it found
    had = OmegaConf.has_resolver("mul")
    values = fw.effective(argv, version).values
    micro = values["policy.train_micro_batch_size"]
    assert values["policy.dynamic_batching.train_mb_tokens"] == 1000 * micro
    assert OmegaConf.has_resolver("mul") is had
