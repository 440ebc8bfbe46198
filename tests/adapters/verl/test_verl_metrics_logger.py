"""verl's own logger writes where ``rladapt metrics`` reads, under the tags the mapping reads: ``verl.utils.tracking.
Tracking`` of the installed verl (the semantic venv of ``.ci/verl-semantic.sh``, newest pinned version) built with
the rendered ``trainer.logger`` and ``TENSORBOARD_DIR``, logging a step with the names verl's trainer logs, then read
back by rladapt. verl trains only on GPUs; this is its logging path, for real."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rladapt.adapters.verl.metrics import names
from rladapt.adapters.verl.translate import TENSORBOARD_DIR
from rladapt.metrics import read_metrics_dir
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import load_job
from tests.conftest import REPO

from .test_verl_semantic import VENV_PYTHON, VERSION

#: Runs in verl's venv: Tracking with the rendered backends, one step of metrics, then finish (closes the writer).
_LOG = r"""
import json, sys
from verl.utils.tracking import Tracking
request = json.loads(sys.argv[1])
tracking = Tracking(request["project"], request["experiment"], default_backend=request["backends"])
for step, data in request["steps"].items():
    tracking.log(data=data, step=int(step))
tracking.finish()
"""


@pytest.mark.parametrize("own", [None, "logs/tb"])
def test_verls_tracking_writes_the_tags_rladapt_reads(
    registry: Registry, tmp_path: Path, own: str | None
) -> None:
    """``own``: spec.logging.dir, the folder the events go to instead of rladapt's (and where they are read)."""
    if not VENV_PYTHON.is_file():
        if os.environ.get("RLADAPT_REQUIRE_SEMANTIC"):
            pytest.fail(
                f"RLADAPT_REQUIRE_SEMANTIC is set but {VENV_PYTHON} is missing: run .ci/verl-semantic.sh"
            )
        pytest.skip(f"verl {VERSION} semantic venv not built ({VENV_PYTHON}); run .ci/verl-semantic.sh")
    given = [f"spec.logging.dir={own}"] if own else []
    job = load_job(REPO / "examples" / "grpo-gsm8k.yaml", ["spec.checkpoint.dir=ck/run", *given])
    native = render_native(job, f"verl=={VERSION}", registry).native
    assert native.metrics_dir == own
    logger = next(a for a in native.argv if a.startswith("trainer.logger="))
    backends = logger.split("=", 1)[1].strip("[]").split(",")
    steps = {
        "1": {"actor/pg_loss": -0.1, "critic/score/mean": 0.25, "timing_s/gen": 3.0, "actor/lr": 1e-6},
        "2": {"actor/pg_loss": -0.2, "critic/score/mean": 0.5, "val-core/openai/gsm8k/reward/mean@1": 0.4},
    }
    request = {"project": "p", "experiment": "e", "backends": backends, "steps": steps}
    env = {**os.environ, **native.env}
    # verl's own venv, nothing of rladapt's (RLADAPT_VERL_LOGGER_PATH: extra paths for a venv built without it)
    env["PYTHONPATH"] = os.environ.get("RLADAPT_VERL_LOGGER_PATH", "")
    done = subprocess.run(
        [str(VENV_PYTHON), "-c", _LOG, json.dumps(request)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    where = native.events_dir()
    assert where == native.env[TENSORBOARD_DIR] and where is not None
    assert list(
        (tmp_path / where).glob("events.out.tfevents.*")
    )  # the folder itself, as verl's logger writes
    m = read_metrics_dir(tmp_path / where, "verl", VERSION)
    assert m.series["policy_loss"] == pytest.approx({1: -0.1, 2: -0.2})
    assert m.series["reward_mean"] == pytest.approx({1: 0.25, 2: 0.5})
    assert m.series["generation_time_s"] == pytest.approx({1: 3.0})
    assert m.series["lr"] == pytest.approx({1: 1e-6})
    assert m.series["val_score"] == pytest.approx({2: 0.4})
    assert m.native["val_score"] == "val-core/openai/gsm8k/reward/mean@1"
    assert names(VERSION).resolve(list(m.native.values())) == m.native
