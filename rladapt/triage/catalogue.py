"""The built-in failure signatures: data, one ``Signature`` per failure, each pattern beside the source of its text.

Patterns quote the message as the printing code writes it; where a value is formatted in, the pattern matches any
value. Sources name the file and the version read (a wheel's file, or a binary's strings where the text is in
compiled code), or the public report the text was read from. Plugins add their own through
``rladapt_register_signatures``.
"""

from __future__ import annotations

from rladapt.plugins import Signature

from .refine import missing_column, oom_where, renamed_key

__all__ = ["BUILTIN"]

_NCCL_TIMEOUT = Signature(
    id="nccl-timeout",
    patterns=(
        # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (torch 2.x; NCCL is not in the CPU wheel, the text is
        # read from the source and from public run logs): "[Rank N] Watchdog caught collective
        # operation timeout: WorkNCCL(SeqNum=.., OpType=ALLREDUCE, ..) ran for N milliseconds before timing out."
        r"Watchdog caught collective operation timeout",
        # same file: the abort that follows it
        r"Some NCCL operations have failed or timed out",
    ),
    cause=(
        "A collective (all-reduce, all-gather, broadcast) did not complete within the process group's timeout: "
        "one rank stopped calling it (it died, hangs, or is still busy elsewhere, e.g. generating or saving) "
        "while the others waited."
    ),
    fix=(
        "Find the rank that stopped first (the earliest error of another signature in this log, or the rank "
        "missing from the timeout lines): that is the cause. If the wait is legitimate (a long save or "
        "generation between collectives), raise the process group's timeout: verl `actor_rollout_ref.nccl_timeout` "
        "(seconds, default 600; through spec.native.verl)."
    ),
    source="torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (torch 2.x)",
)

_CUDA_OOM = Signature(
    id="cuda-oom",
    patterns=(
        # c10/cuda/CUDACachingAllocator.cpp (torch 2.x; CUDA code, not in the CPU wheel): "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0
        # has a total capacity of ..."; raised as torch.OutOfMemoryError (torch.cuda.OutOfMemoryError before 2.5)
        r"CUDA out of memory\. Tried to allocate",
        # c10/cuda/CUDAException.h: a kernel launch or cudaMalloc outside the caching allocator
        r"CUDA error: out of memory",
    ),
    cause="CUDA ran out of memory (the log does not say in which role or phase).",
    fix=(
        "For generation: lower spec.rollout.gpu_memory_utilization or spec.data.max_response_length; for "
        "training: lower spec.training.micro_batch_per_gpu, set spec.model.gradient_checkpointing: true, or "
        "shard more (spec.training.parallel)."
    ),
    source="c10/cuda/CUDACachingAllocator.cpp (torch 2.x)",
    refine=oom_where,
)

_VLLM_ENGINE_DEAD = Signature(
    id="vllm-engine-dead",
    patterns=(
        # vllm/v1/engine/exceptions.py (vLLM 0.8 .. 0.11): EngineDeadError's message
        r"EngineDeadError|EngineCore encountered an issue\. See stack trace \(above\) for the root cause",
        # vllm/engine/async_llm_engine.py (vLLM 0.6 .. 0.10, the V0 engine): AsyncEngineDeadError
        r"AsyncEngineDeadError: Background loop has errored already",
    ),
    cause=(
        "The vLLM engine process died; every later request fails. The first traceback above this line (often "
        "a CUDA OOM or an NCCL error inside the engine) is the root cause."
    ),
    fix=(
        "Triage the first error above the engine's death; if it is memory, lower "
        "spec.rollout.gpu_memory_utilization or raise spec.rollout.tensor_parallel."
    ),
    source=(
        "vllm/v1/engine/exceptions.py (vLLM 0.8.5); vllm/engine/async_llm_engine.py (vLLM 0.6.3); "
        "https://github.com/vllm-project/vllm/issues/5060"
    ),
)

