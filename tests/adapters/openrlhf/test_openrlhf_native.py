"""``native.openrlhf`` flags, ``validate_native`` with each way of finding the real parser, the checks OpenRLHF only
makes after parsing (made by rladapt first), the checkpoint layout, and capabilities per version."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf.parser import ENTRY_FILE, find_source
from rladapt.plugins import Registry
from rladapt.primitives import SpecError, UnsupportedError

from .conftest import PINNED, dest_in, job, parse_ok, render, source, wheel

pytestmark = pytest.mark.conformance

RLOO = {"algorithm": {"name": "rloo", "kl": {"coef": 0.01, "in": "reward"}}}


# --- native flags ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", PINNED)
def test_native_flags_pass_through_and_parse(version: str, registry: Registry, real_source: Any) -> None:
    real_source(version)
    dotted = Version(version) >= Version("0.10.2")
    packing = "--ds.packing_samples" if dotted else "--packing_samples"
    zero = "--ds.zero_stage=3" if dotted else "--zero_stage=3"
    spec = job(
        **RLOO,
        training={"backend": "deepspeed", "parallel": {"zero_stage": 2}},
        native={"openrlhf": [packing, zero]},
    )
    argv = render(spec, version, registry).native.argv
    assert argv[-2:] == (packing, zero)
    namespace = parse_ok(version, argv[3:])
    assert getattr(namespace, dest_in(version, "packing_samples")) is True
    assert getattr(namespace, dest_in(version, "zero_stage")) == 3  # the native flag comes last and wins


@pytest.mark.parametrize("version", [PINNED[0], PINNED[-1]])
def test_unknown_native_flag_is_a_spec_error_naming_it(
    version: str, registry: Registry, real_source: Any
) -> None:
    real_source(version)
    with pytest.raises(SpecError) as caught:
        render(job(**RLOO, native={"openrlhf": ["--no_such_flag 3"]}), version, registry)
    (problem,) = caught.value.problems
    assert problem.path == "spec.native.openrlhf" and problem.found == "--no_such_flag"
    assert f"openrlhf {version} has no flag --no_such_flag" in problem.message


def test_abbreviated_native_flag_is_refused(registry: Registry, real_source: Any) -> None:
    # A real run would expand --packing to --packing_samples; a later release adding --packing_x would change it.
    real_source("0.9.10")
    with pytest.raises(SpecError) as caught:
        render(job(native={"openrlhf": ["--packing"]}), "0.9.10", registry)
    assert caught.value.problems[0].found == "--packing"


def test_bad_native_value_is_a_spec_error(registry: Registry, real_source: Any) -> None:
    real_source("0.11.2")
    with pytest.raises(SpecError) as caught:
        render(job(native={"openrlhf": ["--algo.kl.estimator k9"]}), "0.11.2", registry)
    assert "invalid choice: 'k9'" in caught.value.problems[0].message


# --- OpenRLHF's post-parse assertions, made by rladapt ---------------------------------------------------------


def test_native_flags_are_held_to_the_post_parse_checks(registry: Registry, real_source: Any) -> None:
    real_source("0.11.2")
    with pytest.raises(SpecError) as caught:  # a colocated job sleeps vLLM; async training cannot
        render(job(native={"openrlhf": ["--train.async_enable"]}), "0.11.2", registry)
    (problem,) = caught.value.problems
    assert problem.path == "spec.native.openrlhf" and "vllm cannot sleep" in problem.message.lower()

    with pytest.raises(SpecError) as caught:
        render(job(native={"openrlhf": ["--rollout.n_samples_per_prompt 1"]}), "0.11.2", registry)
    assert "estimator group_norm compares the samples of each prompt" in caught.value.problems[0].message


def test_packing_without_vllm_engines_is_refused(registry: Registry, real_source: Any) -> None:
    real_source("0.8.11")
    with pytest.raises(SpecError) as caught:
        render(job(native={"openrlhf": ["--vllm_num_engines 0", "--packing_samples"]}), "0.8.11", registry)
    (problem,) = caught.value.problems
    assert (
        problem.path == "spec.native.openrlhf" and "works only with vLLM rollout engines" in problem.message
    )


def test_colocate_all_gpu_arithmetic_is_checked_before_launch(registry: Registry) -> None:
    spec = job(roles={"rollout": {"gpus": 4}})
    with pytest.raises(UnsupportedError) as caught:
        render(spec, "0.11.2", registry)
    (problem,) = caught.value.problems
    assert problem.path == "spec.placement"
    assert "actor's 1x8 GPUs must equal the vLLM engines x tensor parallel (2x2 = 4)" in problem.message


def test_eval_with_a_reward_model_is_refused(registry: Registry) -> None:
    spec = job(
        algorithm={"name": "ppo", "group_size": 1, "kl": {"coef": 0.0}},
        reward={"model": {"path": "m/rm"}},
        placement={
            "pools": [
                {
                    "name": "all",
                    "nodes": 1,
                    "gpus_per_node": 8,
                    "roles": ["actor", "rollout", "critic", "reward"],
                }
            ]
        },
        eval={"every_steps": 5},
    )
    with pytest.raises(UnsupportedError) as caught:
        render(spec, "0.11.2", registry)
    assert caught.value.problems[0].path == "spec.data.val"


def test_groups_sharing_a_pool_must_fit(registry: Registry) -> None:
    spec = job(
        placement={
            "pools": [
                {"name": "a", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "ref"]},
                {"name": "b", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
            ]
        },
        roles={"ref": {"gpus": 4}},
    )
    with pytest.raises(UnsupportedError) as caught:
        render(spec, "0.11.2", registry)
    # colocated actor and ref must have one shape (train() asserts it once GPUs are reserved)
    assert "reference model shares the actor's GPUs" in caught.value.problems[0].message


# --- finding the parser ----------------------------------------------------------------------------------------


def test_no_source_still_checks_against_the_snapshot(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without the real parser the deep check is skipped (a note), the offline snapshot check still runs."""
    monkeypatch.delenv("RLADAPT_OPENRLHF_SOURCE", raising=False)
    monkeypatch.setenv("RLADAPT_WHEEL_CACHE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert find_source("0.11.2") is None
    with pytest.raises(SpecError) as caught:
        render(job(native={"openrlhf": ["--anything-goes"]}), "0.11.2", registry)
    assert [str(p) for p in caught.value.problems] == [
        "spec.native.openrlhf[0]: openrlhf 0.11.2 has no flag --anything-goes, found --anything-goes"
    ]
    native = render(job(), "0.11.2", registry).native
    assert any(n.startswith("deep check skipped: openrlhf 0.11.2's own schema") for n in native.notes)


def test_source_env_accepts_a_file_a_wheel_or_a_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = source("0.11.2")
    entry = tmp_path / "tree" / ENTRY_FILE
    entry.parent.mkdir(parents=True)
    entry.write_text(text)
    for where in (entry, entry.parents[2], wheel("0.11.2"), wheel("0.11.2").parent):
        monkeypatch.setenv("RLADAPT_OPENRLHF_SOURCE", str(where))
        assert find_source("0.11.2") == text, where


def test_installed_openrlhf_is_found_without_importing_it(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An unpacked wheel on sys.path is what an installation looks like to importlib (package + dist-info).
    with zipfile.ZipFile(wheel("0.10.2")) as archive:
        archive.extractall(tmp_path)
    purelib = next(tmp_path.glob("*.data/purelib"))
    for info in tmp_path.glob("*.dist-info"):
        info.rename(purelib / info.name)
    monkeypatch.delenv("RLADAPT_OPENRLHF_SOURCE", raising=False)
    monkeypatch.setenv("RLADAPT_WHEEL_CACHE", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(purelib))
    assert find_source("0.10.2") == source("0.10.2")
    assert find_source("0.11.2") is None  # another version's parser must not judge this one's argv
    with pytest.raises(SpecError):
        render(job(native={"openrlhf": ["--no_such_flag"]}), "0.10.2", registry)
    assert "openrlhf" not in sys.modules


# --- checkpoints and capabilities ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", PINNED)
def test_checkpoint_layout_and_resume_flag(version: str, registry: Registry) -> None:
    native = render(job(**RLOO), version, registry).native
    layout = registry.framework("openrlhf").checkpoint_layout(native)
    assert layout is not None
    assert layout.root == "/ckpt/t" and layout.latest_marker == "_actor/latest"
    assert layout.step_dir_pattern == "_actor/global_step{step}"
    (flag,) = layout.resume_args
    namespace = parse_ok(version, native.argv[3:])
    assert getattr(namespace, flag[2:]) is True
    assert getattr(namespace, dest_in(version, "ckpt_path")) == layout.root

    never = render(job(**RLOO, checkpoint={"dir": "/ckpt/t", "resume": "never"}), version, registry).native
    never_layout = registry.framework("openrlhf").checkpoint_layout(never)
    assert never_layout is not None and never_layout.resume_args == ()


def test_capabilities_follow_the_releases(registry: Registry) -> None:
    caps = {v.version: v.capabilities for v in registry.framework("openrlhf").versions()}
    assert list(caps) == PINNED
    assert "algorithm.grpo" not in caps["0.5.9.post1"] and "algorithm.grpo" in caps["0.7.5"]
    assert "weight_sync.off_policy" not in caps["0.7.5"] and "weight_sync.off_policy" in caps["0.8.11"]
    assert "openrlhf.async_queue_size" not in caps["0.8.11"] and "openrlhf.async_queue_size" in caps["0.9.10"]
    assert "openrlhf.estimator.flash_reinforce" in caps["0.11.2"]
    assert "openrlhf.estimator.flash_reinforce" not in caps["0.10.2"]
    assert all({"reward.remote", "openrlhf.vllm_sleep", "openrlhf.colocate.all"} <= c for c in caps.values())
    assert not any("backend.megatron" in c or "rollout.engine.sglang" in c for c in caps.values())


@pytest.mark.parametrize("version", PINNED)
def test_estimator_capabilities_match_the_real_choices(version: str) -> None:
    from rladapt.adapters.openrlhf import versions

    from .conftest import real_parser

    action = next(
        a
        for a in real_parser(version)._actions
        if a.dest in ("advantage_estimator", "algo.advantage.estimator")
    )
    assert set(action.choices or ()) == set(versions.estimators(version))


CRITIC: dict[str, Any] = {
    "algorithm": {"name": "ppo", "group_size": 1, "kl": {"coef": 0.0}},
    "placement": {
        "pools": [{"name": "all", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout", "critic"]}]
    },
    "training": {
        "optimizer": {"lr": 1e-6, "warmup_steps": 2},
        "critic_optimizer": {"lr": 5e-6, "warmup_steps": 5},
    },
}


@pytest.mark.parametrize("version", PINNED)
def test_critic_optimizer_is_split_from_0_10_2_and_refused_before(version: str, registry: Registry) -> None:
    spec = job(**CRITIC)
    if Version(version) < Version("0.10.2"):
        with pytest.raises(UnsupportedError) as caught:
            render(spec, version, registry)
        assert caught.value.problems[0].path == "spec.training.critic_optimizer"
        # left out, the critic's warmup follows the actor's, which one flag can express
        inherit = job(**{**CRITIC, "training": {**CRITIC["training"], "critic_optimizer": {"lr": 5e-6}}})
        namespace = parse_ok(version, render(inherit, version, registry).native.argv[3:])
        assert namespace.critic_learning_rate == 5e-6 and namespace.lr_warmup_ratio == 2 / 10
        return
    values = vars(parse_ok(version, render(spec, version, registry).native.argv[3:]))
    assert values["actor.lr_warmup_ratio"] == 2 / 10 and values["critic.lr_warmup_ratio"] == 5 / 10
    assert values["critic.adam.lr"] == 5e-6
