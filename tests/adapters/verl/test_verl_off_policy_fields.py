"""verl: the rollout IS correction and partial rollouts reach the keys each pinned version's code reads, and what
a version lacks is refused naming the field, the version and the first version that can.

Every launch is composed with the real wheel's Hydra config; where the value is read is checked in the wheel's
source, so a release that moves the read fails here instead of running without the correction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .test_verl_conformance import check_conforms, job_from
from .test_verl_conformance import render as render_job
from .test_verl_honest_defaults import ARR, composed, render, select

GRPO = {"name": "grpo", "group_size": 4}
TIS = {"level": "token", "mode": "truncate", "max_ratio": 2.0}
ICEPOP = {"level": "token", "mode": "mask", "min_ratio": 0.5, "max_ratio": 5.0}


def _text(package: Path, relative: str) -> str:
    return (package / relative).read_text(encoding="utf-8")


def _refused(registry: Registry, version: str, **spec: object) -> str:
    with pytest.raises(SpecError) as err:
        render(registry, version, **spec)
    return str(err.value)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_truncated_correction(level: str, pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    spec = {"algorithm": {**GRPO, "off_policy_correction": {**TIS, "level": level}}}
    if Version(version) < Version("0.6.1"):
        text = _refused(registry, version, **spec)
        assert "spec.algorithm.off_policy_correction" in text and "first supported in verl 0.6.1" in text
        return
    native = render(registry, version, **spec)
    cfg = composed(native, version)
    assert select(cfg, "algorithm.rollout_correction.rollout_is") == level
    assert select(cfg, "algorithm.rollout_correction.rollout_is_threshold") == 2.0
    # the weights exist only when the engine returns its log-probs (default false before 0.9.1)
    assert select(cfg, f"{ARR}.rollout.calculate_log_probs") is True
    assert (
        native.origins["algorithm.rollout_correction.rollout_is"]
        == "spec.algorithm.off_policy_correction.level"
    )
    # read: the trainer hands the section to the helper, which computes the weights at this level
    trainer = _text(package, "trainer/ppo/ray_trainer.py")
    assert 'self.config.algorithm.get("rollout_correction", None)' in trainer
    assert '"rollout_log_probs" in batch.batch' in trainer
    helper = _text(package, "trainer/ppo/rollout_corr_helper.py")
    assert 'rollout_corr_config.get("rollout_is"' in helper
    assert f'rollout_is == "{level}"' in helper
    # and the policy loss multiplies by the weights
    assert "pg_losses = pg_losses * rollout_is_weights" in _text(package, "trainer/ppo/core_algos.py")
    if Version(version) >= Version("0.9.0"):
        # 0.9.1's default trainer (trainer.use_v1) reads the same section
        assert select(cfg, "trainer.use_v1") is True
        assert 'self.config.algorithm.get("rollout_correction", None)' in _text(
            package, "trainer/ppo/v1/trainer_base.py"
        )


def test_masked_correction_is_icepop(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    spec = {"algorithm": {**GRPO, "off_policy_correction": ICEPOP}}
    if Version(version) < Version("0.8.0"):
        text = _refused(registry, version, **spec)
        assert "off_policy_correction.token.mask" in text and "first supported in verl 0.8.0" in text
        return
    cfg = composed(render(registry, version, **spec), version)
    # a string: Hydra would read "0.5_5" as the number 0.55
    assert select(cfg, "algorithm.rollout_correction.rollout_is_threshold") == "0.5_5.0"
    helper = _text(package, "trainer/ppo/rollout_corr_helper.py")
    assert 'lower_str, upper_str = spec.split("_", 1)' in helper
    assert "use_icepop = rollout_is_threshold_lower is not None" in helper


def test_what_verl_cannot_weigh_is_refused(registry: Registry) -> None:
    # verl cuts weights from above only, and has no geometric-mean weight
    text = _refused(registry, "0.9.1", algorithm={**GRPO, "off_policy_correction": {**TIS, "min_ratio": 0.5}})
    assert "spec.algorithm.off_policy_correction.min_ratio" in text and "truncate_min" in text
    text = _refused(
        registry,
        "0.9.1",
        algorithm={**GRPO, "off_policy_correction": {**ICEPOP, "level": "sequence_geometric_mean"}},
    )
    assert "off_policy_correction.sequence_geometric_mean.mask" in text


def test_unset_correction_keeps_verl_s_own(registry: Registry) -> None:
    native = render(registry, "0.9.1")
    assert "rollout_correction" not in " ".join(native.argv)
    assert select(composed(native, "0.9.1"), "algorithm.rollout_correction.rollout_is") is None


@pytest.mark.parametrize("partial", [True, False])
def test_partial_rollout_in_the_fully_async_trainer(
    partial: bool, pinned: tuple[str, Path], registry: Registry
) -> None:
    version, package = pinned
    job = job_from(
        "async-grpo-separate.yaml",
        "spec.weight_sync.max_staleness=3",
        "spec.weight_sync.every_steps=2",
        f"spec.weight_sync.partial_rollout={str(partial).lower()}",
    )
    if Version(version) < Version("0.8.0"):
        with pytest.raises(SpecError, match="first supported in verl 0.8.0"):
            render_job(registry, job, version)
        return
    native = render_job(registry, job, version)
    assert native.argv[2] == "verl.experimental.fully_async_policy.fully_async_main"
    cfg = check_conforms(job, native, package)
    assert select(cfg, "async_training.partial_rollout") is partial
    # a generation aborted at a sync is resumed only when it is on (else dropped): the rollouter in 0.8.0, the
    # LLM server client in 0.9.1
    reader = (
        "experimental/fully_async_policy/fully_async_rollouter.py"
        if Version(version) < Version("0.9.0")
        else "workers/rollout/llm_server.py"
    )
    assert "not self.config.async_training.partial_rollout" in _text(package, reader)


def test_partial_rollout_needs_the_fully_async_trainer(registry: Registry) -> None:
    job = job_from("async-grpo-separate.yaml", "spec.weight_sync.partial_rollout=true")
    with pytest.raises(SpecError) as err:
        render_job(registry, job, "0.9.1")
    assert "spec.weight_sync.partial_rollout" in str(err.value) and "one-step-off" in str(err.value)
    # false is the one-step-off trainer's own: nothing to write
    off = job_from("async-grpo-separate.yaml", "spec.weight_sync.partial_rollout=false")
    assert "partial_rollout" not in " ".join(render_job(registry, off, "0.9.1").argv)


def test_partial_rollout_on_policy_is_a_spec_error(registry: Registry) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, "0.9.1", weight_sync={"partial_rollout": True})
    text = str(err.value)
    assert "spec.weight_sync.partial_rollout" in text and "max_staleness >= 1" in text


def _import(registry: Registry, version: str, text: str) -> Any:
    from rladapt.adapters.verl import importer as fw
    from rladapt.importing.importer import build
    from rladapt.importing.script import read_launch

    launch = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
    )
    launch += f"data.train_files=t {text}"
    return build(
        fw, version, list(read_launch(launch, "cmd", fw.match).argv), source="cmd", registry=registry
    )


@pytest.mark.parametrize(
    ("version", "threshold", "want"),
    [
        ("0.6.1", "2.0", {"level": "sequence", "mode": "truncate", "min_ratio": None, "max_ratio": 2.0}),
        ("0.9.1", "'0.5_5.0'", {"level": "sequence", "mode": "mask", "min_ratio": 0.5, "max_ratio": 5.0}),
    ],
)
def test_import_maps_the_correction(
    version: str, threshold: str, want: dict[str, object], registry: Registry
) -> None:
    prefix = "algorithm.rollout_correction"
    imported = _import(
        registry,
        version,
        f"{prefix}.rollout_is=sequence {prefix}.rollout_is_threshold={threshold} "
        f"{ARR}.rollout.calculate_log_probs=true",
    )
    corr = imported.job.spec.algorithm.off_policy_correction
    assert corr is not None and corr.model_dump() == want
    assert not any("rollout_correction" in item for item in imported.job.spec.native.get("verl", []))
    # without the engine's log-probs verl computes no weight: nothing to import, the key stays native
    inert = _import(registry, version, f"{prefix}.rollout_is=token {ARR}.rollout.calculate_log_probs=false")
    assert inert.job.spec.algorithm.off_policy_correction is None


def test_run_ahead_fraction_is_the_fully_async_staleness_threshold(
    pinned: tuple[str, Path], registry: Registry
) -> None:
    version, package = pinned
    job = job_from(
        "async-grpo-separate.yaml",
        "spec.weight_sync.max_staleness=2",
        "spec.weight_sync.every_steps=2",
        "spec.weight_sync.run_ahead_fraction=0.25",
    )
    if Version(version) < Version("0.8.0"):
        with pytest.raises(SpecError, match="first supported in verl 0.8.0"):
            render_job(registry, job, version)
        return
    native = render_job(registry, job, version)
    cfg = check_conforms(job, native, package)
    assert select(cfg, "async_training.staleness_threshold") == 0.25
    assert native.origins["async_training.staleness_threshold"] == "spec.weight_sync.run_ahead_fraction"
    # read: the rollouter pauses once (1 + threshold) sync periods of samples are out since the last sync
    rollouter = _text(package, "experimental/fully_async_policy/fully_async_rollouter.py")
    assert "* (self.staleness_threshold + 1)" in rollouter
    # unset: max_staleness - 1, as before
    plain = job_from(
        "async-grpo-separate.yaml", "spec.weight_sync.max_staleness=2", "spec.weight_sync.every_steps=2"
    )
    assert (
        select(composed(render_job(registry, plain, version), version), "async_training.staleness_threshold")
        == 1.0
    )


def test_run_ahead_fraction_needs_the_fully_async_trainer(registry: Registry) -> None:
    job = job_from("async-grpo-separate.yaml", "spec.weight_sync.run_ahead_fraction=0")
    with pytest.raises(SpecError) as err:
        render_job(registry, job, "0.9.1")
    assert "spec.weight_sync.run_ahead_fraction" in str(err.value) and "one-step-off" in str(err.value)


def test_fully_async_by_epochs_leaves_the_prompt_cap_unset(
    pinned: tuple[str, Path], registry: Registry
) -> None:
    """With epochs instead of steps, the rollouter must run the epochs: rladapt hands it null, which it reads as
    "no cap", where the YAML default would stop it at 100 prompts."""
    version, package = pinned
    job = job_from(
        "async-grpo-separate.yaml",
        "spec.weight_sync.max_staleness=3",
        "spec.training.steps=null",
        "spec.training.epochs=2",
    )
    if Version(version) < Version("0.8.0"):
        with pytest.raises(SpecError, match="first supported in verl 0.8.0"):
            render_job(registry, job, version)
        return
    native = render_job(registry, job, version)
    assert native.argv[2] == "verl.experimental.fully_async_policy.fully_async_main"
    cfg = check_conforms(job, native, package)
    assert select(cfg, "rollout.total_rollout_steps") is None
    assert select(cfg, "trainer.total_epochs") == 2
    rollouter = _text(package, "experimental/fully_async_policy/fully_async_rollouter.py")
    assert "if self.config.rollout.total_rollout_steps is not None:" in rollouter
