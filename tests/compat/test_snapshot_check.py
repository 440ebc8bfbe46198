"""Every render is checked offline against the requested version's schema snapshot (no framework imported).

For each framework: a misspelled, a removed, a renamed and a wrongly typed key, given through ``spec.native`` and
produced by spec fields or patches; each problem names the field or entry that produced the key. Keys "produced by
spec fields" that a version lacks are real: the translation for one pinned version checked against another pinned
version's snapshot (the moves verl made at 0.6.1/0.7.1 and OpenRLHF at 0.10.2).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from rladapt import compat
from rladapt.adapters.nemo_rl import validate as nemo_validate
from rladapt.adapters.openrlhf import validate as openrlhf_validate
from rladapt.adapters.verl import validate as verl_validate
from rladapt.pipeline import DEEP_CHECK_ENV, render_native
from rladapt.plugins import NativeLaunch, load_registry
from rladapt.plugins.snapshots import find_snapshot, snapshot, snapshot_versions
from rladapt.primitives import Problem, SpecError, load_job
from tests.conftest import REPO

EXAMPLES = REPO / "examples"
REGISTRY = load_registry(
    builtins={
        "verl": "rladapt.adapters.verl",
        "openrlhf": "rladapt.adapters.openrlhf",
        "nemo-rl": "rladapt.adapters.nemo_rl",
        "trl": "rladapt.adapters.trl",
    },
    use_entry_points=False,
)
#: What NeMo-RL can express of the GSM8K example (no reward function; a reward model on its own pool; jsonl).
NEMO_GSM8K = [
    "spec.reward.function=null",
    "spec.reward.model={path: Skywork/Skywork-Reward-V2-Qwen3-0.6B, micro_batch_per_gpu: 2}",
    "spec.data.train=[data/gsm8k/train.jsonl]",
    "spec.data.val=[data/gsm8k/test.jsonl]",
    "spec.placement.pools=[{name: all, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]},"
    "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
]


def rejected(framework: str, example: str, *overrides: str) -> list[Problem]:
    with pytest.raises(SpecError) as caught:
        render_native(load_job(EXAMPLES / example, list(overrides)), framework, REGISTRY, deep_check=False)
    return caught.value.problems


def rendered(framework: str, example: str, *overrides: str) -> NativeLaunch:
    return render_native(load_job(EXAMPLES / example, list(overrides)), framework, REGISTRY).native


def one(problems: list[Problem], path: str) -> Problem:
    found = [p for p in problems if p.path == path]
    assert len(found) == 1, problems
    return found[0]


# --- verl ----------------------------------------------------------------------------------------------------


def test_verl_native_keys_misspelled_removed_renamed_and_mistyped() -> None:
    problems = rejected(
        "verl==0.9.1",
        "grpo-gsm8k.yaml",
        "spec.native.verl=[actor_rollout_ref.actor.optim.lr_warmup_ratio=0.1,"
        "reward_model.micro_batch_size_per_gpu=8,actor_rollout_ref.actor.optim.lr=abc,"
        "actor_rollout_ref.actor.use_kl_loss=maybe]",
    )
    assert one(problems, "spec.native.verl[0]").message == (
        "verl 0.9.1 has no key 'actor_rollout_ref.actor.optim.lr_warmup_ratio' "
        "(did you mean 'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio'?)"
    )
    removed = one(problems, "spec.native.verl[1]").message
    assert "has no key 'reward_model.micro_batch_size_per_gpu'" in removed
    assert removed.endswith("; it exists in verl 0.5.0, 0.6.1")
    # the spec sets lr too: the user's own entry is blamed, not spec.training.optimizer.lr
    mistyped = one(problems, "spec.native.verl[2]")
    assert mistyped.message == "verl 0.9.1 key 'actor_rollout_ref.actor.optim.lr' takes a float, not a string"
    assert mistyped.found == "actor_rollout_ref.actor.optim.lr=abc"
    assert "takes a bool, not a string" in one(problems, "spec.native.verl[3]").message
    assert len(problems) == 4


def test_verl_renamed_key_points_at_the_new_name_and_the_versions_having_it() -> None:
    problems = rejected(
        "verl==0.5.0", "grpo-gsm8k.yaml", "spec.native.verl=[reward.reward_model.enable=false]"
    )
    assert one(problems, "spec.native.verl[0]").message == (
        "verl 0.5.0 has no key 'reward.reward_model.enable' (did you mean 'reward_model.enable'?); "
        "it exists in verl 0.7.1, 0.8.0, 0.9.1"
    )


def test_verl_keys_from_spec_fields_and_patches_blame_them() -> None:
    """The 0.9.1 translation on 0.5.0: the keys verl renamed since are blamed on the spec fields (and the patch)
    that produced them, each with its 0.5.0 spelling."""
    # a seed the user sets (unset, data.seed is left to verl and not emitted)
    native = rendered("verl==0.9.1", "ppo-critic-rm.yaml", "spec.data.seed=7")
    problems = verl_validate.check_native(native.model_copy(update={"version": "0.5.0"}))
    assert problems is not None
    assert "'reward_model.model.path'" in one(problems, "spec.reward.model.path").message
    assert "it exists in verl 0.6.1, 0.7.1, 0.8.0, 0.9.1" in one(problems, "spec.data.seed").message
    patched = one(problems, "patch verl-slurm-ray-num-cpus").message
    assert "'ray_kwargs.ray_init.num_cpus' (did you mean 'ray_init.num_cpus'?)" in patched


# --- OpenRLHF ------------------------------------------------------------------------------------------------


def test_openrlhf_native_flags_misspelled_removed_renamed_mistyped_and_out_of_choices() -> None:
    problems = rejected(
        "openrlhf==0.11.2",
        "grpo-gsm8k.yaml",
        'spec.native.openrlhf=["--actor.num_node 2", "--actor_num_nodes 2", "--train.max_epochs x",'
        '"--algo.advantage.estimator nope"]',
    )
    assert one(problems, "spec.native.openrlhf[0]").message == (
        "openrlhf 0.11.2 has no flag --actor.num_node (did you mean --actor.num_nodes?)"
    )
    renamed = one(problems, "spec.native.openrlhf[1]").message
    assert renamed.startswith(
        "openrlhf 0.11.2 has no flag --actor_num_nodes (did you mean --actor.num_nodes?)"
    )
    assert renamed.endswith("it exists in openrlhf 0.5.9.post1, 0.7.5, 0.8.11, 0.9.10, 0.10.1.post2")
    mistyped = one(problems, "spec.native.openrlhf[2]")
    assert mistyped.message == "openrlhf 0.11.2 flag --train.max_epochs takes an integer, not a string"
    choice = one(problems, "spec.native.openrlhf[3]")
    assert choice.message == "openrlhf 0.11.2 flag --algo.advantage.estimator does not accept 'nope'"
    assert choice.expected is not None and "group_norm" in choice.expected


def test_openrlhf_flags_from_spec_fields_blame_them_across_the_0_10_2_rename() -> None:
    native = rendered("openrlhf==0.10.1.post2", "grpo-gsm8k.yaml")
    problems = openrlhf_validate.check_native(native.model_copy(update={"version": "0.10.2"}))
    assert problems
    by_flag = {p.found: p for p in problems}
    assert by_flag["--actor_num_nodes"].path == "spec.placement"
    assert "(did you mean --actor.num_nodes?)" in by_flag["--actor_num_nodes"].message
    assert all(p.path.startswith("spec.") for p in problems), problems


# --- NeMo-RL -------------------------------------------------------------------------------------------------


def test_nemo_rl_native_keys_misspelled_removed_renamed_and_mistyped() -> None:
    problems = rejected(
        "nemo-rl==0.7.0",
        "grpo-gsm8k.yaml",
        *NEMO_GSM8K,
        "spec.native.nemo-rl=[grpo.num_prompts_per_stp=4,data.val_data_path=x.jsonl,"
        "grpo.max_num_steps=many,policy.generation.vllm_cfg.gpu_memory_utilisation=0.5]",
    )
    assert one(problems, "spec.native.nemo-rl[0]").message == (
        "nemo-rl 0.7.0 has no config key 'grpo.num_prompts_per_stp' (did you mean 'grpo.num_prompts_per_step'?)"
    )
    assert one(problems, "spec.native.nemo-rl[1]").message.endswith("; it exists in nemo-rl 0.4.0, 0.5.0")
    assert "takes an integer, not a string" in one(problems, "spec.native.nemo-rl[2]").message
    assert "(did you mean 'policy.generation.vllm_cfg.gpu_memory_utilization'?)" in (
        one(problems, "spec.native.nemo-rl[3]").message
    )


def test_nemo_rl_keys_from_spec_fields_blame_them() -> None:
    native = rendered("nemo-rl==0.4.0", "grpo-gsm8k.yaml", *NEMO_GSM8K)
    problems = nemo_validate.validate_native(native.model_copy(update={"version": "0.7.0"}))
    assert any(p.path == "spec.data" and "'data.val_data_path'" in p.message for p in problems), problems


# --- every pinned version, offline ---------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "nemo-rl", "trl"])
def test_every_pinned_version_has_a_snapshot_and_renders_without_the_unchecked_note(framework: str) -> None:
    versions = [e.version for e in compat.pinned(framework)]
    assert set(versions) <= set(snapshot_versions(framework))
    example, overrides = {
        "nemo-rl": ("grpo-gsm8k.yaml", NEMO_GSM8K),
        "trl": ("grpo-tiny-trl.yaml", []),  # TRL generates with HF on one process: its own example
    }.get(framework, ("grpo-gsm8k.yaml", []))
    for version in versions:
        try:
            native = rendered(f"{framework}=={version}", example, *overrides)
        except SpecError as exc:  # a version that cannot express the example says so through capabilities
            assert all("cannot express" in p.message for p in exc.problems), exc.problems
            continue
        assert not any("own schema" in note for note in native.notes), native.notes


def test_render_imports_no_framework_and_loads_only_the_requested_snapshot() -> None:
    code = textwrap.dedent(
        """
        import sys
        from rladapt.pipeline import render_native
        from rladapt.plugins import get_registry
        from rladapt.primitives import load_job
        render_native(load_job("examples/grpo-gsm8k.yaml"), "verl==0.9.1", get_registry())
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("verl", "hydra", "openrlhf", "torch"))
        adapters = [r.obj for r in get_registry().frameworks.values()]
        print(heavy, sum(len(a._snapshots or {}) for a in adapters))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[] 1"


