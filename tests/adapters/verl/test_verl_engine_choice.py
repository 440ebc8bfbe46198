"""The engine a launch selects with a config-group choice (``model_engine=X``, verl 0.7.1+) is part of the config
the launch composes: its keys are accepted, and Megatron is rendered the way each pinned version selects it.

verl 0.8.0 and 0.9.1 ``trainer/config/ppo_megatron_trainer.yaml``: "[Deprecated] This file is for backward
compatibility, please use ppo_trainer.yaml instead. python3 -m verl.trainer.main_ppo model_engine=megatron ...",
``defaults: [ppo_trainer, override model_engine: megatron, _self_]``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf
from packaging.version import Version

from rladapt import compat
from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl import validate as verl_validate
from rladapt.adapters.verl.settings import native_settings
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry, load_registry
from rladapt.plugins.snapshots import snapshot
from rladapt.primitives import load_job
from tests.support.wheels import REPO

from .conftest import verl_package

PINNED = [e.version for e in compat.pinned("verl")]
ENGINE_CHOICE = [v for v in PINNED if Version(v) >= Version("0.8.0")]
BEFORE = [v for v in PINNED if Version(v) < Version("0.8.0")]
GRPO = REPO / "examples" / "grpo-gsm8k.yaml"
MEGATRON = [
    "spec.training.backend=megatron",
    "spec.training.parallel.tp=2",
    "spec.training.micro_batch_per_gpu=4",
]
#: The keys the issue found refused: the engine-selected configs of the actor, the ref and the critic.
ENGINE_KEYS = [
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
    "actor_rollout_ref.actor.megatron.use_mbridge=False",
    "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=2",
    "critic.megatron.tensor_model_parallel_size=2",
]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)


def launch(version: str, *overrides: str, config_name: str | None = None) -> NativeLaunch:
    job = load_job(GRPO, [])
    head = ["python3", "-m", "verl.trainer.main_ppo"]
    if config_name is not None:
        head += ["--config-name", config_name]
    return NativeLaunch.from_job(job, framework="verl", version=version, argv=[*head, *overrides])


# --- the snapshot knows every engine choice ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "choices"),
    [
        ("0.5.0", []),
        ("0.6.1", []),
        ("0.7.1", ["dp", "torchtitan", "veomni"]),
        ("0.8.0", ["dp", "megatron", "mindspeed", "torchtitan", "veomni"]),
        ("0.9.1", ["dp", "megatron", "torchtitan", "veomni"]),
    ],
)
def test_snapshot_has_a_scope_per_engine_choice(version: str, choices: list[str]) -> None:
    # trainer/config/model_engine/*.yaml of each wheel (0.5.0 and 0.6.1 have no such group)
    assert verl_validate.engine_choices(snapshot("verl", version)) == choices


@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_engine_selected_keys_are_accepted_with_model_engine_megatron(version: str) -> None:
    native = launch(version, "model_engine=megatron", *ENGINE_KEYS)
    assert verl_validate.check_native(native) == []
    # the scope is what makes them valid: without the choice, ppo_trainer's FSDP roles have no megatron node
    problems = verl_validate.check_native(launch(version, *ENGINE_KEYS))
    assert problems is not None and len(problems) == len(ENGINE_KEYS)
    assert problems[0].message.startswith(
        f"verl {version} has no key 'actor_rollout_ref.actor.megatron.tensor_model_parallel_size'"
    )


@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_the_last_engine_choice_wins(version: str) -> None:
    native = launch(version, "model_engine=megatron", "model_engine=dp", ENGINE_KEYS[0])
    problems = verl_validate.check_native(native)
    assert problems is not None and [p.found for p in problems] == [ENGINE_KEYS[0]]


@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_native_settings_carry_the_engine_scope(version: str) -> None:
    settings = native_settings(launch(version, "model_engine=megatron", ENGINE_KEYS[0]))
    assert {s.scope for s in settings} == {"ppo_trainer model_engine=megatron"}


def test_other_engines_compose_their_own_keys() -> None:
    native = launch(
        "0.9.1", "model_engine=torchtitan", "actor_rollout_ref.actor.torchtitan.data_parallel_size=2"
    )
    assert verl_validate.check_native(native) == []


def test_an_engine_the_version_lacks_is_named_with_the_choices() -> None:
    native = launch("0.7.1", "model_engine=megatron", ENGINE_KEYS[0])
    problems = verl_validate.check_native(native)
    assert problems is not None and len(problems) == 1
    (problem,) = problems
    assert problem.message == (
        "verl 0.7.1 has no model_engine 'megatron' (Megatron before 0.8.0: --config-name ppo_megatron_trainer)"
    )
    assert problem.expected == "one of dp, torchtitan, veomni" and problem.found == "model_engine=megatron"


# --- the render ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", PINNED)
def test_megatron_render_selects_the_engine_the_versions_way(registry: Registry, version: str) -> None:
    native = render_native(load_job(GRPO, MEGATRON), f"verl=={version}", registry).native
    if version in ENGINE_CHOICE:
        assert native.argv[1:4] == ("-m", "verl.trainer.main_ppo", "model_engine=megatron")
        assert "--config-name" not in native.argv
        assert native.origins["model_engine"] == "spec.training.backend"
    else:
        assert native.argv[1:5] == ("-m", "verl.trainer.main_ppo", "--config-name", "ppo_megatron_trainer")
        assert not any(a.startswith("model_engine=") for a in native.argv)
    assert f"{'actor_rollout_ref'}.actor.megatron.tensor_model_parallel_size=2" in native.argv
    assert verl_validate.check_native(native) == []


@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_native_engine_keys_pass_the_offline_check(registry: Registry, version: str) -> None:
    native_items = "[" + ", ".join(ENGINE_KEYS[1:]) + "]"
    job = load_job(GRPO, [*MEGATRON, f"spec.native.verl={native_items}"])
    native = render_native(job, f"verl=={version}", registry, deep_check=False).native
    assert all(item in native.argv for item in ENGINE_KEYS[1:])


def test_fsdp_render_makes_no_engine_choice(registry: Registry) -> None:
    native = render_native(load_job(GRPO, []), "verl==0.9.1", registry).native
    assert not any(a.startswith("model_engine=") or a == "--config-name" for a in native.argv)


# --- import: the v0.8+ way and the deprecated config are the same run ---------------------------------------

SCRIPT = """python3 -m verl.trainer.main_ppo {head} \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct data.train_files=t.parquet data.val_files=v.parquet \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\
    actor_rollout_ref.actor.megatron.use_mbridge=False \\
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2
"""


@pytest.mark.parametrize("head", ["model_engine=megatron", "--config-name ppo_megatron_trainer"])
@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_import_of_a_megatron_script(registry: Registry, version: str, head: str) -> None:
    text = SCRIPT.format(head=head)
    argv = list(read_launch(text, "run.sh", fw.match).argv)
    imported = build(fw, version, argv, source="run.sh", registry=registry)
    spec = imported.job.spec
    assert spec.training.backend == "megatron" and spec.training.parallel.tp == 2
    assert "actor_rollout_ref.actor.megatron.use_mbridge=False" in spec.native["verl"]
    same = fw.effective(argv, version)
    other = (
        "--config-name ppo_megatron_trainer" if head.startswith("model_engine") else "model_engine=megatron"
    )
    assert (
        same.values
        == fw.effective(list(read_launch(SCRIPT.format(head=other), "r", fw.match).argv), version).values
    )


# --- verl's own composition (the real wheel) ---------------------------------------------------------------


@pytest.mark.conformance
@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_the_deprecated_config_composes_as_the_engine_choice(version: str) -> None:
    """What ``engine_form`` relies on: verl composes both spellings to the same config."""
    package = verl_package(version)
    old = verl_validate.parse_argv(
        ["python3", "-m", "verl.trainer.main_ppo", "--config-name", "ppo_megatron_trainer"]
    )
    new = verl_validate.parse_argv(["python3", "-m", "verl.trainer.main_ppo", "model_engine=megatron"])
    assert verl_validate.engine_form(old, version) == new
    composed = [OmegaConf.to_container(verl_validate.compose(package, inv)) for inv in (old, new)]
    assert composed[0] == composed[1]


@pytest.mark.conformance
@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_verl_composes_the_rendered_engine_choice(registry: Registry, version: str, tmp_path: Path) -> None:
    native = render_native(load_job(GRPO, MEGATRON), f"verl=={version}", registry).native
    problems = verl_validate.validate(native, verl_package(version))
    assert problems == []
    cfg = verl_validate.compose(verl_package(version), verl_validate.parse_argv(native.argv))
    assert OmegaConf.select(cfg, "actor_rollout_ref.actor.strategy") == "megatron"
    assert OmegaConf.select(cfg, "critic.strategy") == "megatron"
    assert OmegaConf.select(cfg, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size") == 2


# --- the composed config's own defaults ----------------------------------------------------------------------


@pytest.mark.parametrize("version", PINNED)
def test_the_effective_config_has_the_megatron_configs_own_defaults(version: str) -> None:
    head = ["python3", "-m", "verl.trainer.main_ppo"]
    argv = (
        [*head, "model_engine=megatron"]
        if version in ENGINE_CHOICE
        else [*head, "--config-name", "ppo_megatron_trainer"]
    )
    values = fw.effective(argv, version).values
    # ppo_trainer's own are fsdp: the snapshot keeps each config's default where it differs (scoped defaults)
    assert values["actor_rollout_ref.actor.strategy"] == "megatron"
    assert values["critic.strategy"] == "megatron"
    assert fw.effective(head, version).values["actor_rollout_ref.actor.strategy"] == "fsdp"


@pytest.mark.parametrize("version", ENGINE_CHOICE)
def test_experimental_configs_keep_their_own_defaults(version: str) -> None:
    snap = snapshot("verl", version)
    # one_step_off_ppo_trainer.yaml: "free_cache_engine: False # Must be turned off!" over ppo_trainer's true
    assert snap.default("actor_rollout_ref.rollout.free_cache_engine") is True
    assert snap.default("actor_rollout_ref.rollout.free_cache_engine", "one_step_off_ppo_trainer") is False


# --- one role's own engine (a role's config-group choice) ---------------------------------------------------

ROLE_CHOICES = [
    "critic=megatron_critic",
    "ref@actor_rollout_ref.ref=megatron_ref",
    "critic.megatron.tensor_model_parallel_size=2",
    "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2",
]


@pytest.mark.parametrize("version", ["0.7.1", *ENGINE_CHOICE])
def test_a_roles_own_engine_choice_scopes_its_keys(version: str) -> None:
    assert verl_validate.check_native(launch(version, *ROLE_CHOICES)) == []
    problems = verl_validate.check_native(launch(version, *ROLE_CHOICES[2:]))
    assert problems is not None and [p.found for p in problems] == ROLE_CHOICES[2:]
    # the actor keeps ppo_trainer's FSDP engine: its megatron node is still unknown
    actor = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
    problems = verl_validate.check_native(launch(version, *ROLE_CHOICES, actor))
    assert problems is not None and [p.found for p in problems] == [actor]
    assert {s.key for s in native_settings(launch(version, *ROLE_CHOICES))} == {
        "critic.megatron.tensor_model_parallel_size",
        "actor_rollout_ref.ref.megatron.tensor_model_parallel_size",
    }


@pytest.mark.conformance
@pytest.mark.parametrize("version", ["0.7.1", *ENGINE_CHOICE])
def test_verl_composes_a_roles_own_engine_choice(version: str) -> None:
    package = verl_package(version)
    native = launch(version, *ROLE_CHOICES, "actor_rollout_ref.rollout.name=vllm")  # left ??? by verl
    assert verl_validate.validate(native, package) == []
    cfg = verl_validate.compose(package, verl_validate.parse_argv(native.argv))
    assert OmegaConf.select(cfg, "critic.strategy") == "megatron"
    assert OmegaConf.select(cfg, "actor_rollout_ref.actor.strategy") == "fsdp"
