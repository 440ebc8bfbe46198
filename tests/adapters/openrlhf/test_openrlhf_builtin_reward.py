"""spec.reward.builtin on OpenRLHF: refused on every pinned version, with the reason, never half-rendered.

Why (read in the wheels): no pinned OpenRLHF requires math-verify, none ships verl's GSM8K / DAPO checks or a
scorer chosen by data source, so a generated reward_func would call a scorer absent where OpenRLHF runs.
"""

from __future__ import annotations

import zipfile

import pytest

from rladapt import compat
from rladapt.pipeline import render_native
from rladapt.plugins import load_registry
from rladapt.primitives import UnsupportedError, load_job
from tests.support.wheels import REPO, download_wheel

PINNED = [entry.version for entry in compat.pinned("openrlhf")]
EXAMPLE = REPO / "examples" / "grpo-math-nemo-rl.yaml"
REGISTRY = load_registry(builtins={"openrlhf": "rladapt.adapters.openrlhf"}, use_entry_points=False)


@pytest.mark.parametrize("name", ["by_data_source", "math", "math_dapo", "gsm8k"])
@pytest.mark.parametrize("version", PINNED)
def test_every_builtin_is_refused_with_the_reason(name: str, version: str) -> None:
    job = load_job(EXAMPLE, [f"spec.reward.builtin.name={name}"])
    with pytest.raises(UnsupportedError) as err:
        render_native(job, f"openrlhf=={version}", REGISTRY)
    problem = next(p for p in err.value.problems if p.path == "spec.reward.builtin.name")
    assert problem.message.startswith(f"openrlhf {version} cannot express reward.builtin.{name}: OpenRLHF ")
    assert problem.message.endswith("(no openrlhf version supports it)")


@pytest.mark.parametrize("version", PINNED)
def test_no_pinned_wheel_brings_math_verify(version: str) -> None:
    """The fact behind refusing ``math``: the wheel's requirements do not include math-verify."""
    with zipfile.ZipFile(download_wheel("openrlhf", version)) as wheel:
        metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [
            line.split(":", 1)[1].strip().lower()
            for line in wheel.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
        assert requires, "a wheel with no requirements read: the check would pass for nothing"
        assert not [r for r in requires if r.replace("_", "-").startswith("math-verify")]
        assert not [n for n in wheel.namelist() if n.endswith(("math_verify.py", "reward_score/gsm8k.py"))]
