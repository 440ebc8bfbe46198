"""Validation results in ``status`` and ``runs``: the latest and best validation score of a real TRL run evaluated
every 2 steps, and the best step that has a complete checkpoint (read from the run's metrics and checkpoints)."""

from __future__ import annotations

import json

from rladapt.adapters.trl.checkpoints import scan
from rladapt.metrics import RunMetrics, read_run_metrics
from rladapt.metrics.validation import validation
from tests.cli.test_cli import rladapt

from .conftest import TrlRun


def _cli(trl_run: TrlRun, *args: str) -> str:
    res = rladapt(*args, env={"RLADAPT_HOME": str(trl_run.home)})
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_status_and_runs_show_the_validation_results(trl_run: TrlRun) -> None:
    m = read_run_metrics(trl_run.run)
    val = m.series["val_score"]
    assert sorted(val) == [2, 4]
    complete = [c.step for c in scan(trl_run.checkpoint_dir, "1.16.0").checkpoints if c.complete]
    assert complete == [2, 4]
    best_step = max(val, key=lambda s: (val[s], -s))

    text = _cli(trl_run, "status", trl_run.run.id)
    assert (
        f"validation: {val[4]:.4g} at step 4, best {val[best_step]:.4g} at step {best_step}, "
        f"best checkpoint step {best_step}\n"
    ) in text

    record = json.loads(_cli(trl_run, "status", "--json", trl_run.run.id))
    assert record["validation"] == {
        "latest": {"step": 4, "value": val[4]},
        "best": {"step": best_step, "value": val[best_step]},
        "best_checkpoint": {"step": best_step, "value": val[best_step]},
    }

    header, row = _cli(trl_run, "runs").splitlines()
    assert header.split()[-1] == "VALIDATION"
    assert row.endswith(f"{val[4]:.4g} (best {val[best_step]:.4g}@{best_step}, ckpt {best_step})")
    (listed,) = [json.loads(line) for line in _cli(trl_run, "runs", "--json").splitlines()]
    assert listed["validation"] == record["validation"]


def _metrics(val: dict[int, float]) -> RunMetrics:
    return RunMetrics(run_id="r", framework="trl", version="1.16.0", series={"val_score": val})


def test_the_best_checkpoint_is_the_best_validated_step_still_complete() -> None:
    found = validation(_metrics({10: 0.2, 20: 0.6, 30: 0.4, 40: 0.3}), complete_steps=[30, 40])
    assert found is not None
    assert (found.latest, found.best, found.best_checkpoint) == ((40, 0.3), (20, 0.6), (30, 0.4))
    assert found.summary() == "0.3 at step 40, best 0.6 at step 20, best checkpoint step 30"
    none_kept = validation(_metrics({10: 0.2}), complete_steps=[5])
    assert none_kept is not None and none_kept.best_checkpoint is None
    assert none_kept.summary().endswith("no complete checkpoint of a validated step")
    assert validation(_metrics({}), complete_steps=[10]) is None
