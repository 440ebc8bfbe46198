"""A value in an error message is quoted: a newline in a field cannot forge another problem line (issue 9)."""

from __future__ import annotations

import json

import pytest

from rladapt.primitives import Problem, SpecError, UsageError, field_path, load_job_text, quote
from tests.primitives.test_loading import MINIMAL

FORGED = "\n  - spec.x: forged"


def error_lines(text: str, overrides: list[str]) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_job_text(text, overrides)
    return str(info.value).splitlines()


@pytest.mark.parametrize(
    "override",
    [
        f"spec.training.global_batch={FORGED!r}",  # a value in `found`
        f"spec.algorithm={{{json.dumps('x' + FORGED)}: 1}}",  # an unknown key
        f"spec.rollout.mode={FORGED!r}",
    ],
)
def test_a_forged_line_in_a_value_stays_in_its_problem(override: str) -> None:
    lines = error_lines(MINIMAL, [override])
    assert len(lines) == 2, lines  # the header and one problem
    assert "forged" in lines[1]


def test_a_forged_line_in_a_key_stays_in_its_problem() -> None:
    lines = error_lines(MINIMAL.replace("group_size: 4", f"group_size: 4, {json.dumps('x' + FORGED)}: 1"), [])
    assert len(lines) == 2, lines
    assert lines[1].startswith(
        "  - spec.algorithm['x\\n  - spec.x: forged']: unknown key 'x\\n  - spec.x: forged'"
    )


def test_a_forged_line_in_a_pool_name_in_a_cross_field_rule() -> None:
    pool = f"{{name: {json.dumps('a' + FORGED)}, nodes: 1, gpus_per_node: 8, roles: [actor, rollout]}}"
    text = MINIMAL + f"  placement:\n    pools:\n      - {pool}\n      - {pool}\n"
    with pytest.raises(SpecError) as info:
        load_job_text(text, [])
    assert all(len(str(p).splitlines()) == 1 for p in info.value.problems)
    assert len(str(info.value).splitlines()) == 1 + len(info.value.problems)


def test_problem_is_one_line_whatever_its_parts_hold() -> None:
    problem = Problem(f"spec.env{FORGED}", f"bad{FORGED}", f"x\r\x1b[2J{FORGED}", quote(FORGED))
    assert len(str(problem).splitlines()) == 1
    assert "\x1b" not in str(problem)  # no terminal escapes either
    assert len(str(SpecError([problem], f"job{FORGED}.yaml")).splitlines()) == 2


def test_quote_and_field_path() -> None:
    assert quote("a\nb") == "'a\\nb'"
    assert quote("x" * 100) == "'" + "x" * 56 + "..."
    assert quote("\ud800") == "'\\ud800'"
    assert field_path(["spec", "env", "A.B", 0, "x\ny"]) == "spec.env['A.B'][0]['x\\ny']"


def test_override_messages_quote_the_override() -> None:
    with pytest.raises(UsageError) as info:
        load_job_text(MINIMAL, [f"spec.data.train=[a{FORGED}"])
    assert len(info.value.message.splitlines()) == 1
