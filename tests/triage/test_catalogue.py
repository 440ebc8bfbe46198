"""The built-in catalogue on log excerpts that carry each failure's real message text.

Each excerpt is built here from the message as the code cited beside the signature writes it (the formatted values
filled in as the framework would), around lines a real run prints (Ray's actor prefixes, tracebacks). No log is
downloaded.
"""

from __future__ import annotations

import pytest

from rladapt.triage import Match, triage
from rladapt.triage.catalogue import BUILTIN

RAY = "(WorkerDict pid=2231, ip=10.0.0.3) "


def run(text: str, framework: str | None = None, version: str | None = None) -> dict[str, Match]:
    return {m.signature: m for m in triage(text.splitlines(), BUILTIN, framework, version)}


def test_every_signature_cites_a_source_and_has_a_unique_id() -> None:
    ids = [s.id for s in BUILTIN]
    assert len(ids) == len(set(ids))
    for sig in BUILTIN:
        assert sig.source and sig.cause and sig.fix, sig.id


def test_nccl_watchdog_timeout() -> None:
    # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: "[Rank " rank "] Watchdog caught collective operation
    # timeout: " work " ran for " ms " milliseconds before timing out."
    log = (
        "step 12 done\n"
        "[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=668, OpType=ALLREDUCE, NumelIn=52, NumelOut=52, Timeout(ms)=600000) "
        "ran for 600097 milliseconds before timing out.\n"
    )
    found = run(log)
    assert list(found) == ["nccl-timeout"]
    assert found["nccl-timeout"].line_numbers == (2,)
    assert "actor_rollout_ref.nccl_timeout" in found["nccl-timeout"].fix


@pytest.mark.parametrize(
    ("frame", "role", "phase", "fix_field"),
    [
        (
            'verl/workers/fsdp_workers.py", line 674, in update_actor',
            "actor",
            "update_actor",
            "micro_batch_per_gpu",
        ),
        (
            'verl/workers/fsdp_workers.py", line 720, in generate_sequences',
            "rollout",
            "generate_sequences",
            "spec.rollout.gpu_memory_utilization",
        ),
        ('verl/workers/fsdp_workers.py", line 1231, in update_critic', "critic", "update_critic", "critic"),
        (
            'trl/trainer/grpo_trainer.py", line 2193, in _generate',
            "rollout",
            "_generate",
            "spec.rollout.gpu_memory_utilization",
        ),
    ],
)
def test_cuda_oom_names_the_role_and_phase_from_the_traceback(
    frame: str, role: str, phase: str, fix_field: str
) -> None:
    # c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate ..."
    log = "\n".join(
        [
            f"{RAY}Traceback (most recent call last):",
            f'{RAY}  File "/usr/lib/python3.10/site-packages/verl/single_controller/ray/base.py", line 663, in func',
            f'{RAY}  File "/usr/lib/python3.10/site-packages/{frame}',
            f"{RAY}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            "capacity of 79.14 GiB of which 1.05 GiB is free. Including non-PyTorch memory, this process has "
            "78.08 GiB memory in use.",
        ]
    )
    match = run(log)["cuda-oom"]
    assert f"in the {role}" in match.cause and phase in match.cause
    assert fix_field in match.fix


def test_cuda_oom_reads_only_its_own_traceback() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/x/verl/workers/fsdp_workers.py", line 720, in generate_sequences',
            "RuntimeError: an earlier failure, retried",
            "Traceback (most recent call last):",
            '  File "/x/train.py", line 3, in main',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        ]
    )
    assert "does not say" in run(log)["cuda-oom"].cause


def test_cuda_oom_without_a_known_frame_takes_the_role_from_the_ray_actor() -> None:
    log = "(PolicyModelActor pid=812) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.\n"
    assert "in the actor" in run(log)["cuda-oom"].cause
    nemo = "(VllmGenerationWorker[rank=0] pid=77) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB.\n"
    assert "in the rollout" in run(nemo)["cuda-oom"].cause
    bare = run("RuntimeError: CUDA error: out of memory\n")["cuda-oom"]
    assert "does not say" in bare.cause


