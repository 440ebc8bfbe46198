"""``rladapt upgrade``: the shipped example specs on pinned version pairs where something is known to change.

Everything is real: the example specs, the built-in adapters, the bundled snapshots, the CLI in a subprocess.
The changes asserted are the ones the matrix notes record (verl's reward tree at 0.7.1 and ``ray_kwargs`` at 0.6.1,
OpenRLHF's flag renames at 0.9.x and 0.10.2, NeMo-RL's ``data.*`` blocks at 0.6.0). Before this change there was
no ``rladapt upgrade`` (click: "No such command 'upgrade'", exit 2, no JSON): every test fails on the code before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support.wheels import REPO

#: What NeMo-RL can express of the GSM8K example (as tests/compat/test_snapshot_check.py has it).
NEMO_GSM8K = [
    "spec.reward.function=null",
    "spec.reward.model={path: Skywork/Skywork-Reward-V2-Qwen3-0.6B, micro_batch_per_gpu: 2}",
    "spec.data.train=[data/gsm8k/train.jsonl]",
    "spec.data.val=[data/gsm8k/test.jsonl]",
    "spec.placement.pools=[{name: all, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]},"
    "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
]


def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def upgrade(example: str, framework: str, old: str, new: str, *overrides: str) -> dict[str, Any]:
    res = rladapt(
        "upgrade",
        f"examples/{example}",
        *overrides,
        "-f",
        framework,
        "--from",
        old,
        "--to",
        new,
        "--format",
        "json",
    )
    assert res.returncode == 0, res.stderr + res.stdout
    report: dict[str, Any] = json.loads(res.stdout)
    assert report["translates"] == {old: True, new: True}
    return report


def renames(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {r["old_key"]: (r["new_key"], r["paired_by"]) for r in report["renamed"]}


# --- verl ----------------------------------------------------------------------------------------------------


def test_verl_0_6_1_to_0_7_1_moves_the_reward_model_into_reward() -> None:
    report = upgrade("ppo-critic-rm.yaml", "verl", "0.6.1", "0.7.1")
    moved = renames(report)
    assert moved["reward_model.enable"] == ("reward.reward_model.enable", "field")
    assert moved["reward_model.model.path"] == ("reward.reward_model.model_path", "field")
    removed = {r["old_key"]: r for r in report["removed"]}
    assert (
        removed["reward_model.micro_batch_size_per_gpu"]["where"] == "spec.reward.model.micro_batch_per_gpu"
    )
    added = {r["new_key"]: r for r in report["added"]}
    assert added["reward.reward_model.rollout.name"]["new_value"] == "vllm"
    assert "rollout.sync" in report["capabilities_lost"]
    assert any("serves the reward model with a rollout engine" in n for n in report["notes"]["0.7.1"])


def test_verl_0_5_0_to_0_6_1_moves_the_patched_ray_init_key() -> None:
    report = upgrade("grpo-gsm8k.yaml", "verl", "0.5.0", "0.6.1")
    assert renames(report)["ray_init.num_cpus"] == ("ray_kwargs.ray_init.num_cpus", "schema")
    [change] = [r for r in report["renamed"] if r["old_key"] == "ray_init.num_cpus"]
    assert change["where"] == "patch verl-slurm-ray-num-cpus"
    assert report["patches_gained"] == [] and report["patches_dropped"] == []


def test_verl_separate_pool_cannot_go_back_to_0_7_1_exit_2_with_the_reasons() -> None:
    args = ("upgrade", "examples/async-grpo-separate.yaml", "-f", "verl", "--from", "0.8.0", "--to", "0.7.1")
    res = rladapt(*args)
    assert res.returncode == 2
    assert "does not translate on verl 0.7.1:" in res.stdout
    assert (
        "  spec.placement: verl 0.7.1 cannot express placement.separate (first supported in verl 0.8.0)"
        in res.stdout
    )
    lost = res.stdout.split("capabilities lost: ", 1)[1].splitlines()[0].split(", ")
    assert {"placement.separate", "weight_sync.off_policy", "weight_sync.partial_rollout"} <= set(lost)
    res = rladapt(*args, "--format", "json")
    assert res.returncode == 2
    report = json.loads(res.stdout)
    assert report["translates"] == {"0.8.0": True, "0.7.1": False}
    assert report["renamed"] == report["added"] == report["removed"] == []


# --- OpenRLHF ------------------------------------------------------------------------------------------------


def test_openrlhf_0_10_1_post2_to_0_10_2_every_flat_flag_respelled() -> None:
    from rladapt.adapters.openrlhf.versions import DOTTED

    report = upgrade("grpo-gsm8k.yaml", "openrlhf", "0.10.1.post2", "0.10.2")
    moved = renames(report)
    assert moved["--actor_num_nodes"] == ("--actor.num_nodes", "schema")
    assert moved["--micro_train_batch_size"] == ("--train.micro_batch_size", "schema")
    # the schema cannot see these (other words); the spec field that set them can
    assert moved["--pretrain"] == ("--actor.model_name_or_path", "field")
    assert moved["--actor_learning_rate"] == ("--actor.adam.lr", "field")
    # every pairing is the adapter's own spelling table
    assert all(f"--{DOTTED[old[2:]]}" == new for old, (new, _) in moved.items())
    assert report["removed"] == [] and report["added"] == []
    assert report["changed"] == []


def test_openrlhf_0_8_11_to_0_9_10_renames_and_drops_a_patch() -> None:
    report = upgrade("ppo-critic-rm.yaml", "openrlhf", "0.8.11", "0.9.10")
    moved = renames(report)
    assert moved["--bf16"] == ("--param_dtype", "field")
    # 0.9.10 folds both lengths into --max_len (and leaves --max_new_tokens to OpenRLHF: max_len - prompt): one of
    # the old flags pairs with it by the spec field that set both, the other is gone.
    lengths = {"--prompt_max_len", "--generate_max_len"}
    paired = {old for old in lengths if moved.get(old) == ("--max_len", "field")}
    gone = {r["old_key"] for r in report["removed"]} & lengths
    assert len(paired) == 1 and paired | gone == lengths
    assert "--max_new_tokens" not in {r["new_key"] for r in report["added"]}
    [bf16] = [r for r in report["renamed"] if r["old_key"] == "--bf16"]
    assert (bf16["old_value"], bf16["new_value"]) == (True, "bf16")
    assert report["patches_dropped"] == ["openrlhf-nccl-cumem-consistent"]
    assert "openrlhf.async_queue_size" in report["capabilities_gained"]


def test_openrlhf_0_5_9_post1_to_0_7_5_gains_a_patch_and_flags() -> None:
    report = upgrade("ppo-critic-rm.yaml", "openrlhf", "0.5.9.post1", "0.7.5")
    assert report["patches_gained"] == ["openrlhf-ray-init-runtime-env-override"]
    added = {r["new_key"]: r["where"] for r in report["added"]}
    assert added["--kl_estimator"] == "spec.algorithm.kl.estimator"


# --- NeMo-RL -------------------------------------------------------------------------------------------------


def test_nemo_rl_0_5_0_to_0_6_0_regroups_data_into_blocks() -> None:
    report = upgrade("grpo-gsm8k.yaml", "nemo-rl", "0.5.0", "0.6.0", *NEMO_GSM8K)
    moved = renames(report)
    assert moved["data.train_data_path"] == ("data.train.data_path", "schema")
    assert moved["data.val_data_path"] == ("data.validation.data_path", "value")
    assert moved["data.env_name"] == ("data.default.env_name", "field")
    added = {r["new_key"] for r in report["added"]}
    assert "grpo.adv_estimator.name" in added
    assert "kl.reward" in report["capabilities_gained"]


def test_nemo_rl_0_2_1_cannot_express_the_reward_model_exit_2() -> None:
    res = rladapt(
        "upgrade",
        "examples/grpo-gsm8k.yaml",
        *NEMO_GSM8K,
        "-f",
        "nemo-rl",
        "--from",
        "0.2.1",
        "--to",
        "0.4.0",
    )
    assert res.returncode == 2
    assert "does not translate on nemo-rl 0.2.1:" in res.stdout
    assert "spec.reward.model: nemo-rl 0.2.1 cannot express reward.model" in res.stdout


# --- usage ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["examples/grpo-gsm8k.yaml", "-f", "verl==0.9.1", "--from", "0.8.0", "--to", "0.9.1"],
            "--framework 'verl==0.9.1': give the name only; the versions are --from and --to",
        ),
        (["examples/grpo-gsm8k.yaml", "-f", "verl", "--from", "0.3.0", "--to", "0.9.1"], "--from '0.3.0': "),
        (["examples/grpo-gsm8k.yaml", "-f", "verl", "--from", "0.8.0", "--to", "9.9"], "--to '9.9': "),
        (["examples/missing.yaml", "-f", "verl", "--from", "0.8.0", "--to", "0.9.1"], "does not exist"),
        (
            [
                "examples/grpo-gsm8k.yaml",
                "spec.training.global_batch=oops",
                "-f",
                "verl",
                "--from",
                "0.8.0",
                "--to",
                "0.9.1",
            ],
            "spec.training.global_batch: wrong value; expected a valid integer, found 'oops'",
        ),
    ],
)
def test_upgrade_usage_errors_exit_2_naming_the_argument(args: list[str], message: str) -> None:
    res = rladapt("upgrade", *args)
    assert res.returncode == 2, res.stderr + res.stdout
    assert message in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""  # no half report


def test_upgrade_reads_a_piped_spec_once() -> None:
    text = (REPO / "examples" / "grpo-gsm8k.yaml").read_text(encoding="utf-8")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rladapt.cli",
            "upgrade",
            "/dev/stdin",
            "-f",
            "verl",
            "--from",
            "0.5.0",
            "--to",
            "0.6.1",
        ],
        cwd=REPO,
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "ray_init.num_cpus -> ray_kwargs.ray_init.num_cpus" in res.stdout
