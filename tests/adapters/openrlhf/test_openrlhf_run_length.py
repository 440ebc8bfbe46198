"""OpenRLHF: ``spec.training.steps`` with ``spec.training.epochs``.

OpenRLHF has no step limit: rladapt renders steps as one episode over ``steps x global_batch`` prompts
(``--num_episodes 1 --max_samples``). ``--max_samples`` cuts the prompt set itself and every episode runs the cut
set again, so epochs: 1 beside steps is the same run as steps alone (whichever limit comes first), and more
epochs would run epochs x steps: refused, naming both fields. Both rules are read in each pinned wheel's source.
"""

from __future__ import annotations

import re
import zipfile

import pytest

from rladapt.adapters.openrlhf.versions import dest
from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import PINNED, wheel
from .test_openrlhf_honest_defaults import namespace


def _trainer_sources(version: str) -> str:
    """The wheel's PPO trainer modules, where the prompts are cut and the episodes loop."""
    with zipfile.ZipFile(wheel(version)) as whl:
        names = [
            n
            for n in whl.namelist()
            if n.endswith(("/openrlhf/trainer/ppo_trainer.py", "/openrlhf/trainer/ray/ppo_actor.py"))
            or n in ("openrlhf/trainer/ppo_trainer.py", "openrlhf/trainer/ray/ppo_actor.py")
        ]
        return "\n".join(whl.read(n).decode("utf-8") for n in names)


@pytest.mark.parametrize("version", PINNED)
def test_the_wheel_cuts_the_prompts_and_repeats_them_each_episode(version: str) -> None:
    source = _trainer_sources(version)
    assert re.search(r"\.select\(range\(min\(args\.(data\.)?max_samples, len\(", source), "no prompt cut"
    assert re.search(r"for episode in range\([a-z_]+, (self\.)?args\.(train\.)?num_episodes\):", source)


@pytest.mark.parametrize("version", PINNED)
def test_one_epoch_with_steps_is_the_run_of_steps_alone(version: str, registry: Registry) -> None:
    both, native = namespace(registry, version, training={"steps": 10, "epochs": 1, "global_batch": 64})
    alone, _ = namespace(registry, version, training={"steps": 10, "global_batch": 64})
    assert vars(both) == vars(alone)
    episodes, samples = dest(version, "num_episodes"), dest(version, "max_samples")
    assert (vars(both)[episodes], vars(both)[samples]) == (1, 640)
    assert native.origins["--" + episodes] == "spec.training.epochs"


@pytest.mark.parametrize("version", PINNED)
def test_more_epochs_with_steps_are_refused_by_name(version: str, registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        namespace(registry, version, training={"steps": 10, "epochs": 3, "global_batch": 64})
    (problem,) = err.value.problems
    assert problem.path == "spec.training.epochs" and problem.found == "3"
    assert "cannot express spec.training.steps and spec.training.epochs > 1 together" in problem.message
