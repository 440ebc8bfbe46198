"""The nemo-rl adapter against the REAL configs of every pinned NeMo-RL tag.

For every spec a tag can express, the generated config is checked three ways: every key it sets is a key of that
tag (its typed ``MasterConfig`` tree, its example config, or a documented key upstream reads undeclared); merged
over the tag's own ``examples/configs/grpo_math_1B.yaml`` the way NeMo-RL's ``load_config`` does (``defaults:``
then ``OmegaConf.merge``) it resolves, leaves nothing ``???`` and holds the spec's values at the mapped keys.
The expected values are written here from the spec and NeMo-RL's key names, not read back from the adapter.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf
from packaging.version import Version

from rladapt.adapters.nemo_rl import validate as nrl_validate
from rladapt.adapters.nemo_rl.translate import translate
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry
from rladapt.plugins.testing import check_adapter
from rladapt.primitives import RLJob, SpecError, UnsupportedError, load_job
from tests.support.wheels import REPO

from .conftest import FIXTURES, PINNED, Tag, flatten, tag

pytestmark = pytest.mark.conformance

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
V = Version

for _name, _fn in (("mul", lambda a, b: a * b), ("div", lambda a, b: a / b), ("max", max)):
    # NeMo-RL's scripts register these resolvers (register_omegaconf_resolvers from 0.6.0).
    if not OmegaConf.has_resolver(_name):
        OmegaConf.register_new_resolver(_name, _fn)

#: What NeMo-RL expresses natively for the examples' reward function: a reward model environment on its own node,
#: and JSON-lines data (the only local format before 0.6.0).
RM = [
    "spec.reward.function=null",
    "spec.reward.model={path: Skywork/Skywork-Reward-V2-Qwen3-0.6B, micro_batch_per_gpu: 2}",
]
ADAPTED: dict[str, list[str]] = {
    "grpo-gsm8k.yaml": [
        *RM,
        "spec.data.train=[data/gsm8k/train.jsonl]",
        "spec.data.val=[data/gsm8k/test.jsonl]",
        "spec.placement.pools=[{name: all, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]},"
        "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
    ],
    "async-grpo-separate.yaml": [
        *RM,
        "spec.data.train=[data/math/train.jsonl]",
        "spec.data.val=[data/math/test.jsonl]",
        "spec.placement.pools=[{name: train, nodes: 2, gpus_per_node: 8, roles: [actor, ref]},"
        "{name: gen, nodes: 1, gpus_per_node: 8, roles: [rollout]},"
        "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
    ],
}


def job_from(example: str, *overrides: str) -> RLJob:
    return load_job(REPO / "examples" / example, list(overrides))


def adapted(example: str, *overrides: str) -> RLJob:
    return job_from(example, *ADAPTED[example], *overrides)


def render(registry: Registry, job: RLJob, version: str) -> NativeLaunch:
    return render_native(job, f"nemo-rl=={version}", registry).native


def generated(native: NativeLaunch) -> dict[str, Any]:
    path = native.argv[native.argv.index("--config") + 1]
    data = yaml.safe_load(native.files[path])
    assert data.pop("defaults") == "../examples/configs/grpo_math_1B.yaml"
    return dict(data)


def merged(native: NativeLaunch, t: Tag) -> Any:
    """The config NeMo-RL's load_config builds: the tag's grpo_math_1B.yaml, then the generated file over it
    (a top-level section marked ``_override_`` replaces the inherited one: merge_with_override, 0.6.0+)."""
    base, child = t.base(), generated(native)
    for key, section in child.items():
        if isinstance(section, dict) and section.pop("_override_", False):
            assert V(t.version) >= V("0.6.0"), "_override_ is only honoured from 0.6.0"
            base.pop(key, None)
    return OmegaConf.merge(OmegaConf.create(base), OmegaConf.create(child))


#: Expected where the spec leaves a key to NeMo-RL: the value of the tag's own example config.
OWN: Any = object()


def _own(value: Any) -> Any:
    return OWN if value is None else value


def expected(job: RLJob, version: str) -> dict[str, Any]:
    """NeMo-RL key -> the value the spec asks for, on ``version``."""
    v = V(version)
    s = job.spec
    d = s.data
    tr = s.training
    total_len = d.max_prompt_length + d.max_response_length
    pools = job.placement.pools
    out: dict[str, Any] = {
        "cluster.num_nodes": sum(p.nodes for p in pools),
        "cluster.gpus_per_node": pools[0].gpus_per_node,
        "policy.model_name": s.model.path,
        "policy.tokenizer.name": s.model.tokenizer or s.model.path,
        "policy.precision": s.model.dtype,
        "policy.train_global_batch_size": tr.mini_batch * s.algorithm.group_size,
        "policy.train_micro_batch_size": tr.micro_batch_per_gpu,
        "policy.logprob_batch_size": tr.micro_batch_per_gpu,
        "policy.max_total_sequence_length": total_len,
        "policy.dynamic_batching.enabled": tr.dynamic_batch.enabled,
        "policy.generation.backend": s.rollout.engine,
        "policy.generation.temperature": s.rollout.temperature,
        "policy.generation.top_p": s.rollout.top_p,
        "policy.generation.top_k": None if s.rollout.top_k == -1 else s.rollout.top_k,
        "policy.generation.max_new_tokens": s.rollout.max_tokens or d.max_response_length,
        "grpo.num_prompts_per_step": tr.global_batch,
        "grpo.num_generations_per_prompt": s.algorithm.group_size,
        "grpo.val_period": s.eval.every_steps,
        "grpo.val_at_start": _own(s.eval.before_training),
        "loss_fn.reference_policy_kl_penalty": s.algorithm.kl.coef,
        "loss_fn.ratio_clip_min": s.algorithm.clip.low,
        "loss_fn.ratio_clip_max": s.algorithm.clip.high,
        # unset max_prompt_length: NeMo-RL's own, the whole sequence length (${policy.max_total_sequence_length})
        "data.max_input_seq_length": (
            d.max_prompt_length if "max_prompt_length" in d.model_fields_set else total_len
        ),
        "checkpointing.enabled": True,
        "checkpointing.checkpoint_dir": job.checkpoint_dir,
        "checkpointing.metric_name": None if s.checkpoint.keep_last is not None else OWN,
        "logger.wandb_enabled": "wandb" in s.logging.backends,
        # always: rladapt reads the metrics back from its events, under log_dir
        "logger.tensorboard_enabled": True,
        "logger.log_dir": f"{job.checkpoint_dir}/rladapt-metrics",
    }
    if s.checkpoint.every_steps:
        out["checkpointing.save_period"] = s.checkpoint.every_steps
    if s.checkpoint.keep_last:
        out["checkpointing.keep_top_k"] = s.checkpoint.keep_last
    if "wandb" in s.logging.backends:
        out["logger.wandb.project"] = s.logging.project
        out["logger.wandb.name"] = job.experiment
    if tr.steps:
        out["grpo.max_num_steps"] = tr.steps
        if tr.epochs:  # both: whichever comes first (grpo_train's loop)
            out["grpo.max_num_epochs"] = tr.epochs
    else:
        out["grpo.max_num_epochs"] = tr.epochs or 1
    if s.rollout.engine == "vllm":
        out["policy.generation.vllm_cfg.tensor_parallel_size"] = s.rollout.tensor_parallel
        out["policy.generation.vllm_cfg.gpu_memory_utilization"] = s.rollout.gpu_memory_utilization
        out["policy.generation.vllm_cfg.max_model_len"] = total_len
        out["policy.generation.vllm_cfg.async_engine"] = (
            OWN if s.rollout.mode is None and not s.weight_sync.max_staleness else s.rollout.mode != "sync"
        )
    else:
        out["policy.generation.sglang_cfg.mem_fraction_static"] = s.rollout.gpu_memory_utilization
    separate = not job.placement.colocated("actor", "rollout")
    out["policy.generation.colocated.enabled"] = not separate
    if separate:
        gen = job.placement.pool_of("rollout")
        assert gen is not None
        out["policy.generation.colocated.resources.num_nodes"] = gen.nodes
        out["policy.generation.colocated.resources.gpus_per_node"] = gen.gpus_per_node
        out["grpo.async_grpo.enabled"] = s.weight_sync.max_staleness > 0
        if s.weight_sync.max_staleness:
            out["grpo.async_grpo.max_trajectory_age_steps"] = s.weight_sync.max_staleness
            out["loss_fn.use_importance_sampling_correction"] = True
    if tr.backend == "megatron":
        out["policy.megatron_cfg.enabled"] = True
        out["policy.dtensor_cfg.enabled"] = False
        out["policy.megatron_cfg.tensor_model_parallel_size"] = tr.parallel.tp
        out["policy.megatron_cfg.pipeline_model_parallel_size"] = tr.parallel.pp
        out["policy.megatron_cfg.optimizer.lr"] = tr.optimizer.lr
    else:
        out["policy.dtensor_cfg.enabled"] = True
        out["policy.dtensor_cfg.tensor_parallel_size"] = tr.parallel.tp
        out["policy.dtensor_cfg.activation_checkpointing"] = _own(s.model.gradient_checkpointing)
        out["policy.optimizer.kwargs.lr"] = tr.optimizer.lr
        out["policy.optimizer.kwargs.weight_decay"] = _own(tr.optimizer.weight_decay)
    if tr.dynamic_batch.enabled:
        out["policy.dynamic_batching.train_mb_tokens"] = tr.dynamic_batch.max_tokens_per_gpu
        out["policy.sequence_packing.enabled"] = False
    val = [*d.val, *s.eval.datasets]
    if v >= V("0.6.0"):
        if len(d.train) == 1:
            out["data.train.data_path"] = d.train[0]
            out["data.train.input_key"] = d.prompt_key
            out["data.train.dataset_name"] = "ResponseDataset"
            out["data.train.split_validation_size"] = 0
        if len(val) == 1:
            out["data.validation.data_path"] = val[0]
        out["data.default.env_name"] = "reward_model" if s.reward.model else "math"
        out["grpo.adv_estimator.name"] = (
            "reinforce_plus_plus" if s.algorithm.name.startswith("reinforce_pp") else "grpo"
        )
        out["loss_fn.use_kl_in_reward"] = s.algorithm.kl.coef > 0 and s.algorithm.kl.in_ == "reward"
    else:
        out["data.dataset_name"] = "ResponseDataset"
        out["data.train_data_path"] = d.train[0]
        out["data.input_key"] = d.prompt_key
        if v >= V("0.5.0"):
            out["data.env_name"] = "reward_model" if s.reward.model else "math"
    if v >= V("0.4.0"):
        out["grpo.seed"] = _own(d.seed)
        out["data.shuffle"] = d.shuffle
    if v >= V("0.5.0") and s.algorithm.kl.coef > 0:
        estimator = s.algorithm.kl.estimator
        out["loss_fn.reference_policy_kl_type"] = (
            OWN if estimator is None else {"low_var_kl": "k3"}.get(estimator, estimator)
        )
    if s.reward.model is not None:
        rm_pool = job.placement.pool_of("reward")
        assert rm_pool is not None
        out["env.reward_model.model_name"] = s.reward.model.path
        out["env.reward_model.resources.num_nodes"] = rm_pool.nodes
        out["env.reward_model.resources.gpus_per_node"] = rm_pool.gpus_per_node
    if s.reward.builtin is not None and v >= V("0.4.0"):
        # the math environment's verifier (nemo_rl/environments/math_environment.py, math_verify_impl)
        out["env.math.math_verify_impl"] = {"math": "hf_math_verify", "math_dapo": "dapo_math_verify"}[
            s.reward.builtin.name
        ]
    name = s.algorithm.name
    # GRPO and its variants keep NeMo-RL's own baseline and normalisation (its example config's)
    own_baseline = name in ("grpo", "dapo", "gspo")
    out["grpo.use_leave_one_out_baseline"] = OWN if own_baseline else name == "rloo"
    out["grpo.normalize_rewards"] = OWN if own_baseline else False
    if name == "dapo":
        out["grpo.use_dynamic_sampling"] = True
    if name == "gspo":
        out["loss_fn.sequence_level_importance_ratios"] = True
    if s.model.lora is not None:
        out["policy.dtensor_cfg.lora_cfg.enabled"] = True
        out["policy.dtensor_cfg.lora_cfg.dim"] = s.model.lora.rank
        out["policy.dtensor_cfg.lora_cfg.alpha"] = s.model.lora.alpha
    if s.checkpoint.save_hf:
        out["checkpointing.save_consolidated"] = True
    return out


def check_conforms(job: RLJob, native: NativeLaunch, t: Tag) -> Any:
    foreign = sorted(k for k in flatten(generated(native)) if not t.allows(k) and k != "data._override_")
    assert not foreign, f"keys nemo-rl {t.version} does not have: {foreign}"
    cfg = merged(native, t)
    base = OmegaConf.create(t.base())
    assert not OmegaConf.missing_keys(cfg), sorted(OmegaConf.missing_keys(cfg))
    resolved = OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    wrong = {}
    for key, want in expected(job, native.version).items():
        got = OmegaConf.select(cfg, key, throw_on_missing=True)
        if want is OWN:
            want = OmegaConf.select(base, key, throw_on_missing=True)
        if got != want:
            wrong[key] = (want, got)
    assert not wrong, "merged value differs from the spec (key: (spec, nemo-rl)): " + repr(wrong)
    assert nrl_validate.validate_native(native) == []
    return resolved


# --- the fixtures are there ----------------------------------------------------------------------------------


def test_fixtures_present_for_every_pinned_tag() -> None:
    assert FIXTURES.is_dir(), f"{FIXTURES} missing: CI provides ../shared/fixtures/nemo-rl"
    for version in PINNED:
        t = tag(version)
        assert t.base_config.is_file() and len(t.tree) > 50


# --- the examples ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", [p.name for p in EXAMPLES])
def test_example_as_written(example: str, pinned: Tag, registry: Registry) -> None:
    """Every example either conforms or is refused with the fields NeMo-RL cannot express."""
    job = job_from(example)
    try:
        native = render(registry, job, pinned.version)
    except UnsupportedError as err:
        paths = {p.path for p in err.problems}
        messages = " | ".join(p.message for p in err.problems)
        assert paths, err
        assert all(p.startswith("spec.") for p in paths)
        assert f"nemo-rl {pinned.version} cannot express" in messages
        if job.spec.reward.function is not None:
            assert "spec.reward.function" in paths
        if job.spec.algorithm.name == "ppo":
            assert "spec.algorithm.name" in paths
            assert "algorithm.ppo (no nemo-rl version supports it)" in messages
        return
    check_conforms(job, native, pinned)


@pytest.mark.parametrize("example", sorted(ADAPTED))
def test_example_with_native_reward_conforms(example: str, pinned: Tag, registry: Registry) -> None:
    job = adapted(example)
    if V(pinned.version) < V("0.4.0"):
        with pytest.raises(UnsupportedError) as err:
            render(registry, job, pinned.version)
        assert any(
            p.path == "spec.reward.model" and "first supported in nemo-rl 0.4.0" in p.message
            for p in err.value.problems
        )
        return
    native = render(registry, job, pinned.version)
    script = "examples/run_grpo.py" if V(pinned.version) >= V("0.5.0") else "examples/run_grpo_rm.py"
    assert native.argv[:5] == ("uv", "run", "python", script, "--config")
    (path,) = native.files
    assert (
        native.argv[5] == path and path.startswith(f"rladapt-configs/{job.name}-") and path.endswith(".yaml")
    )
    assert not any(a.startswith("actor_rollout_ref") for a in native.argv)  # native.verl is verl's alone
    check_conforms(job, native, pinned)


# --- extra specs: engines, algorithms, batching -------------------------------------------------------------

#: name -> (overrides on the adapted grpo-gsm8k spec, first pinned version that can express it)
EXTRA: dict[str, tuple[list[str], str]] = {
    "megatron": (
        ["spec.training.backend=megatron", "spec.training.parallel.tp=2", "spec.training.parallel.pp=2"],
        "0.4.0",
    ),
    "dynamic-batch": (
        ["spec.training.dynamic_batch.enabled=true", "spec.training.dynamic_batch.max_tokens_per_gpu=8192"],
        "0.4.0",
    ),
    "rloo": (["spec.algorithm.name=rloo"], "0.4.0"),
    "dapo": (["spec.algorithm.name=dapo", "spec.algorithm.clip.high=0.28"], "0.4.0"),
    "gspo": (["spec.algorithm.name=gspo"], "0.4.0"),
    "kl-k1": (["spec.algorithm.kl.estimator=k1"], "0.5.0"),
    "lora": (["spec.model.lora.rank=16", "spec.model.lora.alpha=32"], "0.5.0"),
    "reinforce-pp": (["spec.algorithm.name=reinforce_pp", "spec.algorithm.kl.in=reward"], "0.6.0"),
    "two-train-files": (["spec.data.train=[data/a.parquet,data/b.parquet]"], "0.6.0"),
    "sglang": (["spec.rollout.engine=sglang", "spec.rollout.mode=sync"], "0.6.0"),
    "steps-logging": (
        [
            "spec.training.epochs=null",
            "spec.training.steps=100",
            "spec.checkpoint.every_steps=0",
            "spec.checkpoint.save_hf=true",
            "spec.logging.backends=[console,tensorboard,mlflow]",
            "spec.rollout.top_k=50",
            "spec.model.tokenizer=Qwen/Qwen2.5-3B",
        ],
        "0.4.0",
    ),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_extra_spec_conforms(name: str, pinned: Tag, registry: Registry) -> None:
    overrides, first = EXTRA[name]
    job = adapted("grpo-gsm8k.yaml", *overrides)
    if V(pinned.version) < V(first):
        with pytest.raises(UnsupportedError) as err:
            render(registry, job, pinned.version)
        assert all(p.path.startswith("spec.") for p in err.value.problems)
        if V(pinned.version) >= V("0.4.0"):  # below, the reward model is refused first
            assert any(f"first supported in nemo-rl {first}" in p.message for p in err.value.problems), (
                err.value.problems
            )
        return
    native = render(registry, job, pinned.version)
    cfg = check_conforms(job, native, pinned)
    if name == "two-train-files":
        assert [b["data_path"] for b in cfg["data"]["train"]] == ["data/a.parquet", "data/b.parquet"]
    if name == "megatron":
        assert cfg["policy"]["optimizer"] is None
        assert cfg["policy"]["make_sequence_length_divisible_by"] == 2
    if name == "steps-logging":
        # 0 = only at the end: NeMo-RL saves on the last step whatever the period
        assert cfg["checkpointing"]["save_period"] == 100
        assert cfg["logger"]["mlflow_enabled"] is True


# --- version drift: a key of one tag is refused by the others ------------------------------------------------

#: A native override and the pinned versions that have its key.
CROSS_VERSION: list[tuple[str, set[str]]] = [
    # (data.dataset_name is no example here: recipes of 0.6.0 and 0.7.0 still set it at the top of data, so those
    # tags compose it too, read or not)
    ("data.input_key=problem", {"0.2.1", "0.4.0", "0.5.0"}),
    ("data.train.dataset_name=OpenMathInstruct-2", {"0.6.0", "0.7.0"}),
    ("grpo.val_at_end=true", {"0.6.0", "0.7.0"}),
    ("checkpointing.save_optimizer=false", {"0.6.0", "0.7.0"}),
    ("cluster.segment_size=4", {"0.7.0"}),
    ("grpo.max_num_epochs=3", {"0.4.0", "0.5.0", "0.6.0", "0.7.0"}),
]


@pytest.mark.parametrize(("override", "accepting"), CROSS_VERSION, ids=[o for o, _ in CROSS_VERSION])
def test_key_of_another_version_is_rejected(
    override: str, accepting: set[str], pinned: Tag, registry: Registry
) -> None:
    key = override.split("=")[0]
    assert (key in pinned.tree or key in pinned.example_keys) == (
        pinned.version in accepting
    )  # the fixture agrees
    if V(pinned.version) < V("0.4.0"):
        return  # no spec renders on 0.2.1; its key set is checked through validate_native below
    job = adapted("grpo-gsm8k.yaml", f'spec.native.nemo-rl=["{override}"]')
    if pinned.version in accepting:
        native = render(registry, job, pinned.version)
        assert native.argv[-1] == override
        return
    with pytest.raises(SpecError) as err:
        render(registry, job, pinned.version)
    assert f"{pinned.version} rejects the translated config" in err.value.message
    assert any(key in p.message and p.path == "spec.native.nemo-rl[0]" for p in err.value.problems)


def test_newer_key_in_the_config_file_is_rejected(registry: Registry) -> None:
    job = adapted("grpo-gsm8k.yaml")
    native = render(registry, job, "0.4.0")
    path = native.argv[native.argv.index("--config") + 1]
    text = native.files[path] + "grpo:\n  val_at_end: true\n"  # a 0.6.0 key, in a 0.4.0 config
    problems = nrl_validate.validate_native(native.model_copy(update={"files": {path: text}}))
    assert [p.path for p in problems] == ["nemo-rl config: grpo.val_at_end"]
    assert "nemo-rl 0.4.0 has no config key 'grpo.val_at_end'" in problems[0].message
    assert not tag("0.4.0").allows("grpo.val_at_end") and tag("0.6.0").allows("grpo.val_at_end")


def test_misspelt_native_key_gets_a_suggestion(registry: Registry) -> None:
    job = adapted(
        "grpo-gsm8k.yaml", 'spec.native.nemo-rl=["policy.generation.vllm_cfg.gpu_memory_utilisation=0.5"]'
    )
    with pytest.raises(SpecError) as err:
        render(registry, job, PINNED[-1])
    assert "did you mean 'policy.generation.vllm_cfg.gpu_memory_utilization'" in err.value.problems[0].message


def test_free_form_subtree_accepts_any_key(registry: Registry) -> None:
    item = "++policy.generation.vllm_kwargs.compilation_config.use_inductor=False"
    job = adapted("grpo-gsm8k.yaml", f'spec.native.nemo-rl=["{item}"]')
    assert render(registry, job, PINNED[-1]).argv[-1] == item


def test_malformed_native_override_is_a_spec_error(registry: Registry) -> None:
    job = adapted("grpo-gsm8k.yaml", "spec.native.nemo-rl=['--config=x.yaml']")
    with pytest.raises(SpecError) as err:
        render(registry, job, PINNED[-1])
    assert err.value.problems[0].path == "spec.native.nemo-rl[0]"


# --- unsupported requests -----------------------------------------------------------------------------------


def test_ppo_with_a_critic_is_unsupported(pinned: Tag, registry: Registry) -> None:
    job = job_from("ppo-critic-rm.yaml")
    with pytest.raises(UnsupportedError) as err:
        render(registry, job, pinned.version)
    by_path = {p.path: p.message for p in err.value.problems}
    assert by_path["spec.algorithm.name"] == (
        f"nemo-rl {pinned.version} cannot express algorithm.ppo (no nemo-rl version supports it)"
    )
    with pytest.raises(UnsupportedError) as err:  # translate alone refuses it too
        translate(job, registry.framework("nemo-rl").resolve_version(pinned.version))
    assert "spec.algorithm.name" in {p.path for p in err.value.problems}


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        (["spec.checkpoint.resume=never"], "spec.checkpoint.resume"),
        (["spec.algorithm.entropy_coef=0.01"], "spec.algorithm.entropy_coef"),
        (["spec.training.parallel.sp=2"], "spec.training.parallel.sp"),
        (["spec.weight_sync.every_steps=2"], "spec.weight_sync.every_steps"),
        (["spec.rollout.val.temperature=0.6"], "spec.rollout.val"),
        (["spec.data.train=[data/gsm8k/train.parquet]"], "spec.data.train[0]"),
    ],
)
def test_unsupported_field_is_named(overrides: list[str], path: str, registry: Registry) -> None:
    version = "0.4.0" if path == "spec.data.train[0]" else PINNED[-1]
    with pytest.raises(UnsupportedError) as err:
        render(registry, adapted("grpo-gsm8k.yaml", *overrides), version)
    assert path in {p.path for p in err.value.problems}, err.value.problems


def test_checkpoint_resume_path_is_unsupported(registry: Registry) -> None:
    job = adapted("grpo-gsm8k.yaml", "spec.checkpoint.resume=path", "spec.checkpoint.resume_path=ck/step_7")
    with pytest.raises(UnsupportedError, match="checkpoint.resume_path"):
        render(registry, job, PINNED[-1])


# --- the checks NeMo-RL makes only inside setup() ------------------------------------------------------------


def test_semantic_checks() -> None:
    v = V("0.7.0")
    assert nrl_validate.semantic({"checkpointing": {"metric_name": "val_reward"}}, v)[0].path.endswith(
        "checkpointing.metric_name"
    )
    assert nrl_validate.semantic({"checkpointing": {"metric_name": "val_reward"}}, V("0.2.1")) == []
    separate = {
        "cluster": {"num_nodes": 2, "gpus_per_node": 8},
        "policy": {
            "generation": {"colocated": {"enabled": False, "resources": {"num_nodes": 1, "gpus_per_node": 4}}}
        },
    }
    assert [p.path for p in nrl_validate.semantic(separate, v)] == [
        "nemo-rl config: policy.generation.colocated.resources"
    ]
    both = {"policy": {"dynamic_batching": {"enabled": True}, "sequence_packing": {"enabled": True}}}
    assert len(nrl_validate.semantic(both, v)) == 1
    async_colocated = {"grpo": {"async_grpo": {"enabled": True}, "use_dynamic_sampling": True}}
    assert len(nrl_validate.semantic(async_colocated, v)) == 2


# --- launch surface -------------------------------------------------------------------------------------------


def test_conformance_kit(registry: Registry) -> None:
    specs: list[Any] = [*EXAMPLES, adapted("grpo-gsm8k.yaml"), adapted("async-grpo-separate.yaml")]
    failures = check_adapter(registry.framework("nemo-rl"), specs)
    # 0.2.1 declares no reward source (function, model or remote), so no job translates there: the kit says so
    known = [f for f in failures if f.startswith("nemo-rl 0.2.1 translates none of")]
    assert len(known) == 1 and len(failures) == 1, "\n".join(failures)


def test_versions_layout_and_runtime_env(registry: Registry) -> None:
    adapter = registry.framework("nemo-rl")
    assert [v.version for v in adapter.versions()] == PINNED == ["0.2.1", "0.4.0", "0.5.0", "0.6.0", "0.7.0"]
    assert adapter.resolve_version(None).version == "0.7.0"
    assert adapter.resolve_version("0.2.1").status == "deprecated"
    job = adapted("grpo-gsm8k.yaml", "spec.env={HF_HOME: /models/hf}")
    native = render(registry, job, "0.7.0")
    layout = adapter.checkpoint_layout(native)
    assert (
        layout is not None and layout.step_dir_pattern == "step_{step}" and layout.root == job.checkpoint_dir
    )
    env = native.runtime_env
    assert env["env_vars"] == {"HF_HOME": "/models/hf"}
    assert "/checkpoints/qwen2-5-3b-grpo-gsm8k/" in env["excludes"] and "/.venv/" in env["excludes"]
    assert native.env == {"HF_HOME": "/models/hf"}
    (path,) = native.files
    assert path.startswith("rladapt-configs/qwen2-5-3b-grpo-gsm8k-") and path.endswith(".yaml")