def test_a_trl_render_imports_neither_trl_nor_torch() -> None:
    """The check of a TRL render is the snapshot's; the installed trl (the dev extra has it) stays unimported."""
    code = textwrap.dedent(
        """
        import sys
        from rladapt.pipeline import render_native
        from rladapt.plugins import get_registry
        from rladapt.primitives import load_job
        render_native(load_job("examples/grpo-tiny-trl.yaml"), "trl==0.23.1", get_registry())
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("trl", "torch", "transformers", "datasets")))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_snapshot_default_is_the_versions_own_default() -> None:
    assert snapshot("verl", "0.9.1").default("actor_rollout_ref.actor.optim.lr") == 1e-06
    assert snapshot("openrlhf", "0.11.2").default("--actor.adam.betas") == [0.9, 0.95]
    assert snapshot("openrlhf", "0.5.9.post1").default("--actor_num_nodes") == 1
    assert find_snapshot("verl", "0.0.1") is None
    with pytest.raises(KeyError):
        snapshot("verl", "0.9.1").default("no.such.key")


# --- the deep check is opt-in --------------------------------------------------------------------------------


def test_deep_check_requested_without_the_framework_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLADAPT_VERL_CONFIG_DIR", raising=False)
    monkeypatch.setenv(DEEP_CHECK_ENV, "1")
    native = rendered("verl==0.9.1", "grpo-gsm8k.yaml")
    assert (
        "deep check skipped: verl 0.9.1's own schema is not available here "
        "(install verl==0.9.1, no dependencies needed, to check)"
    ) in native.notes


@pytest.mark.conformance
def test_deep_check_runs_hydra_where_verl_is_available(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key left MISSING (``???``) is judged only by composing the config: the deep check catches it."""
    from tests.adapters.verl.conftest import verl_package

    monkeypatch.setenv("RLADAPT_VERL_CONFIG_DIR", str(verl_package("0.9.1")))
    job = load_job(EXAMPLES / "grpo-gsm8k.yaml", ["spec.native.verl=['trainer.project_name=???']"])
    render_native(job, "verl==0.9.1", REGISTRY, deep_check=False)  # not judged offline
    with pytest.raises(SpecError) as caught:
        render_native(job, "verl==0.9.1", REGISTRY, deep_check=True)
    assert [str(p) for p in caught.value.problems] == [
        "verl: trainer.project_name: verl 0.9.1 needs a value for trainer.project_name (left ???)"
    ]


def test_cli_validate_and_render_check_offline_and_take_deep_check(tmp_path: object) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("RLADAPT_VERL_CONFIG_DIR", DEEP_CHECK_ENV)}
    cli = [sys.executable, "-m", "rladapt.cli"]
    spec = str(EXAMPLES / "grpo-gsm8k.yaml")
    bad = "spec.native.verl=[reward.reward_model.enable=false]"
    res = subprocess.run(
        [*cli, "validate", "--no-path-check", "-f", "verl==0.5.0", spec, bad],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "spec.native.verl[0]: verl 0.5.0 has no key 'reward.reward_model.enable'" in res.stderr
    res = subprocess.run(
        [*cli, "render", "--deep-check", "-f", "verl==0.9.1", spec],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "deep check skipped: verl 0.9.1's own schema is not available here" in res.stdout
