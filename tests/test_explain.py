"""``render --explain``: every native key with the source of its value, on real renders of the three frameworks."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.explain import Explained, differing_defaults, explain_render, is_set
from rladapt.pipeline import render_native
from rladapt.plugins import load_registry
from rladapt.primitives import validate_data
from tests.conftest import REPO

REGISTRY = load_registry(use_entry_points=False)

BASE: dict[str, Any] = {
    "apiVersion": "rladapt/v1alpha1",
    "kind": "RLJob",
    "metadata": {"name": "explain-probe"},
    "spec": {
        "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
        "algorithm": {"name": "grpo", "group_size": 4},
        "data": {"train": ["data/train.jsonl"], "max_prompt_length": 256},
        "training": {"steps": 10, "global_batch": 64, "mini_batch": 16},
        "reward": {"model": {"path": "Skywork/Skywork-Reward-V2-Qwen3-0.6B"}},
        "placement": {
            "pools": [
                {"name": "main", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout"]},
                {"name": "rm", "nodes": 1, "gpus_per_node": 8, "roles": ["reward"]},
            ]
        },
    },
}


#: OpenRLHF lays out a separate reward model only beside a critic: the same job with a reward function.
OPENRLHF: dict[str, Any] = {
    "reward": {"function": {"path": "rewards/score.py", "name": "reward_func"}},
    "placement": {"pools": [{"name": "main", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "rollout"]}]},
}


def _job(framework: str = "", **spec: Any) -> Any:
    data = copy.deepcopy(BASE)
    if framework.startswith("openrlhf"):
        data["spec"].update(copy.deepcopy(OPENRLHF))
    data["spec"].update(copy.deepcopy(spec))
    return validate_data(data, "<test>")


def _by_key(explained: list[Explained]) -> dict[str, Explained]:
    return {e.key: e for e in explained}


def _explain(framework: str, **spec: Any) -> dict[str, Explained]:
    return _by_key(explain_render(render_native(_job(framework, **spec), framework, REGISTRY)))


def test_is_set_follows_model_fields_set_through_aliases() -> None:
    job = _job(algorithm={"name": "grpo", "group_size": 4, "kl": {"in": "loss", "coef": 0.0}})
    assert is_set(job, "spec.algorithm.kl.in")
    assert is_set(job, "spec.algorithm.kl.coef")
    assert is_set(job, "spec.algorithm.group_size")
    assert not is_set(job, "spec.algorithm.kl.estimator")
    assert not is_set(job, "spec.algorithm.lambda")
    assert is_set(job, "spec.data.train[0]")
    assert not is_set(job, "spec.eval.every_steps")


@pytest.mark.parametrize("framework", ["verl==0.7.1", "openrlhf==0.9.10", "nemo-rl==0.4.0"])
def test_written_field_and_default_are_told_apart(framework: str) -> None:
    explained = _explain(framework)
    sources = {e.source for e in explained.values()}
    assert {"spec", "default"} <= sources
    # the user wrote the learning-rate-free optimizer section nowhere: every optimizer key is a default
    written = [e for e in explained.values() if e.source == "spec"]
    assert all(is_set(_job(framework), e.origin) for e in written)
    assert any(e.origin == "spec.model.path" for e in written)
    defaults = [e for e in explained.values() if e.source == "default"]
    assert all(not is_set(_job(framework), e.origin) for e in defaults)
    assert any(e.origin == "spec.training.optimizer.lr" for e in defaults)


def test_verl_default_shown_beside_the_framework_default_when_they_differ() -> None:
    explained = _explain("verl==0.7.1")
    lr = explained["actor_rollout_ref.actor.optim.lr"]
    assert lr.source == "default"
    # verl 0.7.1's own actor lr default is 1e-6 as well: no difference to report
    assert lr.framework_default == pytest.approx(1e-6)
    assert not lr.differs
    batch = explained["data.train_batch_size"]
    assert batch.source == "spec" and batch.value == 64 and not batch.differs
    rollout_n = explained["actor_rollout_ref.rollout.n"]
    assert rollout_n.source == "spec"
    micro = explained["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"]
    assert micro.source == "default" and micro.framework_default is None and micro.differs
    notes = differing_defaults(list(explained.values()), "verl", "0.7.1")
    assert any("spec.training.micro_batch_per_gpu is unset" in n for n in notes)


def test_native_item_overriding_a_derived_key_is_flagged() -> None:
    explained = explain_render(
        render_native(
            _job(native={"verl": ["data.train_batch_size=128", "+trainer.extra_flag=1"]}),
            "verl==0.7.1",
            REGISTRY,
        )
    )
    rows = [e for e in explained if e.key == "data.train_batch_size"]
    derived, native = rows
    assert derived.source == "spec" and derived.flags == ("overridden by spec.native.verl",)
    assert native.source == "native" and native.origin == "spec.native.verl[0]" and native.value == 128
    assert native.flags and "derived" in native.flags[0]
    extra = next(e for e in explained if e.key == "trainer.extra_flag")
    assert extra.origin == "spec.native.verl[1]" and not extra.flags


def test_openrlhf_native_flag_overriding_a_derived_flag_is_flagged() -> None:
    explained = explain_render(
        render_native(
            _job("openrlhf", native={"openrlhf": ["--rollout_batch_size 32"]}), "openrlhf==0.9.10", REGISTRY
        )
    )
    rows = [e for e in explained if e.key == "--rollout_batch_size"]
    assert [r.source for r in rows] == ["spec", "native"]
    assert rows[1].value == 32 and rows[1].origin == "spec.native.openrlhf[0]" and rows[1].flags


def test_patch_is_named_as_the_source() -> None:
    explained = explain_render(render_native(_job(), "verl==0.7.1", REGISTRY))
    patched = [e for e in explained if e.source == "patch"]
    assert patched, "verl 0.7.1 has a patch that adds an override"
    assert all(e.origin and not e.origin.startswith("patch ") for e in patched)


def test_nemo_rl_config_keys_and_overrides_are_explained() -> None:
    explained = explain_render(
        render_native(_job(native={"nemo-rl": ["grpo.val_period=3"]}), "nemo-rl==0.4.0", REGISTRY)
    )
    keyed = [e for e in explained if e.key == "grpo.num_prompts_per_step"]
    assert keyed and keyed[0].source == "spec" and keyed[0].value == 64
    val = [e for e in explained if e.key == "grpo.val_period"]
    assert [v.source for v in val] == ["default", "native"]
    assert val[1].origin == "spec.native.nemo-rl[0]" and val[1].flags


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt", *args], capture_output=True, text=True, cwd=cwd, check=False
    )


def test_cli_explain_text_and_json(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(BASE))
    text = _cli("render", "-f", "verl==0.7.1", str(spec), "--explain", cwd=REPO)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "# verl 0.7.1: explain-probe (explain)"
    assert any(
        line.startswith("data.train_batch_size") and "<- spec field spec.training.global_batch" in line
        for line in lines
    )
    as_json = _cli("render", "-f", "verl==0.7.1", str(spec), "--explain", "--format", "json", cwd=REPO)
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["framework"] == "verl" and document["version"] == "0.7.1"
    rows = {row["key"]: row for row in document["keys"]}
    assert rows["data.train_batch_size"]["source"] == "spec"
    assert rows["data.train_batch_size"]["origin"] == "spec.training.global_batch"
    assert rows["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"]["differs_from_framework"] is True


def test_cli_explain_refuses_a_launcher(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(BASE))
    result = _cli("render", "-f", "verl==0.7.1", str(spec), "--explain", "-l", "local", cwd=REPO)
    assert result.returncode == 2
    assert "--explain" in result.stderr and "Traceback" not in result.stderr


def test_render_text_notes_each_default_that_differs(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(BASE))
    result = _cli("render", "-f", "verl==0.7.1", str(spec), cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert (
        "# note: spec.training.micro_batch_per_gpu is unset: rladapt's default sets "
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2, verl 0.7.1's own default is null"
    ) in result.stdout


def test_fields_left_to_the_framework_are_listed_with_its_value() -> None:
    explained = _explain("verl==0.7.1")
    seed = explained["data.seed"]
    assert (seed.source, seed.value) == ("framework", None)
    assert seed.origin == "spec.data.seed (unset: not emitted)"
    warmup = explained["actor_rollout_ref.actor.optim.lr_warmup_steps"]
    assert (warmup.source, warmup.value) == ("framework", -1)
    assert explained["actor_rollout_ref.actor.strategy"].value == "fsdp"
    # a field the user wrote is not listed as left to the framework
    written = _explain("verl==0.7.1", data={"train": ["data/train.jsonl"], "seed": 3})
    assert (written["data.seed"].source, written["data.seed"].value) == ("spec", 3)


def test_nemo_rl_grpo_baseline_is_shown_as_nemo_rl_s_own() -> None:
    explained = _explain("nemo-rl==0.4.0")
    loo = explained["grpo.use_leave_one_out_baseline"]
    assert (loo.source, loo.value) == ("framework", True)
    assert loo.origin == "spec.algorithm.baseline (unset: not emitted)"
    std = explained["grpo.normalize_rewards"]
    assert (std.source, std.value, std.origin) == (
        "framework",
        True,
        "spec.algorithm.normalize_by_group_std (unset: not emitted)",
    )


def test_a_policy_modified_job_keeps_its_unset_fields_unset() -> None:
    """Before: the pipeline re-validated a policy's job from a full dump, so every default looked user-written."""
    import types

    from rladapt.plugins import hookimpl

    def modify(job: Any, framework: str) -> Any:
        training = job.spec.training.model_copy(update={"global_batch": 32})
        return job.model_copy(update={"spec": job.spec.model_copy(update={"training": training})})

    policy = types.SimpleNamespace(rladapt_modify_job=hookimpl(modify))
    registry = load_registry(extra=[("policy", policy)], use_entry_points=False)
    explained = _by_key(explain_render(render_native(_job(), "verl==0.7.1", registry)))
    assert explained["data.train_batch_size"].value == 32
    assert explained["actor_rollout_ref.actor.optim.lr"].source == "default"
    assert explained["data.seed"].source == "framework"
