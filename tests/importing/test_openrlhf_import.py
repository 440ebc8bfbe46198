"""OpenRLHF: import(launch) renders to the same effective namespace as the launch, on pinned versions from the
oldest to the newest, on both sides of the 0.10.2 flag renames.

"The same" is judged twice: by rladapt's offline model (``openrlhf_effective``: the schema snapshot, then the
version's post-parse rules of ``rladapt.adapters.openrlhf.adjust``) and by OpenRLHF's own code, the parser and
the ``__main__`` statements after ``parse_args`` of each version's real wheel (``tests.support.
openrlhf_namespace``); the offline model is checked against the real one on every launch here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from rladapt import compat
from rladapt.adapters.openrlhf import importer as fw
from rladapt.adapters.openrlhf.versions import has_flag, option
from rladapt.importing.importer import Imported, build, differences, read_back_only
from rladapt.importing.script import Launch, read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.plugins.effective import same
from rladapt.primitives import UsageError, load_job_text
from tests.importing.test_migrate_cli import rladapt
from tests.support.openrlhf_namespace import namespace

# GRPO on the hybrid engine (every model and vLLM on one 8-GPU pool), a reward function, LoRA, KL in the loss
# (k3), an asymmetric clip, entropy, dynamic batching, evaluation, wandb and tensorboard: flat flags
# (0.9.8 to 0.10.1.post2), submitted with `ray job submit`, with variables, ${VAR:-default}, $((...)), arrays
# (one spread over lines) and "$@"
FLAT = r"""#!/usr/bin/env bash
set -euo pipefail
export NCCL_SOCKET_IFNAME=eth0
MODEL=${MODEL_PATH:-Qwen/Qwen2.5-1.5B-Instruct}
SAVE=/ckpt/qwen-grpo
GPUS=8
ENGINES=$((GPUS / 2))
LORA=(--lora_rank 16 --lora_alpha 32 --target_modules q_proj v_proj)
EVAL_ARGS=(
   --eval_dataset /data/math/test.jsonl
   --eval_steps 10
   --eval_temperature 0.7
   --eval_n_samples_per_prompt 2
)
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"working_dir": "/openrlhf", "env_vars": {"NCCL_DEBUG": "INFO"}}' \
   -- python3 -m openrlhf.cli.train_ppo_ray \
   --ref_num_nodes 1 \
   --ref_num_gpus_per_node $GPUS \
   --actor_num_nodes 1 \
   --actor_num_gpus_per_node $GPUS \
   --vllm_num_engines $ENGINES \
   --vllm_tensor_parallel_size 2 \
   --colocate_all_models \
   --vllm_gpu_memory_utilization 0.6 \
   --vllm_enable_sleep \
   --deepspeed_enable_sleep \
   --advantage_estimator group_norm \
   --pretrain "$MODEL" \
   --remote_rm_url /openrlhf/examples/python/reward_func.py \
   --save_path $SAVE/final \
   --ckpt_path $SAVE \
   --save_hf_ckpt \
   --save_steps 20 \
   --max_ckpt_num 2 \
   --load_checkpoint \
   --micro_train_batch_size 4 \
   --train_batch_size 128 \
   --micro_rollout_batch_size 8 \
   --rollout_batch_size 64 \
   --n_samples_per_prompt 8 \
   --num_episodes 2 \
   --max_epochs 2 \
   --max_len 3072 \
   --max_new_tokens 2048 \
   --temperature 0.9 \
   --top_p 0.95 \
   --zero_stage 3 \
   --param_dtype bf16 \
   --actor_learning_rate 5e-7 \
   --l2 0.01 \
   --lr_warmup_ratio 0 \
   --init_kl_coef 1e-3 \
   --use_kl_loss \
   --kl_estimator k3 \
   --eps_clip_low_high 0.2 0.28 \
   --entropy_loss_coef 0.001 \
   --seed 7 \
   --prompt_data /data/math/train.jsonl \
   --input_key problem \
   --label_key answer \
   --apply_chat_template \
   "${EVAL_ARGS[@]}" \
   "${LORA[@]}" \
   --gradient_checkpointing \
   --use_dynamic_batch \
   --train_max_tokens_per_gpu 8192 \
   --normalize_reward \
   --adam_offload \
   --use_wandb "${WANDB_API_KEY:-dummy}" \
   --wandb_project math-grpo \
   --wandb_run_name qwen-grpo-lora \
   --use_tensorboard $SAVE/tensorboard "$@"
