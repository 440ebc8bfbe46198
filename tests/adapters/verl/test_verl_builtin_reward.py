"""spec.reward.builtin on verl, against the real wheel of every pinned version.

- ``by_data_source`` is verl's own default: no custom_reward_function, so the reward manager scores with
  ``default_compute_score(data_source, ...)``: the composed config must leave the path null and the wheel must
  still fall back that way (verl/workers/reward_manager/naive.py, verl/utils/reward_score/__init__.py).
- A fixed name is a generated custom reward function that calls verl's own scorer from the installed package: it
  is loaded here the way verl loads it (from its file) over the wheel's ``verl.utils.reward_score`` and called with
  the keywords verl's reward manager passes.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from rladapt.adapters.verl.translate import BUILTIN_REWARD_FILE, BUILTIN_SCORERS
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry
from rladapt.primitives import SpecError, load_job
from tests.support.wheels import REPO

from .test_verl_conformance import check_conforms, compose, select

pytestmark = pytest.mark.conformance

EXAMPLE = REPO / "examples" / "grpo-math-nemo-rl.yaml"
#: (response, ground truth) -> score, per scorer: a right and a wrong answer in the format each one reads.
CASES: dict[str, list[tuple[str, str, float]]] = {
    "gsm8k": [("6 * 7 = 42. #### 42", "42", 1.0), ("6 * 7 = 41. #### 41", "42", 0.0), ("42", "42", 0.0)],
    "math_dapo": [("so x = 42.\nAnswer: 42", "42", 1.0), ("Answer: 41", "42", -1.0)],
    "math": [("The answer is $\\boxed{\\frac{1}{2}}$", "0.5", 1.0), ("$\\boxed{3}$", "0.5", 0.0)],
}


def render(registry: Registry, version: str, name: str) -> NativeLaunch:
    job = load_job(EXAMPLE, [f"spec.reward.builtin.name={name}"])
    return render_native(job, f"verl=={version}", registry).native


def reward_key(version: str, leaf: str) -> str:
    prefix = "reward." if version >= "0.7.1" else ""
    return f"{prefix}custom_reward_function.{leaf}"


@pytest.fixture
def wheel_scorers(pinned: tuple[str, Path]) -> Iterator[Path]:
    """``verl.utils.reward_score`` importable from the pinned wheel (without verl/__init__.py, which needs torch)."""
    _, package = pinned
    saved = {k: v for k, v in sys.modules.items() if k == "verl" or k.startswith("verl.")}
    for k in saved:
        del sys.modules[k]
    for name, path in (("verl", package), ("verl.utils", package / "utils")):
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module
    try:
        yield package
    finally:
        for k in [k for k in sys.modules if k == "verl" or k.startswith("verl.")]:
            del sys.modules[k]
        sys.modules.update(saved)


class InProcess:
    """A process pool's ``submit`` that runs the call here and returns its finished future."""

    @staticmethod
    def submit(fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args))
        return future

    def __call__(self) -> InProcess:
        return self


def load_generated(native: NativeLaunch, tmp_path: Path) -> Any:
    """The generated file loaded as verl's get_custom_reward_fn does: spec_from_file_location on the path."""
    path = tmp_path / BUILTIN_REWARD_FILE
    path.parent.mkdir(parents=True)
    path.write_text(native.files[BUILTIN_REWARD_FILE])
    spec = importlib.util.spec_from_file_location("custom_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compute_score


def test_by_data_source_is_verls_default_scorer(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    native = render(registry, version, "by_data_source")
    assert native.files == {}
    assert not any("custom_reward_function" in a for a in native.argv)
    cfg = check_conforms(load_job(EXAMPLE, ["spec.reward.builtin.name=by_data_source"]), native, package)
    assert select(cfg, reward_key(version, "path")) is None
    # the fact this relies on, in the wheel: no custom function -> default_compute_score by data_source
    naive = (package / "workers" / "reward_manager" / "naive.py").read_text()
    assert "self.compute_score = compute_score or default_compute_score" in naive
    scorers = ast.parse((package / "utils" / "reward_score" / "__init__.py").read_text())
    default = next(
        n for n in scorers.body if isinstance(n, ast.FunctionDef) and n.name == "default_compute_score"
    )
    assert [a.arg for a in default.args.args][:3] == ["data_source", "solution_str", "ground_truth"]


@pytest.mark.parametrize("name", sorted(BUILTIN_SCORERS))
def test_fixed_scorer_calls_verls_own(
    name: str, pinned: tuple[str, Path], registry: Registry, wheel_scorers: Path, tmp_path: Path
) -> None:
    version, package = pinned
    native = render(registry, version, name)
    cfg = compose(native, package)
    assert select(cfg, reward_key(version, "path")) == BUILTIN_REWARD_FILE
    assert select(cfg, reward_key(version, "name")) == "compute_score"
    assert f"from verl.utils.reward_score import {BUILTIN_SCORERS[name]}" in native.files[BUILTIN_REWARD_FILE]
    if name == "math":
        import math_verify  # noqa: F401  (a dev dependency: this test must run, never skip)
    compute_score = load_generated(native, tmp_path)
    scorer = sys.modules[f"verl.utils.reward_score.{BUILTIN_SCORERS[name]}"]
    if hasattr(scorer, "_get_pool"):
        # verl 0.8.0+ runs math-verify in a spawned process pool; a spawned child would import verl/__init__.py
        # (torch), so the same call runs in this process instead: the scoring code is the wheel's either way
        scorer._get_pool = InProcess()  # type: ignore[attr-defined]
    # the keywords verl's reward manager passes (workers/reward_manager/naive.py)
    for response, truth, want in CASES[name]:
        got = compute_score(data_source="any", solution_str=response, ground_truth=truth, extra_info={})
        score = got["score"] if isinstance(got, dict) else got
        assert score == want, (name, response, truth, got)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("function", "{path: rewards/r.py}"),
        ("model", "{path: Skywork/Skywork-Reward-V2-Qwen3-0.6B}"),
        ("remote", "{url: 'http://rm:8000/score'}"),
    ],
)
def test_builtin_is_the_whole_reward(source: str, value: str) -> None:
    """No framework adds a built-in scorer to another source: the spec refuses the combination."""
    with pytest.raises(SpecError) as err:
        load_job(EXAMPLE, [f"spec.reward.{source}={value}"])
    (problem,) = err.value.problems
    assert problem.path == "spec.reward"
    assert problem.expected is not None
    assert problem.expected.startswith(f"builtin is the whole reward and cannot be combined with {source} ")
