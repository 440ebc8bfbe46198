"""One real TRL run shared by the metrics tests: the tiny example of ``examples/`` on CPU, 4 steps, evaluated and
checkpointed every 2 steps, through ``rladapt.launch.Runner`` on the local launcher (as ``rladapt launch`` does)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rladapt.launch import Runner
from rladapt.runs import Run, RunStore
from tests.conftest import REPO

SPEC = "examples/grpo-tiny-trl.yaml"
#: Why the example's runs (beta 0) log no KL, as ``metrics`` and ``compare`` say it.
KL_WHEN = (
    "trl 1.16.0 logs it 'kl' (trl/trainer/grpo_trainer.py) only when beta != 0 (spec.algorithm.kl.coef > 0)"
)
STEPS = 4


@dataclass(frozen=True)
class TrlRun:
    run: Run
    home: Path
    checkpoint_dir: Path


def val_file(where: Path) -> Path:
    """Four of the example's prompts: an evaluation of all 64 takes a minute on the CPU."""
    path = where / "val.jsonl"
    if not path.is_file():
        where.mkdir(parents=True, exist_ok=True)
        lines = (REPO / "examples" / "tiny" / "prompts.jsonl").read_text().splitlines()[:4]
        path.write_text("\n".join(lines) + "\n")
    return path


def overrides(ck: Path, *extra: str, steps: int = STEPS) -> list[str]:
    return [
        f"spec.training.steps={steps}",
        "spec.checkpoint.every_steps=2",
        "spec.checkpoint.keep_last=3",
        f"spec.checkpoint.dir={ck}",
        f"spec.data.val=[{val_file(ck.parent)}]",
        "spec.eval.every_steps=2",
        f"spec.runtime.python={sys.executable}",
        *extra,
    ]


@pytest.fixture(scope="session")
def trl_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrlRun]:
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    ck = tmp_path_factory.mktemp("trl-metrics") / "ck"
    home = tmp_path_factory.mktemp("trl-metrics-home")
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        runner = Runner(store=RunStore(home))
        run = runner.launch(SPEC, overrides(ck), framework="trl")
        final = runner.wait(run, interval=0.2, timeout=600)
    finally:
        os.chdir(cwd)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-3000:]
    yield TrlRun(run=run.refresh(), home=home, checkpoint_dir=ck)
