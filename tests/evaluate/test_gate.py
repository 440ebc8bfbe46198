"""The gate on a real pool store: a passing version moves the alias by compare-and-swap, never back over a newer
version; a failing one is recorded failed with its score; a decision is made once. The results are written as the
evaluator writes them (the scores are set here so that some versions pass and some fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.evaluate import EvalResult, EvalSettings, Evaluator
from rladapt.evaluate.results import read_gate, write_result
from rladapt.pool import Source, VersionStore
from rladapt.primitives.spec import ContinuousEval
from tests.conftest import REPO

MODEL = REPO / "examples" / "tiny" / "model"


def _setup(tmp_path: Path, scores: list[float]) -> tuple[VersionStore, Evaluator]:
    store = VersionStore(tmp_path / "pool")
    for step in range(1, len(scores) + 1):
        store.publish(MODEL, source=Source(run_id="r1", step=step))
    continuous = ContinuousEval.model_validate(
        {
            "follow": "pool",
            "suites": [{"name": "held", "data": ["x.jsonl"], "scorer": {"builtin": {"name": "gsm8k"}}}],
            "gate": {"suite": "held", "min": 0.5, "promote": "serving"},
        }
    )
    settings = EvalSettings(continuous, str(tmp_path / "ck"), store=str(store.root))
    evaluator = Evaluator(settings, run_id="r1", say=lambda _: None)
    for target, score in zip(evaluator.targets(), scores, strict=True):
        write_result(evaluator.root, EvalResult(target.version, "held", target.step, score,
                                                {"score": score, "min": score, "max": score}, run_id="r1"))  # fmt: skip
    return store, evaluator


def test_passing_versions_are_promoted_in_order_and_failing_ones_recorded(tmp_path: Path) -> None:
    store, evaluator = _setup(tmp_path, [0.6, 0.3, 0.5])
    decisions = evaluator.gate_pass()
    assert [(d["version"], d["passed"], d["promoted"], d["value"]) for d in decisions] == [
        ("v00000001", True, True, 0.6),
        ("v00000002", False, False, 0.3),
        ("v00000003", True, True, 0.5),  # at the threshold passes
    ]
    assert "below 0.5" in decisions[1]["reason"]
    state = store.alias_state("serving")
    assert (state.version, state.previous) == ("v00000003", ("v00000001",))
    assert [h["by"] for h in state.history] == ["evaluator", "evaluator"]
    assert evaluator.gate_pass() == []  # each version is decided once
    assert read_gate(evaluator.root, "v00000002") == decisions[1]


def test_a_pass_never_moves_the_alias_back_over_a_newer_promotion(tmp_path: Path) -> None:
    store, evaluator = _setup(tmp_path, [0.9, 0.1, 0.1])
    store.set_alias("serving", "v00000003", by="someone")  # promoted by hand before the evaluator decided
    (first, *_rest) = evaluator.gate_pass()
    assert (first["version"], first["passed"], first["promoted"]) == ("v00000001", True, False)
    assert "already names v00000003" in first["reason"]
    assert store.alias_state("serving").version == "v00000003"


def test_a_crash_between_result_and_decision_is_decided_on_the_next_pass(tmp_path: Path) -> None:
    store, evaluator = _setup(tmp_path, [0.7])
    assert (
        read_gate(evaluator.root, "v00000001") is None
    )  # the result exists, no decision yet: as after a crash
    again = Evaluator(evaluator.settings, run_id="r1", say=lambda _: None)
    assert [d["promoted"] for d in again.gate_pass()] == [True]
    assert store.aliases() == {"serving": "v00000001"}


def test_follow_pool_needs_the_run_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rladapt.primitives.errors import UsageError

    monkeypatch.delenv("RLADAPT_RUN_ID", raising=False)
    _, evaluator = _setup(tmp_path, [0.7])
    with pytest.raises(UsageError, match="needs the run id"):
        Evaluator(evaluator.settings)
