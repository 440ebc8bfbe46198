"""Generating through the pool's serving engine: when a serving group (real reference replicas, transformers on
CPU) serves the version under evaluation, the evaluator asks it for the answers instead of loading the weights, and
the score is the one it computes from the weights itself."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the reference engine needs torch (the engine extra's environment)")
pytest.importorskip("transformers", reason="the reference engine needs transformers")

from rladapt.evaluate import EvalSettings, Evaluator
from rladapt.pool import ServeGroup, Source, VersionStore
from rladapt.primitives.spec import ContinuousEval
from tests.conftest import REPO
from tests.support.evaluation import suite

MODEL = REPO / "examples" / "tiny" / "model"


def test_a_served_version_is_evaluated_through_its_replica(tmp_path: Path) -> None:
    store = VersionStore(tmp_path / "pool")
    store.publish(MODEL, source=Source(run_id="r1", step=1))
    store.set_alias("serving", "v00000001")
    continuous = ContinuousEval.model_validate(
        {
            "follow": "pool",
            "suites": [suite("held", max_new_tokens=8)],
        }
    )
    settings = EvalSettings(continuous, str(tmp_path / "ck"), store=str(store.root))
    lines: list[str] = []
    group = ServeGroup(store, "serving", replicas=1)
    group.start()
    try:
        (served,) = Evaluator(settings, run_id="r1", say=lines.append).run_pass()
    finally:
        group.stop()
    assert served.engine == group.members[0].url, lines
    (local,) = Evaluator(settings, run_id="r1", say=lines.append).run_pass(force=True)
    assert local.engine == "transformers"
    assert [s["completion"] for s in served.samples] == [s["completion"] for s in local.samples]
    assert served.score == local.score
