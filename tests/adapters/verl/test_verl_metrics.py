"""The verl metric mapping and TensorBoard backend against each pinned version's real source (its wheel): every
native name is still logged where it is cited (a rename fails here), and the render makes verl's own TensorBoard
logger write where ``rladapt metrics`` reads."""

from __future__ import annotations

import re
import zipfile

import pytest
from packaging.version import Version

from rladapt.adapters.verl.metrics import TRAINER, names
from rladapt.adapters.verl.translate import TENSORBOARD_DIR, TENSORBOARD_REQUIRED_SINCE
from rladapt.metrics import METRICS_DIR, NAMES, Absent
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import load_job
from tests.conftest import REPO
from tests.support.metric_sources import missing_names
from tests.support.wheels import download_wheel

from .conftest import PINNED, verl_package

EXAMPLE = REPO / "examples" / "grpo-gsm8k.yaml"


@pytest.mark.parametrize("version", PINNED)
def test_every_mapped_name_is_logged_by_that_version(registry: Registry, version: str) -> None:
    mapping = registry.framework("verl").metric_names(version)
    assert mapping == names(version)
    root = verl_package(version).parent
    assert missing_names(mapping, {None: root}) == []
    assert not mapping.absent()  # verl logs every neutral quantity
    trainer = (root / TRAINER).read_text()
    # the timers the step and generation times are read from
    assert re.search(r'marked_timer\("step"', trainer) and re.search(r'marked_timer\("gen"', trainer)
    # the val-core tag as _validate builds it: f"{metric_sec}/{data_source}/{var_name}/{metric_name}"
    assert 'f"{metric_sec}/{data_source}/{var_name}/{metric_name}"' in trainer
    if Version(version) >= Version(
        "0.8.0"
    ):  # the engine workers' metrics get their actor/ prefix in the trainer
        assert 'rename_dict(actor_output, "actor/")' in trainer


@pytest.mark.parametrize("version", PINNED)
def test_the_render_sets_verls_tensorboard_logger_and_its_directory(registry: Registry, version: str) -> None:
    tracking = (verl_package(version) / "utils" / "tracking.py").read_text()
    # Tracking accepts the backend and _TensorboardAdapter writes where TENSORBOARD_DIR says
    assert '"tensorboard"' in tracking
    assert 'os.environ.get("TENSORBOARD_DIR"' in tracking
    job = load_job(EXAMPLE, ["spec.logging.backends=[console, wandb]", "spec.checkpoint.dir=ck/run"])
    native = render_native(job, f"verl=={version}", registry).native
    assert "trainer.logger=[console,wandb,tensorboard]" in native.argv
    assert native.env[TENSORBOARD_DIR] == f"ck/run/{METRICS_DIR}"
    # the user's own tensorboard is not listed twice
    job = load_job(EXAMPLE, ["spec.logging.backends=[tensorboard]"])
    assert "trainer.logger=[tensorboard]" in render_native(job, f"verl=={version}", registry).native.argv


def test_val_score_reads_the_first_data_sources_core_metric() -> None:
    mapping = names("0.9.1")
    tags = [
        "val-aux/openai/gsm8k/reward/std@4",
        "val-core/openai/gsm8k/reward/mean@4",
        "val-core/lighteval/MATH/reward/mean@4",
        "critic/score/mean",
        "actor/reward_kl_penalty",
    ]
    chosen = mapping.resolve(tags)
    assert chosen["val_score"] == "val-core/lighteval/MATH/reward/mean@4"
    assert chosen["kl"] == "actor/reward_kl_penalty"  # no actor/kl_loss: the KL is in the reward
    assert chosen["reward_mean"] == "critic/score/mean"
    assert set(mapping.entries) == NAMES and not any(isinstance(e, Absent) for e in mapping.entries.values())


@pytest.mark.parametrize("version", PINNED)
def test_a_version_that_does_not_install_tensorboard_is_noted(registry: Registry, version: str) -> None:
    with zipfile.ZipFile(download_wheel("verl", version)) as wheel:
        metadata = wheel.read(f"verl-{version}.dist-info/METADATA").decode()
    requires = any(line.startswith("Requires-Dist: tensorboard") for line in metadata.splitlines())
    assert requires == (Version(version) >= TENSORBOARD_REQUIRED_SINCE)
    native = render_native(load_job(EXAMPLE, []), f"verl=={version}", registry).native
    assert any("does not install tensorboard" in note for note in native.notes) == (not requires)
