"""The GRPO config keys each NeMo-RL version knows: the adapter's own schema knowledge.

NeMo-RL cannot be installed next to rladapt (no real PyPI release; Python >= 3.12 from 0.3.0), so the key set is
carried here. It was derived per tag from the typed ``MasterConfig`` (``nemo_rl/algorithms/grpo.py`` and the
TypedDicts / pydantic models it references, every union variant included) together with the keys of
``examples/configs/grpo_math_1B.yaml``: the TypedDicts are open and upstream code reads keys they never declare
(0.2.1's are informal throughout), so neither source alone is the set a launch accepts.

A line is ``<dotted key>[.*] <first>[..<last>]``: the first and last pinned version that has the key (no upper
bound: still present in the newest). ``.*`` marks a free-form mapping (``dict[str, Any]``): any key below it is
accepted.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache

from packaging.version import Version

_TABLE = """
checkpointing 0.2.1
checkpointing.checkpoint_dir 0.2.1
checkpointing.checkpoint_must_save_by 0.4.0
checkpointing.enabled 0.2.1
checkpointing.higher_is_better 0.2.1
checkpointing.is_async 0.6.0
checkpointing.is_peft 0.4.0
checkpointing.keep_top_k 0.2.1
checkpointing.metric_name 0.2.1
checkpointing.model_cache_dir 0.4.0
checkpointing.model_repo_id 0.4.0
checkpointing.model_save_format 0.4.0
checkpointing.peft_config.* 0.4.0
checkpointing.pretrained_checkpoint 0.7.0
checkpointing.pretrained_checkpoint.format 0.7.0
checkpointing.pretrained_checkpoint.path 0.7.0
checkpointing.save_consolidated 0.4.0
checkpointing.save_optimizer 0.6.0
checkpointing.save_period 0.2.1
cluster 0.2.1
cluster.gpus_per_node 0.2.1
cluster.master_port_range_high 0.7.0
cluster.master_port_range_low 0.7.0
cluster.num_nodes 0.2.1
cluster.segment_size 0.7.0
data 0.2.1
data.add_bos 0.2.1
data.add_eos 0.2.1
data.add_generation_prompt 0.4.0
data.add_system_prompt 0.4.0
data.custom_dataloader 0.6.0
data.dataset_name 0.2.1..0.5.0
data.default 0.6.0
data.default.chosen_key 0.6.0
data.default.data_path 0.6.0
data.default.dataset_name 0.6.0
data.default.download_dir 0.6.0
data.default.env_name 0.6.0
data.default.input_key 0.6.0
data.default.output_key 0.6.0
data.default.processor 0.6.0
data.default.prompt_file 0.6.0
data.default.prompt_key 0.6.0
data.default.rejected_key 0.6.0
data.default.seed 0.6.0
data.default.split 0.6.0
data.default.split_validation_size 0.6.0
data.default.subset 0.6.0
data.default.system_prompt_file 0.6.0
data.download_dir 0.4.0..0.5.0
data.env_name 0.5.0..0.5.0
data.input_key 0.2.1..0.5.0
data.max_input_seq_length 0.2.1
data.num_prompts_per_dataloader 0.6.0
data.num_workers 0.4.0
data.output_key 0.2.1..0.5.0
data.processor 0.5.0..0.5.0
data.prompt_file 0.2.1..0.5.0
data.seed 0.4.0..0.5.0
data.shuffle 0.4.0
data.split 0.4.0..0.5.0
data.system_prompt_file 0.2.1..0.5.0
data.train 0.6.0
data.train.chosen_key 0.6.0
data.train.data_path 0.6.0
data.train.dataset_name 0.6.0
data.train.download_dir 0.6.0
data.train.env_name 0.6.0
data.train.input_key 0.6.0
data.train.output_key 0.6.0
data.train.processor 0.6.0
data.train.prompt_file 0.6.0
data.train.prompt_key 0.6.0
data.train.rejected_key 0.6.0
data.train.seed 0.6.0
data.train.split 0.6.0
data.train.split_validation_size 0.6.0
data.train.subset 0.6.0
data.train.system_prompt_file 0.6.0
data.train_data_path 0.4.0..0.5.0
data.use_multiple_dataloader 0.6.0
data.val_data_paths.* 0.4.0..0.5.0
data.val_dataset_name 0.2.1..0.5.0
data.validation 0.6.0
data.validation.chosen_key 0.6.0
data.validation.data_path 0.6.0
data.validation.dataset_name 0.6.0
data.validation.download_dir 0.6.0
data.validation.env_name 0.6.0
data.validation.input_key 0.6.0
data.validation.output_key 0.6.0
data.validation.processor 0.6.0
data.validation.prompt_file 0.6.0
data.validation.prompt_key 0.6.0
data.validation.rejected_key 0.6.0
data.validation.seed 0.6.0
data.validation.split 0.6.0
data.validation.split_validation_size 0.6.0
data.validation.subset 0.6.0
data.validation.system_prompt_file 0.6.0
data_plane 0.7.0
env.* 0.2.1
env.dapo 0.4.0..0.4.0
env.dapo.math_verify_impl 0.4.0..0.4.0
env.dapo.num_workers 0.4.0..0.4.0
env.math 0.2.1
env.math.math_verify_impl 0.4.0
env.math.num_workers 0.2.1
env_configs.* 0.2.1..0.2.1
grpo 0.2.1
grpo.adv_estimator 0.6.0
grpo.adv_estimator.minus_baseline 0.6.0
grpo.adv_estimator.name 0.6.0
grpo.adv_estimator.normalize_rewards 0.6.0
grpo.adv_estimator.use_leave_one_out_baseline 0.6.0
grpo.advantage_clip_high 0.7.0
grpo.advantage_clip_low 0.7.0
grpo.async_grpo 0.4.0
grpo.async_grpo.enabled 0.4.0
grpo.async_grpo.in_flight_weight_updates 0.4.0
grpo.async_grpo.max_trajectory_age_steps 0.4.0
grpo.async_grpo.recompute_kv_cache_after_weight_updates 0.4.0
grpo.batch_multiplier 0.4.0
grpo.calculate_advantages_on_gpu 0.6.0
grpo.checkpoint_dir 0.2.1..0.2.1
grpo.dynamic_sampling_max_gen_batches 0.4.0
grpo.invalid_tool_call_advantage 0.7.0
grpo.malformed_thinking_advantage 0.7.0
grpo.max_num_epochs 0.4.0
grpo.max_num_steps 0.2.1
grpo.max_rollout_turns 0.2.1
grpo.max_val_samples 0.2.1
grpo.normalize_rewards 0.2.1
grpo.num_generations_per_prompt 0.2.1
grpo.num_prompts_per_step 0.2.1
grpo.overlong_filtering 0.4.0
grpo.reward_scaling 0.4.0
grpo.reward_scaling.enabled 0.4.0
grpo.reward_scaling.source_max 0.4.0
grpo.reward_scaling.source_min 0.4.0
grpo.reward_scaling.target_max 0.4.0
grpo.reward_scaling.target_min 0.4.0
grpo.reward_shaping 0.4.0
grpo.reward_shaping.enabled 0.4.0
grpo.reward_shaping.max_response_length 0.4.0
grpo.reward_shaping.overlong_buffer_length 0.4.0
grpo.reward_shaping.overlong_buffer_penalty 0.4.0
grpo.reward_shaping.stop_properly_penalty_coef 0.6.0
grpo.seed 0.4.0
grpo.seq_logprob_error_threshold 0.6.0
grpo.skip_reference_policy_logprobs_calculation 0.6.0
grpo.use_dynamic_sampling 0.4.0
grpo.use_leave_one_out_baseline 0.2.1
grpo.val_at_end 0.6.0
grpo.val_at_start 0.2.1
grpo.val_batch_size 0.2.1
grpo.val_period 0.2.1
logger 0.2.1
logger.gpu_monitoring 0.2.1
logger.gpu_monitoring.collection_interval 0.2.1
logger.gpu_monitoring.flush_interval 0.2.1
logger.log_dir 0.2.1
logger.mlflow 0.4.0
logger.mlflow.artifact_location 0.5.0
logger.mlflow.experiment_name 0.4.0
logger.mlflow.run_id 0.6.0
logger.mlflow.run_name 0.4.0
logger.mlflow.tracking_uri 0.4.0
logger.mlflow_enabled 0.4.0
logger.monitor_gpus 0.2.1
logger.num_val_samples_to_print 0.2.1
logger.swanlab 0.4.0
logger.swanlab.name 0.4.0
logger.swanlab.project 0.4.0
logger.swanlab_enabled 0.4.0
logger.tensorboard 0.2.1
logger.tensorboard.log_dir 0.2.1
logger.tensorboard_enabled 0.2.1
logger.wandb 0.2.1
logger.wandb.entity 0.6.0
logger.wandb.name 0.2.1
logger.wandb.project 0.2.1
logger.wandb_enabled 0.2.1
loss_fn 0.2.1
loss_fn.disable_ppo_ratio 0.5.0
loss_fn.force_on_policy_ratio 0.5.0
loss_fn.kl_input_clamp_value 0.5.0
loss_fn.kl_output_clamp_value 0.5.0
loss_fn.positive_example_nll_weight 0.7.0
loss_fn.ratio_clip_c 0.2.1
loss_fn.ratio_clip_max 0.2.1
loss_fn.ratio_clip_min 0.2.1
loss_fn.reference_policy_kl_penalty 0.2.1
loss_fn.reference_policy_kl_type 0.5.0
loss_fn.sequence_level_importance_ratios 0.4.0
loss_fn.token_level_loss 0.2.1
loss_fn.truncated_importance_sampling_ratio 0.4.0
loss_fn.truncated_importance_sampling_ratio_min 0.6.0
loss_fn.truncated_importance_sampling_type 0.6.0
loss_fn.use_cispo 0.7.0
loss_fn.use_importance_sampling_correction 0.2.1
loss_fn.use_kl_in_reward 0.6.0
loss_fn.use_on_policy_kl_approximation 0.2.1
on_policy_distillation 0.7.0
policy 0.2.1
policy.activation_checkpointing_enabled 0.2.1..0.2.1
policy.disable_modelopt_layer_spec 0.7.0
policy.draft 0.6.0
policy.draft.aux_layer_indices 0.6.0
policy.draft.enabled 0.6.0
policy.draft.loss_weight 0.6.0
policy.draft.model_name 0.6.0
policy.draft.num_layers 0.6.0
policy.dtensor_cfg 0.2.1
policy.dtensor_cfg._v2 0.4.0
policy.dtensor_cfg.activation_checkpointing 0.2.1
policy.dtensor_cfg.automodel_kwargs 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend._target_ 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.attn 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.dispatcher 0.7.0
policy.dtensor_cfg.automodel_kwargs.backend.enable_deepep 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.enable_fsdp_optimizations 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.enable_hf_state_dict_adapter 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.experts 0.7.0
policy.dtensor_cfg.automodel_kwargs.backend.fake_balanced_gate 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.gate_precision 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.linear 0.5.0
policy.dtensor_cfg.automodel_kwargs.backend.rms_norm 0.5.0
policy.dtensor_cfg.automodel_kwargs.force_hf 0.6.0
policy.dtensor_cfg.automodel_kwargs.freeze_config 0.7.0
policy.dtensor_cfg.automodel_kwargs.freeze_config.freeze_audio_tower 0.7.0
policy.dtensor_cfg.automodel_kwargs.freeze_config.freeze_language_model 0.7.0
policy.dtensor_cfg.automodel_kwargs.freeze_config.freeze_vision_tower 0.7.0
policy.dtensor_cfg.automodel_kwargs.use_liger_kernel 0.5.0
policy.dtensor_cfg.clear_cache_every_n_steps 0.4.0
policy.dtensor_cfg.context_parallel_size 0.4.0
policy.dtensor_cfg.cpu_offload 0.2.1
policy.dtensor_cfg.custom_parallel_plan 0.4.0
policy.dtensor_cfg.defer_fsdp_grad_sync 0.6.0
policy.dtensor_cfg.dp_replicate_size 0.7.0
policy.dtensor_cfg.enabled 0.2.1
policy.dtensor_cfg.env_vars.* 0.4.0
policy.dtensor_cfg.expert_parallel_size 0.6.0
policy.dtensor_cfg.lora_cfg 0.5.0
policy.dtensor_cfg.lora_cfg.alpha 0.5.0
policy.dtensor_cfg.lora_cfg.dim 0.5.0
policy.dtensor_cfg.lora_cfg.dropout 0.5.0
policy.dtensor_cfg.lora_cfg.dropout_position 0.5.0
policy.dtensor_cfg.lora_cfg.enabled 0.5.0
policy.dtensor_cfg.lora_cfg.exclude_modules 0.5.0
policy.dtensor_cfg.lora_cfg.lora_A_init 0.5.0
policy.dtensor_cfg.lora_cfg.match_all_linear 0.5.0
policy.dtensor_cfg.lora_cfg.target_modules 0.5.0
policy.dtensor_cfg.lora_cfg.use_triton 0.5.0
policy.dtensor_cfg.moe_parallelizer 0.6.0
policy.dtensor_cfg.moe_parallelizer.ignore_router_for_ac 0.6.0
policy.dtensor_cfg.moe_parallelizer.lm_head_precision 0.6.0
policy.dtensor_cfg.moe_parallelizer.reshard_after_forward 0.6.0
policy.dtensor_cfg.moe_parallelizer.wrap_outer_model 0.6.0
policy.dtensor_cfg.sequence_parallel 0.2.1
policy.dtensor_cfg.tensor_parallel_size 0.2.1
policy.dynamic_batching 0.2.1
policy.dynamic_batching.enabled 0.2.1
policy.dynamic_batching.logprob_mb_tokens 0.2.1
policy.dynamic_batching.sequence_length_round 0.2.1
policy.dynamic_batching.train_mb_tokens 0.2.1
policy.fsdp_offload_enabled 0.2.1..0.2.1
policy.generation 0.2.1
policy.generation._mtp_weights_from_refit 0.7.0
policy.generation._pad_token_id 0.4.0
policy.generation.backend 0.2.1
policy.generation.colocated 0.4.0
policy.generation.colocated.enabled 0.4.0
policy.generation.colocated.resources 0.4.0
policy.generation.colocated.resources.gpus_per_node 0.4.0
policy.generation.colocated.resources.num_nodes 0.4.0
policy.generation.max_new_tokens 0.2.1
policy.generation.mcore_generation_config 0.5.0
policy.generation.mcore_generation_config.async_engine 0.7.0
policy.generation.mcore_generation_config.block_size_tokens 0.5.0
policy.generation.mcore_generation_config.buffer_guaranteed_fraction 0.5.0..0.5.0
policy.generation.mcore_generation_config.buffer_size_gb 0.5.0
policy.generation.mcore_generation_config.cuda_graph_impl 0.7.0
policy.generation.mcore_generation_config.enable_chunked_prefill 0.5.0
policy.generation.mcore_generation_config.enable_prefix_caching 0.7.0
policy.generation.mcore_generation_config.expose_http_server 0.7.0
policy.generation.mcore_generation_config.inference_cuda_graph_scope 0.7.0
policy.generation.mcore_generation_config.kv_cache_management_mode 0.7.0
policy.generation.mcore_generation_config.logging_step_interval 0.7.0
policy.generation.mcore_generation_config.mamba_inference_conv_states_dtype 0.7.0
policy.generation.mcore_generation_config.mamba_inference_ssm_states_dtype 0.7.0
policy.generation.mcore_generation_config.materialize_only_last_token_logits 0.7.0
policy.generation.mcore_generation_config.max_model_len 0.7.0
policy.generation.mcore_generation_config.max_tokens 0.5.0
policy.generation.mcore_generation_config.num_cuda_graphs 0.5.0
policy.generation.mcore_generation_config.num_speculative_tokens 0.7.0
policy.generation.mcore_generation_config.parsers 0.7.0
policy.generation.mcore_generation_config.refit_backend 0.7.0
policy.generation.mcore_generation_config.unified_memory_level 0.5.0..0.6.0
policy.generation.mcore_generation_config.use_cuda_graphs_for_non_decode_steps 0.5.0
policy.generation.model_name 0.2.1
policy.generation.pad_token_id 0.2.1..0.2.1
policy.generation.port_range_high 0.7.0
policy.generation.port_range_low 0.7.0
policy.generation.quant_cfg 0.7.0
policy.generation.real_quant 0.7.0
policy.generation.real_quant_ignore 0.7.0
policy.generation.sglang_cfg 0.6.0
policy.generation.sglang_cfg.allow_auto_truncate 0.6.0
policy.generation.sglang_cfg.attention_backend 0.6.0
policy.generation.sglang_cfg.chunked_prefill_size 0.6.0
policy.generation.sglang_cfg.context_length 0.6.0
policy.generation.sglang_cfg.cpu_offload_gb 0.6.0
policy.generation.sglang_cfg.cuda_graph_bs 0.6.0
policy.generation.sglang_cfg.cuda_graph_max_bs 0.6.0
policy.generation.sglang_cfg.decode_log_interval 0.6.0
policy.generation.sglang_cfg.disable_cuda_graph 0.6.0
policy.generation.sglang_cfg.disable_cuda_graph_padding 0.6.0
policy.generation.sglang_cfg.disable_custom_all_reduce 0.6.0
policy.generation.sglang_cfg.disable_outlines_disk_cache 0.6.0
policy.generation.sglang_cfg.disable_overlap_schedule 0.6.0
policy.generation.sglang_cfg.disable_piecewise_cuda_graph 0.6.0
policy.generation.sglang_cfg.disable_radix_cache 0.6.0
policy.generation.sglang_cfg.dp_size 0.6.0
policy.generation.sglang_cfg.dtype 0.6.0
policy.generation.sglang_cfg.enable_deepep_moe 0.7.0
policy.generation.sglang_cfg.enable_dp_attention 0.6.0
policy.generation.sglang_cfg.enable_ep_moe 0.6.0
policy.generation.sglang_cfg.enable_fast_load 0.6.0
policy.generation.sglang_cfg.enable_lora 0.6.0
policy.generation.sglang_cfg.enable_memory_saver 0.6.0..0.6.0
policy.generation.sglang_cfg.enable_metrics 0.6.0
policy.generation.sglang_cfg.enable_mixed_chunk 0.6.0
policy.generation.sglang_cfg.enable_multimodal 0.6.0
policy.generation.sglang_cfg.enable_multithread_load 0.6.0
policy.generation.sglang_cfg.enable_nan_detection 0.6.0
policy.generation.sglang_cfg.enable_nccl_nvls 0.6.0
policy.generation.sglang_cfg.enable_p2p_check 0.6.0
policy.generation.sglang_cfg.enable_torch_compile 0.6.0
policy.generation.sglang_cfg.ep_size 0.6.0
policy.generation.sglang_cfg.gpus_per_server 0.6.0..0.6.0
policy.generation.sglang_cfg.kv_cache_dtype 0.6.0
policy.generation.sglang_cfg.log_level 0.6.0
policy.generation.sglang_cfg.log_level_http 0.6.0
policy.generation.sglang_cfg.log_requests 0.6.0
policy.generation.sglang_cfg.log_requests_level 0.6.0
policy.generation.sglang_cfg.lora_backend 0.6.0
policy.generation.sglang_cfg.lora_paths 0.6.0
policy.generation.sglang_cfg.lora_target_modules 0.6.0
policy.generation.sglang_cfg.max_loaded_loras 0.6.0
policy.generation.sglang_cfg.max_lora_rank 0.6.0
policy.generation.sglang_cfg.max_loras_per_batch 0.6.0
policy.generation.sglang_cfg.max_prefill_tokens 0.6.0
policy.generation.sglang_cfg.max_running_requests 0.6.0
policy.generation.sglang_cfg.mem_fraction_static 0.6.0
policy.generation.sglang_cfg.model_path 0.6.0
policy.generation.sglang_cfg.num_continuous_decode_steps 0.6.0
policy.generation.sglang_cfg.pp_size 0.6.0
policy.generation.sglang_cfg.random_seed 0.6.0
policy.generation.sglang_cfg.sampling_backend 0.6.0
policy.generation.sglang_cfg.schedule_conservativeness 0.6.0
policy.generation.sglang_cfg.schedule_policy 0.6.0
policy.generation.sglang_cfg.sglang_router_config 0.7.0
policy.generation.sglang_cfg.sglang_router_config.router_policy 0.7.0
policy.generation.sglang_cfg.sglang_router_config.sglang_router_ip 0.7.0
policy.generation.sglang_cfg.sglang_router_config.sglang_router_port 0.7.0
policy.generation.sglang_cfg.sglang_router_config.sglang_router_request_timeout_secs 0.7.0
policy.generation.sglang_cfg.sglang_router_config.use_distributed_post 0.7.0
policy.generation.sglang_cfg.sglang_router_config.use_external_router 0.7.0
policy.generation.sglang_cfg.sglang_server_config 0.7.0
policy.generation.sglang_cfg.sglang_server_config.cpu_weight_backup 0.7.0
policy.generation.sglang_cfg.sglang_server_config.needs_offload 0.7.0
policy.generation.sglang_cfg.sglang_server_config.num_gpus 0.7.0
policy.generation.sglang_cfg.sglang_server_config.num_gpus_per_engine 0.7.0
policy.generation.sglang_cfg.sglang_server_config.pause_generation_mode 0.7.0
policy.generation.sglang_cfg.sglang_server_config.sglang_server_concurrency 0.7.0
policy.generation.sglang_cfg.show_time_cost 0.6.0
policy.generation.sglang_cfg.skip_server_warmup 0.6.0
policy.generation.sglang_cfg.skip_tokenizer_init 0.6.0
policy.generation.sglang_cfg.torch_compile_max_bs 0.6.0
policy.generation.sglang_cfg.torchao_config 0.6.0
policy.generation.sglang_cfg.tp_size 0.7.0
policy.generation.sglang_cfg.triton_attention_num_kv_splits 0.6.0
policy.generation.sglang_cfg.triton_attention_reduce_in_fp32 0.6.0
policy.generation.sglang_kwargs.* 0.6.0
policy.generation.stop_strings 0.2.1
policy.generation.stop_token_ids 0.2.1
policy.generation.temperature 0.2.1
policy.generation.top_k 0.2.1
policy.generation.top_p 0.2.1
policy.generation.use_async_rollouts 0.7.0
policy.generation.vllm_cfg 0.2.1
policy.generation.vllm_cfg.async_engine 0.4.0
policy.generation.vllm_cfg.enable_return_routed_experts 0.7.0
policy.generation.vllm_cfg.enable_vllm_metrics_logger 0.5.0
policy.generation.vllm_cfg.enforce_eager 0.4.0
policy.generation.vllm_cfg.env_vars.* 0.7.0
policy.generation.vllm_cfg.expert_parallel_size 0.4.0
policy.generation.vllm_cfg.expose_http_server 0.4.0
policy.generation.vllm_cfg.gpu_memory_utilization 0.2.1
policy.generation.vllm_cfg.http_server_serving_chat_kwargs.* 0.4.0
policy.generation.vllm_cfg.kv_cache_dtype 0.5.0
policy.generation.vllm_cfg.load_format 0.4.0
policy.generation.vllm_cfg.max_model_len 0.2.1
policy.generation.vllm_cfg.num_first_layers_in_bf16 0.4.0
policy.generation.vllm_cfg.num_last_layers_in_bf16 0.4.0
policy.generation.vllm_cfg.pipeline_parallel_size 0.4.0
policy.generation.vllm_cfg.precision 0.2.1
policy.generation.vllm_cfg.reasoning_parser_plugin 0.7.0
policy.generation.vllm_cfg.skip_tokenizer_init 0.2.1
policy.generation.vllm_cfg.tensor_parallel_size 0.2.1
policy.generation.vllm_cfg.tool_parser_plugin 0.5.0
policy.generation.vllm_cfg.use_deep_gemm 0.4.0
policy.generation.vllm_cfg.use_tqdm 0.7.0
policy.generation.vllm_cfg.vllm_metrics_logger_interval 0.5.0
policy.generation.vllm_kwargs.* 0.4.0
policy.generation_batch_size 0.2.1
policy.hf_config_overrides.* 0.4.0
policy.learning_rate 0.2.1..0.2.1
policy.logprob_batch_size 0.2.1
policy.logprob_chunk_size 0.4.0
policy.make_sequence_length_divisible_by 0.2.1
policy.max_grad_norm 0.2.1
policy.max_total_sequence_length 0.2.1
policy.megatron_cfg 0.4.0
policy.megatron_cfg.activation_checkpointing 0.4.0
policy.megatron_cfg.apply_rope_fusion 0.4.0
policy.megatron_cfg.attention_backend 0.6.0
policy.megatron_cfg.bias_activation_fusion 0.5.0
policy.megatron_cfg.clear_memory_caches_before_refit 0.7.0
policy.megatron_cfg.context_parallel_size 0.4.0
policy.megatron_cfg.converter_type 0.4.0..0.6.0
policy.megatron_cfg.cuda_graph_impl 0.7.0
policy.megatron_cfg.defer_fp32_logits 0.4.0
policy.megatron_cfg.distributed_data_parallel_config 0.4.0
policy.megatron_cfg.distributed_data_parallel_config.data_parallel_sharding_strategy 0.4.0
policy.megatron_cfg.distributed_data_parallel_config.grad_reduce_in_fp32 0.4.0
policy.megatron_cfg.distributed_data_parallel_config.overlap_grad_reduce 0.4.0
policy.megatron_cfg.distributed_data_parallel_config.overlap_param_gather 0.4.0
policy.megatron_cfg.distributed_data_parallel_config.use_custom_fsdp 0.4.0
policy.megatron_cfg.empty_unused_memory_level 0.4.0
policy.megatron_cfg.enabled 0.4.0
policy.megatron_cfg.env_vars.* 0.4.0
policy.megatron_cfg.expert_model_parallel_size 0.4.0
policy.megatron_cfg.expert_tensor_parallel_size 0.4.0
policy.megatron_cfg.force_overwrite_initial_ckpt 0.5.0..0.5.0
policy.megatron_cfg.force_reconvert_from_hf 0.6.0
policy.megatron_cfg.fp8_cfg 0.4.0
policy.megatron_cfg.fp8_cfg.enabled 0.6.0
policy.megatron_cfg.fp8_cfg.force_clear_fp8_caches 0.7.0
policy.megatron_cfg.fp8_cfg.fp8 0.6.0
policy.megatron_cfg.fp8_cfg.fp8_param 0.6.0
policy.megatron_cfg.fp8_cfg.fp8_recipe 0.6.0
policy.megatron_cfg.freeze_moe_router 0.4.0
policy.megatron_cfg.gradient_accumulation_fusion 0.6.0
policy.megatron_cfg.hybridep_num_ranks_per_nvlink_domain 0.7.0
policy.megatron_cfg.hybridep_use_mnnvl 0.7.0
policy.megatron_cfg.inference_grouped_gemm_backend 0.7.0
policy.megatron_cfg.inference_moe_token_dispatcher_type 0.7.0
policy.megatron_cfg.linear_ce_fusion_chunk_size 0.6.0
policy.megatron_cfg.moe_enable_deepep 0.6.0
policy.megatron_cfg.moe_flex_dispatcher_backend 0.7.0
policy.megatron_cfg.moe_grouped_gemm 0.7.0
policy.megatron_cfg.moe_hybridep_num_sms 0.7.0
policy.megatron_cfg.moe_pad_experts_for_cuda_graph_inference 0.7.0
policy.megatron_cfg.moe_per_layer_logging 0.5.0
policy.megatron_cfg.moe_permute_fusion 0.4.0
policy.megatron_cfg.moe_router_bias_update_rate 0.4.0
policy.megatron_cfg.moe_router_dtype 0.4.0
policy.megatron_cfg.moe_router_group_topk 0.7.0
policy.megatron_cfg.moe_router_load_balancing_type 0.4.0
policy.megatron_cfg.moe_router_num_groups 0.7.0
policy.megatron_cfg.moe_shared_expert_overlap 0.6.0
policy.megatron_cfg.moe_token_dispatcher_type 0.6.0
policy.megatron_cfg.mtp_detach_heads 0.7.0
policy.megatron_cfg.mtp_loss_scaling_factor 0.7.0
policy.megatron_cfg.mtp_num_layers 0.6.0
policy.megatron_cfg.mtp_use_repeated_layer 0.7.0
policy.megatron_cfg.num_layers_in_first_pipeline_stage 0.4.0
policy.megatron_cfg.num_layers_in_last_pipeline_stage 0.4.0
policy.megatron_cfg.optimizer 0.4.0
policy.megatron_cfg.optimizer.adam_beta1 0.4.0
policy.megatron_cfg.optimizer.adam_beta2 0.4.0
policy.megatron_cfg.optimizer.adam_eps 0.4.0
policy.megatron_cfg.optimizer.bf16 0.4.0
policy.megatron_cfg.optimizer.clip_grad 0.4.0
policy.megatron_cfg.optimizer.fp16 0.4.0
policy.megatron_cfg.optimizer.lr 0.4.0
policy.megatron_cfg.optimizer.min_lr 0.4.0
policy.megatron_cfg.optimizer.optimizer 0.4.0
policy.megatron_cfg.optimizer.optimizer_cpu_offload 0.4.0
policy.megatron_cfg.optimizer.optimizer_offload_fraction 0.4.0
policy.megatron_cfg.optimizer.params_dtype 0.4.0
policy.megatron_cfg.optimizer.sgd_momentum 0.4.0
policy.megatron_cfg.optimizer.use_distributed_optimizer 0.4.0
policy.megatron_cfg.optimizer.use_precision_aware_optimizer 0.4.0
policy.megatron_cfg.optimizer.weight_decay 0.4.0
policy.megatron_cfg.peft 0.6.0
policy.megatron_cfg.peft.a2a_experimental 0.6.0
policy.megatron_cfg.peft.alpha 0.6.0
policy.megatron_cfg.peft.dim 0.6.0
policy.megatron_cfg.peft.dropout 0.6.0
policy.megatron_cfg.peft.dropout_position 0.6.0
policy.megatron_cfg.peft.enabled 0.6.0
policy.megatron_cfg.peft.exclude_modules 0.6.0
policy.megatron_cfg.peft.lora_A_init_method 0.6.0
policy.megatron_cfg.peft.lora_B_init_method 0.6.0
policy.megatron_cfg.peft.lora_dtype 0.6.0
policy.megatron_cfg.peft.target_modules 0.6.0
policy.megatron_cfg.pipeline_dtype 0.4.0
policy.megatron_cfg.pipeline_model_parallel_size 0.4.0
policy.megatron_cfg.recompute_granularity 0.7.0
policy.megatron_cfg.recompute_modules 0.7.0
policy.megatron_cfg.scheduler 0.4.0
policy.megatron_cfg.scheduler.end_weight_decay 0.4.0
policy.megatron_cfg.scheduler.lr_decay_iters 0.4.0
policy.megatron_cfg.scheduler.lr_decay_style 0.4.0
policy.megatron_cfg.scheduler.lr_warmup_init 0.4.0
policy.megatron_cfg.scheduler.lr_warmup_iters 0.4.0
policy.megatron_cfg.scheduler.start_weight_decay 0.4.0
policy.megatron_cfg.scheduler.weight_decay_incr_style 0.4.0
policy.megatron_cfg.sequence_parallel 0.4.0
policy.megatron_cfg.tensor_model_parallel_size 0.4.0
policy.megatron_cfg.transformer_impl 0.7.0
policy.megatron_cfg.use_fused_weighted_squared_relu 0.7.0
policy.megatron_cfg.use_linear_ce_fusion_loss 0.6.0
policy.model_name 0.2.1
policy.offload_optimizer_for_logprob 0.5.0
policy.optimizer 0.2.1
policy.optimizer.kwargs.* 0.2.1
policy.optimizer.kwargs.betas 0.2.1
policy.optimizer.kwargs.eps 0.2.1
policy.optimizer.kwargs.foreach 0.2.1..0.6.0
policy.optimizer.kwargs.fused 0.2.1..0.6.0
policy.optimizer.kwargs.lr 0.2.1
policy.optimizer.kwargs.weight_decay 0.2.1
policy.optimizer.name 0.2.1
policy.precision 0.2.1
policy.pretrained_checkpoint 0.7.0
policy.pretrained_checkpoint.format 0.7.0
policy.pretrained_checkpoint.path 0.7.0
policy.quant_batch_size 0.7.0
policy.quant_calib_data 0.7.0
policy.quant_calib_size 0.7.0
policy.quant_cfg 0.7.0
policy.quant_sequence_length 0.7.0
policy.refit_buffer_size_gb 0.2.1
policy.reward_model_cfg 0.4.0
policy.reward_model_cfg.enabled 0.4.0
policy.reward_model_cfg.reward_model_type 0.4.0
policy.router_replay 0.7.0
policy.router_replay.enabled 0.7.0
policy.scheduler 0.2.1
policy.sequence_packing 0.4.0
policy.sequence_packing.algorithm 0.4.0
policy.sequence_packing.enabled 0.4.0
policy.sequence_packing.logprob_mb_tokens 0.4.0
policy.sequence_packing.sequence_length_round 0.4.0
policy.sequence_packing.train_mb_tokens 0.4.0
policy.tokenizer 0.2.1
policy.tokenizer.audio.* 0.6.0
policy.tokenizer.chat_template 0.2.1
policy.tokenizer.chat_template_kwargs.* 0.4.0
policy.tokenizer.name 0.2.1
policy.tokenizer.use_processor 0.6.0
policy.tokenizer.video.* 0.6.0
policy.train_global_batch_size 0.2.1
policy.train_micro_batch_size 0.2.1
data.val_data_path 0.4.0..0.5.0
"""


@dataclass(frozen=True)
class _Entry:
    key: str
    first: Version
    last: Version | None
    open: bool

    def covers(self, version: Version) -> bool:
        return self.first <= version and (self.last is None or version <= self.last)


@cache
def _entries() -> tuple[_Entry, ...]:
    out = []
    for line in _TABLE.split("\n"):
        if not line.strip():
            continue
        key, span = line.split()
        first, _, last = span.partition("..")
        is_open = key.endswith(".*")
        out.append(
            _Entry(
                key=key.removesuffix(".*"),
                first=Version(first),
                last=Version(last) if last else None,
                open=is_open,
            )
        )
    return tuple(out)


@cache
def _index(version: str) -> tuple[frozenset[str], frozenset[str]]:
    """(every key, the free-form keys) of ``version``."""
    v = Version(version)
    present = [e for e in _entries() if e.covers(v)]
    return frozenset(e.key for e in present), frozenset(e.key for e in present if e.open)


def keys_of(version: str) -> frozenset[str]:
    return _index(version)[0]


def is_known(key: str, version: str) -> bool:
    """Whether ``version`` has ``key`` (itself, or below a free-form mapping it has)."""
    known, free = _index(version)
    if key in known:
        return True
    parts = key.split(".")
    return any(".".join(parts[:i]) in free for i in range(1, len(parts)))


def versions_with(key: str) -> list[str]:
    """The first/last bound strings of the table entries for ``key`` (for 'first supported in' messages)."""
    return [str(e.first) for e in _entries() if e.key == key]


def suggest(key: str, version: str) -> str | None:
    hint = difflib.get_close_matches(key, sorted(keys_of(version)), n=1, cutoff=0.8)
    return hint[0] if hint else None