_VLLM_KV_CACHE = Signature(
    id="vllm-kv-cache-too-small",
    patterns=(
        # vllm/worker/worker.py raise_if_cache_size_invalid (V0 engine, vLLM 0.6 .. 0.10)
        r"The model's max seq len \(\d{1,20}\) is larger than the maximum number of tokens that can be stored in KV cache",
        # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (V1 engine, vLLM 0.8+)
        r"KV cache is needed, which is larger than the available KV cache memory",
        r"No available memory for the cache blocks",
        # vllm/core/scheduler.py (V0): a batch bigger than the cache, requests preempted and recomputed
        r"is preempted by PreemptionMode\.RECOMPUTE mode because there is not enough KV cache space",
    ),
    cause=(
        "vLLM's KV cache cannot hold the batch: the memory left after the weights (gpu_memory_utilization of "
        "the GPU) is less than one max-length sequence needs, or than the batch needs (preemption)."
    ),
    fix=(
        "Raise spec.rollout.gpu_memory_utilization (if training is not colocated on the same GPUs), raise "
        "spec.rollout.tensor_parallel to spread the cache, or lower spec.data.max_prompt_length + "
        "spec.data.max_response_length (vLLM's max_model_len)."
    ),
    source=(
        "vllm/worker/worker.py (vLLM 0.6.3); vllm/v1/core/kv_cache_utils.py (vLLM 0.8.5); "
        "vllm/core/scheduler.py (vLLM 0.6.3)"
    ),
)

_RAY_OOM = Signature(
    id="ray-oom-killer",
    patterns=(
        # ray/core/src/ray/raylet/raylet (Ray 2.60.0, strings of the binary; src/ray/raylet/node_manager.cc):
        # "%d worker(s) were killed due to the node running low on memory. %s"
        r"worker\(s\) were killed due to the node running low on memory",
        # older Rays (report: https://github.com/ray-project/ray/pull/30312): "Task was killed due to the
        # node running low on memory. Memory on the node (IP: .., ID: ..) where the task .. was running was
        # 32.6GB / 33.3GB (0.98), which exceeds the memory usage threshold of 0.95. Ray killed this worker ..."
        r"Task was killed due to the node running low on memory",
        r"which exceeds the memory usage threshold of",
    ),
    cause=(
        "Ray's memory monitor killed a worker because the node's host memory (RAM, not GPU) passed "
        "RAY_memory_usage_threshold: usually weights or optimizer state offloaded to CPU, a large dataset "
        "loaded in every worker, or too many workers on one node."
    ),
    fix=(
        "Give the job more host memory (spec.roles.<role>.memory on Kubernetes), offload less to the CPU, "
        "or spread roles over more nodes (spec.placement.pools); raising RAY_memory_usage_threshold in spec.env "
        "only delays the kernel's own OOM killer."
    ),
    source="ray/core/src/ray/raylet/raylet (Ray 2.60.0); https://github.com/ray-project/ray/pull/30312",
)

_RAY_ACTOR_DIED = Signature(
    id="ray-actor-died",
    patterns=(
        # ray/exceptions.py (Ray 2.60.0): ActorDiedError.BASE_ERROR_MSG and WorkerCrashedError.__str__
        r"The actor died unexpectedly before finishing this task",
        r"The worker died unexpectedly while executing this task",
        # ray/core/src/ray/gcs/gcs_server (Ray 2.60.0, strings of the binary)
        r"The actor is dead because its worker process has died",
        r"The actor died because its node has died",
        r"has been marked dead because the detector has missed too many heartbeats from it",
    ),
    cause=(
        "A Ray actor or worker process died (killed by the kernel's OOM killer or a signal, crashed in native "
        "code, or its node was lost)."
    ),
    fix=(
        "Look for the reason just above (an OOM of either kind, a segfault, the node's raylet.out under "
        "/tmp/ray/session_latest/logs); a lost node needs the launcher's node health checked, and "
        "spec.lifecycle.max_restarts lets the run restart from its last checkpoint."
    ),
    source="ray/exceptions.py and ray/core/src/ray/gcs/gcs_server (Ray 2.60.0)",
)