"""

# the same launch in the dotted flags of 0.10.2 on (spelled after the research notes' rename map)
DOTTED = r"""#!/usr/bin/env bash
set -euo pipefail
export NCCL_SOCKET_IFNAME=eth0
MODEL=${MODEL_PATH:-Qwen/Qwen2.5-1.5B-Instruct}
SAVE=/ckpt/qwen-grpo
GPUS=8
ENGINES=$((GPUS / 2))
LORA=(--ds.lora.rank 16 --ds.lora.alpha 32 --ds.lora.target_modules q_proj v_proj)
EVAL_ARGS=(
   --eval.dataset /data/math/test.jsonl
   --eval.steps 10
   --eval.temperature 0.7
   --eval.n_samples_per_prompt 2
)
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"working_dir": "/openrlhf", "env_vars": {"NCCL_DEBUG": "INFO"}}' \
   -- python3 -m openrlhf.cli.train_ppo_ray \
   --ref.num_nodes 1 \
   --ref.num_gpus_per_node $GPUS \
   --actor.num_nodes 1 \
   --actor.num_gpus_per_node $GPUS \
   --vllm.num_engines $ENGINES \
   --vllm.tensor_parallel_size 2 \
   --train.colocate_all \
   --vllm.gpu_memory_utilization 0.6 \
   --vllm.enable_sleep \
   --ds.enable_sleep \
   --algo.advantage.estimator group_norm \
   --actor.model_name_or_path "$MODEL" \
   --reward.remote_url /openrlhf/examples/python/reward_func.py \
   --ckpt.output_dir $SAVE/final \
   --ckpt.path $SAVE \
   --ckpt.save_hf \
   --ckpt.save_steps 20 \
   --ckpt.max_num 2 \
   --ckpt.load_enable \
   --train.micro_batch_size 4 \
   --train.batch_size 128 \
   --rollout.micro_batch_size 8 \
   --rollout.batch_size 64 \
   --rollout.n_samples_per_prompt 8 \
   --train.num_episodes 2 \
   --train.max_epochs 2 \
   --data.max_len 3072 \
   --rollout.max_new_tokens 2048 \
   --rollout.temperature 0.9 \
   --rollout.top_p 0.95 \
   --ds.zero_stage 3 \
   --ds.param_dtype bf16 \
   --actor.adam.lr 5e-7 \
   --actor.adam.weight_decay 0.01 \
   --actor.lr_warmup_ratio 0 \
   --algo.kl.init_coef 1e-3 \
   --algo.kl.use_loss \
   --algo.kl.estimator k3 \
   --actor.eps_clip_low_high 0.2 0.28 \
   --actor.entropy_coef 0.001 \
   --train.seed 7 \
   --data.prompt_dataset /data/math/train.jsonl \
   --data.input_key problem \
   --data.label_key answer \
   --data.apply_chat_template \
   "${EVAL_ARGS[@]}" \
   "${LORA[@]}" \
   --actor.gradient_checkpointing_enable \
   --train.dynamic_batch_enable \
   --train.max_tokens_per_gpu 8192 \
   --reward.normalize_enable \
   --ds.adam_offload \
   --logger.wandb.key "${WANDB_API_KEY:-dummy}" \
   --logger.wandb.project math-grpo \
   --logger.wandb.run_name qwen-grpo-lora \
   --logger.tensorboard_dir $SAVE/tensorboard "$@"
"""

# PPO with a critic and a reward model on separate pools (actor+ref, critic+reward, vLLM), asynchronous
# training with a queue of 2, KL in the reward: a bare command line
PPO = r"""python3 -m openrlhf.cli.train_ppo_ray --actor_num_nodes 1 --actor_num_gpus_per_node 4 --ref_num_nodes 1 --ref_num_gpus_per_node 4 --colocate_actor_ref --critic_num_nodes 1 --critic_num_gpus_per_node 2 --reward_num_nodes 1 --reward_num_gpus_per_node 2 --colocate_critic_reward --vllm_num_engines 2 --vllm_tensor_parallel_size 1 --vllm_sync_backend nccl --async_train --async_queue_size 2 --advantage_estimator gae --pretrain OpenRLHF/Llama-3-8b-sft-mixture --reward_pretrain OpenRLHF/Llama-3-8b-rm-700k --critic_pretrain OpenRLHF/Llama-3-8b-critic --save_path /ckpt/llama-ppo/final --ckpt_path /ckpt/llama-ppo --micro_train_batch_size 2 --train_batch_size 128 --micro_rollout_batch_size 4 --rollout_batch_size 1024 --max_samples 100000 --max_epochs 1 --max_len 2048 --zero_stage 2 --param_dtype bf16 --actor_learning_rate 5e-7 --critic_learning_rate 9e-6 --init_kl_coef 0.01 --gamma 0.99 --lambd 0.95 --eps_clip 0.2 --prompt_data OpenRLHF/prompt-collection-v0.1 --input_key context_messages --apply_chat_template --normalize_reward --packing_samples --gradient_checkpointing --use_tensorboard /logs/tb
"""

PPO_DOTTED = r"""python3 -m openrlhf.cli.train_ppo_ray \
    --actor.num_nodes 1 \
    --actor.num_gpus_per_node 4 \
    --ref.num_nodes 1 \
    --ref.num_gpus_per_node 4 \
    --train.colocate_actor_ref \
    --critic.num_nodes 1 \
    --critic.num_gpus_per_node 2 \
    --reward.num_nodes 1 \
    --reward.num_gpus_per_node 2 \
    --train.colocate_critic_reward \
    --vllm.num_engines 2 \
    --vllm.tensor_parallel_size 1 \
    --vllm.sync_backend nccl \
    --train.async_enable \
    --train.async_queue_size 2 \
    --algo.advantage.estimator gae \
    --actor.model_name_or_path OpenRLHF/Llama-3-8b-sft-mixture \
    --reward.model_name_or_path OpenRLHF/Llama-3-8b-rm-700k \
    --critic.model_name_or_path OpenRLHF/Llama-3-8b-critic \
    --ckpt.output_dir /ckpt/llama-ppo/final \
    --ckpt.path /ckpt/llama-ppo \
    --train.micro_batch_size 2 \
    --train.batch_size 128 \
    --rollout.micro_batch_size 4 \
    --rollout.batch_size 1024 \
    --data.max_samples 100000 \
    --train.max_epochs 1 \
    --data.max_len 2048 \
    --ds.zero_stage 2 \
    --ds.param_dtype bf16 \
    --actor.adam.lr 5e-7 \
    --critic.adam.lr 9e-6 \
    --algo.kl.init_coef 0.01 \
    --algo.advantage.gamma 0.99 \
    --algo.advantage.lambd 0.95 \
    --actor.eps_clip 0.2 \
    --data.prompt_dataset OpenRLHF/prompt-collection-v0.1 \
    --data.input_key context_messages \
    --data.apply_chat_template \
    --reward.normalize_enable \
    --ds.packing_samples \
    --actor.gradient_checkpointing_enable \
    --logger.tensorboard_dir /logs/tb
