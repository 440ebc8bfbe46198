"""verl: ``max_grad_norm`` and ``warmup_ratio`` reach the keys each pinned version's own code reads.

Every launch is composed with the real wheel's Hydra config; which key a version reads is checked in the
wheel's source, so a verl release that moves the read makes this test fail instead of clipping silently at 1.0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl.versions import keys
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry

from .test_verl_honest_defaults import ARR, composed, render, select

CLIP = 0.37
RATIO = 0.15


def _reads(package: Path, attribute: str) -> bool:
    """Whether any worker or engine module of the wheel reads ``attribute`` (``config.grad_clip`` ...)."""
    sources = [*package.glob("workers/**/*.py"), *package.glob("utils/megatron/*.py")]
    return any(attribute in path.read_text(encoding="utf-8") for path in sources)


@pytest.mark.parametrize("backend", [None, "megatron"])
def test_gradient_clip_reaches_every_key_the_version_reads(
    pinned: tuple[str, Path], registry: Registry, backend: str | None
) -> None:
    version, package = pinned
    spec: dict[str, object] = {"training__optimizer__max_grad_norm": CLIP}
    if backend:
        spec["training__backend"] = backend
    cfg = composed(render(registry, version, **spec), version)
    emitted = keys(version).grad_clip_keys(megatron=backend == "megatron")
    for key in emitted:
        assert select(cfg, f"{ARR}.actor.{key}") == CLIP, (version, key)
    # the keys rladapt writes are the ones the wheel's code reads (dp_actor.py / the engines / megatron optimizer)
    readers = {"grad_clip": "self.config.grad_clip", "optim.clip_grad": "clip_grad"}
    for key in emitted:
        assert _reads(package, readers[key]), f"verl {version} reads no {key}"
    if backend is None and "grad_clip" not in emitted:
        assert not _reads(package, "self.config.grad_clip"), f"verl {version} still reads actor.grad_clip"


def test_critic_gradient_clip_and_warmup_ratio(pinned: tuple[str, Path], registry: Registry) -> None:
    version, _ = pinned
    native = render(
        registry,
        version,
        algorithm={"name": "ppo"},
        training={
            "steps": 10,
            "global_batch": 64,
            "mini_batch": 16,
            "critic_optimizer": {"lr": 1e-5, "max_grad_norm": CLIP, "warmup_ratio": RATIO},
        },
    )
    cfg = composed(native, version)
    for key in keys(version).grad_clip_keys(megatron=False):
        assert select(cfg, f"critic.{key}") == CLIP
    assert select(cfg, "critic.optim.lr_warmup_steps_ratio") == RATIO
    # the actor keeps verl's own clip and schedule: the critic's settings are the critic's
    assert select(cfg, f"{ARR}.actor.optim.lr_warmup_steps_ratio") == 0.0


def test_warmup_ratio_is_read_because_warmup_steps_stay_negative(
    pinned: tuple[str, Path], registry: Registry
) -> None:
    """verl uses lr_warmup_steps_ratio only while lr_warmup_steps < 0 (fsdp_workers.py / the engines)."""
    version, _ = pinned
    cfg = composed(render(registry, version, training__optimizer__warmup_ratio=RATIO), version)
    assert select(cfg, f"{ARR}.actor.optim.lr_warmup_steps_ratio") == RATIO
    assert select(cfg, f"{ARR}.actor.optim.lr_warmup_steps") == -1


def test_both_warmup_units_are_refused() -> None:
    from rladapt.primitives import SpecError

    from .test_verl_honest_defaults import job

    with pytest.raises(SpecError, match="either warmup_steps or warmup_ratio"):
        job(training__optimizer__warmup_ratio=RATIO, training__optimizer__warmup_steps=3)


@pytest.mark.parametrize("version", ["0.5.0", "0.7.1", "0.9.1"])
def test_import_maps_the_ratio_and_the_clip_to_spec_fields(registry: Registry, version: str) -> None:
    clip = " ".join(f"{ARR}.actor.{key}=0.5" for key in keys(version).grad_clip_keys(megatron=False))
    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m data.train_files=t "
        f"{ARR}.actor.optim.lr_warmup_steps_ratio=0.05 {clip}"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    opt = imported.job.spec.training.optimizer
    assert (opt.warmup_ratio, opt.max_grad_norm, opt.warmup_steps) == (0.05, 0.5, None)
    assert not any("ratio" in item or "clip" in item for item in imported.job.spec.native.get("verl", []))
