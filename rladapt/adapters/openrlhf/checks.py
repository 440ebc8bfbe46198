"""The checks OpenRLHF only makes after parsing its flags, made by rladapt first and with rladapt's message.

``train_ppo_ray`` asserts these after ``parse_args`` (and in ``train()``, once Ray is up and GPUs are reserved):
a failure there costs a cluster start-up and ends in a bare ``AssertionError``. The same rules run on the flags
rladapt computed from the spec (in ``translate``) and on the real parser's result for the whole argv, native
flags included (in ``validate_native``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from rladapt.primitives.errors import Problem

from .versions import GROUP_ESTIMATORS, has_flag, option

if TYPE_CHECKING:
    from .args import Args

#: OpenRLHF's defaults of the flags the checks read (the same in every pinned version, or unused where absent).
DEFAULTS: dict[str, Any] = {
    "actor_num_nodes": 1,
    "actor_num_gpus_per_node": 8,
    "ref_num_nodes": 1,
    "ref_num_gpus_per_node": 8,
    "critic_num_nodes": 1,
    "critic_num_gpus_per_node": 8,
    "reward_num_nodes": 1,
    "reward_num_gpus_per_node": 8,
    "vllm_num_engines": None,
    "vllm_tensor_parallel_size": 1,
    "colocate_all_models": False,
    "colocate_actor_ref": False,
    "colocate_critic_reward": False,
    "vllm_enable_sleep": False,
    "async_train": False,
    "partial_rollout": False,
    "packing_samples": False,
    "use_dynamic_batch": False,
    "ring_attn_size": 1,
    "ds_tensor_parallel_size": 1,
    "advantage_estimator": "gae",
    "n_samples_per_prompt": 1,
    "init_kl_coef": 0.01,
    "remote_rm_url": None,
    "agent_func_path": None,
    "eval_dataset": None,
    "dynamic_filtering": False,
    "dynamic_filtering_reward_range": (0.0, 1.0),
    "rollout_batch_size": 1024,
    "micro_rollout_batch_size": 1,
    "vllm_generate_batch_size": None,
}


@dataclass(frozen=True)
class FlagView:
    """Flag values by flat name, each with the spec field to blame when a rule fails."""

    version: Version
    get: Callable[[str], Any]
    field: Callable[[str], str]

    @classmethod
    def from_args(cls, args: Args) -> FlagView:
        return cls(
            version=args.version,
            get=lambda flat: args.values.get(flat, DEFAULTS.get(flat)),
            field=lambda flat: args.fields.get(flat, "spec"),
        )

    @classmethod
    def from_namespace(cls, version: Version, namespace: argparse.Namespace, blame: str) -> FlagView:
        def get(flat: str) -> Any:
            name = option(version, flat)[2:]
            return getattr(namespace, name, DEFAULTS.get(flat))

        return cls(version=version, get=get, field=lambda flat: blame)


def _gpus(view: FlagView, role: str) -> tuple[int, int]:
    return int(view.get(f"{role}_num_nodes")), int(view.get(f"{role}_num_gpus_per_node"))


def check(view: FlagView) -> list[Problem]:
    out: list[Problem] = []
    v = view.version
    engines = view.get("vllm_num_engines") or 0
    tp = view.get("vllm_tensor_parallel_size") or 1
    colocate_all = bool(view.get("colocate_all_models"))
    async_train = bool(view.get("async_train"))
    estimator = view.get("advantage_estimator")
    n = int(view.get("n_samples_per_prompt") or 1)
    kl = float(view.get("init_kl_coef") or 0.0)
    remote = view.get("remote_rm_url") or view.get("agent_func_path")
    an, ag = _gpus(view, "actor")

    if colocate_all and not async_train and engines and an * ag != engines * tp:
        out.append(
            Problem(
                view.field("vllm_num_engines"),
                f"actor and rollout share their GPUs, so the actor's {an}x{ag} GPUs must equal the vLLM engines "
                f"x tensor parallel ({engines}x{tp} = {engines * tp})",
                f"rollout GPUs = actor GPUs ({an * ag})",
                str(engines * tp),
            )
        )

    # Before 0.7 the reference model always exists and the shape check does not look at the KL coefficient.
    ref_exists = kl > 0 or not has_flag(v, "use_kl_loss")
    if (view.get("colocate_actor_ref") or colocate_all) and ref_exists and _gpus(view, "ref") != (an, ag):
        rn, rg = _gpus(view, "ref")
        out.append(
            Problem(
                view.field("ref_num_nodes"),
                f"the reference model shares the actor's GPUs, so it needs the actor's shape {an}x{ag}",
                f"{an} nodes x {ag} GPUs",
                f"{rn}x{rg}",
            )
        )
    if (
        estimator == "gae"
        and view.get("colocate_critic_reward")
        and _gpus(view, "critic") != _gpus(view, "reward")
    ):
        cn, cg = _gpus(view, "critic")
        rn, rg = _gpus(view, "reward")
        out.append(
            Problem(
                view.field("reward_num_nodes"),
                "critic and reward model share their GPUs, so both need the same shape",
                f"{cn}x{cg}",
                f"{rn}x{rg}",
            )
        )

    if estimator in GROUP_ESTIMATORS and n < 2:
        out.append(
            Problem(
                view.field("n_samples_per_prompt"),
                f"estimator {estimator} compares the samples of each prompt; with one sample every "
                "advantage is zero and training does nothing",
                "at least 2",
                str(n),
            )
        )

    packing = (
        bool(view.get("packing_samples"))
        or bool(view.get("use_dynamic_batch"))
        or int(view.get("ring_attn_size") or 1) > 1
    )
    if packing and not engines:
        out.append(
            Problem(
                view.field("packing_samples"),
                "sample packing (also implied by dynamic batching and "
                "ring attention) works only with vLLM rollout engines",
                "vllm_num_engines > 0",
                "0",
            )
        )

    if async_train and view.get("vllm_enable_sleep"):
        out.append(
            Problem(
                view.field("async_train"),
                "asynchronous training keeps vLLM generating while the actor trains, so vLLM cannot sleep",
                "no vllm sleep with async training",
                "both enabled",
            )
        )
    if view.get("partial_rollout") and not async_train:
        out.append(
            Problem(
                view.field("partial_rollout"),
                "partial rollouts need asynchronous training",
                "async training",
                "synchronous",
            )
        )

    if view.get("eval_dataset") and not remote:
        out.append(
            Problem(
                view.field("eval_dataset"),
                "evaluation scores answers with a reward function or remote reward, not with a reward model",
                "spec.reward.function or spec.reward.remote",
                "a reward model",
            )
        )

    if view.get("dynamic_filtering"):
        low, high = view.get("dynamic_filtering_reward_range")
        if not low < high:
            out.append(
                Problem(
                    view.field("dynamic_filtering_reward_range"),
                    "empty reward range",
                    "low < high",
                    f"{low} {high}",
                )
            )
        if not remote:
            out.append(
                Problem(
                    view.field("dynamic_filtering"),
                    "dynamic filtering drops groups by their reward, "
                    "which needs a reward function or remote reward",
                    "spec.reward.function or remote",
                    "a reward model",
                )
            )
        if n < 2:
            out.append(
                Problem(
                    view.field("n_samples_per_prompt"), "dynamic filtering needs groups", "at least 2", str(n)
                )
            )

    generate = view.get("vllm_generate_batch_size")
    rollout_batch = int(view.get("rollout_batch_size"))
    if generate and generate > rollout_batch and not async_train:
        out.append(
            Problem(
                view.field("vllm_generate_batch_size"),
                "over-sampling needs asynchronous training",
                f"at most {rollout_batch}",
                str(generate),
            )
        )

    if has_flag(v, "ring_attn_size"):
        micro = int(view.get("micro_rollout_batch_size") or 1)
        batches = n * rollout_batch // micro
        processes = (
            an * ag // int(view.get("ring_attn_size") or 1) // int(view.get("ds_tensor_parallel_size") or 1)
        )
        if batches < processes:
            out.append(
                Problem(
                    view.field("rollout_batch_size"),
                    f"{n} samples x {rollout_batch} prompts / micro batch {micro} = {batches} micro "
                    f"batches, fewer than the actor's {processes} data-parallel processes",
                    f"at least {processes}",
                    str(batches),
                )
            )
    return [Problem(p.path, f"openrlhf {v}: {p.message}", p.expected, p.found) for p in out]
