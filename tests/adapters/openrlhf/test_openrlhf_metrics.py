"""The OpenRLHF metric mapping and TensorBoard directory against each pinned version's real source (its wheel):
every native name is still logged where it is cited (a rename fails here), each absent quantity is really not
logged, and the render makes OpenRLHF's own TensorBoard logger write where ``rladapt metrics`` reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from rladapt.adapters.openrlhf.metrics import ROLLOUT_STATS, TRAINER, names
from rladapt.adapters.openrlhf.versions import option
from rladapt.metrics import METRICS_DIR, Absent
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import load_job
from tests.conftest import REPO
from tests.support.metric_sources import literal_in, missing_names
from tests.support.wheels import CACHE, extract

from .conftest import PINNED, wheel

EXAMPLE = REPO / "examples" / "grpo-gsm8k.yaml"


def package_root(version: str) -> Path:
    """The directory holding that version's ``openrlhf/`` package (its wheel, unzipped once)."""
    dest = extract(wheel(version), CACHE / "extracted" / f"openrlhf-{version}")
    return dest / f"openrlhf-{version}.data" / "purelib"


@pytest.mark.parametrize("version", PINNED)
def test_every_mapped_name_is_logged_by_that_version(registry: Registry, version: str) -> None:
    mapping = registry.framework("openrlhf").metric_names(version)
    assert mapping == names(version)
    root = package_root(version)
    assert missing_names(mapping, {None: root}) == []
    trainer = (root / TRAINER).read_text()
    # train/<key> and eval/<key>: where each status and evaluation key reaches TensorBoard
    logger = (
        trainer
        if Version(version) < ROLLOUT_STATS
        else (root / "openrlhf/utils/logging_utils.py").read_text()
    )
    assert 'add_scalar(f"train/{k}", v, global_step)' in logger
    absent = mapping.absent()
    if "val_score" not in absent:
        assert 'add_scalar(f"eval/{k}", v, global_step)' in logger
        assert 'f"eval_{' in trainer and '_pass1"]' in trainer
    # what is declared absent is really not logged by that version
    if "grad_norm" in absent:
        assert not literal_in("actor_grad_norm", (root / "openrlhf/trainer/ray/ppo_actor.py").read_text())
    if "step_time_s" in absent:
        assert not literal_in("timing/step_total", trainer)
    if "response_clip_ratio" in absent:
        assert not literal_in("rollout/truncated_rate", trainer)
    assert isinstance(mapping.entries["throughput_tokens_per_s_per_gpu"], Absent)


@pytest.mark.parametrize("version", PINNED)
def test_the_render_sets_openrlhfs_tensorboard_directory(registry: Registry, version: str) -> None:
    overrides = ["spec.checkpoint.dir=ck/run", "spec.logging.backends=[console]"]
    if Version(version) < Version("0.7.5"):  # no GRPO before 0.7.5
        overrides += [
            "spec.algorithm.name=reinforce_pp",
            "spec.algorithm.kl.in=reward",
            "spec.eval.every_steps=0",
        ]
    native = render_native(load_job(EXAMPLE, overrides), f"openrlhf=={version}", registry).native
    flag = option(version, "use_tensorboard")
    argv = list(native.argv)
    assert argv[argv.index(flag) + 1] == f"ck/run/{METRICS_DIR}"
    # the version's own trainer opens its SummaryWriter under that flag's value
    source = "\n".join(p.read_text() for p in (package_root(version) / "openrlhf").rglob("*.py"))
    read = "args.use_tensorboard" if flag == "--use_tensorboard" else "args.logger.tensorboard_dir"
    assert f"os.makedirs(self.strategy.{read}" in source or f"os.makedirs({read}" in source