_UNKNOWN_KEY = Signature(
    id="config-key-unknown",
    patterns=(
        # hydra/_internal/config_loader_impl.py (hydra-core 1.3.8): "Could not override 'a.b'.\nTo append to your
        # config use +a.b=v" (verl's Hydra CLI; NeMo-RL's parse_hydra_overrides uses the same loader)
        r"Could not override '(?P<key>[^'\n]{1,512})'",
        # omegaconf/dictconfig.py (omegaconf 2.3.1), with the full key on a later line
        r"Key '(?P<leaf>[^'\n]{1,512})' is not in struct",
        # CPython Lib/argparse.py parse_args: OpenRLHF's CLI (train_ppo_ray)
        r"error: unrecognized arguments: (?P<args>.+)",
        # CPython dataclass __init__: the TRL driver builds GRPOConfig/RLOOConfig(**config)
        # (rladapt/adapters/trl/driver.py)
        r"(?:Config|Arguments)\.__init__\(\) got an unexpected keyword argument '(?P<key>[^'\n]{1,512})'",
    ),
    cause="The framework does not accept a configuration key (renamed or removed by an upgrade, or misspelt).",
    fix="Rename or drop the key in spec.native.<framework>; `rladapt upgrade` lists the renamed keys.",
    source=(
        "hydra/_internal/config_loader_impl.py (hydra-core 1.3.8); omegaconf/dictconfig.py (omegaconf 2.3.1); "
        "CPython Lib/argparse.py"
    ),
    refine=renamed_key,
)

_CKPT_WORLD_SIZE = Signature(
    id="checkpoint-world-size",
    patterns=(
        # verl/utils/checkpoint/fsdp_checkpoint_manager.py (verl 0.5.0 .. 0.9.1): each rank loads
        # f"model_world_size_{self.world_size}_rank_{self.rank}.pt" (and optim_, extra_state_)
        r"No such file or directory: .{0,1024}?(?:model|optim|extra_state)_world_size_\d{1,10}_rank_\d{1,10}\.pt",
        # deepspeed/runtime/engine.py (OpenRLHF's engine; the text as a public DeepSpeed run log prints it): ZeRO
        # state partitioned for another data-parallel size, "... Automatic adjustment of ZeRO's optimizer state
        # partitioning with a new world size is not currently supported."
        r"The checkpoint being loaded used a DP world size of \d{1,10} but the current world size is \d{1,10}",
    ),
    cause=(
        "The checkpoint was saved with a different number of training GPUs: verl's FSDP and DeepSpeed ZeRO "
        "checkpoints hold one shard per rank and only load at the world size that wrote them."
    ),
    fix=(
        "Resume with the world size that saved it (the placement of the run that wrote it), or convert it first "
        "(verl: `python -m verl.model_merger merge` then start from the merged model with spec.checkpoint.resume: "
        "never; DeepSpeed: a universal checkpoint, ds_to_universal.py)."
    ),
    source=(
        "verl/utils/checkpoint/fsdp_checkpoint_manager.py (verl 0.9.1, line 316); deepspeed/runtime/engine.py "
        "(DeepSpeed)"
    ),
    frameworks=("verl", "openrlhf"),
)