def test_vllm_engine_death_and_kv_cache() -> None:
    # vllm/v1/engine/exceptions.py EngineDeadError; vllm/v1/core/kv_cache_utils.py; vllm/worker/worker.py
    log = "\n".join(
        [
            "(APIServer pid=57071) ERROR 08-06 21:18:16 [async_llm.py:704] vllm.v1.engine.exceptions."
            "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
            "ValueError: To serve at least one request with the models's max seq len (65536), (7.0 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (2.39 GiB). Based on the available "
            "memory, the estimated maximum model length is 22336. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.",
            "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            "stored in KV cache (93760). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            "when initializing the engine.",
        ]
    )
    found = run(log)
    assert set(found) == {"vllm-engine-dead", "vllm-kv-cache-too-small"}
    assert found["vllm-kv-cache-too-small"].line_numbers == (2, 3)
    assert "spec.rollout.gpu_memory_utilization" in found["vllm-kv-cache-too-small"].fix


def test_ray_oom_killer_and_actor_death() -> None:
    # Ray 2.60.0 raylet: "%d worker(s) were killed due to the node running low on memory. %s";
    # ray/exceptions.py ActorDiedError.BASE_ERROR_MSG; gcs_server "has been marked dead because the detector ..."
    log = "\n".join(
        [
            "ray.exceptions.OutOfMemoryError: 1 worker(s) were killed due to the node running low on memory. "
            "Memory on the node (IP: 10.0.50.112, ID: 4cb25bc0) was 28.62GB / 30.00GB (0.954017), which exceeds "
            "the memory usage threshold of 0.950000",
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: WorkerDict",
            "The node with node id: 8289f87b and address: 10.0.0.4 and node name: 10.0.0.4 has been marked dead "
            "because the detector has missed too many heartbeats from it.",
        ]
    )
    found = run(log)
    assert set(found) == {"ray-oom-killer", "ray-actor-died"}
    assert found["ray-oom-killer"].line_numbers == (1,)
    assert found["ray-actor-died"].line_numbers == (2, 4)


def test_unknown_key_names_the_new_key_from_the_snapshots() -> None:
    # hydra/_internal/config_loader_impl.py: f"Could not override '{key}'." then "To append to your config use +..."
    hydra = (
        "Could not override 'reward_model.sandbox_fusion.url'.\n"
        "To append to your config use +reward_model.sandbox_fusion.url=http://sandbox:8080\n"
        "Key 'sandbox_fusion' is not in struct\n"
    )
    match = run(hydra, "verl", "0.9.1")["config-key-unknown"]
    assert "`reward.sandbox_fusion.url`" in match.fix
    assert "verl 0.9.1" in match.cause and "0.5.0, 0.6.1" in match.cause
    # CPython argparse: "error: unrecognized arguments: %s" (OpenRLHF 0.10.2 regrouped its flags)
    argparse = (
        "train_ppo_ray.py: error: unrecognized arguments: --actor_num_nodes 1 --micro_train_batch_size=4\n"
    )
    match = run(argparse, "openrlhf", "0.11.2")["config-key-unknown"]
    assert "`--actor.num_nodes` instead of `--actor_num_nodes`" in match.fix
    assert "--micro_train_batch_size" in match.fix
    # a dataclass's __init__: the TRL driver's GRPOConfig(**config)
    trl = "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'num_sample_generations'\n"
    match = run(trl, "trl", "1.16.0")["config-key-unknown"]
    assert "`num_generations_eval`" in match.fix
    # no framework given: every framework's newest snapshot is asked
    assert "`--actor.num_nodes`" in run(argparse)["config-key-unknown"].fix