"""

# the oldest pinned version: OpenRLHF's own example of its time (train_ppo_llama_ray.sh), prompt/generate
# lengths, --bf16, --flash_attn, --use_kl_estimator_k3, a token from the caller's environment
OLD = r"""set -x
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"working_dir": "/openrlhf"}' \
   -- python3 -m openrlhf.cli.train_ppo_ray \
   --ref_num_nodes 1 \
   --ref_num_gpus_per_node 2 \
   --reward_num_nodes 1 \
   --reward_num_gpus_per_node 2 \
   --critic_num_nodes 1 \
   --critic_num_gpus_per_node 2 \
   --actor_num_nodes 1 \
   --actor_num_gpus_per_node 2 \
   --vllm_num_engines 2 \
   --vllm_tensor_parallel_size 1 \
   --colocate_critic_reward \
   --colocate_actor_ref \
   --pretrain OpenRLHF/Llama-3-8b-sft-mixture \
   --reward_pretrain OpenRLHF/Llama-3-8b-rm-mixture \
   --save_path /openrlhf/examples/checkpoint/llama3-8b-rlhf \
   --micro_train_batch_size 8 \
   --train_batch_size 128 \
   --micro_rollout_batch_size 16 \
   --rollout_batch_size 1024 \
   --max_samples 100000 \
   --max_epochs 1 \
   --prompt_max_len 1024 \
   --generate_max_len 1024 \
   --zero_stage 3 \
   --bf16 \
   --actor_learning_rate 5e-7 \
   --critic_learning_rate 9e-6 \
   --init_kl_coef 0.01 \
   --use_kl_estimator_k3 \
   --prompt_data OpenRLHF/prompt-collection-v0.1 \
   --input_key context_messages \
   --apply_chat_template \
   --normalize_reward \
   --packing_samples \
   --adam_offload \
   --flash_attn \
   --gradient_checkpointing \
   --use_wandb "$WANDB_TOKEN"
"""

# PPO on the hybrid engine (every model in one pool with vLLM, sleeping in turn): OpenRLHF's own example of the
# 0.8 line (train_ppo_llama_ray_hybrid_engine.sh), a flag given twice
HYBRID = r"""python3 -m openrlhf.cli.train_ppo_ray \
   --ref_num_nodes 1 --ref_num_gpus_per_node 8 \
   --reward_num_nodes 1 --reward_num_gpus_per_node 8 \
   --critic_num_nodes 1 --critic_num_gpus_per_node 8 \
   --actor_num_nodes 1 --actor_num_gpus_per_node 8 \
   --vllm_num_engines 4 --vllm_tensor_parallel_size 2 \
   --colocate_all_models --vllm_enable_sleep --deepspeed_enable_sleep \
   --vllm_gpu_memory_utilization 0.5 \
   --pretrain OpenRLHF/Llama-3-8b-sft-mixture --reward_pretrain OpenRLHF/Llama-3-8b-rm-700k \
   --save_path /openrlhf/examples/test_scripts/final/llama3-8b-rlhf --ckpt_path /openrlhf/examples/test_scripts/ckpt/llama3-8b-rlhf \
   --save_hf_ckpt --micro_train_batch_size 8 --train_batch_size 128 --micro_rollout_batch_size 16 --rollout_batch_size 1024 \
   --n_samples_per_prompt 1 --max_epochs 1 --prompt_max_len 1024 --max_samples 100000 --generate_max_len 1024 \
   --zero_stage 3 --bf16 --actor_learning_rate 5e-7 --critic_learning_rate 9e-6 --init_kl_coef 0.01 \
   --prompt_data OpenRLHF/prompt-collection-v0.1 --input_key context_messages --apply_chat_template \
   --normalize_reward --gradient_checkpointing --packing_samples --vllm_sync_backend nccl --enforce_eager --vllm_enable_sleep --deepspeed_enable_sleep
"""


def _old(version: str) -> str:
    """OLD in the flags of 0.7.5 (--kl_estimator) and 0.8.11 (no --flash_attn: flash attention is its default)."""
    text = OLD.replace("--use_kl_estimator_k3", "--kl_estimator k3")
    return text.replace("   --flash_attn \\\n", "") if version == "0.8.11" else text


SETS = {"WANDB_TOKEN": "wandb-token"}
PINNED = [entry.version for entry in compat.pinned("openrlhf")]
CASES = [
    pytest.param(OLD, "0.5.9.post1", id="old-0.5.9.post1"),
    pytest.param(_old("0.7.5"), "0.7.5", id="old-0.7.5"),
    pytest.param(_old("0.8.11"), "0.8.11", id="old-0.8.11"),
    pytest.param(HYBRID, "0.8.11", id="hybrid-0.8.11"),
    pytest.param(FLAT, "0.9.10", id="grpo-0.9.10"),
    pytest.param(FLAT, "0.10.1.post2", id="grpo-0.10.1.post2"),
    pytest.param(DOTTED, "0.10.2", id="grpo-0.10.2"),
    pytest.param(DOTTED, "0.11.2", id="grpo-0.11.2"),
    pytest.param(PPO, "0.9.10", id="ppo-0.9.10"),
    pytest.param(PPO, "0.10.1.post2", id="ppo-0.10.1.post2"),
    pytest.param(PPO_DOTTED, "0.10.2", id="ppo-0.10.2"),
    pytest.param(PPO_DOTTED, "0.11.2", id="ppo-0.11.2"),
]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"openrlhf": "rladapt.adapters.openrlhf"}, use_entry_points=False)


def _launch(text: str) -> Launch:
    return read_launch(text, "run.sh", fw.match, SETS)


def _imported(registry: Registry, text: str, version: str) -> tuple[Launch, Imported]:
    launch = _launch(text)
    imported = build(
        fw, version, list(launch.argv), source="run.sh", registry=registry, env=launch.env, header="h"
    )
    return launch, imported


def _args(argv: tuple[str, ...] | list[str]) -> list[str]:
    return list(argv[fw.match(list(argv)) :])


def _unequal(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The keys that differ, except the TensorBoard directory rladapt reads the metrics back from (no setting of
    the run: FrameworkAdapter.READ_BACK_KEYS). ``a`` is rladapt's effective configuration: its ``(entrypoint)``
    (the module run, tests/importing/test_launch_program.py) is no key of the namespace ``b``."""
    a = dict(a)
    assert a.pop("(entrypoint)", fw.ENTRY_MODULE) == fw.ENTRY_MODULE
    return {
        k: (a.get(k), b.get(k))
        for k in {*a, *b}
        if (k not in a or k not in b or not same(a[k], b[k]))
        and not read_back_only("openrlhf", k, a.get(k), b.get(k))
    }