_WEIGHT_SYNC = Signature(
    id="weight-sync-mismatch",
    patterns=(
        # openrlhf/trainer/ray/vllm_worker_wrap.py update_weight (OpenRLHF 0.5.9.post1 line 44, 0.8.11 line 39,
        # 0.11.2 line 39): assert dtype == self.model_config.dtype
        r"mismatch dtype: src \S{1,64}, dst \S{1,64}",
        # vllm/model_executor/model_loader/weight_utils.py default_weight_loader (vLLM 0.6 .. 0.11)
        r"Attempted to load weight \(torch\.Size\(\[[\d, ]{0,256}\]\)\) into parameter \(torch\.Size\(\[[\d, ]{0,256}\]\)\)",
    ),
    cause=(
        "The trainer's weights do not fit the vLLM engine's parameters: a different dtype, or a different shape "
        "(a vLLM upgrade that fuses or pads layers differently, or a tensor-parallel split the sync did not "
        "expect)."
    ),
    fix=(
        "Use one dtype on both sides (spec.model.dtype reaches the trainer and vLLM); for a shape mismatch after "
        "a vLLM upgrade, pin the vLLM that the framework version was tested with (rladapt matrix shows it) or "
        "set spec.weight_sync.method: disk to reload through the checkpoint format."
    ),
    source=(
        "openrlhf/trainer/ray/vllm_worker_wrap.py (OpenRLHF 0.11.2); "
        "vllm/model_executor/model_loader/weight_utils.py (vLLM 0.8.5)"
    ),
)

_DATA_COLUMN = Signature(
    id="dataset-column-missing",
    patterns=(
        # rladapt/adapters/trl/driver.py load_split: the TRL driver checks the prompt column before training
        r"no column '(?P<column>[^'\n]{1,512})' \(spec\.data\.prompt_key\); found (?P<have>.+)$",
        # a KeyError under a dataset reader's frame (near): verl/utils/dataset/rl_dataset.py _build_messages
        # (verl 0.5.0 line 191: example.pop(self.prompt_key); 0.9.1 line 313: example[key], also reached from
        # maybe_filter_out_long_prompts while the files are read), openrlhf/datasets/prompts_dataset.py
        # preprocess_data (OpenRLHF 0.5.9.post1 .. 0.11.2: data[input_key])
        # (behind a Ray actor's prefix when the reader runs in one: verl's TaskRunner)
        r"\bKeyError: '(?P<key>[^'\n]{1,512})'\s{0,64}$",
    ),
    near=(
        r'rl_dataset\.py", line \d{1,10}, in (?:__getitem__|_build_messages|_read_files_and_tokenize|maybe_filter_out_long_prompts)',
        r'prompts_dataset\.py", line \d{1,10}, in (?:preprocess_data|__init__)',
        r"no column '[^'\n]{1,512}' \(spec\.data\.prompt_key\)",
    ),
    cause="The training data has no column the framework reads the prompt from.",
    fix=(
        "Set spec.data.prompt_key to the column that holds the prompt (verl data.prompt_key, OpenRLHF "
        "--prompt.input_key / --input_key, the TRL driver's prompt column), or rename the column in the files "
        "of spec.data.train."
    ),
    source=(
        "verl/utils/dataset/rl_dataset.py (verl 0.9.1); openrlhf/datasets/prompts_dataset.py (OpenRLHF 0.11.2); "
        "rladapt/adapters/trl/driver.py"
    ),
    refine=missing_column,
)

_PORT_IN_USE = Signature(
    id="port-in-use",
    patterns=(
        # torch/csrc/distributed/c10d/socket.cpp (torch 2.13.0, strings of libtorch_cpu.so): the TCPStore of
        # MASTER_PORT: "The server socket has failed to listen on any local network address. port: {},
        # useIpv6: {}, code: {}, name: EADDRINUSE, message: address already in use"
        r"The server socket has failed to listen on any local network address",
        r"EADDRINUSE",
        # CPython socket errors (errno 98 on Linux): a dashboard, vLLM's server, a reward server
        r"\[Errno 98\] Address already in use",
    ),
    cause=(
        "A port the job binds is already taken: another run on the same node (or a leftover process of an "
        "earlier one) holds MASTER_PORT, the Ray ports or a server's port."
    ),
    fix=(
        "Stop the earlier run (`rladapt runs`, `rladapt stop RUN`), or give this one other ports: "
        "spec.ports (Ray/dashboard/rollout purposes) or MASTER_PORT in spec.env."
    ),
    source="torch/csrc/distributed/c10d/socket.cpp (torch 2.13.0, libtorch_cpu.so); CPython",
)

