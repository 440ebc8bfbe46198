"""verl: ``spec.training.steps`` and ``spec.training.epochs`` together end the run at whichever comes first.

Every pinned wheel's fit loop (trainer/ppo/ray_trainer.py) runs ``for epoch in range(trainer.total_epochs)`` and
returns once ``global_steps`` reaches ``trainer.total_training_steps``; the fully-async rollouter (0.8.0+) stops at
``min(rollout.total_rollout_steps, len(dataloader) * trainer.total_epochs)`` prompts. The tests read those rules in
each wheel's source, compose the render with the wheel's Hydra config, and import launches that write both.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.version import Version

from rladapt.adapters.verl import importer as fw
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry

from .test_verl_conformance import check_conforms, job_from
from .test_verl_conformance import render as render_job
from .test_verl_honest_defaults import ARR, composed, render, select


def test_the_wheel_stops_at_whichever_limit_comes_first(pinned: tuple[str, Path]) -> None:
    _, package = pinned
    source = (package / "trainer" / "ppo" / "ray_trainer.py").read_text(encoding="utf-8")
    # total_training_steps replaces the epochs' count of steps when it is set ...
    assert "if self.config.trainer.total_training_steps is not None:" in source
    fit = source[source.index("    def fit(self") :]
    # ... and the loop over total_epochs passes returns at the last of those steps
    assert "self.config.trainer.total_epochs):" in fit[: fit.index("is_last_step = ")]
    assert "is_last_step = self.global_steps >= self.total_training_steps" in fit
    # the last-step save and validation hang on is_last_step (or their frequencies) alone
    assert re.search(r"is_last_step\s+or self\.global_steps % self\.config\.trainer\.save_freq == 0", fit)


def test_steps_and_epochs_reach_both_keys(pinned: tuple[str, Path], registry: Registry) -> None:
    version, _ = pinned
    native = render(registry, version, training__steps=40, training__epochs=3)
    cfg = composed(native, version)
    assert (select(cfg, "trainer.total_training_steps"), select(cfg, "trainer.total_epochs")) == (40, 3)
    assert native.origins["trainer.total_training_steps"] == "spec.training.steps"
    assert native.origins["trainer.total_epochs"] == "spec.training.epochs"
    # is_last_step counts total_training_steps only: epochs that end first skip the last-step save, said aloud
    assert any("skips its last-step checkpoint" in note for note in native.notes)


def test_steps_alone_keep_epochs_out_of_the_way(registry: Registry) -> None:
    """Without epochs, the epochs limit must never come first: every epoch is at least one step."""
    cfg = composed(render(registry, "0.9.1", training__steps=40), "0.9.1")
    assert (select(cfg, "trainer.total_training_steps"), select(cfg, "trainer.total_epochs")) == (40, 40)


def test_the_fully_async_rollouter_stops_at_whichever_comes_first(
    pinned: tuple[str, Path], registry: Registry
) -> None:
    version, package = pinned
    if Version(version) < Version("0.8.0"):
        pytest.skip(f"verl {version} has no fully-async trainer (refused by its own test)")
    job = job_from(
        "async-grpo-separate.yaml",
        "spec.weight_sync.max_staleness=3",
        "spec.training.steps=40",
        "spec.training.epochs=3",
    )
    native = render_job(registry, job, version)
    assert native.argv[2] == "verl.experimental.fully_async_policy.fully_async_main"
    cfg = check_conforms(job, native, package)
    assert select(cfg, "rollout.total_rollout_steps") == 40 * job.spec.training.global_batch
    assert select(cfg, "trainer.total_epochs") == 3
    rollouter = (package / "experimental/fully_async_policy/fully_async_rollouter.py").read_text(
        encoding="utf-8"
    )
    # one prompt per batch, the epochs' prompts capped by total_rollout_steps, and the loop over total_epochs
    assert 'self.config.data.gen_batch_size == 1, "gen_batch_size must be one"' in rollouter
    assert (
        "self.total_rollout_steps = len(self.train_dataloader) * self.config.trainer.total_epochs"
        in rollouter
    )
    assert "min(self.config.rollout.total_rollout_steps, self.total_rollout_steps)" in rollouter
    assert "for epoch in range(self.config.trainer.total_epochs):" in rollouter


LAUNCH = (
    f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
    "data.train_files=t {limits}"
)


@pytest.mark.parametrize(
    ("limits", "steps", "epochs"),
    [
        ("trainer.total_training_steps=300 trainer.total_epochs=15", 300, 15),
        ("trainer.total_training_steps=300 trainer.total_epochs=300", 300, 300),
        # verl's own total_epochs (30 in every pinned ppo_trainer.yaml) still caps a run the launch counts in steps
        ("trainer.total_training_steps=300", 300, 30),
        ("trainer.total_epochs=4", None, 4),
    ],
)
def test_import_takes_the_limits_the_launch_writes(
    registry: Registry, limits: str, steps: int | None, epochs: int | None
) -> None:
    text = LAUNCH.format(limits=limits)
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.9.1", list(launch.argv), source="cmd", registry=registry)
    training = imported.job.spec.training
    assert (training.steps, training.epochs) == (steps, epochs)
    native = imported.job.spec.native.get("verl", [])
    assert not any(
        item.startswith(("trainer.total_epochs", "trainer.total_training_steps")) for item in native
    )
