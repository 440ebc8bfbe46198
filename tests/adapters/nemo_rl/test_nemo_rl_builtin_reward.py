"""spec.reward.builtin on NeMo-RL: the math environment, the way upstream's own grpo_math_1B job scores.

Issue 11's bug: NeMo-RL could render no math job (spec.reward was required and function/remote are refused), so
run_grpo_math.py and the math environment were unreachable. These tests render the example
``examples/grpo-math-nemo-rl.yaml`` on every pinned tag that reads local files and compare the effective config
(the tag's grpo_math_1B.yaml with the generated file over it, as NeMo-RL's load_config merges them) with upstream's
own example: the environment section and the data config's environment must be upstream's, unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf
from packaging.version import Version

from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import UnsupportedError, load_job
from tests.support.wheels import REPO

from .conftest import PINNED, Tag
from .test_nemo_rl_conformance import check_conforms, generated, merged

pytestmark = pytest.mark.conformance

EXAMPLE = REPO / "examples" / "grpo-math-nemo-rl.yaml"
#: Local data files (ResponseDataset) from 0.4.0; 0.2.1 trains only on its built-in datasets.
LOCAL_DATA = Version("0.4.0")


def render_example(registry: Registry, version: str, *overrides: str) -> Any:
    return render_native(load_job(EXAMPLE, list(overrides)), f"nemo-rl=={version}", registry).native


def test_math_job_renders_the_math_environment_like_upstream(pinned: Tag, registry: Registry) -> None:
    """The bug: with ``reward: {builtin: {name: math}}`` the job renders NeMo-RL's grpo_math job."""
    if Version(pinned.version) < LOCAL_DATA:
        with pytest.raises(UnsupportedError) as err:
            render_example(registry, pinned.version)
        # refused for its data files only, never for the reward
        assert {p.path for p in err.value.problems} == {"spec.data.train"}
        return
    native = render_example(registry, pinned.version)
    resolved = check_conforms(load_job(EXAMPLE), native, pinned)
    script = native.argv[native.argv.index("python") + 1]
    # run_grpo_math.py wires the math environment (0.4.0); run_grpo.py takes it from the data config (0.5.0+)
    assert script == ("examples/run_grpo_math.py" if pinned.version == "0.4.0" else "examples/run_grpo.py")
    upstream = pinned.base()
    # the environment section is upstream's own: same environments, same verifier, same workers
    assert resolved["env"]["math"] == upstream["env"]["math"]
    assert set(resolved["env"]) == set(upstream["env"])
    assert generated(native)["env"] == {"math": {"math_verify_impl": "hf_math_verify"}}
    # the data config names upstream's environment and processor (0.5.0: flat data.*; 0.6.0+: data.default.*)
    if Version(pinned.version) >= Version("0.6.0"):
        for key in ("env_name", "processor"):
            assert resolved["data"]["default"][key] == upstream["data"]["default"][key]
    elif Version(pinned.version) >= Version("0.5.0"):
        for key in ("env_name", "processor"):
            assert resolved["data"][key] == upstream["data"][key]
    # what the example asks for reaches the merged config
    cfg = merged(native, pinned)
    assert OmegaConf.select(cfg, "grpo.num_generations_per_prompt") == 16
    assert (
        OmegaConf.select(cfg, "policy.train_global_batch_size")
        == upstream["policy"]["train_global_batch_size"]
    )
    assert "reward_model" not in resolved["env"]


def test_math_dapo_selects_the_dapo_verifier(pinned: Tag, registry: Registry) -> None:
    override = "spec.reward.builtin.name=math_dapo"
    if Version(pinned.version) < LOCAL_DATA:
        with pytest.raises(UnsupportedError) as err:
            render_example(registry, pinned.version, override)
        messages = {p.path: p.message for p in err.value.problems}
        assert messages["spec.reward.builtin.name"] == (
            f"nemo-rl {pinned.version} cannot express reward.builtin.math_dapo (first supported in nemo-rl 0.4.0)"
        )
        return
    native = render_example(registry, pinned.version, override)
    cfg = merged(native, pinned)
    # DAPO's verifier in the math environment, as upstream's DAPO recipes set it (dapo_math_verifier.py)
    assert OmegaConf.select(cfg, "env.math.math_verify_impl") == "dapo_math_verify"
    check_conforms(load_job(EXAMPLE, [override]), native, pinned)


@pytest.mark.parametrize("name", ["by_data_source", "gsm8k"])
@pytest.mark.parametrize("version", PINNED)
def test_scorers_without_an_environment_are_refused_with_the_reason(
    name: str, version: str, registry: Registry
) -> None:
    with pytest.raises(UnsupportedError) as err:
        render_example(registry, version, f"spec.reward.builtin.name={name}")
    problem = next(p for p in err.value.problems if p.path == "spec.reward.builtin.name")
    assert problem.message.startswith(f"nemo-rl {version} cannot express reward.builtin.{name}: ")
    assert problem.message.endswith("(no nemo-rl version supports it)")
    assert problem.found == repr(name) or name in str(problem.found)
