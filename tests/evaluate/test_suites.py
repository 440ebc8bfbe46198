"""A suite's inputs: its prompt files (errors name the field and the file) and its scorers (a function called as
TRL calls a reward, the built-in gsm8k check), and the last version's step the evaluator follows until."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.evaluate import EvalSettings
from rladapt.evaluate.data import load_rows
from rladapt.evaluate.scorers import load_scorer, score
from rladapt.primitives import load_job
from rladapt.primitives.errors import UsageError
from rladapt.primitives.spec import SuiteScorer
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"
SUITE = "{name: s, data: [examples/tiny/val.jsonl], scorer: {builtin: {name: gsm8k}}}"


def test_the_rows_of_jsonl_and_json_files_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('[{"prompt": "x", "ground_truth": "3"}]')
    rows = load_rows([str(REPO / "examples/tiny/val.jsonl"), str(tmp_path / "b.json")], field="f.data")
    assert len(rows) == 9 and rows[-1] == {"prompt": "x", "ground_truth": "3"}


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("a.jsonl", '{"question": "x"}\n', "f.data[0]: row 1 of"),
        ("a.jsonl", "{not json\n", "f.data[0]: cannot read"),
        ("a.csv", "prompt\nx\n", "expected a .jsonl, .json or .parquet file"),
        ("a.json", '{"prompt": "x"}', "expected a JSON list of rows"),
        ("a.jsonl", "", "f.data: the files hold no prompts"),
    ],
)
def test_an_unreadable_suite_file_is_a_usage_error_naming_it(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(UsageError, match=says.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        load_rows([str(tmp_path / name)], field="f.data")


def test_a_function_scorer_gets_prompts_completions_and_columns(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text(
        "def match(prompts, completions, answer, **kwargs):\n"
        "    return [float(c == a) for c, a in zip(completions, answer)]\n"
    )
    scorer = load_scorer(
        SuiteScorer.model_validate({"function": {"path": str(tmp_path / "s.py"), "name": "match"}}), "x"
    )
    rows = [{"prompt": "p1", "answer": "yes"}, {"prompt": "p2", "answer": "no"}]
    assert score(scorer, ["p1", "p2"], ["yes", "yes"], rows) == [1.0, 0.0]
    with pytest.raises(UsageError, match="x.function.name: .* defines no function 'nope'"):
        load_scorer(
            SuiteScorer.model_validate({"function": {"path": str(tmp_path / "s.py"), "name": "nope"}}), "x"
        )


def test_a_scorer_that_returns_no_number_per_answer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="expected a finite number"):
        score(lambda **kw: [None], ["p"], ["c"], [{"prompt": "p"}])
    with pytest.raises(UsageError, match="not one number per completion"):
        score(lambda **kw: [1.0, 2.0], ["p"], ["c"], [{"prompt": "p"}])


def test_the_builtin_gsm8k_scorer_takes_the_last_strict_answer() -> None:
    scorer = load_scorer(SuiteScorer.model_validate({"builtin": {"name": "gsm8k"}}), "x")
    rows = [{"prompt": "q", "ground_truth": "1,234"}, {"prompt": "q", "answer": "steps... #### 72"},
            {"prompt": "q", "ground_truth": "5"}]  # fmt: skip
    got = score(scorer, ["q"] * 3, ["so #### 1 then #### 1,234", "#### 72", "the answer is 5"], rows)
    assert got == [1.0, 1.0, 0.0]


def test_the_evaluator_follows_until_the_last_version_the_run_makes() -> None:
    checkpoints = f"spec.eval.continuous={{follow: checkpoints, suites: [{SUITE}]}}"
    pool = f"spec.eval.continuous={{follow: pool, suites: [{SUITE}]}}"
    assert EvalSettings.from_job(load_job(EXAMPLE, [checkpoints])).final_step == 30  # type: ignore[union-attr]
    every = load_job(EXAMPLE, ["spec.pool.store=p", "spec.pool.every_steps=20", pool])
    assert EvalSettings.from_job(every).final_step == 20  # type: ignore[union-attr]
    # with epochs too, the run may end before step 30 (whichever limit comes first): its last step is not known,
    # and a final step that never comes would keep the evaluator waiting
    both = load_job(EXAMPLE, [checkpoints, "spec.training.epochs=2"])
    assert EvalSettings.from_job(both).final_step is None  # type: ignore[union-attr]