_RAW_PROMPT = Signature(
    id="verl-raw-prompt-async",
    patterns=(r"\bKeyError: 'raw_prompt'",),
    # verl/experimental/agent_loop/agent_loop.py (0.5.0 line 276): batch.non_tensor_batch["raw_prompt"], which
    # verl/utils/dataset/rl_dataset.py fills only with data.return_raw_chat (0.5.0 line 311; default false in
    # 0.5.0 and 0.6.1, true from 0.7.1: legacy_data.yaml); report: https://github.com/verl-project/verl/pull/2810
    cause=(
        "verl's async rollout (agent loop) reads each prompt's chat messages from `raw_prompt`, which the dataset "
        "fills only when data.return_raw_chat is true (its default is false before verl 0.7.1)."
    ),
    fix=(
        "Set data.return_raw_chat=True: rladapt sets it for spec.rollout.mode: async; a launch that overrides "
        "it (spec.native.verl, an imported script) must not set it false."
    ),
    source=(
        "verl/experimental/agent_loop/agent_loop.py (verl 0.5.0, line 276); verl/utils/dataset/rl_dataset.py "
        "(verl 0.5.0, line 311); https://github.com/verl-project/verl/pull/2810"
    ),
    frameworks=("verl",),
    versions="<0.7.1",
)

_DISK_FULL = Signature(
    id="disk-full",
    patterns=(
        # glibc's strerror(ENOSPC), as every layer prints it: CPython "[Errno 28] No space left on device",
        # Rust's std::io::Error (safetensors 0.8.0 save_file, seen here on a full tmpfs): "Error while
        # serializing: I/O error: No space left on device (os error 28)"; torch.save's legacy format, torch
        # 2.13.0 (StorageImpl's write, captured here): "write(): fd 3 failed with No space left on device"
        r"No space left on device",
        # torch.save's zip writer, caffe2/serialize/inline_container.cc (torch 2.13.0, libtorch_cpu.so):
        # "PytorchStreamWriter failed writing file data/0: file write failed"
        r"PytorchStreamWriter failed writing file .{0,1024}?file write failed",
    ),
    cause="A write failed because the disk is full (most often a checkpoint: optimizer state is 2-3x the model).",
    fix=(
        "Free space or point spec.checkpoint.dir at a larger volume; keep fewer checkpoints "
        "(spec.checkpoint.keep_last) or save less often (spec.checkpoint.every_steps)."
    ),
    source="glibc strerror(ENOSPC); safetensors 0.8.0 (Rust std::io::Error); caffe2/serialize/inline_container.cc (torch 2.13.0)",
)

_TORCH_SAVE_FAILED = Signature(
    id="torch-save-write-failed",
    patterns=(
        # torch.save's zip writer on a full disk, torch 2.13.0 (output captured here on a 64 KiB tmpfs:
        # tests/triage/fixtures/torch_2.13_save_enospc*.txt). PyTorchStreamWriter's std::ofstream throws on the
        # failed write (caffe2/serialize/inline_container.cc, libtorch_cpu.so), and libstdc++ words it without the
        # errno: "RuntimeError: basic_ios::clear: iostream error" (from zip_file.write_record or
        # write_end_of_file in torch/serialization.py)
        r"basic_ios::clear: iostream error",
        # then, while the `with` block closes the writer, inline_container.cc's position check (line 672 in
        # 2.13.0): "[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"
        r"\[enforce fail at inline_container\.cc:\d{1,10}\] \. unexpected pos \d{1,20} vs \d{1,20}",
    ),
    # libstdc++'s message is not torch's alone: only beside torch.save's own frames or file
    near=(r"torch/serialization\.py|inline_container\.cc|write_end_of_file|write_record",),
    cause=(
        "torch.save could not write a checkpoint file (an optimizer, RNG or dataloader state). torch's zip writer "
        "drops the operating system's error: on a save this is a full disk or an exhausted quota (ENOSPC, "
        "EDQUOT) almost always, a network file system that went away otherwise. The file it left is cut; "
        "rladapt's checkpoint scan reports that step partial and resumes from the one before."
    ),
    fix=(
        "Check the free space and quota of spec.checkpoint.dir (`df -h`, `quota`); free space or point "
        "spec.checkpoint.dir at a larger volume, keep fewer checkpoints (spec.checkpoint.keep_last) or save less "
        "often (spec.checkpoint.every_steps)."
    ),
    source=(
        "torch 2.13.0 torch/serialization.py (_save, _open_zipfile_writer.__exit__) and "
        "caffe2/serialize/inline_container.cc, output of a real save into a full tmpfs "
        "(tests/triage/fixtures/torch_2.13_save_enospc.txt)"
    ),
)

