"""Every example and a set of built specs, rendered for every pinned OpenRLHF version through the pipeline (patches
included) and parsed by that version's REAL argparse parser: no unknown argument, and the values OpenRLHF reads are
the ones the spec asked for (expectations are written in flat flag names and mapped to dotted ones through the
research notes' rename map, not through the adapter's own table)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from packaging.version import Version

from rladapt.plugins import Registry
from rladapt.plugins.capabilities import job_requirements
from rladapt.primitives import RLJob, UnsupportedError

from .conftest import PINNED, dest_in, example, flags, job, parse_ok, real_parser, render

pytestmark = pytest.mark.conformance

ESTIMATOR = {
    "ppo": "gae",
    "grpo": "group_norm",
    "dapo": "group_norm",
    "gspo": "group_norm",
    "rloo": "rloo",
    "reinforce_pp": "reinforce",
    "reinforce_pp_baseline": "reinforce_baseline",
}

#: Every example renders for OpenRLHF as written (they avoid what it cannot express).
EXAMPLE_OVERRIDES: dict[str, list[str]] = {
    "async-grpo-separate": [],
    "grpo-gsm8k": [],
    "ppo-critic-rm": [],
}
#: What OpenRLHF cannot express, added to an example, and the fields it must be refused for.
EXAMPLE_REFUSED: dict[str, tuple[list[str], set[str]]] = {
    # OpenRLHF has no evaluation before the first step.
    "async-grpo-separate": (["spec.eval.before_training=true"], {"spec.eval.before_training"}),
    "grpo-gsm8k": (["spec.eval.before_training=true"], {"spec.eval.before_training"}),
    # Evaluation needs a reward function or remote reward, not a reward model.
    "ppo-critic-rm": (
        ["spec.data.val=[data/hh/test.parquet]", "spec.eval.every_steps=25"],
        {"spec.data.val"},
    ),
}


def expected(job: RLJob) -> dict[str, Any]:
    """What OpenRLHF must read, by flat dest, from the spec alone."""
    spec = job.spec
    layout = job.placement
    actor = layout.pool_of("actor")
    rollout = layout.pool_of("rollout")
    assert actor is not None and rollout is not None
    tr = spec.training
    group = spec.algorithm.group_size
    response = spec.rollout.max_tokens or spec.data.max_response_length
    out: dict[str, Any] = {
        "pretrain": spec.model.path,
        "actor_num_nodes": actor.nodes,
        "actor_num_gpus_per_node": actor.gpus_per_node,
        "vllm_num_engines": rollout.gpus // spec.rollout.tensor_parallel,
        "vllm_tensor_parallel_size": spec.rollout.tensor_parallel,
        "colocate_all_models": actor is rollout,
        "advantage_estimator": ESTIMATOR[spec.algorithm.name],
        "n_samples_per_prompt": group,
        "rollout_batch_size": tr.global_batch,
        "train_batch_size": tr.mini_batch * group,
        "micro_train_batch_size": tr.micro_batch_per_gpu,
        "micro_rollout_batch_size": tr.micro_batch_per_gpu,
        "init_kl_coef": spec.algorithm.kl.coef,
        "actor_learning_rate": tr.optimizer.lr,
        "prompt_data": spec.data.train[0],
        "input_key": spec.data.prompt_key,
        "ckpt_path": job.checkpoint_dir,
        "load_checkpoint": spec.checkpoint.resume == "auto",
        "save_steps": spec.checkpoint.every_steps or -1,
        "temperature": spec.rollout.temperature,
        "max_epochs": spec.algorithm.ppo_epochs,
        "zero_stage": (
            OWN
            if tr.backend is None
            else (spec.training.parallel.zero_stage or 2)
            if tr.backend == "deepspeed"
            else 3
        ),
        "gradient_checkpointing": _own(spec.model.gradient_checkpointing),
        "seed": _own(spec.data.seed),
        # version-dependent spellings: only checked where the version has the dest
        "prompt_max_len": spec.data.max_prompt_length,
        "generate_max_len": response,
        # unset max_tokens: OpenRLHF's own "max_len - prompt_len" per sample
        "max_new_tokens": _own(spec.rollout.max_tokens),
        "max_len": spec.data.max_prompt_length + spec.data.max_response_length,
        "use_kl_loss": spec.algorithm.kl.in_ == "loss" and spec.algorithm.kl.coef > 0,
    }
    if tr.steps is not None:
        out["max_samples"] = tr.steps * tr.global_batch
        out["num_episodes"] = 1
    else:
        out["num_episodes"] = tr.epochs or 1
    if spec.checkpoint.keep_last is not None:
        out["max_ckpt_num"] = spec.checkpoint.keep_last
    if spec.weight_sync.max_staleness:
        out["async_train"] = True
        out["async_queue_size"] = spec.weight_sync.max_staleness
    if spec.algorithm.needs_critic:
        out["critic_pretrain"] = _own(spec.model.critic_path)
        out["critic_learning_rate"] = (tr.critic_optimizer or tr.optimizer).lr
    if spec.reward.model is not None:
        out["reward_pretrain"] = spec.reward.model.path
    if spec.reward.remote is not None:
        out["remote_rm_url"] = spec.reward.remote.url
    if spec.eval.every_steps:
        out["eval_steps"] = spec.eval.every_steps
        out["eval_dataset"] = ",".join([*spec.data.val, *spec.eval.datasets])
    if "ref" in spec.required_roles:
        ref = layout.pool_of("ref")
        assert ref is not None
        out["ref_num_nodes"] = ref.nodes
        out["ref_num_gpus_per_node"] = ref.gpus_per_node
    if spec.model.lora is not None:
        out["lora_rank"] = spec.model.lora.rank
        out["lora_alpha"] = spec.model.lora.alpha
    if spec.algorithm.clip.high != spec.algorithm.clip.low:
        out["eps_clip_low_high"] = [spec.algorithm.clip.low, spec.algorithm.clip.high]
    if spec.training.parallel.cp > 1:
        out["ring_attn_size"] = spec.training.parallel.cp
    return out


#: Expected where the spec field is null: the flag is not emitted and OpenRLHF reads its own default.
OWN: Any = object()


def _own(value: Any) -> Any:
    return OWN if value is None else value


def assert_values(version: str, argv: tuple[str, ...], job: RLJob) -> int:
    """Parse ``argv`` with the real parser and compare every expected value OpenRLHF has a flag for."""
    assert argv[:3] == ("python3", "-m", "openrlhf.cli.train_ppo_ray")
    namespace = parse_ok(version, argv[3:])
    known = {action.dest for action in real_parser(version)._actions}
    checked = 0
    for flat, want in expected(job).items():
        try:
            name = dest_in(version, flat)
        except AssertionError:
            continue  # a flat-only flag (e.g. --prompt_max_len) has no dotted counterpart
        if name not in known or (flat == "max_len" and "prompt_max_len" in known):
            continue  # before 0.9.8 --max_len is an optional override of prompt + generate lengths
        got = getattr(namespace, name)
        if want is OWN:  # a null spec field leaves the flag to OpenRLHF: its own default is what it reads
            want = real_parser(version).get_default(name)
        if isinstance(want, float) or isinstance(got, float):
            assert got is not None and math.isclose(float(got), float(want)), (
                f"{version} {name}: {got} != {want}"
            )
        elif isinstance(got, tuple):
            assert list(got) == list(want), f"{version} {name}: {got} != {want}"
        else:
            assert got == want, f"openrlhf {version} reads {name}={got!r}, the spec asked for {want!r}"
        checked += 1
    return checked


@pytest.mark.parametrize("version", PINNED)
@pytest.mark.parametrize("name", sorted(EXAMPLE_OVERRIDES))
def test_example_parses_with_the_real_parser(
    name: str, version: str, registry: Registry, real_source: Any
) -> None:
    real_source(version)  # the pipeline's validate_native uses the same real parser
    spec = example(name, EXAMPLE_OVERRIDES[name])
    if _too_old_for(spec, version, registry):
        with pytest.raises(UnsupportedError):
            render(spec, version, registry)
        return
    rendered = render(spec, version, registry)
    assert assert_values(version, rendered.native.argv, spec) >= 20


def _too_old_for(spec: RLJob, version: str, registry: Registry) -> bool:
    caps = registry.framework("openrlhf").resolve_version(version).capabilities
    return any(req.capability not in caps for req in job_requirements(spec))


@pytest.mark.parametrize("name", sorted(EXAMPLE_REFUSED))
def test_example_with_what_openrlhf_lacks_is_refused_for_exactly_that(name: str, registry: Registry) -> None:
    overrides, fields = EXAMPLE_REFUSED[name]
    with pytest.raises(UnsupportedError) as caught:
        render(example(name, overrides), PINNED[-1], registry)
    assert {p.path for p in caught.value.problems} == fields
    assert all("openrlhf" in p.message for p in caught.value.problems)


# --- built specs: placement modes, critic, async, algorithms ----------------------------------------------------

SEPARATE_PPO = {
    "model": {"path": "m/policy", "critic_path": "m/critic"},
    "algorithm": {
        "name": "ppo",
        "group_size": 1,
        "kl": {"coef": 0.01, "in": "reward", "estimator": "k1"},
        "lambda": 0.95,
    },
    "reward": {"model": {"path": "m/rm"}},
    "training": {"global_batch": 64, "mini_batch": 32},
    "eval": {"every_steps": 0},
    "placement": {
        "pools": [
            {"name": "train", "nodes": 2, "gpus_per_node": 8, "roles": ["actor", "ref"]},
            {"name": "value", "nodes": 1, "gpus_per_node": 8, "roles": ["critic", "reward"]},
            {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
        ]
    },
}
COLOCATED_PPO = {
    "algorithm": {"name": "ppo", "group_size": 1, "kl": {"coef": 0.0}},
    "placement": {
        "pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout", "critic"]}]
    },
}
ASYNC = {
    "rollout": {"tensor_parallel": 4, "mode": "async"},
    "weight_sync": {"max_staleness": 2},
    "placement": {
        "pools": [
            {"name": "train", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "ref"]},
            {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
        ]
    },
}

#: name -> (spec changes, first pinned version that can run it)
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "ppo-separate-pools": (SEPARATE_PPO, "0.5.9.post1"),
    "ppo-colocated-no-kl": (COLOCATED_PPO, "0.5.9.post1"),
    "grpo-colocated": ({}, "0.7.5"),
    "async-grpo-staleness-1": ({**ASYNC, "weight_sync": {"max_staleness": 1}}, "0.8.11"),
    "async-grpo-staleness-2": (ASYNC, "0.9.10"),
    "dapo-remote": (
        {
            "algorithm": {"name": "dapo", "group_size": 8, "clip": {"low": 0.2, "high": 0.28}},
            "reward": {"remote": {"url": "http://rm:5000/score"}},
        },
        "0.8.11",
    ),
    "gspo": ({"algorithm": {"name": "gspo", "group_size": 4}}, "0.8.11"),
    "lora-dynamic-batch-tensorboard": (
        {
            "model": {"path": "m/p", "lora": {"rank": 16, "alpha": 32}},
            "training": {"dynamic_batch": {"enabled": True}},
            "logging": {"backends": ["console", "tensorboard"]},
        },
        "0.8.11",
    ),
    "rloo-remote-no-resume": (
        {
            "algorithm": {"name": "rloo", "group_size": 4, "kl": {"coef": 0.01, "in": "reward"}},
            "reward": {"remote": {"url": "https://rm.example/score"}},
            "checkpoint": {"dir": "/ckpt/r", "resume": "never"},
            "eval": {"every_steps": 0},
        },
        "0.5.9.post1",
    ),
    "reinforce-pp-ring-attention": (
        {
            "algorithm": {"name": "reinforce_pp", "group_size": 2},
            "training": {"parallel": {"cp": 2, "zero_stage": 2}, "epochs": 2, "steps": None},
        },
        "0.7.5",
    ),
}


@pytest.mark.parametrize("version", PINNED)
@pytest.mark.parametrize("case", sorted(CASES))
def test_built_spec(case: str, version: str, registry: Registry, real_source: Any) -> None:
    changes, first = CASES[case]
    spec = job(**changes)
    real_source(version)
    if Version(version) < Version(first):
        with pytest.raises(UnsupportedError) as caught:
            render(spec, version, registry)
        assert all(p.path.startswith("spec.") for p in caught.value.problems)
        return
    rendered = render(spec, version, registry)
    assert assert_values(version, rendered.native.argv, spec) >= 20


@pytest.mark.parametrize("version", PINNED)
def test_separate_pools_place_each_group_on_its_own_gpus(version: str, registry: Registry) -> None:
    namespace = parse_ok(version, render(job(**SEPARATE_PPO), version, registry).native.argv[3:])

    def read(flat: str) -> Any:
        return getattr(namespace, dest_in(version, flat))

    assert not read("colocate_all_models")
    assert read("colocate_actor_ref") and read("colocate_critic_reward")
    assert (read("critic_num_nodes"), read("critic_num_gpus_per_node")) == (1, 8)
    assert (read("reward_num_nodes"), read("reward_num_gpus_per_node")) == (1, 8)
    assert read("vllm_num_engines") * read("vllm_tensor_parallel_size") == 8
    assert not read("vllm_enable_sleep")  # sleeping only makes sense when vLLM shares the actor's GPUs


@pytest.mark.parametrize("version", PINNED)
def test_colocated_job_is_a_hybrid_engine(version: str, registry: Registry) -> None:
    namespace = parse_ok(version, render(job(**COLOCATED_PPO), version, registry).native.argv[3:])

    def read(flat: str) -> Any:
        return getattr(namespace, dest_in(version, flat))

    assert read("colocate_all_models") and read("vllm_enable_sleep")
    # the critic rides in the actor's placement group; its own group would need 8 more GPUs
    assert not read("colocate_critic_reward")
    assert read("actor_num_nodes") * read("actor_num_gpus_per_node") == (
        read("vllm_num_engines") * read("vllm_tensor_parallel_size")
    )


@pytest.mark.parametrize("version", PINNED)
def test_micro_batches_are_always_explicit(version: str, registry: Registry) -> None:
    spec = job(
        algorithm={"name": "rloo", "kl": {"coef": 0.01, "in": "reward"}}, training={"micro_batch_per_gpu": 1}
    )
    argv = render(spec, version, registry).native.argv
    dotted = Version(version) >= Version("0.10.2")
    assert ("--train.micro_batch_size" if dotted else "--micro_train_batch_size") in argv
    assert ("--rollout.micro_batch_size" if dotted else "--micro_rollout_batch_size") in argv


def test_every_pinned_version_has_a_parser_with_the_flags_the_adapter_knows() -> None:
    from rladapt.adapters.openrlhf import versions

    for version in PINNED:
        known = flags(real_parser(version))
        for flat in [*versions.DOTTED, *versions.RANGES]:
            if versions.has_flag(version, flat):
                spelled = versions.spell(version, flat) if flat in versions.DOTTED else f"--{flat}"
                assert spelled in known, f"openrlhf {version} has no {spelled}"
            elif not versions.dotted(version):
                assert f"--{flat}" not in known, f"openrlhf {version} does have --{flat}: widen its range"