@pytest.mark.parametrize(("text", "version"), CASES)
def test_offline_namespace_is_openrlhfs_own(text: str, version: str) -> None:
    """rladapt's model of the namespace (snapshot + post-parse rules) equals the wheel's own code's."""
    args = _args(_launch(text).argv)
    assert (
        _unequal(
            fw.effective(["python3", "-m", fw.ENTRY_MODULE, *args], version).values, namespace(version, args)
        )
        == {}
    )


@pytest.mark.parametrize(("text", "version"), CASES)
def test_round_trip_gives_the_launchs_namespace(registry: Registry, text: str, version: str) -> None:
    launch, imported = _imported(registry, text, version)
    # independently of build's own check: load the written text and render it again
    job = load_job_text(imported.text, [], "job.yaml")
    rendered = render_native(job, f"openrlhf=={version}", registry).native
    assert (
        differences(fw.effective(list(launch.argv), version), fw.effective(list(rendered.argv), version))
        == []
    )
    # and by OpenRLHF's own code; a run name left to OpenRLHF's clock (wandb_run_name's computed default) is
    # no setting of the run: only where the launch names one is it compared
    mine, theirs = namespace(version, _args(launch.argv)), namespace(version, _args(rendered.argv))
    clock = option(version, "wandb_run_name")
    if clock not in " ".join(launch.argv).split():
        mine.pop(clock), theirs.pop(clock)
    assert _unequal(mine, theirs) == {}


