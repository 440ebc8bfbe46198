"""Serving and evaluation together, for real on the CPU: two reference replicas (``rladapt pool serve``'s group,
real HTTP servers generating with transformers) follow ``serving``; the evaluator measures each version of the run,
through a replica when that replica serves the version and from the weights itself otherwise, and its gate moves
``serving`` to the version that passed: the replicas switch to it in two phases and their answers are stamped with
the promoted version, each the greedy output of its weights computed independently here."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the reference engine needs torch (the engine extra's environment)")
pytest.importorskip("transformers", reason="the reference engine needs transformers")
pytest.importorskip("safetensors.torch")

from rladapt.evaluate import EvalSettings, Evaluator
from rladapt.evaluate.results import read_gate
from rladapt.pool import ServeGroup, Source, VersionStore
from rladapt.primitives.spec import ContinuousEval
from tests.pool.test_serve import PROMPTS, complete, greedy, weights_of
from tests.support.evaluation import SUITE, independent_score, suite


def test_the_gate_moves_serving_and_the_replicas_switch_to_the_promoted_version(tmp_path: Path) -> None:
    store = VersionStore(tmp_path / "pool")
    folders = [weights_of(seed, tmp_path / f"step{step}") for step, seed in ((2, 11), (4, 22))]
    for step, folder in zip((2, 4), folders, strict=True):
        store.publish(folder, source=Source(run_id="r1", step=step, framework="trl"))
    expected = {"v00000001": greedy(folders[0]), "v00000002": greedy(folders[1])}
    assert expected["v00000001"] != expected["v00000002"]  # else the stamps below would prove nothing
    continuous = ContinuousEval.model_validate(
        {
            "follow": "pool",
            "suites": [suite(SUITE, max_new_tokens=8, temperature=0.0)],
            # every version passes: which ones pass and which fail is test_gate.py's
            "gate": {"suite": SUITE, "min": 0.0, "promote": "serving"},
        }
    )
    settings = EvalSettings(continuous, str(tmp_path / "ck"), store=str(store.root), final_step=4)
    store.set_alias("serving", "v00000001")  # the version that serves when the group starts
    group = ServeGroup(store, "serving", replicas=2)
    group.start()
    lines: list[str] = []
    try:
        evaluator = Evaluator(settings, run_id="r1", say=lines.append)
        first, second = evaluator.run_pass()
        # v1 is served: its answers come from a replica; v2 is not (serving names v1): loaded here
        assert (first.version, first.engine) == ("v00000001", group.members[0].url), lines
        assert (second.version, second.engine) == ("v00000002", "transformers"), lines
        for result, folder in zip((first, second), folders, strict=True):
            assert result.score == pytest.approx(independent_score(folder), abs=1e-9)

        # the gate: v1 already serves (nothing to move), v2 passed and was promoted by the evaluator
        kept = read_gate(evaluator.root, "v00000001")
        assert kept is not None and (kept["passed"], kept["promoted"]) == (True, False), kept
        assert kept["reason"] == "serving already names v00000001, not older than v00000001"
        decision = read_gate(evaluator.root, "v00000002")
        assert decision is not None and (decision["passed"], decision["promoted"]) == (True, True), decision
        state = store.alias_state("serving")
        assert state.version == "v00000002" and state.history[-1]["by"] == "evaluator", state

        # two-phase: every replica now serves v2, and says so in each answer
        for member in group.members:
            for prompt in PROMPTS:
                answer = complete(member.url, prompt)
                assert answer["weight_version"] == "v00000002", (member.url, answer)
                assert answer["choices"][0]["text"] == expected["v00000002"][prompt]  # type: ignore[index]

        # measured again on demand, v2 now goes through a replica: the same answers and score as from its weights
        (again,) = evaluator.run_pass(select=lambda t: t.version == "v00000002", force=True)
        assert again.engine == group.members[0].url, lines
        assert [s["completion"] for s in again.samples] == [s["completion"] for s in second.samples]
        assert again.score == second.score
        assert evaluator.run_pass() == []  # nothing is missing: nothing is measured
    finally:
        group.stop()
