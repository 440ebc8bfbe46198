"""verl: ``spec.training.critic_warmup_steps`` reaches ``trainer.critic_warmup`` the way each pinned wheel counts it.

The fit loop of every pinned wheel (trainer/ppo/ray_trainer.py) starts ``global_steps`` at 1 and updates the actor
once ``critic_warmup <= global_steps``: N critic-only steps are ``trainer.critic_warmup=N+1``. The test reads that
rule in each wheel's source, so a release that counts differently fails here instead of shifting the warm-up.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl.translate import critic_warmup, critic_warmup_steps
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry
from rladapt.primitives import SpecError
from rladapt.primitives.validation import check_job

from .test_verl_honest_defaults import ARR, composed, job, render, select

PPO = {"name": "ppo"}


def test_the_wheel_counts_steps_from_one_and_holds_the_actor_below_critic_warmup(
    pinned: tuple[str, Path],
) -> None:
    _, package = pinned
    source = (package / "trainer" / "ppo" / "ray_trainer.py").read_text(encoding="utf-8")
    fit = source[source.index("    def fit(self") :]
    loop = fit[: fit.index("for epoch in")]
    # global_steps = 0, then += 1 before the first step: the first step is step 1
    assert "self.global_steps = 0" in loop and "self.global_steps += 1" in loop
    held = re.search(r"if self\.config\.trainer\.critic_warmup (<=|>) self\.global_steps:", fit)
    assert held is not None, "the wheel reads trainer.critic_warmup another way"


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_critic_only_steps_reach_critic_warmup(
    pinned: tuple[str, Path], registry: Registry, steps: int
) -> None:
    version, _ = pinned
    native = render(registry, version, algorithm=PPO, training__critic_warmup_steps=steps)
    # 0 is verl's own default (no critic-only step); N steps: the actor's first update at global step N + 1
    assert select(composed(native, version), "trainer.critic_warmup") == (steps + 1 if steps else 0)


def test_unset_leaves_verl_s_own(registry: Registry) -> None:
    native = render(registry, "0.6.1", algorithm=PPO)
    assert not any("critic_warmup" in item for item in native.argv)


def test_the_conversion_round_trips_except_one() -> None:
    for steps in range(6):
        assert critic_warmup_steps(critic_warmup(steps)) == steps
    assert critic_warmup_steps(1) == 0  # 1 holds no step back either; the render writes 0 for it


def test_a_warm_up_without_a_critic_is_refused_by_name(registry: Registry) -> None:
    """verl would hold GRPO's actor back for those steps with nothing training."""
    with pytest.raises(SpecError) as info:
        render(registry, "0.6.1", training__critic_warmup_steps=3)  # the base job runs GRPO
    (problem,) = [p for p in info.value.problems if p.path == "spec.training.critic_warmup_steps"]
    assert "no critic" in problem.message and problem.found == "3"
    assert not check_job(job(training__critic_warmup_steps=0))  # 0: no warm-up, nothing to refuse


LAUNCH = (
    "python3 -m verl.trainer.main_ppo algorithm.adv_estimator={est} {arr}.rollout.n=4 {arr}.model.path=m "
    "data.train_files=t trainer.critic_warmup={value}"
)


@pytest.mark.parametrize(
    ("est", "value", "field"),
    [("gae", 0, 0), ("gae", 6, 5), ("grpo", 0, 0)],
)
def test_import_maps_critic_warmup_to_the_field(registry: Registry, est: str, value: int, field: int) -> None:
    text = LAUNCH.format(est=est, arr=ARR, value=value)
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.6.1", list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.training.critic_warmup_steps == field
    assert not any("critic_warmup" in item for item in imported.job.spec.native.get("verl", []))


@pytest.mark.parametrize(("est", "value"), [("gae", 1), ("grpo", 4)])
def test_import_keeps_what_the_field_cannot_say_native(registry: Registry, est: str, value: int) -> None:
    """1 (rendered back as 0) and a hold-back of GRPO's actor with no critic to train stay native items."""
    text = LAUNCH.format(est=est, arr=ARR, value=value)
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.6.1", list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.training.critic_warmup_steps is None
    assert f"trainer.critic_warmup={value}" in imported.job.spec.native["verl"]