_KILLED = Signature(
    id="process-killed",
    patterns=(
        # torch/distributed/elastic/multiprocessing/errors/__init__.py (torch 2.13.0): torchrun's failure table,
        # "exitcode  : -9 (pid: 123) ... Signal 9 (SIGKILL) received by PID 123"
        r"exitcode\s{0,16}:\s{0,16}-9\b",
        r"Signal 9 \(SIGKILL\) received by PID",
        # Linux mm/oom_kill.c, when the kernel log reaches the job's output: "Out of memory: Killed process 123"
        r"Out of memory: Killed process \d{1,10}",
        # rladapt/launchers/local.py _signal_note: the run's state, "exited with code 137 (killed by SIGKILL)"
        r"\(killed by SIGKILL\)",
    ),
    cause=(
        "A process was killed by SIGKILL: the kernel's OOM killer (host memory), the scheduler (time or memory "
        "limit), or someone's `kill -9`."
    ),
    fix=(
        "Check `dmesg` (or the node's kernel log) for 'Out of memory: Killed process'; if it was memory, see "
        "ray-oom-killer's fix; if a scheduler limit, raise spec.lifecycle.timeout_seconds or the launcher's "
        "limits; resume from the last checkpoint (spec.checkpoint.resume: auto)."
    ),
    source="torch/distributed/elastic/multiprocessing/errors/__init__.py (torch 2.13.0); Linux mm/oom_kill.c; rladapt/launchers/local.py",
)

#: The built-in catalogue, in the order of the issue that asked for it.
_HUB_ID_REFUSED = Signature(
    id="model-path-not-found",
    patterns=(
        # huggingface_hub 0.36.2, utils/_validators.py validate_repo_id: a from_pretrained path that is not a
        # directory here is taken for a Hub id, and one with two slashes is refused: "Repo id must be in the form
        # 'repo_name' or 'namespace/repo_name': 'examples/tiny/modell'. Use `repo_type` argument if needed."
        r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': '",
    ),
    cause=(
        "A model (or tokenizer) path is not a directory where the job runs, so the Hugging Face loader took it "
        "for a Hub id and refused it: the path is misspelt, or the directory is not on the machine that runs "
        "the job (not shipped with the working directory, not on a mounted or shared volume)."
    ),
    fix=(
        "Correct spec.model.path (spec.model.tokenizer, spec.reward.model.path): `rladapt validate` names a local "
        "path that does not exist before anything runs; on a cluster, put the model where every node reads it "
        "(see the launcher's shared-storage rules in the launchers documentation)."
    ),
    source="huggingface_hub 0.36.2 utils/_validators.py (validate_repo_id), raised through transformers 4.57.6",
)