def test_checkpoint_world_size_and_weight_sync() -> None:
    # verl/utils/checkpoint/fsdp_checkpoint_manager.py f"model_world_size_{world_size}_rank_{rank}.pt";
    # openrlhf/trainer/ray/vllm_worker_wrap.py f"mismatch dtype: src {dtype}, dst {self.model_config.dtype}"
    log = "\n".join(
        [
            f"{RAY}FileNotFoundError: [Errno 2] No such file or directory: "
            "'/ckpt/global_step_100/actor/model_world_size_4_rank_0.pt'",
            "(RolloutRayActor pid=91) AssertionError: mismatch dtype: src torch.float32, dst torch.bfloat16",
            "AssertionError: Attempted to load weight (torch.Size([151936, 896])) into parameter "
            "(torch.Size([151680, 896]))",
        ]
    )
    found = run(log)
    assert set(found) == {"checkpoint-world-size", "weight-sync-mismatch"}
    assert found["weight-sync-mismatch"].line_numbers == (2, 3)
    # a checkpoint's file names are verl's and DeepSpeed's: not a TRL failure
    assert "checkpoint-world-size" not in run(log, "trl", "1.16.0")


def test_dataset_column_needs_the_dataset_frame_above_a_key_error() -> None:
    # verl/utils/dataset/rl_dataset.py (0.9.1) _build_messages: example.pop(key)
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/x/verl/utils/dataset/rl_dataset.py", line 389, in __getitem__',
            '  File "/x/verl/utils/dataset/rl_dataset.py", line 310, in _build_messages',
            "KeyError: 'prompt'",
        ]
    )
    match = run(log)["dataset-column-missing"]
    assert match.line_numbers == (3, 4)
    assert "spec.data.prompt_key" in match.fix
    # behind the Ray prefix of the actor that reads the data
    ray = "\n".join(f"(TaskRunner pid=301) {line}" for line in log.splitlines())
    assert run(ray)["dataset-column-missing"].line_numbers == (3, 4)
    # the same KeyError anywhere else is not this failure
    assert "dataset-column-missing" not in run(
        "  File \"/x/train.py\", line 3, in main\nKeyError: 'prompt'\n"
    )


def test_raw_prompt_applies_to_verl_before_0_7_1_only() -> None:
    # verl/experimental/agent_loop/agent_loop.py (0.5.0 line 276): batch.non_tensor_batch["raw_prompt"]
    log = (
        '  File "/x/verl/experimental/agent_loop/agent_loop.py", line 276, in generate_sequences\n'
        "KeyError: 'raw_prompt'\n"
    )
    assert "data.return_raw_chat=True" in run(log, "verl", "0.5.0")["verl-raw-prompt-async"].fix
    assert "verl-raw-prompt-async" in run(log)  # a log file of unknown origin: it may be
    assert "verl-raw-prompt-async" not in run(log, "verl", "0.9.1")
    assert "verl-raw-prompt-async" not in run(log, "openrlhf", "0.11.2")


def test_port_in_use() -> None:
    # torch/csrc/distributed/c10d/socket.cpp (libtorch_cpu.so strings): "The server socket has failed to listen
    # on any local network address. port: {}, useIpv6: {}, code: {}, name: {}, message: {}"
    log = (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
        "address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n"
    )
    match = run(log)["port-in-use"]
    assert "spec.ports" in match.fix and match.line_numbers == (1,)


def test_ordinary_output_matches_nothing() -> None:
    log = "\n".join(
        [
            "[rladapt] step 4/4  reward 0.41",
            "INFO 03-16 00:55:10 [gpu_model_runner.py:1843] Model loading took 0.93 GiB",
            "Saving checkpoint to checkpoints/tiny/checkpoint-4",
            "{'loss': 0.0123, 'grad_norm': 0.51, 'learning_rate': 0.01, 'epoch': 1.0}",
        ]
    )
    assert run(log) == {}
