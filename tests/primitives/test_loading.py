"""The spec: loading, overrides, interpolation, and the exact messages of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.primitives import SpecError, UsageError, load_job, load_job_text
from tests.conftest import EXAMPLES

MINIMAL = """
apiVersion: rladapt/v1alpha1
kind: RLJob
metadata: {name: tiny}
spec:
  model: {path: Qwen/Qwen2.5-0.5B-Instruct}
  algorithm: {name: grpo, group_size: 4}
  data: {train: [train.parquet]}
  training: {global_batch: 64, mini_batch: 16, micro_batch_per_gpu: 2}
  reward: {function: {path: reward.py}}
"""


def problems(text: str, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_job_text(text, overrides or [])
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid(path: Path) -> None:
    job = load_job(path)
    assert job.spec.required_roles[:2] == ["actor", "rollout"]


def test_defaults_a_user_expects() -> None:
    job = load_job_text(MINIMAL, [])
    assert job.placement.pools[0].roles == ["actor", "rollout"]  # no KL -> no reference policy
    assert (job.placement.pools[0].nodes, job.placement.pools[0].gpus_per_node) == (1, 8)
    assert job.checkpoint_dir == "checkpoints/tiny"
    assert job.experiment == "tiny"
    # fields that can mean "what the framework does by itself" say so: null (see README, defaults policy)
    assert job.spec.rollout.mode is None
    assert job.spec.data.seed is None
    assert job.spec.training.backend is None
    assert job.spec.training.optimizer.warmup_steps is None
    assert job.spec.eval.before_training is None


def test_overrides_interpolation_and_yaml12_floats() -> None:
    text = MINIMAL + "  logging: {project: p, experiment: '${metadata.name}-run'}\n"
    job = load_job_text(
        text, ["spec.training.optimizer.lr=3e-7", "spec.training.global_batch=128", "metadata.labels.team=rl"]
    )
    assert job.spec.training.optimizer.lr == pytest.approx(3e-7)
    assert job.spec.training.global_batch == 128
    assert job.spec.logging.experiment == "tiny-run"
    assert job.metadata.labels == {"team": "rl"}
    yaml12 = MINIMAL.replace("training: {", "training: {optimizer: {lr: 1e-6}, ")
    assert load_job_text(yaml12, []).spec.training.optimizer.lr == pytest.approx(1e-6)


def test_unknown_key_names_path_and_suggests() -> None:
    out = problems(MINIMAL.replace("group_size: 4", "group_sise: 4"))
    assert len(out) == 1
    assert out[0].startswith(
        "spec.algorithm.group_sise: unknown key 'group_sise' (did you mean 'group_size'?)"
    )


def test_all_field_errors_are_reported_at_once() -> None:
    bad = MINIMAL.replace("group_size: 4", "group_size: four").replace("global_batch: 64", "global_batch: -1")
    bad = bad.replace("kind: RLJob", "kind: Job")
    out = problems(bad)
    assert len(out) == 3, out
    assert any(p.startswith("kind: wrong value; expected 'RLJob', found 'Job'") for p in out)
    assert any(
        p.startswith("spec.algorithm.group_size: wrong value; expected a valid integer") and "'four'" in p
        for p in out
    )
    assert any(
        p.startswith("spec.training.global_batch: wrong value; expected greater than 0, found -1")
        for p in out
    )


def test_missing_required_section() -> None:
    out = problems(MINIMAL.replace("  reward: {function: {path: reward.py}}\n", ""))
    assert out == ["spec.reward: required key is missing"]


def test_malformed_yaml_gives_position() -> None:
    out = problems("apiVersion: rladapt/v1alpha1\nspec: {model: [\n")
    assert len(out) == 1 and "malformed YAML at line 3" in out[0]


def test_duplicate_keys_are_errors() -> None:
    out = problems(MINIMAL + "  reward: {function: {path: other.py}}\n")
    assert "duplicate key 'reward'" in out[0]


def test_not_a_mapping() -> None:
    assert problems("- a\n- b\n") == [
        "<root>: the spec must be a mapping; expected apiVersion, kind, metadata, spec, found list"
    ]


def test_bad_override_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        load_job_text(MINIMAL, ["spec.training.global_batch"])


def test_bad_interpolation_names_key() -> None:
    out = problems(MINIMAL + "  logging: {experiment: '${metadata.nope}'}\n")
    assert out[0].startswith("spec.logging.experiment: cannot resolve interpolation")


def test_missing_file_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_job(tmp_path / "nope.yaml")


# --- cross-field rules ------------------------------------------------------------------------------------


def test_impossible_placement_reports_every_problem() -> None:
    text = MINIMAL.replace(
        "algorithm: {name: grpo, group_size: 4}",
        "algorithm: {name: ppo, group_size: 1, kl: {coef: 0.01, in: reward}}",
    )
    text += (
        "  placement:\n    pools:\n"
        "      - {name: a, nodes: 1, gpus_per_node: 8, roles: [actor, rollout]}\n"
        "      - {name: a, nodes: 1, gpus_per_node: 8, roles: [rollout, reward]}\n"
    )
    out = problems(text)
    joined = "\n".join(out)
    assert "pool name 'a' is used 2 times" in joined
    assert "role 'rollout' is placed in pools ['a', 'a']" in joined
    assert (
        "role 'ref' is in no pool (KL regularisation (spec.algorithm.kl.coef=0.01) needs a reference"
        in joined
    )
    assert (
        "role 'critic' is in no pool (algorithm ppo estimates advantages with GAE and needs a critic)"
        in joined
    )
    assert "role 'reward' is placed but this job does not use it" in joined


def test_rollout_tensor_parallel_must_divide_pool() -> None:
    out = problems(MINIMAL + "  rollout: {tensor_parallel: 3}\n")
    assert out == [
        "spec.rollout.tensor_parallel: does not divide the 8 GPUs per node of pool 'default'; "
        "expected a divisor of 8, found 3"
    ]


def test_batches_divide_as_the_algorithm_needs() -> None:
    assert problems(MINIMAL, ["spec.training.mini_batch=24"]) == [
        "spec.training.global_batch: not divisible by mini_batch=24; expected a multiple of 24, found 64"
    ]
    assert problems(MINIMAL, ["spec.training.mini_batch=128"])[0].startswith(
        "spec.training.mini_batch: larger than the global batch"
    )
    # 2 prompts x 4 samples = 8 sequences over 8 GPUs -> 1 per GPU, micro batch 2 does not fit
    out = problems(MINIMAL, ["spec.training.mini_batch=2", "spec.training.global_batch=2"])
    assert out == [
        "spec.training.micro_batch_per_gpu: does not divide the 1 sequences each GPU gets per mini "
        "batch; expected a divisor of 1, found 2"
    ]
    out = problems(
        MINIMAL, ["spec.training.mini_batch=1", "spec.training.global_batch=1", "spec.algorithm.group_size=2"]
    )
    assert "cannot be split over the actor's data-parallel size 8" in out[0]


def test_a_group_of_one_is_the_frameworks_call_except_with_dynamic_sampling() -> None:
    # verl runs grpo with one response per prompt (the advantage is the score); the adapters of the frameworks
    # that cannot run it refuse it (tests/importing/test_verl_import_loader_values.py)
    assert load_job_text(MINIMAL, ["spec.algorithm.group_size=1"]).spec.algorithm.group_size == 1
    # left at its default 1, a forgotten setting
    assert problems(MINIMAL.replace(", group_size: 4", "")) == [
        "spec.algorithm.group_size: grpo compares responses within a group, and the spec gives no group size "
        "(the default 1 is a group of one, which only some frameworks run: give 1 explicitly for that); "
        "expected at least 2, found not given (1)"
    ]
    assert problems(MINIMAL, ["spec.algorithm.group_size=1", "spec.algorithm.name=dapo"]) == [
        "spec.algorithm.group_size: dapo with dynamic_sampling keeps only groups whose rewards differ; a group "
        "of one has one reward, so every group is dropped; expected at least 2, found 1"
    ]


def test_staleness_needs_separate_async_rollout() -> None:
    out = problems(MINIMAL, ["spec.weight_sync.max_staleness=1", "spec.rollout.mode=sync"])
    assert len(out) == 2
    assert "off-policy staleness needs asynchronous rollout" in out[0]
    assert "rollouts can only run ahead of training on their own GPUs" in out[1]


def test_megatron_parallelism_rules() -> None:
    out = problems(MINIMAL, ["spec.training.parallel.tp=2"])
    assert out[0].startswith(
        "spec.training.parallel: tp=2, pp=1 need tensor/pipeline parallelism; expected backend: megatron"
    )
    load_job_text(MINIMAL, ["spec.training.parallel.tp=2", "spec.training.backend=megatron"])


def test_secret_never_also_plain_env() -> None:
    text = MINIMAL + (
        "  env: {WANDB_API_KEY: oops}\n  secrets: [{env: WANDB_API_KEY, from: {env: MY_KEY}}]\n"
    )
    assert problems(text) == [
        "spec.secrets[0].env: WANDB_API_KEY is also set in spec.env; expected a secret and a "
        "plain variable never share a name"
    ]


def test_secret_source_exactly_one() -> None:
    out = problems(MINIMAL + "  secrets: [{env: K, from: {env: A, file: /x}}]\n")
    assert out[0].startswith(
        "spec.secrets[0].from[0]: invalid value; expected exactly one of k8s_secret, env, file"
    )


def test_eval_needs_data() -> None:
    assert problems(MINIMAL + "  eval: {every_steps: 5}\n")[0].startswith(
        "spec.eval: evaluation is requested but there is nothing to evaluate on"
    )


def test_job_is_immutable() -> None:
    job = load_job_text(MINIMAL, [])
    with pytest.raises(Exception, match="frozen"):
        job.spec.training.global_batch = 3  # type: ignore[misc]


def test_names_with_a_trailing_newline_are_rejected() -> None:
    # `$` in a Python regex matches before a final newline; names end up in scripts and manifests
    out = problems(MINIMAL + '  env: {"A\\n": x}\n')
    assert out[0].startswith("spec.env: invalid value; expected environment variable names")
    assert problems(MINIMAL.replace("name: tiny", 'name: "tiny\\n"'))[0].startswith(
        "metadata.name: invalid value"
    )


def test_list_elements_can_be_overridden_by_index() -> None:
    text = MINIMAL + "  placement:\n    pools: [{name: a, roles: [actor, rollout]}]\n"
    job = load_job_text(text, ["spec.placement.pools.0.nodes=2", "spec.placement.pools.0.name=big"])
    assert (job.placement.pools[0].name, job.placement.pools[0].nodes) == ("big", 2)
    with pytest.raises(UsageError, match=r"override 'spec.placement.pools.5.nodes=2': cannot set"):
        load_job_text(text, ["spec.placement.pools.5.nodes=2"])


def test_override_value_must_be_yaml() -> None:
    with pytest.raises(UsageError, match=r"override 'spec.data.train=\[a': the value is not valid YAML"):
        load_job_text(MINIMAL, ["spec.data.train=[a"])


def test_environment_interpolation_is_refused() -> None:
    # ${oc.env:X} would copy a value of the submitting shell into every rendered file: use spec.secrets
    for text, overrides in (
        (MINIMAL + "  env: {K: '${oc.env:HOME}'}\n", []),
        (MINIMAL, ["spec.env.K=${oc.env:HOME}"]),
    ):
        out = problems(text, overrides)
        assert out == [
            "spec.env.K: resolver 'oc.env' called in interpolation; expected only references to fields of "
            "this spec, e.g. ${metadata.name} (a value of the submitting shell goes in spec.secrets, by "
            "reference), found '${oc.env:HOME}'"
        ]


def test_types_are_strict_and_numbers_finite() -> None:
    for override, path in (
        ("spec.training.global_batch='64'", "spec.training.global_batch"),
        ("spec.model.gradient_checkpointing=1", "spec.model.gradient_checkpointing"),
        ("spec.training.mini_batch=16.0", "spec.training.mini_batch"),
        ("spec.training.epochs=true", "spec.training.epochs"),
        ("spec.training.optimizer.lr=.inf", "spec.training.optimizer.lr"),
    ):
        out = problems(MINIMAL, [override])
        assert out[0].startswith(f"{path}: wrong value"), (override, out)
    assert load_job_text(MINIMAL, ["spec.training.optimizer.lr=1"]).spec.training.optimizer.lr == 1.0


def test_steps_and_epochs_together_are_one_run_length_whichever_comes_first() -> None:
    """verl and NeMo-RL take both limits and stop at the first one reached: the spec says the same, and each
    stays a positive count."""
    training = load_job_text(MINIMAL, ["spec.training.steps=500", "spec.training.epochs=2"]).spec.training
    assert (training.steps, training.epochs) == (500, 2)
    assert problems(MINIMAL, ["spec.training.steps=500", "spec.training.epochs=0"])[0].startswith(
        "spec.training.epochs: "
    )


def test_names_that_reach_code_and_manifests_are_checked() -> None:
    out = problems(
        MINIMAL.replace(
            "reward: {function: {path: reward.py}}",
            'reward: {function: {path: reward.py, name: "f; import os"}}',
        )
    )
    assert out[0].startswith("spec.reward.function.name: invalid value; expected a Python function name")
    out = problems(MINIMAL + "  secrets: [{env: K, from: {env: BAD-NAME}}]\n")
    assert out[0].startswith(
        "spec.secrets[0].from[0].env: invalid value; expected an environment variable name"
    )
    out = problems(MINIMAL + "  secrets: [{env: K, from: {k8s_secret: {name: Bad Name, key: a/b}}}]\n")
    assert [p.split(":")[0] for p in out] == [
        "spec.secrets[0].from[0].k8s_secret.name",
        "spec.secrets[0].from[0].k8s_secret.key",
    ]
    out = problems(MINIMAL, ["spec.lifecycle.ttl_seconds_after_finish=99999999999"])
    assert out[0].startswith(
        "spec.lifecycle.ttl_seconds_after_finish: wrong value; expected less than or equal"
    )


def test_unreadable_spec_paths_are_usage_errors(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(MINIMAL)
    with pytest.raises(UsageError, match="cannot read spec file"):
        load_job(spec / "x")  # a path through a file
    with pytest.raises(UsageError, match="not UTF-8 text"):
        (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9".encode("latin-1"))
        load_job(tmp_path / "latin1.yaml")
