"""OpenRLHF: ``max_grad_norm`` and ``warmup_ratio`` parse to the flags each pinned version's code reads.

Parsed by each version's REAL parser (built from its train_ppo_ray.py); whether the flag is read per role is
checked in the wheel's source, so a release that moves the read fails here.
"""

from __future__ import annotations

import copy
import zipfile
from typing import Any

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf.versions import dest, has_flag
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import SpecError, validate_data

from .conftest import PINNED, parse_ok, wheel
from .test_openrlhf_honest_defaults import PPO

CLIP, RATIO = 0.37, 0.15


def _job(**training: Any) -> Any:
    data = copy.deepcopy(PPO)
    data["spec"]["training"].update(training)
    return validate_data(data, "<test>")


def _wheel_reads(version: str, text: str) -> bool:
    with zipfile.ZipFile(wheel(version)) as whl:
        return any(
            text in whl.read(name).decode("utf-8", "replace")
            for name in whl.namelist()
            if name.endswith((".py",)) and ("/trainer/ray/" in name or name.endswith("utils/utils.py"))
        )


@pytest.mark.parametrize("version", PINNED)
def test_actor_clip_and_warmup_ratio_reach_the_namespace(version: str, registry: Registry) -> None:
    job = _job(optimizer={"lr": 1e-6, "max_grad_norm": CLIP, "warmup_ratio": RATIO})
    native = render_native(job, f"openrlhf=={version}", registry).native
    ns = parse_ok(version, native.argv[3:])
    assert getattr(ns, dest(version, "max_norm")) == CLIP
    assert getattr(ns, dest(version, "lr_warmup_ratio")) == RATIO
    if has_flag(version, "critic_max_norm"):
        # an unset critic optimizer follows the actor's, as every other critic setting does
        assert getattr(ns, dest(version, "critic_max_norm")) == CLIP
        assert getattr(ns, dest(version, "critic_lr_warmup_ratio")) == RATIO
        assert _wheel_reads(version, "max_norm=args.actor.max_norm")
        assert _wheel_reads(version, "max_norm=args.critic.max_norm")
    else:
        # one strategy for both roles: its max_norm is the one --max_norm
        assert _wheel_reads(version, "max_norm=args.max_norm") or _wheel_reads(
            version, 'max_norm=getattr(args, "max_norm"'
        )
        assert not _wheel_reads(version, "args.critic.max_norm")


@pytest.mark.parametrize("version", PINNED)
def test_a_critic_clip_of_its_own(version: str, registry: Registry) -> None:
    job = _job(critic_optimizer={"lr": 9e-6, "max_grad_norm": 0.2, "warmup_ratio": 0.05})
    if Version(version) < Version("0.10.2"):
        with pytest.raises(SpecError, match="--max_norm serve both before 0.10.2"):
            render_native(job, f"openrlhf=={version}", registry)
        return
    ns = parse_ok(version, render_native(job, f"openrlhf=={version}", registry).native.argv[3:])
    assert getattr(ns, dest(version, "critic_max_norm")) == 0.2
    assert getattr(ns, dest(version, "critic_lr_warmup_ratio")) == 0.05
    # the actor keeps OpenRLHF's own clip
    assert getattr(ns, dest(version, "max_norm")) == 1.0


def test_a_critic_warmup_in_another_unit_does_not_inherit_the_actors(registry: Registry) -> None:
    job = _job(optimizer={"lr": 1e-6, "warmup_steps": 2}, critic_optimizer={"lr": 9e-6, "warmup_ratio": 0.5})
    ns = parse_ok("0.11.2", render_native(job, "openrlhf==0.11.2", registry).native.argv[3:])
    assert getattr(ns, dest("0.11.2", "critic_lr_warmup_ratio")) == 0.5
    assert getattr(ns, dest("0.11.2", "lr_warmup_ratio")) == 0.2  # 2 of the 10 steps