_WEIGHTS_MISSING = Signature(
    id="model-weights-missing",
    patterns=(
        # transformers 4.57.6, modeling_utils.py _get_resolved_checkpoint_files: "Error no file named
        # pytorch_model.bin, model.safetensors, tf_model.h5, model.ckpt.index or flax_model.msgpack found in
        # directory examples/tiny/model."
        r"Error no file named .{1,1024}? found in directory ",
    ),
    cause=(
        "The model directory exists where the job runs but holds no weights: its config was copied without them "
        "(a Ray working-directory upload drops *.safetensors and *.bin unless rladapt ships them), or a download "
        "or copy stopped early."
    ),
    fix=(
        "Launch through rladapt (its ray launcher ships the weight files a job reads, or refuses the launch), or "
        "give spec.model.path as a directory on storage every node reads; check the directory holds "
        "model.safetensors (or its shards)."
    ),
    source="transformers 4.57.6 modeling_utils.py (_get_resolved_checkpoint_files)",
)

_INTERPRETER_MISSING = Signature(
    id="interpreter-not-found",
    patterns=(
        # dash (/bin/sh, which runs a Ray job's entrypoint: subprocess shell=True): "/bin/sh: 1: .venv/bin/python:
        # not found", exit 127; bash (the local and Slurm scripts): "bash: line 1: .venv/bin/python: No such file
        # or directory", exit 127 (both captured here with a missing relative interpreter)
        r"(?:line )?\d{1,9}: \S{0,1024}python[\w.\-]{0,64}: (?:not found|No such file or directory)\s{0,64}$",
    ),
    cause=(
        "The job's Python interpreter (spec.runtime.python) does not exist where the job runs (exit 127): a "
        "relative path into a virtualenv that was not shipped (Ray's working-directory upload leaves .venv out) "
        "or is not on that machine."
    ),
    fix=(
        "Give spec.runtime.python as an interpreter every node has (an absolute path on shared storage, or a name "
        "on the nodes' PATH); on Ray declare the shared directory with -o shared=DIR so that rladapt checks it "
        "before submitting."
    ),
    source="dash 0.5.12 and bash 5.2 (command not found, exit 127), captured here",
)

_DATA_MISSING = Signature(
    id="data-file-not-found",
    patterns=(
        # datasets 5.0.1, data_files.py resolve_pattern: load_dataset(..., data_files=[...]) with a file that is
        # not there: "FileNotFoundError: Unable to find '/job/dir/data/train.parquet'" (the path made absolute
        # against the working directory; captured here). verl's RLHFDataset (utils/dataset/rl_dataset.py
        # _read_files_and_tokenize) reads its parquet files through load_dataset this way.
        r"FileNotFoundError: Unable to find '(?P<path>[^'\n]{1,4096})'",
        # rladapt/adapters/trl/driver.py load_split: the TRL driver checks its files before loading them
        r"error: spec\.data\.(?:train|val): no such file: ",
    ),
    cause=(
        "A data file (spec.data.train, spec.data.val, spec.eval.datasets) is not where the job runs: the path is "
        "misspelt, or the file is not on the machine that runs the job (not shipped with the working directory, "
        "not on a mounted or shared volume)."
    ),
    fix=(
        "Correct the path in spec.data (`rladapt validate` names a local file that does not exist before "
        "anything runs); on a cluster, put the data where every node reads it (see the launcher's shared-storage "
        "rules in the launchers documentation), or name a Hugging Face Hub dataset."
    ),
    source="datasets 5.0.1 data_files.py (resolve_pattern), captured here; rladapt/adapters/trl/driver.py",
)

BUILTIN: tuple[Signature, ...] = (
    _NCCL_TIMEOUT,
    _CUDA_OOM,
    _VLLM_ENGINE_DEAD,
    _VLLM_KV_CACHE,
    _RAY_OOM,
    _RAY_ACTOR_DIED,
    _UNKNOWN_KEY,
    _CKPT_WORLD_SIZE,
    _WEIGHT_SYNC,
    _DATA_COLUMN,
    _PORT_IN_USE,
    _RAW_PROMPT,
    _DISK_FULL,
    _TORCH_SAVE_FAILED,
    _KILLED,
    _HUB_ID_REFUSED,
    _WEIGHTS_MISSING,
    _INTERPRETER_MISSING,
    _DATA_MISSING,
)
