"""OpenRLHF: ``spec.training.critic_warmup_steps`` reaches ``--freezing_actor_steps`` (``--critic.freezing_steps``
from 0.10.2) the way each pinned wheel counts its steps.

Every pinned ``ppo_train`` runs the actor while ``global_step > freezing``; the fit loop counts from 1 up to 0.8.11
and from 0 from 0.9.10, so the same flag value freezes one step more there. Both rules are read in each wheel's
trainer source, so a release that changes either fails here instead of shifting the warm-up by a step.
"""

from __future__ import annotations

import copy
import re
import shlex
import zipfile
from typing import Any

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf import importer as fw
from rladapt.adapters.openrlhf.versions import (
    FREEZE_COUNTS_FROM_ZERO,
    critic_only_steps,
    dest,
    freezing_actor_steps,
    spell,
)
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import validate_data

from .conftest import PINNED, parse_ok, wheel
from .test_openrlhf_honest_defaults import PPO


def _trainer_source(version: str) -> str:
    with zipfile.ZipFile(wheel(version)) as whl:
        (name,) = [n for n in whl.namelist() if n.endswith("/openrlhf/trainer/ppo_trainer.py")]
        return whl.read(name).decode("utf-8")


def _critic_only(version: str, freezing: int, steps: int = 20) -> int:
    """The steps of a run whose actor does not train, by the wheel's own rule (checked in its source below)."""
    first = 0 if Version(version) >= FREEZE_COUNTS_FROM_ZERO else 1
    return sum(1 for step in range(first, first + steps) if not step > freezing)


@pytest.mark.parametrize("version", PINNED)
def test_the_wheel_s_rule_is_the_one_rladapt_counts_with(version: str) -> None:
    source = _trainer_source(version)
    assert re.search(r"global_steps > self\.(args\.)?(critic\.freezing_steps|freezing_actor_steps)", source)
    if Version(version) >= FREEZE_COUNTS_FROM_ZERO:
        assert "def fit(self, global_step: int = 0)" in source and "return status, global_step + 1" in source
    else:
        assert "steps = consumed_samples // args.rollout_batch_size + 1" in source or (
            'steps = checkpoint_states["global_step"] + 1' in source
        )


@pytest.mark.parametrize("version", PINNED)
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_critic_only_steps_reach_the_flag(version: str, registry: Registry, steps: int) -> None:
    data = copy.deepcopy(PPO)
    data["spec"]["training"]["critic_warmup_steps"] = steps
    native = render_native(validate_data(data, "<test>"), f"openrlhf=={version}", registry).native
    ns = parse_ok(version, native.argv[3:])
    freezing = getattr(ns, dest(version, "freezing_actor_steps"))
    assert _critic_only(version, freezing) == steps
    assert critic_only_steps(version, freezing) == steps


def test_unset_leaves_openrlhf_s_own(registry: Registry) -> None:
    native = render_native(validate_data(copy.deepcopy(PPO), "<test>"), "openrlhf==0.10.2", registry).native
    assert not any("freezing" in item for item in native.argv)


@pytest.mark.parametrize(
    ("version", "field", "value"), [("0.8.11", 3, 3), ("0.9.10", 4, 3), ("0.10.2", 1, 0)]
)
def test_import_maps_the_flag_back(registry: Registry, version: str, field: int, value: int) -> None:
    """A launch (the render of a PPO spec) with the flag imports to the field, and nothing of it stays native."""
    data = copy.deepcopy(PPO)
    data["spec"]["training"]["critic_warmup_steps"] = field
    argv = list(render_native(validate_data(data, "<test>"), f"openrlhf=={version}", registry).native.argv)
    flag = spell(version, "freezing_actor_steps")
    assert argv[argv.index(flag) + 1] == str(value)
    launch = read_launch(shlex.join(argv), "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.training.critic_warmup_steps == field
    assert not any("freezing" in item for item in imported.job.spec.native.get("openrlhf", []))
    assert freezing_actor_steps(version, field) == value


def test_a_warm_up_is_refused_where_the_algorithm_has_no_critic(registry: Registry) -> None:
    data: dict[str, Any] = copy.deepcopy(PPO)
    data["spec"]["algorithm"] = {"name": "grpo", "group_size": 4}
    data["spec"]["training"]["critic_warmup_steps"] = 2
    from rladapt.primitives import SpecError

    with pytest.raises(SpecError) as info:
        render_native(validate_data(data, "<test>"), "openrlhf==0.10.2", registry)
    assert any(p.path == "spec.training.critic_warmup_steps" for p in info.value.problems)
