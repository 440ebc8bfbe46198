"""The verl adapter against the REAL verl of every pinned version: its wheel's Hydra config tree, composed with
the adapter's overrides (patches included) for every example and for extra specs built here.

A test fails if Hydra rejects a key, if anything is left MISSING, or if a resolved value differs from what the
spec asked for. The expected values below are written from the spec and verl's documented key names, not read
back from the adapter.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra.errors import ConfigCompositionException, HydraException
from omegaconf import OmegaConf
from packaging.version import Version

from rladapt.adapters.verl import patches as verl_patches
from rladapt.adapters.verl import validate as verl_validate
from rladapt.adapters.verl.entrypoints import FULLY_ASYNC_MODULE
from rladapt.adapters.verl.translate import entrypoint, translate
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry
from rladapt.plugins.snapshots import snapshot
from rladapt.primitives import RLJob, SpecError, UnsupportedError, load_job, load_job_text
from tests.conftest import GPU_EXAMPLES
from tests.support.wheels import REPO

from .conftest import PINNED

pytestmark = pytest.mark.conformance

# the GPU frameworks' examples: verl renders every one (the TRL ones generate with the policy itself)
EXAMPLES = GPU_EXAMPLES
NO_SEPARATE = [v for v in PINNED if Version(v) < Version("0.8.0")]


def job_from(example: str, *overrides: str) -> RLJob:
    return load_job(REPO / "examples" / example, list(overrides))


def compose(native: NativeLaunch, package: Path) -> Any:
    start = time.perf_counter()
    cfg = verl_validate.compose(package, verl_validate.parse_argv(native.argv))
    _TIMINGS.setdefault(native.version, []).append(time.perf_counter() - start)
    return cfg


_TIMINGS: dict[str, list[float]] = {}


def select(cfg: Any, key: str) -> Any:
    return OmegaConf.select(cfg, key, throw_on_missing=True)


def expected(job: RLJob, version: str) -> dict[str, Any]:
    """verl key -> the value the spec asks for, on ``version``."""
    v = Version(version)
    s = job.spec
    budgets = s.training.budgets
    old_micro = budgets.old_log_prob.micro_batch_per_gpu or s.training.micro_batch_per_gpu
    arr = "actor_rollout_ref"
    pool = job.placement.pool_of("actor")
    assert pool is not None
    snap = snapshot("verl", version)

    def own(key: str, value: Any) -> Any:
        """A null spec field leaves ``key`` to verl: the composed value is that version's own default."""
        return snap.default(key) if value is None else value

    out: dict[str, Any] = {
        "trainer.nnodes": pool.nodes,
        "trainer.n_gpus_per_node": pool.gpus_per_node,
        "data.train_files": list(s.data.train),
        "data.val_files": [*s.data.val, *s.eval.datasets],
        "data.max_prompt_length": s.data.max_prompt_length,
        "data.max_response_length": s.data.max_response_length,
        "data.train_batch_size": s.training.global_batch,
        "data.prompt_key": s.data.prompt_key,
        "data.shuffle": s.data.shuffle,
        f"{arr}.model.path": s.model.path,
        f"{arr}.actor.ppo_mini_batch_size": s.training.mini_batch,
        f"{arr}.actor.ppo_micro_batch_size_per_gpu": s.training.micro_batch_per_gpu,
        f"{arr}.rollout.log_prob_micro_batch_size_per_gpu": old_micro,
        f"{arr}.ref.log_prob_micro_batch_size_per_gpu": budgets.ref_log_prob.micro_batch_per_gpu or old_micro,
        f"{arr}.actor.use_dynamic_bsz": s.training.dynamic_batch.enabled,
        f"{arr}.actor.optim.lr": s.training.optimizer.lr,
        f"{arr}.actor.optim.weight_decay": own(
            f"{arr}.actor.optim.weight_decay", s.training.optimizer.weight_decay
        ),
        f"{arr}.actor.clip_ratio_low": s.algorithm.clip.low,
        f"{arr}.actor.clip_ratio_high": s.algorithm.clip.high,
        f"{arr}.actor.ppo_epochs": s.algorithm.ppo_epochs,
        f"{arr}.rollout.name": s.rollout.engine,
        f"{arr}.rollout.mode": own(f"{arr}.rollout.mode", s.rollout.mode),
        f"{arr}.rollout.n": s.algorithm.group_size,
        f"{arr}.rollout.tensor_model_parallel_size": s.rollout.tensor_parallel,
        f"{arr}.rollout.gpu_memory_utilization": s.rollout.gpu_memory_utilization,
        f"{arr}.rollout.temperature": s.rollout.temperature,
        f"{arr}.rollout.top_p": s.rollout.top_p,
        f"{arr}.rollout.response_length": s.rollout.max_tokens or s.data.max_response_length,
        f"{arr}.rollout.val_kwargs.n": s.rollout.val.n,
        "algorithm.adv_estimator": {"ppo": "gae", "reinforce_pp": "reinforce_plus_plus"}.get(
            s.algorithm.name, "grpo" if s.algorithm.name in ("dapo", "gspo") else s.algorithm.name
        ),
        "algorithm.gamma": s.algorithm.gamma,
        "algorithm.lam": s.algorithm.lam,
        f"{arr}.actor.use_kl_loss": s.algorithm.kl.coef > 0 and s.algorithm.kl.in_ == "loss",
        "algorithm.use_kl_in_reward": s.algorithm.kl.coef > 0 and s.algorithm.kl.in_ == "reward",
        "trainer.default_local_dir": job.checkpoint_dir,
        "trainer.resume_mode": {"auto": "auto", "never": "disable", "path": "resume_path"}[
            s.checkpoint.resume
        ],
        "trainer.project_name": s.logging.project,
        "trainer.experiment_name": job.experiment,
        # rladapt adds tensorboard, whose events `rladapt metrics` reads back
        "trainer.logger": [
            *s.logging.backends,
            *([] if "tensorboard" in s.logging.backends else ["tensorboard"]),
        ],
        "trainer.val_before_train": own("trainer.val_before_train", s.eval.before_training),
        "trainer.test_freq": s.eval.every_steps or -1,
        "trainer.hybrid_engine" if False else f"{arr}.hybrid_engine": job.placement.colocated(
            "actor", "rollout"
        ),
    }
    if entrypoint(job) == FULLY_ASYNC_MODULE:
        # its rollouter asserts a zero train_batch_size; a step is mini batches x require_batches
        out["data.train_batch_size"] = 0
        out["async_training.require_batches"] = s.training.global_batch // s.training.mini_batch
    if s.training.steps:
        out["trainer.total_training_steps"] = s.training.steps
        if s.training.epochs:  # both: whichever comes first (RayPPOTrainer.fit)
            out["trainer.total_epochs"] = s.training.epochs
    else:
        out["trainer.total_epochs"] = s.training.epochs or 1
    if s.checkpoint.every_steps:
        out["trainer.save_freq"] = s.checkpoint.every_steps
    if s.checkpoint.keep_last:
        out["trainer.max_actor_ckpt_to_keep"] = s.checkpoint.keep_last
    if s.checkpoint.resume_path:
        out["trainer.resume_from_path"] = s.checkpoint.resume_path
    if s.algorithm.kl.coef > 0 and s.algorithm.kl.in_ == "loss":
        out[f"{arr}.actor.kl_loss_coef"] = s.algorithm.kl.coef
    if s.algorithm.kl.coef > 0 and s.algorithm.kl.in_ == "reward":
        out["algorithm.kl_ctrl.kl_coef"] = s.algorithm.kl.coef
    if v >= Version("0.6.1"):
        out["data.seed"] = own("data.seed", s.data.seed)
    backend = s.training.backend
    if backend != "megatron":
        out[f"{arr}.model.enable_gradient_checkpointing"] = own(
            f"{arr}.model.enable_gradient_checkpointing", s.model.gradient_checkpointing
        )
    out[f"{arr}.actor.strategy"] = own(f"{arr}.actor.strategy", backend)
    if backend == "megatron":
        if s.model.gradient_checkpointing:
            out[f"{arr}.actor.megatron.override_transformer_config.recompute_granularity"] = "full"
        out[f"{arr}.actor.megatron.tensor_model_parallel_size"] = s.training.parallel.tp
        out[f"{arr}.actor.megatron.pipeline_model_parallel_size"] = s.training.parallel.pp
    if s.algorithm.needs_critic:
        out["critic.model.path"] = s.model.critic_path or s.model.path
        out["critic.ppo_micro_batch_size_per_gpu"] = (
            budgets.critic_update.micro_batch_per_gpu or s.training.micro_batch_per_gpu
        )
        out["critic.optim.lr"] = (s.training.critic_optimizer or s.training.optimizer).lr
    rw = s.reward
    crf = "reward.custom_reward_function" if v >= Version("0.7.1") else "custom_reward_function"
    if rw.builtin is not None:
        # by_data_source: verl's own default_compute_score (no custom function); a fixed name: rladapt's file
        fixed = rw.builtin.name != "by_data_source"
        out[f"{crf}.path"] = ".rladapt/verl_builtin_reward.py" if fixed else None
    if v >= Version("0.7.1"):
        if rw.function:
            out["reward.custom_reward_function.path"] = rw.function.path
            out["reward.custom_reward_function.name"] = rw.function.name
        out["reward.reward_model.enable"] = rw.model is not None
        if rw.model:
            out["reward.reward_model.model_path"] = rw.model.path
            out["reward.reward_model.rollout.name"] = s.rollout.engine
    else:
        if rw.function:
            out["custom_reward_function.path"] = rw.function.path
            out["custom_reward_function.name"] = rw.function.name
        out["reward_model.enable"] = rw.model is not None
        if rw.model:
            out["reward_model.model.path"] = rw.model.path
            out["reward_model.micro_batch_size_per_gpu"] = rw.model.micro_batch_per_gpu
    if s.model.lora is not None and backend != "megatron":
        out[f"{arr}.model.lora_rank"] = s.model.lora.rank
        out[f"{arr}.model.lora_alpha"] = s.model.lora.alpha
    if not job.placement.colocated("actor", "rollout"):
        rpool = job.placement.pool_of("rollout")
        assert rpool is not None
        out["rollout.nnodes"] = rpool.nodes
        out["rollout.n_gpus_per_node"] = rpool.gpus_per_node
        out[f"{arr}.rollout.checkpoint_engine.backend"] = "nccl"
    for item in s.native.get("verl", []):
        key, _, value = item.lstrip("+").partition("=")
        out[key] = yaml.safe_load(value)
    return out


