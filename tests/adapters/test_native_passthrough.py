"""The escape hatch (spec.native.<framework>) and native validation are never silent."""

from __future__ import annotations

import ast

import pytest

from rladapt.pipeline import render_native
from rladapt.plugins import load_registry
from rladapt.primitives import SpecError, load_job
from tests.adapters.verl.conftest import PINNED as VERL_PINNED
from tests.conftest import REPO

GSM8K = REPO / "examples" / "grpo-gsm8k.yaml"
REGISTRY = load_registry(
    builtins={"verl": "rladapt.adapters.verl", "openrlhf": "rladapt.adapters.openrlhf"},
    use_entry_points=False,
)


def test_overriding_a_derived_value_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    job = load_job(GSM8K, ["spec.native.verl=[data.train_batch_size=7,trainer.balance_batch=false]"])
    native = render_native(job, "verl", REGISTRY).native
    assert native.argv[-2:] == ("data.train_batch_size=7", "trainer.balance_batch=false")
    assert (
        "spec.native.verl[0] overrides 'data.train_batch_size=1024', which rladapt derived from the spec"
        in (native.notes)
    )
    assert not any("spec.native.verl[1]" in note for note in native.notes)  # a key rladapt does not set


def test_every_pinned_version_is_checked_offline_and_a_skipped_deep_check_is_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RLADAPT_VERL_CONFIG_DIR", raising=False)
    version = VERL_PINNED[-1]
    native = render_native(load_job(GSM8K), f"verl=={version}", REGISTRY).native
    assert not any("own schema" in note for note in native.notes)  # the snapshot check ran
    native = render_native(load_job(GSM8K), f"verl=={version}", REGISTRY, deep_check=True).native
    assert (
        f"deep check skipped: verl {version}'s own schema is not available here "
        f"(install verl=={version}, no dependencies needed, to check)"
    ) in native.notes


def test_openrlhf_native_entry_that_cannot_be_split_names_its_field() -> None:
    job = load_job(GSM8K, ['spec.native.openrlhf=["--wandb_run_name it\'s"]'])
    with pytest.raises(SpecError) as caught:
        render_native(job, "openrlhf", REGISTRY)
    assert [p.path for p in caught.value.problems] == ["spec.native.openrlhf[0]"]
    assert "No closing quotation" in caught.value.problems[0].message


def test_reward_shim_names_the_function_as_data() -> None:
    job = load_job(GSM8K, ["spec.reward.function.name=score_v2"])
    native = render_native(job, "openrlhf", REGISTRY).native
    (shim,) = (text for name, text in native.files.items() if name.endswith(".py"))
    tree = ast.parse(shim)  # valid Python whose last statement reads the name as a string constant
    last = tree.body[-1]
    assert isinstance(last, ast.Assign) and ast.unparse(last.value) == "getattr(_module, 'score_v2')"
