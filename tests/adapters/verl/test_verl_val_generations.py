"""verl: ``spec.logging.val_generations`` reaches ``trainer.log_val_generations``, which each pinned wheel reads
(``_maybe_log_val_generations``), and an import maps the launch's own value back to the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry

from .test_verl_honest_defaults import ARR, composed, render, select


def test_the_wheel_reads_the_key(pinned: tuple[str, Path]) -> None:
    _, package = pinned
    readers = [*package.glob("trainer/ppo/*.py"), *package.glob("trainer/ppo/v1/*.py")]
    assert any("self.config.trainer.log_val_generations" in p.read_text(encoding="utf-8") for p in readers)


@pytest.mark.parametrize("count", [0, 12])
def test_the_count_reaches_verl(pinned: tuple[str, Path], registry: Registry, count: int) -> None:
    version, _ = pinned
    native = render(registry, version, logging__val_generations=count)
    assert select(composed(native, version), "trainer.log_val_generations") == count


def test_unset_leaves_verl_s_own(registry: Registry) -> None:
    assert not any("log_val_generations" in item for item in render(registry, "0.6.1").argv)


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
@pytest.mark.parametrize("count", [0, 10])
def test_import_maps_the_launch_s_count(registry: Registry, version: str, count: int) -> None:
    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
        f"data.train_files=t trainer.log_val_generations={count}"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.logging.val_generations == count
    assert not any("log_val_generations" in item for item in imported.job.spec.native.get("verl", []))
