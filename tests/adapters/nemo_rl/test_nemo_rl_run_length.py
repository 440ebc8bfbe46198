"""NeMo-RL: ``spec.training.steps`` and ``spec.training.epochs`` together reach ``grpo.max_num_steps`` and
``grpo.max_num_epochs``, which grpo_train reads as one loop condition (``while current_epoch < max_num_epochs and
total_steps < max_num_steps``, nemo_rl/algorithms/grpo.py 0.4.0 to 0.7.0). 0.2.1 has no epochs key; async GRPO's
loop reads max_num_steps only, so the pair is refused there, naming both fields.
"""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import SpecError, load_job
from tests.conftest import REPO

from .conftest import tag
from .test_nemo_rl_conformance import merged
from .test_nemo_rl_honest_defaults import render
from .test_nemo_rl_off_policy_fields import ASYNC

EXAMPLES = REPO / "examples"
RENDERING = ["0.4.0", "0.5.0", "0.6.0", "0.7.0"]
BOTH = {"steps": 40, "epochs": 3, "global_batch": 32, "mini_batch": 8}


def _refused(registry: Registry, version: str, **spec: Any) -> SpecError:
    with pytest.raises(SpecError) as err:
        render(registry, version, **spec)
    return err.value


@pytest.mark.parametrize("version", RENDERING)
def test_steps_and_epochs_reach_both_keys(version: str, registry: Registry) -> None:
    native = render(registry, version, training=BOTH)
    cfg = merged(native, tag(version))
    assert OmegaConf.select(cfg, "grpo.max_num_steps") == 40
    assert OmegaConf.select(cfg, "grpo.max_num_epochs") == 3
    assert tag(version).allows("grpo.max_num_epochs")
    assert native.origins["grpo.max_num_steps"] == "spec.training.steps"
    assert native.origins["grpo.max_num_epochs"] == "spec.training.epochs"


def test_0_2_1_has_no_epoch_limit(registry: Registry) -> None:
    job = load_job(EXAMPLES / "grpo-math-nemo-rl.yaml", ["spec.training.steps=40", "spec.training.epochs=3"])
    with pytest.raises(SpecError) as err:
        render_native(job, "nemo-rl==0.2.1", registry)
    (problem,) = [p for p in err.value.problems if p.path == "spec.training.epochs"]
    assert "a run length in epochs (first supported in nemo-rl 0.4.0)" in problem.message


@pytest.mark.parametrize("version", RENDERING)
def test_async_grpo_refuses_the_pair_by_name(version: str, registry: Registry) -> None:
    err = _refused(registry, version, **ASYNC, training=BOTH, weight_sync={"max_staleness": 2})
    (problem,) = err.problems
    assert problem.path == "spec.training.epochs" and problem.found == "3"
    assert (
        "spec.training.steps and spec.training.epochs together with off-policy (async) GRPO"
        in problem.message
    )
    # either limit alone renders
    one = render(
        registry, version, **ASYNC, training={**BOTH, "epochs": None}, weight_sync={"max_staleness": 2}
    )
    assert merged(one, tag(version)).grpo.max_num_steps == 40