@pytest.mark.parametrize("version", ["0.9.10", "0.10.1.post2", "0.10.2", "0.11.2"])
def test_grpo_settings_land_in_spec_fields(registry: Registry, version: str) -> None:
    _, imported = _imported(registry, FLAT if Version(version) < Version("0.10.2") else DOTTED, version)
    job = imported.job
    spec = job.spec
    assert job.name == "qwen-grpo-lora"
    assert spec.model.path == "Qwen/Qwen2.5-1.5B-Instruct" and spec.model.gradient_checkpointing is True
    lora = spec.model.lora
    assert lora is not None and (lora.rank, lora.alpha, list(lora.target_modules)) == (
        16,
        32,
        ["q_proj", "v_proj"],
    )
    assert spec.reward.function is not None
    assert spec.reward.function.path == "/openrlhf/examples/python/reward_func.py"
    alg = spec.algorithm
    assert (alg.name, alg.group_size, alg.ppo_epochs, alg.entropy_coef) == ("grpo", 8, 2, 0.001)
    assert (alg.kl.coef, alg.kl.in_, alg.kl.estimator) == (0.001, "loss", "k3")
    assert (alg.clip.low, alg.clip.high) == (0.2, 0.28)
    tr = spec.training
    assert (tr.global_batch, tr.mini_batch, tr.micro_batch_per_gpu, tr.epochs) == (64, 16, 4, 2)
    assert tr.dynamic_batch.enabled and tr.dynamic_batch.max_tokens_per_gpu == 8192
    assert (tr.optimizer.lr, tr.optimizer.weight_decay, tr.optimizer.warmup_steps) == (5e-7, 0.01, 0)
    assert (tr.backend, tr.parallel.zero_stage) == ("deepspeed", 3)
    data = spec.data
    assert (data.train, data.val, data.prompt_key, data.seed) == (
        ["/data/math/train.jsonl"],
        ["/data/math/test.jsonl"],
        "problem",
        7,
    )
    # --max_len 3072 with --max_new_tokens 2048: the response is the new tokens, the prompt the rest
    assert (data.max_prompt_length, data.max_response_length, spec.rollout.max_tokens) == (1024, 2048, 2048)
    ro = spec.rollout
    assert (ro.temperature, ro.top_p, ro.tensor_parallel, ro.gpu_memory_utilization) == (0.9, 0.95, 2, 0.6)
    assert (ro.val.temperature, ro.val.n, spec.eval.every_steps) == (0.7, 2, 10)
    ck = spec.checkpoint
    assert (ck.dir, ck.every_steps, ck.keep_last, ck.save_hf, ck.resume) == (
        "/ckpt/qwen-grpo",
        20,
        2,
        True,
        "auto",
    )
    assert spec.logging.backends == ["console", "wandb", "tensorboard"]
    assert (spec.logging.project, spec.logging.experiment) == ("math-grpo", "qwen-grpo-lora")
    [pool] = job.placement.pools
    assert (pool.nodes, pool.gpus_per_node, pool.roles) == (1, 8, ["actor", "rollout", "ref"])
    # ray job submit's runtime env and the script's exports
    assert spec.runtime.working_dir == "/openrlhf"
    assert spec.env == {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"}
    assert any("ray job submit --address" in note for note in imported.notes)


@pytest.mark.parametrize("version", ["0.9.10", "0.11.2"])
def test_ppo_settings_land_in_spec_fields(registry: Registry, version: str) -> None:
    _, imported = _imported(registry, PPO if Version(version) < Version("0.10.2") else PPO_DOTTED, version)
    spec = imported.job.spec
    assert (spec.algorithm.name, spec.algorithm.gamma, spec.algorithm.lam) == ("ppo", 0.99, 0.95)
    assert (spec.algorithm.kl.coef, spec.algorithm.kl.in_) == (0.01, "reward")
    assert spec.model.critic_path == "OpenRLHF/Llama-3-8b-critic"
    assert spec.reward.model is not None and spec.reward.model.path == "OpenRLHF/Llama-3-8b-rm-700k"
    assert spec.training.critic_optimizer is not None and spec.training.critic_optimizer.lr == 9e-6
    assert spec.weight_sync.max_staleness == 2
    assert spec.checkpoint.resume == "never"
    pools = {p.name: (p.nodes, p.gpus_per_node, p.roles) for p in imported.job.placement.pools}
    assert pools == {
        "actor": (1, 4, ["actor", "ref"]),
        "rollout": (1, 2, ["rollout"]),
        "critic": (1, 2, ["critic", "reward"]),
    }


UNMAPPED = {
    "old-0.5.9.post1": ["--normalize_reward"],
    "grpo-0.9.10": ["--label_key", "--normalize_reward"],
    "grpo-0.11.2": ["--data.label_key", "--reward.normalize_enable"],
    "ppo-0.9.10": ["--normalize_reward"],
    "ppo-0.11.2": ["--reward.normalize_enable"],
}


@pytest.mark.parametrize(("text", "version"), [c for c in CASES if c.id in UNMAPPED])
def test_nothing_is_dropped_unmapped_flags_keep_their_order(
    registry: Registry, text: str, version: str
) -> None:
    _, imported = _imported(registry, text, version)
    native = imported.job.spec.native["openrlhf"]
    wanted = next(
        flags
        for case, flags in UNMAPPED.items()
        if case.endswith(version) and case.split("-")[0] in _kind(text)
    )
    assert [item.split()[0] for item in native if item.split()[0] in wanted] == wanted
    # every native item is one flag with its values, as the launch wrote it
    written = " ".join(_launch(text).argv)
    assert all(item.replace("'", "") in written for item in native)


def _kind(text: str) -> str:
    return "old" if "prompt_max_len" in text else "ppo" if "critic" in text else "grpo"


def test_a_launch_of_openrlhf_defaults_imports_them_explicitly(registry: Registry) -> None:
    """A launch that sets almost nothing runs with OpenRLHF's defaults (gae, 1024 prompts, micro batches 4 and
    8 on 0.9.10, KL 0.01 in the reward, 0.95 of the GPU for vLLM): the spec says so where rladapt's differ."""
    bare = (
        "python3 -m openrlhf.cli.train_ppo_ray --pretrain m --prompt_data d --remote_rm_url http://rm/score "
        "--vllm_num_engines 8 --apply_chat_template --colocate_all_models --vllm_enable_sleep "
        "--deepspeed_enable_sleep"
    )
    _, imported = _imported(registry, bare, "0.9.10")
    spec = imported.job.spec
    assert (spec.algorithm.name, spec.algorithm.kl.coef, spec.algorithm.kl.in_) == ("ppo", 0.01, "reward")
    tr = spec.training
    assert (tr.global_batch, tr.mini_batch, tr.micro_batch_per_gpu) == (1024, 128, 4)
    assert tr.critic_optimizer is not None and tr.critic_optimizer.lr == 9e-6
    assert spec.rollout.gpu_memory_utilization == 0.95 and spec.data.prompt_key == "input"
    assert (spec.checkpoint.dir, spec.checkpoint.resume) == ("./ckpt/checkpoints_ppo_ray", "never")
    # OpenRLHF's own micro rollout batch (not the training one) is old_log_prob's budget; its save path, which
    # no spec field holds, is written out
    assert tr.budgets.old_log_prob.micro_batch_per_gpu == 8
    assert spec.native["openrlhf"] == ["--save_path ./ckpt"]


def test_openrlhf_defaults_that_rladapt_would_change_are_written_out(registry: Registry) -> None:
    _, imported = _imported(registry, OLD, "0.5.9.post1")
    spec = imported.job.spec
    # OpenRLHF's own --ckpt_path and --vllm_gpu_memory_utilization: rladapt's defaults differ
    assert spec.checkpoint.dir == "./ckpt/checkpoints_ppo_ray"
    assert spec.rollout.gpu_memory_utilization == 0.9
    # no --load_checkpoint in the launch: rladapt's resume: auto would add it
    assert spec.checkpoint.resume == "never"
    _, ppo = _imported(registry, PPO, "0.9.10")
    # fields whose unset value is OpenRLHF's own stay unset where the launch has OpenRLHF's value
    assert ppo.job.spec.algorithm.kl.estimator is None and ppo.job.spec.data.seed is None
    assert ppo.job.spec.training.optimizer.weight_decay is None
    assert ppo.job.spec.training.optimizer.warmup_steps is None


@pytest.mark.parametrize("version", PINNED)
def test_every_post_parse_rule_matches_the_wheel(version: str) -> None:
    """Launches that trigger each rewrite after parse_args, on every pinned version, judged by its wheel."""
    v = Version(version)

    def o(flat: str) -> str:
        return option(version, flat)

    base = [o("pretrain"), "m", o("prompt_data"), "d", o("vllm_num_engines"), "8", o("apply_chat_template")]
    base += [o("micro_rollout_batch_size"), "1"]
    launches = [
        [*base, o("reward_pretrain"), "rm-a,rm-b", o("vllm_enable_sleep"), o("input_template"), "no braces"],
        [*base, o("remote_rm_url"), "http://a,http://b", o("packing_samples")],
        [*base, o("remote_rm_url"), "r.py", o("advantage_estimator"), "rloo", o("n_samples_per_prompt"), "2"],
    ]
    if v >= Version("0.8.11"):
        launches.append([*base, o("remote_rm_url"), "r.py", o("ring_attn_size"), "2"])
        launches.append([*base, o("agent_func_path"), "agent.py", o("use_dynamic_batch")])
        launches.append([*base, o("remote_rm_url"), "r.py", o("eps_clip"), "0.3"])
    if v >= Version("0.10.2"):
        launches.append([*base, o("remote_rm_url"), "r.py", "--actor.muon.no_nesterov"])
    if v >= Version("0.11.2"):
        launches.append([*base, o("remote_rm_url"), "r.py", "--algo.advantage.is_correction_threshold", "3"])
    for args in launches:
        offline = fw.effective(["python3", "-m", fw.ENTRY_MODULE, *args], version).values
        assert _unequal(offline, namespace(version, args)) == {}, args


def test_a_launch_in_another_versions_flags_names_their_spelling(registry: Registry) -> None:
    with pytest.raises(UsageError) as error:
        _imported(registry, FLAT, "0.11.2")
    assert "openrlhf 0.11.2 has no flag --ref_num_nodes (here it is --ref.num_nodes" in str(error.value)
    assert "a flag of openrlhf 0.5.9.post1 to 0.10.1.post2" in str(error.value)


def test_an_input_template_launch_round_trips_without_a_chat_template(registry: Registry) -> None:
    """OpenRLHF ignores --input_template under --apply_chat_template (datasets/prompts_dataset.py): a spec
    passing a template gets no chat template, so such a launch imports; one with neither imports with
    spec.data.chat_template false (the prompt as the data holds it), and the render adds no chat template."""
    bare = (
        "python3 -m openrlhf.cli.train_ppo_ray --pretrain m --prompt_data d --remote_rm_url r.py "
        "--advantage_estimator group_norm --n_samples_per_prompt 4 --vllm_num_engines 8 "
        "--micro_rollout_batch_size 2"
    )
    _, imported = _imported(registry, bare + " --input_template 'User: {}\\nAssistant: '", "0.9.10")
    rendered = render_native(imported.job, "openrlhf==0.9.10", registry).native
    assert "--apply_chat_template" not in rendered.argv
    assert any("input template" in note for note in rendered.notes)
    _, imported = _imported(registry, bare, "0.9.10")
    assert imported.job.spec.data.chat_template is False
    assert (
        "--apply_chat_template" not in render_native(imported.job, "openrlhf==0.9.10", registry).native.argv
    )


def test_an_unresolvable_variable_names_the_line_and_the_variable(registry: Registry) -> None:
    with pytest.raises(UsageError) as error:
        read_launch(OLD, "run.sh", fw.match)
    assert "run.sh:2: variable WANDB_TOKEN cannot be resolved" in str(error.value)
    assert "--set WANDB_TOKEN=VALUE" in str(error.value)


# --- the CLI ------------------------------------------------------------------------------------------------


def test_cli_import_diff_and_explain(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text(FLAT)
    (tmp_path / "b.sh").write_text(
        FLAT.replace("--l2 0.01", "--l2 0.02").replace("--eps_clip_low_high 0.2 0.28", "")
    )
    done = rladapt("import", "-f", "openrlhf==0.9.10", "a.sh", "-o", "job.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "job.yaml").read_text()
    assert text.startswith("# Imported by rladapt import from a.sh (line 15), openrlhf 0.9.10.\n")
    same_run = rladapt("diff", "job.yaml", "a.sh", "-f", "openrlhf==0.9.10", "--exit-code", cwd=tmp_path)
    assert same_run.returncode == 0, same_run.stderr
    assert "same effective configuration" in same_run.stdout
    plain = rladapt("diff", "a.sh", "b.sh", "-f", "openrlhf==0.9.10", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "--l2\n  A: 0.01  (a.sh:15)\n  B: 0.02  (b.sh:15)" in plain.stdout
    failing = rladapt(
        "diff", "job.yaml", "b.sh", "-f", "openrlhf==0.9.10", "--exit-code", "--format", "json", cwd=tmp_path
    )
    assert failing.returncode == 1, failing.stderr
    report = json.loads(failing.stdout)
    rows = {d["key"]: d for d in report["differences"]}
    assert rows["--l2"]["a"]["source"] == "spec.training.optimizer.weight_decay"
    clip = rows["--eps_clip_low_high"]
    assert clip["a"]["source"] == "spec.algorithm.clip.high"
    assert clip["b"]["value"] == [0.2, 0.2]
    assert clip["b"]["source"] == "openrlhf 0.9.10 after parsing: unset: (--eps_clip, --eps_clip)"
    native = rows.get("--normalize_reward")
    assert native is None  # both launches pass it
    explain = rladapt("render", "-f", "openrlhf==0.9.10", "job.yaml", "--explain", cwd=tmp_path)
    assert explain.returncode == 0, explain.stderr
    lines = explain.stdout.splitlines()
    assert lines[0] == "# openrlhf 0.9.10: qwen-grpo-lora (explain)"
    assert any(
        line.startswith("--l2 ") and "<- spec field spec.training.optimizer.weight_decay" in line
        for line in lines
    )
    assert any(line.startswith("--normalize_reward ") and "spec.native.openrlhf[" in line for line in lines)


# The spec fields of GRPO's variants, offload, packing, budgets, best checkpoint and engine settings, in each
# version's own spelling (flat name -> option of the version): Dr. GRPO with dynamic filtering (dapo without the
# std), a dual clip, Adam and reference offload, packed sequences (no dynamic batching), a micro rollout batch of
# its own, eager vLLM (asked to sleep, which OpenRLHF ignores off the hybrid engine), the overlong penalty with
# --max_new_tokens, a best-checkpoint metric and (0.11.2) the loss aggregation
def _variants(version: str) -> str:
    v = Version(version)
    items: list[tuple[str, str | None]] = [
        ("actor_num_nodes", "1"),
        ("actor_num_gpus_per_node", "4"),
        ("ref_num_nodes", "1"),
        ("ref_num_gpus_per_node", "4"),
        ("colocate_actor_ref", None),
        ("vllm_num_engines", "4"),
        ("vllm_tensor_parallel_size", "1"),
        ("vllm_enable_sleep", None),  # turned off after parsing: the models do not share vLLM's GPUs
        ("enforce_eager", None),
        ("pretrain", "Qwen/Qwen2.5-7B"),
        ("remote_rm_url", "http://rm:5000/get_reward"),
        ("prompt_data", "/data/dapo.jsonl"),
        ("input_key", "prompt"),
        ("apply_chat_template", None),
        ("advantage_estimator", "dr_grpo"),
        ("n_samples_per_prompt", "8"),
        ("init_kl_coef", "0.001"),
        ("use_kl_loss", None),
        ("dual_clip", "3.0"),
        ("dynamic_filtering", None),
        ("dynamic_filtering_reward_range", "0 1"),
        ("eps_clip_low_high", "0.2 0.28"),
        ("rollout_batch_size", "32"),
        ("train_batch_size", "256"),
        ("micro_train_batch_size", "2"),
        ("micro_rollout_batch_size", "16"),
        ("adam_offload", None),
        ("ref_reward_offload", None),
        ("packing_samples", None),
        (
            "param_dtype" if has_flag(v, "param_dtype") else "bf16",
            "bf16" if has_flag(v, "param_dtype") else None,
        ),
        ("save_path", "/ckpt/dapo/final"),
        ("ckpt_path", "/ckpt/dapo"),
    ]
    if has_flag(v, "max_new_tokens"):
        items += [("max_len", "4096"), ("max_new_tokens", "3072")]
        items += [("overlong_buffer_len", "1024"), ("overlong_penalty_factor", "0.5")]
    else:
        items += [("prompt_max_len", "1024"), ("generate_max_len", "3072")]
    if has_flag(v, "best_metric_key"):
        items += [("eval_dataset", "/data/aime.jsonl"), ("eval_steps", "5")]
        items += [("best_metric_key", "eval_aime_pass1")]
    if has_flag(v, "loss_agg_mode"):
        items.append(("loss_agg_mode", "seq-mean-token-mean"))
    flags = " ".join(
        f"{option(version, flat)}{'' if value is None else ' ' + value}" for flat, value in items
    )
    return f"python3 -m openrlhf.cli.train_ppo_ray {flags}\n"


VARIANTS = ["0.8.11", "0.9.10", "0.11.2"]


@pytest.mark.parametrize("version", VARIANTS)
def test_variant_launch_is_openrlhfs_own_namespace_and_round_trips(registry: Registry, version: str) -> None:
    test_offline_namespace_is_openrlhfs_own(_variants(version), version)
    test_round_trip_gives_the_launchs_namespace(registry, _variants(version), version)


@pytest.mark.parametrize("version", VARIANTS)
def test_variant_flags_land_in_their_spec_fields(registry: Registry, version: str) -> None:
    v = Version(version)
    _, imported = _imported(registry, _variants(version), version)
    spec = imported.job.spec
    alg = spec.algorithm
    assert (alg.name, alg.normalize_by_group_std, alg.clip.dual) == ("dapo", False, 3.0)
    assert alg.loss_aggregation == ("seq_mean_token_mean" if has_flag(v, "loss_agg_mode") else None)
    tr = spec.training
    assert (tr.offload.actor.optimizer, tr.offload.ref.params, tr.pack_sequences) == (True, True, True)
    assert (tr.micro_batch_per_gpu, tr.budgets.old_log_prob.micro_batch_per_gpu) == (2, 16)
    eng = spec.rollout.engine_settings
    assert (eng.enforce_eager, eng.free_cache_between_phases) == (True, None)
    penalty = spec.reward.overlong_penalty
    keep_best = spec.checkpoint.keep_best
    if has_flag(v, "max_new_tokens"):
        assert penalty is not None and (penalty.buffer_tokens, penalty.max_penalty) == (1024, 0.5)
    if has_flag(v, "best_metric_key"):
        assert keep_best is not None and (keep_best.metric, keep_best.count) == ("eval_aime_pass1", 1)
    # every one of these flags is a spec field now: none is left to spec.native
    native = " ".join(spec.native.get("openrlhf", []))
    for flat in ("advantage_estimator", "dual_clip", "adam_offload", "ref_reward_offload", "packing_samples"):
        assert option(version, flat) + " " not in native + " "
    for flat in ("micro_rollout_batch_size", "enforce_eager", "best_metric_key"):
        assert option(version, flat) + " " not in native + " "
    for flat in ("overlong_buffer_len", "loss_agg_mode", "dynamic_filtering"):
        assert option(version, flat) + " " not in native + " "


def test_rloo_dynamic_filtering_an_awake_hybrid_engine_and_a_rollout_token_cap(registry: Registry) -> None:
    """--dynamic_filtering on rloo is dynamic sampling; the hybrid engine without --vllm_enable_sleep keeps its
    cache (free_cache_between_phases false); a rollout token cap other than dynamic batching's training one is
    old_log_prob's; a micro rollout batch equal to the training one is no budget of its own."""
    text = (
        "python3 -m openrlhf.cli.train_ppo_ray --actor_num_gpus_per_node 8 --vllm_num_engines 8 "
        "--colocate_all_models --deepspeed_enable_sleep --pretrain m --prompt_data d "
        "--remote_rm_url http://rm/score --apply_chat_template --advantage_estimator rloo --n_samples_per_prompt 4 --init_kl_coef 0 "
        "--dynamic_filtering --micro_train_batch_size 4 --micro_rollout_batch_size 4 "
        "--use_dynamic_batch --train_max_tokens_per_gpu 8192 --rollout_max_tokens_per_gpu 16384"
    )
    _, imported = _imported(registry, text, "0.9.10")
    spec = imported.job.spec
    assert (spec.algorithm.name, spec.algorithm.dynamic_sampling) == ("rloo", True)
    assert spec.rollout.engine_settings.free_cache_between_phases is False
    old = spec.training.budgets.old_log_prob
    assert (old.micro_batch_per_gpu, old.max_tokens_per_gpu) == (None, 16384)
    test_round_trip_gives_the_launchs_namespace(registry, text, "0.9.10")


@pytest.mark.parametrize("version", ["0.7.5", "0.8.11", "0.9.10"])
def test_a_colocated_launch_without_deepspeed_sleep_round_trips(registry: Registry, version: str) -> None:
    """Upstream's train_ppo_llama_ray_tensor_parallelism.sh (0.7.5, 0.8.11) colocates every model and lets only
    vLLM sleep: before, every render turned --deepspeed_enable_sleep on and the import was refused over it; now
    the spec keeps the actor's parameters on the GPU (training.offload.actor.params false) and renders neither."""
    sleep = option(version, "vllm_enable_sleep")
    text = (
        "python3 -m openrlhf.cli.train_ppo_ray --actor_num_gpus_per_node 8 --vllm_num_engines 4 "
        f"--colocate_all_models {sleep}{' --flash_attn' if has_flag(version, 'flash_attn') else ''} --pretrain m "
        "--prompt_data d --remote_rm_url http://rm/score "
        "--apply_chat_template --advantage_estimator reinforce_baseline --n_samples_per_prompt 4 --init_kl_coef 0"
    )
    _, imported = _imported(registry, text, version)
    assert imported.job.spec.training.offload.actor.params is False
    assert not any("sleep" in item for item in imported.job.spec.native.get("openrlhf", []))
    argv = render_native(imported.job, f"openrlhf=={version}", registry).native.argv
    assert sleep in argv and option(version, "deepspeed_enable_sleep") not in argv
    test_round_trip_gives_the_launchs_namespace(registry, text, version)


@pytest.mark.parametrize("version", ["0.8.11", "0.9.10"])
def test_an_agent_launch_imports_the_agent_function_and_no_reward(registry: Registry, version: str) -> None:
    """--agent_func_path is spec.rollout.agent; its remote_rm_url ("agent", set after parsing) is no reward source."""
    text = (
        "python3 -m openrlhf.cli.train_ppo_ray --actor_num_gpus_per_node 8 --vllm_num_engines 8 "
        "--colocate_all_models --deepspeed_enable_sleep --pretrain m --prompt_data d --apply_chat_template "
        "--agent_func_path agents/env.py --advantage_estimator group_norm --n_samples_per_prompt 4 --init_kl_coef 0"
    )
    _, imported = _imported(registry, text, version)
    spec = imported.job.spec
    assert spec.rollout.agent is not None and spec.rollout.agent.path == "agents/env.py"
    assert (spec.reward.function, spec.reward.remote, spec.reward.model, spec.reward.builtin) == (None,) * 4
    assert not any("agent" in item for item in spec.native.get("openrlhf", []))
    test_round_trip_gives_the_launchs_namespace(registry, text, version)


@pytest.mark.parametrize(
    ("text", "version", "flag"),
    [(FLAT, "0.9.10", "--use_tensorboard"), (DOTTED, "0.10.2", "--logger.tensorboard_dir")],
)
def test_the_launchs_own_tensorboard_directory_is_kept_and_recorded(
    registry: Registry, text: str, version: str, flag: str
) -> None:
    """The launch logs to $SAVE/tensorboard: the imported spec keeps that directory as spec.logging.dir, not as a
    native item (dashboards and log shippers point there; moving it would change the run), the render passes it
    once and records it as where the events are."""
    _, imported = _imported(registry, text, version)
    assert imported.job.spec.logging.dir == "/ckpt/qwen-grpo/tensorboard"
    assert not any("tensorboard" in item for item in imported.job.spec.native.get("openrlhf", []))
    assert "dir: /ckpt/qwen-grpo/tensorboard" in imported.text
    assert not [n for n in imported.notes if n.startswith(f"{flag}: ")]
    rendered = render_native(imported.job, f"openrlhf=={version}", registry).native
    argv = list(rendered.argv)
    assert argv.count(flag) == 1
    assert argv[argv.index(flag) + 1] == "/ckpt/qwen-grpo/tensorboard"
    assert rendered.origins[flag] == "spec.logging.dir"
    assert rendered.metrics_dir == rendered.events_dir() == "/ckpt/qwen-grpo/tensorboard"


def test_a_launch_without_tensorboard_gets_rladapts_directory_and_the_import_says_so(
    registry: Registry,
) -> None:
    """Without a TensorBoard directory of its own, the render adds rladapt's (a sink added, nothing moved)."""
    text = FLAT.replace("--use_tensorboard $SAVE/tensorboard", "")
    assert text != FLAT
    _, imported = _imported(registry, text, "0.9.10")
    assert not any("tensorboard" in item for item in imported.job.spec.native.get("openrlhf", []))
    (note,) = [n for n in imported.notes if n.startswith("--use_tensorboard: ")]
    assert note.endswith(
        "rladapt-metrics' instead of unset, so that `rladapt metrics` reads the run's TensorBoard events back"
    )
    rendered = render_native(imported.job, "openrlhf==0.9.10", registry).native
    argv = list(rendered.argv)
    assert argv[argv.index("--use_tensorboard") + 1] == f"{imported.job.checkpoint_dir}/rladapt-metrics"
    assert rendered.metrics_dir is None
    assert rendered.events_dir() == f"{imported.job.checkpoint_dir}/rladapt-metrics"


@pytest.mark.parametrize(
    ("version", "colocate", "method"),
    [
        ("0.9.10", True, "cuda_ipc"),
        ("0.9.10", False, "nccl"),
        ("0.10.2", True, "cuda_ipc"),
        ("0.10.2", False, "nccl"),
    ],
)
def test_a_launchs_nccl_sync_backend_is_spec_weight_sync_method(
    registry: Registry, version: str, colocate: bool, method: str
) -> None:
    """``--vllm_sync_backend nccl`` (``--vllm.sync_backend`` from 0.10.2) is spec.weight_sync.method: CUDA IPC where
    every model shares the GPUs and training is synchronous (OpenRLHF's ppo_actor.py use_cuda_ipc), NCCL
    otherwise; no native item is left for it. Another backend stays a native item."""
    backend = option(version, "vllm_sync_backend")
    place = (
        f"{option(version, 'colocate_all_models')} "
        if colocate
        else f"{option(version, 'vllm_tensor_parallel_size')} 1 "
    )
    base = (
        f"python3 -m openrlhf.cli.train_ppo_ray {option(version, 'actor_num_gpus_per_node')} 4 "
        f"{option(version, 'vllm_num_engines')} 4 {place}{option(version, 'pretrain')} m "
        f"{option(version, 'prompt_data')} d {option(version, 'remote_rm_url')} http://rm/score "
        f"{option(version, 'apply_chat_template')} {option(version, 'advantage_estimator')} group_norm "
        f"{option(version, 'n_samples_per_prompt')} 4 {option(version, 'init_kl_coef')} 0 "
    )
    _, imported = _imported(registry, base + f"{backend} nccl", version)
    assert imported.job.spec.weight_sync.method == method
    assert not any("sync_backend" in item for item in imported.job.spec.native.get("openrlhf", []))
    test_round_trip_gives_the_launchs_namespace(registry, base + f"{backend} nccl", version)
    _, other = _imported(registry, base + f"{backend} gloo", version)
    assert other.job.spec.weight_sync.method == "auto"
    assert any("sync_backend" in item for item in other.job.spec.native.get("openrlhf", []))