def check_conforms(job: RLJob, native: NativeLaunch, package: Path) -> Any:
    cfg = compose(native, package)
    missing = set(OmegaConf.missing_keys(cfg)) - verl_validate.allowed_missing(cfg)
    assert not missing, f"left MISSING: {sorted(missing)}"
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    wrong = {}
    for key, want in expected(job, native.version).items():
        got = select(cfg, key)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        if got != want and not (
            isinstance(want, float) and isinstance(got, float) and abs(got - want) < 1e-12
        ):
            wrong[key] = (want, got)
    assert not wrong, "resolved value differs from the spec (key: (spec, verl)): " + repr(wrong)
    return cfg


def render(registry: Registry, job: RLJob, version: str) -> NativeLaunch:
    return render_native(job, f"verl=={version}", registry).native


# --- every example on every pinned version -------------------------------------------------------------------


@pytest.mark.parametrize("example", [p.name for p in EXAMPLES])
def test_example_conforms(example: str, pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    job = job_from(example)
    if not job.placement.colocated("actor", "rollout") and version in NO_SEPARATE:
        with pytest.raises(UnsupportedError) as err:
            render(registry, job, version)
        assert any(
            p.path == "spec.placement"
            and f"verl {version}" in p.message
            and "first supported in verl 0.8.0" in p.message
            for p in err.value.problems
        )
        return
    if job.spec.algorithm.dynamic_sampling_on and Version(version) < Version("0.9.0"):
        # algorithm.filter_groups joined the main config in 0.9.0: refused naming the switch, and the same job
        # without dynamic sampling (verl's run_dapo_wo_ds) renders
        with pytest.raises(UnsupportedError) as err:
            render(registry, job, version)
        assert any(
            p.path == "spec.algorithm.dynamic_sampling" and "first supported in verl 0.9.1" in p.message
            for p in err.value.problems
        )
        job = job_from(example, "spec.algorithm.dynamic_sampling=false")
    if job.spec.rollout.multi_turn is not None and job.spec.rollout.mode == "async" and version == "0.5.0":
        # 0.5.0's agent loop is chosen by the data's agent_name only: refused, and the same job runs its turns
        # in the synchronous SGLang rollout (which takes the tool-call parser from the tokenizer)
        with pytest.raises(UnsupportedError) as err:
            render(registry, job, version)
        assert any(
            p.path == "spec.rollout.multi_turn" and "first supported in verl 0.6.1" in p.message
            for p in err.value.problems
        )
        job = job_from(
            example,
            "spec.rollout.mode=sync",
            "spec.rollout.engine=sglang",
            "spec.rollout.multi_turn.tool_call_format=null",
        )
    native = render(registry, job, version)
    assert native.argv[:2] == ("python3", "-m")
    check_conforms(job, native, package)


# --- extra specs: engines, algorithms, checkpointing ---------------------------------------------------------

EXTRA: dict[str, list[str]] = {
    "megatron": [
        "spec.training.backend=megatron",
        "spec.training.parallel.tp=2",
        "spec.training.parallel.pp=2",
        "spec.training.micro_batch_per_gpu=4",
    ],
    "fsdp-sp": [
        "spec.training.backend=fsdp",
        "spec.training.parallel.sp=2",
        "spec.training.micro_batch_per_gpu=8",
    ],
    "resume-path": [
        "spec.checkpoint.resume=path",
        "spec.checkpoint.resume_path=checkpoints/qwen2-5-3b-grpo-gsm8k/global_step_40",
    ],
    "resume-never": ["spec.checkpoint.resume=never", "spec.checkpoint.save_hf=true"],
    "lora": ["spec.model.lora.rank=64", "spec.model.lora.alpha=32"],
    "dynamic-batch": [
        "spec.training.dynamic_batch.enabled=true",
        "spec.training.dynamic_batch.max_tokens_per_gpu=8192",
    ],
    "rloo-kl-reward": [
        "spec.algorithm.name=rloo",
        "spec.algorithm.kl.in=reward",
        "spec.algorithm.kl.estimator=k1",
    ],
    "reinforce-pp": ["spec.algorithm.name=reinforce_pp"],
    "sglang-tokenizer": [
        "spec.rollout.engine=sglang",
        "spec.model.tokenizer=Qwen/Qwen2.5-3B-Instruct",
        "spec.rollout.max_tokens=512",
        "spec.logging.backends=[console,tensorboard]",
    ],
    "steps-no-keep": [
        "spec.training.epochs=null",
        "spec.training.steps=100",
        "spec.checkpoint.keep_last=null",
        "spec.checkpoint.every_steps=0",
    ],
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_extra_spec_conforms(name: str, pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    job = job_from("grpo-gsm8k.yaml", *EXTRA[name])
    native = render(registry, job, version)
    cfg = check_conforms(job, native, package)
    if name == "megatron":
        # 0.8.0+: model_engine=megatron on ppo_trainer, as the deprecated ppo_megatron_trainer.yaml says to
        engine_choice = Version(version) >= Version("0.8.0")
        assert ("model_engine=megatron" in native.argv) is engine_choice
        assert ("--config-name" in native.argv) is not engine_choice
        assert select(cfg, "actor_rollout_ref.actor.strategy") == "megatron"
        assert select(cfg, "actor_rollout_ref.ref.megatron.tensor_model_parallel_size") == 2
    if name == "steps-no-keep":
        # 0 = only at the end: verl saves when save_freq > 0 and (last step or step % save_freq == 0)
        assert select(cfg, "trainer.save_freq") == 100
    if name == "resume-never":
        assert "hf_model" in select(cfg, "actor_rollout_ref.actor.checkpoint.save_contents")
    if name == "rloo-kl-reward":
        assert select(cfg, "algorithm.kl_penalty") == "kl"


def test_ppo_critic_megatron_conforms(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    job = job_from(
        "ppo-critic-rm.yaml",
        "spec.training.backend=megatron",
        "spec.training.parallel.tp=2",
        "spec.training.micro_batch_per_gpu=8",
    )
    native = render(registry, job, version)
    cfg = check_conforms(job, native, package)
    assert select(cfg, "critic.megatron.tensor_model_parallel_size") == 2


def test_sync_mode_and_hf_engine(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    job = job_from("grpo-gsm8k.yaml", "spec.rollout.mode=sync", "spec.rollout.engine=hf")
    if Version(version) >= Version("0.7.1"):
        with pytest.raises(UnsupportedError) as err:
            render(registry, job, version)
        paths = {p.path for p in err.value.problems}
        assert {"spec.rollout.mode", "spec.rollout.engine"} <= paths
        assert all("last supported in verl 0.6.1" in p.message for p in err.value.problems)
        return
    check_conforms(job, render(registry, job, version), package)


def test_gspo_and_dapo(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    for name, first in (("gspo", "0.6.1"), ("dapo", "0.9.1")):
        job = job_from("grpo-gsm8k.yaml", f"spec.algorithm.name={name}")
        if Version(version) < Version(first):
            with pytest.raises(UnsupportedError, match=f"first supported in verl {first}"):
                render(registry, job, version)
            continue
        cfg = check_conforms(job, render(registry, job, version), package)
        if name == "gspo":
            assert select(cfg, "actor_rollout_ref.actor.policy_loss.loss_mode") == "gspo"
        else:
            assert select(cfg, "algorithm.filter_groups.enable") is True


def test_reward_model_pool(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    job = job_from(
        "ppo-critic-rm.yaml",
        "spec.placement.pools=[{name: train, nodes: 2, gpus_per_node: 8, "
        "roles: [actor, rollout, ref, critic]}, {name: rm, nodes: 1, gpus_per_node: 4, roles: [reward]}]",
    )
    if Version(version) < Version("0.6.1"):
        with pytest.raises(UnsupportedError, match="first supported in verl 0.6.1"):
            render(registry, job, version)
        return
    cfg = check_conforms(job, render(registry, job, version), package)
    prefix = "reward.reward_model" if Version(version) >= Version("0.7.1") else "reward_model"
    assert select(cfg, f"{prefix}.enable_resource_pool") is True
    assert (select(cfg, f"{prefix}.nnodes"), select(cfg, f"{prefix}.n_gpus_per_node")) == (1, 4)


# --- separate rollout placement: the experimental entrypoints ------------------------------------------------


@pytest.mark.parametrize("staleness", [1, 3])
def test_separate_placement(staleness: int, pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    job = job_from(
        "async-grpo-separate.yaml",
        f"spec.weight_sync.max_staleness={staleness}",
        f"spec.weight_sync.every_steps={1 if staleness == 1 else 2}",
    )
    if version in NO_SEPARATE:
        with pytest.raises(UnsupportedError, match="first supported in verl 0.8.0"):
            render(registry, job, version)
        return
    native = render(registry, job, version)
    module = "one_step_off_policy.main_ppo" if staleness == 1 else "fully_async_policy.fully_async_main"
    assert native.argv[2] == f"verl.experimental.{module}"
    cfg = check_conforms(job, native, package)
    if staleness == 3:
        assert select(cfg, "async_training.trigger_parameter_sync_step") == 2
        assert select(cfg, "rollout.total_rollout_steps") == 500 * 256
        # a step of global_batch prompts: 256 / 64 mini batches; the rollouter asserts a zero train_batch_size
        assert (select(cfg, "async_training.require_batches"), select(cfg, "data.train_batch_size")) == (4, 0)
        rollouter = (package / "experimental/fully_async_policy/fully_async_rollouter.py").read_text()
        assert "assert self.config.data.train_batch_size == 0" in rollouter
        trainer = (package / "experimental/fully_async_policy/fully_async_trainer.py").read_text()
        assert "ppo_mini_batch_size * self.require_batches" in trainer
    megatron = job_from("async-grpo-separate.yaml", "spec.training.backend=megatron")
    native = render(registry, megatron, version)
    assert "one_step_off_ppo_megatron_trainer" in native.argv
    check_conforms(megatron, native, package)


# --- negative conformance ------------------------------------------------------------------------------------

#: An override that exists in some pinned versions but not in others: (override, versions that accept it).
CROSS_VERSION: list[tuple[str, set[str]]] = [
    ("ray_init.num_cpus=4", {"0.5.0"}),
    ("ray_kwargs.ray_init.num_cpus=4", {"0.6.1", "0.7.1", "0.8.0", "0.9.1"}),
    ("reward.reward_manager.name=dapo", {"0.7.1", "0.8.0", "0.9.1"}),
    ("actor_rollout_ref.nccl_timeout=1200", {"0.6.1", "0.7.1", "0.8.0", "0.9.1"}),
    ("trainer.use_v1=false", {"0.9.1"}),
]


@pytest.mark.parametrize(("override", "accepting"), CROSS_VERSION, ids=[o for o, _ in CROSS_VERSION])
def test_key_of_another_version_is_rejected(
    override: str,
    accepting: set[str],
    pinned: tuple[str, Path],
    registry: Registry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    version, package = pinned
    monkeypatch.setenv(verl_validate.CONFIG_DIR_ENV, str(package))
    job = job_from("grpo-gsm8k.yaml", f"spec.native.verl=[{override}]")
    if version in accepting:
        native = render(registry, job, version)
        check_conforms(job, native, package)
        return
    with pytest.raises(SpecError) as err:
        render(registry, job, version)
    key = override.split("=")[0]
    assert f"{version} rejects the translated config" in err.value.message
    assert any(key in p.message and "not in struct" in p.message for p in err.value.problems), (
        err.value.problems
    )


def test_native_validation_reports_every_rejected_key(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = PINNED[-1]
    from .conftest import verl_package

    monkeypatch.setenv(verl_validate.CONFIG_DIR_ENV, str(verl_package(version)))
    job = job_from(
        "grpo-gsm8k.yaml", "spec.native.verl=[trainer.n_gpu_per_node=8,actor_rollout_ref.rollout.nme=x]"
    )
    with pytest.raises(SpecError) as err:
        render(registry, job, version)
    messages = " | ".join(p.message for p in err.value.problems)
    assert "trainer.n_gpu_per_node" in messages and "actor_rollout_ref.rollout.nme" in messages
    # the user's own overrides are blamed on their spec field, not on rladapt's argv
    assert {p.path for p in err.value.problems} == {"spec.native.verl[0]", "spec.native.verl[1]"}


def test_native_validation_skipped_for_another_installed_version(
    monkeypatch: pytest.MonkeyPatch, registry: Registry
) -> None:
    from .conftest import verl_package

    monkeypatch.setenv(verl_validate.CONFIG_DIR_ENV, str(verl_package(PINNED[0])))
    job = job_from("grpo-gsm8k.yaml", "spec.native.verl=[trainer.use_v1=false]")
    # a 0.9.1 key is fine for 0.9.1; the 0.5.0 tree on disk must not be used to judge it
    assert "trainer.use_v1=false" in render(registry, job, PINNED[-1]).argv


def test_impossible_batch_is_caught_by_rladapt() -> None:
    base = (REPO / "examples" / "grpo-gsm8k.yaml").read_text()
    with pytest.raises(SpecError) as err:
        load_job_text(base, ["spec.training.mini_batch=2048"])
    assert [str(p) for p in err.value.problems] == [
        "spec.training.mini_batch: larger than the global batch; expected at most global_batch=1024, found 2048"
    ]
    with pytest.raises(SpecError) as err:
        load_job_text(base, ["spec.training.micro_batch_per_gpu=3"])
    assert err.value.problems[0].path == "spec.training.micro_batch_per_gpu"
    assert "does not divide the 160 sequences each GPU gets per mini batch" in err.value.problems[0].message


def test_malformed_native_override_is_a_spec_error(registry: Registry) -> None:
    job = job_from("grpo-gsm8k.yaml", "spec.native.verl=['--not-hydra']")
    with pytest.raises(SpecError) as err:
        render(registry, job, PINNED[-1])
    assert err.value.problems[0].path == "spec.native.verl[0]"


# --- patches: each fails without the patch -------------------------------------------------------------------


def test_patch_legacy_reward_keys(registry: Registry) -> None:
    version = PINNED[-1]
    from .conftest import verl_package

    package = verl_package(version)
    job = job_from(
        "grpo-gsm8k.yaml",
        "spec.native.verl=[custom_reward_function.path=rewards/other.py,"
        "custom_reward_function.name=other_score]",
    )
    unpatched = translate(job, registry.framework("verl").resolve_version(version))
    cfg = compose(unpatched, package)
    # Without the patch Hydra accepts the legacy keys, and 0.9.x main_ppo never reads them.
    assert select(cfg, "reward.custom_reward_function.path") == "rewards/gsm8k.py"
    native = render(registry, job, version)
    assert "verl-legacy-reward-keys" in native.patches
    cfg = compose(native, package)
    assert select(cfg, "reward.custom_reward_function.path") == "rewards/other.py"
    assert select(cfg, "reward.custom_reward_function.name") == "other_score"
    assert "verl-legacy-reward-keys" not in render(registry, job, "0.8.0").patches  # 0.8.0 still migrates


@pytest.mark.parametrize("version", [v for v in PINNED if v not in NO_SEPARATE])
def test_patch_experimental_searchpath(
    version: str, registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .conftest import verl_package

    package = verl_package(version)
    monkeypatch.chdir(tmp_path)  # any directory that is not a verl checkout
    job = job_from("async-grpo-separate.yaml")
    unpatched = translate(job, registry.framework("verl").resolve_version(version))
    with pytest.raises((ConfigCompositionException, HydraException), match="ppo_trainer"):
        compose(unpatched, package)
    native = render(registry, job, version)
    assert "verl-experimental-searchpath" in native.patches
    assert native.argv[-1] == "hydra.searchpath=[pkg://verl.trainer.config]"
    check_conforms(job, native, package)


def test_patch_slurm_num_cpus(
    pinned: tuple[str, Path], registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    version, package = pinned
    key = "ray_init.num_cpus" if version == "0.5.0" else "ray_kwargs.ray_init.num_cpus"
    job = job_from("grpo-gsm8k.yaml")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "6")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv(verl_patches.NUM_CPUS_ENV, "")  # restored (unset) after the test; the hook writes it
    unpatched = translate(job, registry.framework("verl").resolve_version(version))
    assert select(compose(unpatched, package), key) is None  # ray.init(num_cpus=None) under Slurm: issue 523
    native = render(registry, job, version)
    assert native.runtime_patches == ("rladapt.adapters.verl.patches:export_slurm_num_cpus",)
    verl_patches.export_slurm_num_cpus()  # what the bootstrap runs before verl composes its config
    assert select(compose(native, package), key) == 6
    # joining a running cluster (the slurm launcher's Ray recipe): Ray refuses num_cpus there
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    verl_patches.export_slurm_num_cpus()
    assert select(compose(native, package), key) is None
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.delenv("SLURM_CPUS_PER_TASK")
    verl_patches.export_slurm_num_cpus()
    assert select(compose(native, package), key) is None  # outside Slurm Ray keeps autodetecting


# --- launch surface: runtime_env, checkpoint layout, plugin listing ------------------------------------------


def test_runtime_env_excludes(registry: Registry) -> None:
    job = job_from("grpo-gsm8k.yaml", "spec.env={HF_HOME: /models/hf}")
    native = render(registry, job, PINNED[-1])
    env = native.runtime_env
    assert env["working_dir"] == "."
    for pattern in (
        "/.git/",
        "*.safetensors",
        "/checkpoints/qwen2-5-3b-grpo-gsm8k/",
        "/data/gsm8k/train.parquet",
    ):
        assert pattern in env["excludes"]
    assert env["env_vars"] == {"HF_HOME": "/models/hf"}


def test_checkpoint_layout_and_versions(registry: Registry) -> None:
    adapter = registry.framework("verl")
    assert [v.version for v in adapter.versions()] == PINNED
    job = job_from(
        "grpo-gsm8k.yaml", "spec.checkpoint.resume=path", "spec.checkpoint.resume_path=ck/global_step_7"
    )
    native = render(registry, job, PINNED[-1])
    layout = adapter.checkpoint_layout(native)
    assert layout is not None
    assert layout.step_dir_pattern == "global_step_{step}"
    assert layout.latest_marker == "latest_checkpointed_iteration.txt"
    assert layout.resume_args == (
        "trainer.resume_mode=resume_path",
        "trainer.resume_from_path=ck/global_step_7",
    )


def test_composition_time_report(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    native = render(registry, job_from("grpo-gsm8k.yaml"), version)
    start = time.perf_counter()
    compose(native, package)
    elapsed = time.perf_counter() - start
    print(f"\nverl {version}: ppo_trainer composed in {elapsed:.2f} s")
    assert elapsed >= 0
