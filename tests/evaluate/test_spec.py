"""``spec.eval.continuous``: what validate refuses (unreadable suite files, a gate without a pool...), which files
every launcher checks, and the ``evaluator`` service role it becomes in the launch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rladapt.evaluate import EvalSettings, evaluator_roles
from rladapt.plugins import NativeLaunch
from rladapt.primitives import SpecError, job_inputs, load_job
from tests.cli.test_cli import rladapt
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"
SUITE = (
    "{name: share-of-a, data: [examples/tiny/val.jsonl], "
    "scorer: {function: {path: examples/tiny/reward.py, name: share_of_a}}, generation: {max_new_tokens: 8}}"
)
CHECKPOINTS = f"spec.eval.continuous={{follow: checkpoints, suites: [{SUITE}]}}"
PYTHON = f"spec.runtime.python={sys.executable}"


def test_the_suite_files_are_inputs_every_launcher_checks() -> None:
    job = load_job(EXAMPLE, [CHECKPOINTS])
    inputs = {i.field: (i.path, i.kind) for i in job_inputs(job, REPO)}
    assert inputs["spec.eval.continuous.suites[0].data[0]"] == ("examples/tiny/val.jsonl", "data")
    assert inputs["spec.eval.continuous.suites[0].scorer.function.path"] == (
        "examples/tiny/reward.py",
        "file",
    )


def test_validate_refuses_unreadable_suite_data_and_scorer_with_exit_2() -> None:
    suite = SUITE.replace("val.jsonl", "vall.jsonl").replace("reward.py", "rewardz.py")
    res = rladapt("validate", str(EXAMPLE), PYTHON, f"spec.eval.continuous={{follow: checkpoints, suites: [{suite}]}}",
                  cwd=REPO)  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert "spec.eval.continuous.suites[0].data[0]: no such file or directory" in res.stderr
    assert "spec.eval.continuous.suites[0].scorer.function.path: no such file or directory" in res.stderr
    assert rladapt("validate", str(EXAMPLE), PYTHON, CHECKPOINTS, cwd=REPO).returncode == 0


@pytest.mark.parametrize(
    ("continuous", "path", "says"),
    [
        (
            f"{{follow: pool, suites: [{SUITE}]}}",
            "spec.eval.continuous.follow",
            "the job publishes no versions",
        ),
        (
            f"{{follow: checkpoints, suites: [{SUITE}, {SUITE}]}}",
            "spec.eval.continuous.suites",
            "used 2 times",
        ),
        (
            "{follow: checkpoints, suites: [{name: s, data: [examples/tiny/val.jsonl], "
            "scorer: {builtin: {name: math_dapo}}}]}",
            "spec.eval.continuous.suites[0].scorer.builtin.name",
            "expected one of gsm8k, math",
        ),
        (
            f"{{follow: checkpoints, suites: [{SUITE}], gate: {{suite: share-of-a, min: 0.5, promote: serving}}}}",
            "spec.eval.continuous.gate",
            "a gate moves a pool alias",
        ),
    ],
)
def test_cross_field_rules_name_the_field(continuous: str, path: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_job(EXAMPLE, [f"spec.eval.continuous={continuous}"])
    problems = {p.path: str(p) for p in caught.value.problems}
    assert path in problems and says in problems[path], problems


def test_a_gate_names_one_of_the_suites() -> None:
    gate = "{suite: other, min: 0.5, promote: serving}"
    with pytest.raises(SpecError) as caught:
        load_job(
            EXAMPLE,
            [
                "spec.pool.store=pool",
                f"spec.eval.continuous={{follow: pool, suites: [{SUITE}], gate: {gate}}}",
            ],
        )
    assert [p.path for p in caught.value.problems] == ["spec.eval.continuous.gate.suite"]


def test_a_gate_does_not_promote_to_the_alias_the_publisher_moves() -> None:
    gate = "{suite: share-of-a, min: 0.5, promote: candidate}"
    with pytest.raises(SpecError) as caught:
        load_job(EXAMPLE, ["spec.pool={store: pool, alias: candidate}",
                           f"spec.eval.continuous={{follow: pool, suites: [{SUITE}], gate: {gate}}}"])  # fmt: skip
    assert [p.path for p in caught.value.problems] == ["spec.eval.continuous.gate.promote"]


def test_a_scorer_is_a_function_or_a_builtin_not_both() -> None:
    both = "{function: {path: examples/tiny/reward.py}, builtin: {name: gsm8k}}"
    with pytest.raises(SpecError, match="exactly one of function or builtin"):
        load_job(
            EXAMPLE,
            [
                f"spec.eval.continuous={{follow: checkpoints, suites: [{{name: s, data: [x.jsonl], scorer: {both}}}]}}"
            ],
        )


def test_the_evaluator_role_carries_the_settings_and_outlives_the_job() -> None:
    assert evaluator_roles(load_job(EXAMPLE, [])) == ()
    job = load_job(
        EXAMPLE, ["spec.pool.store=/shared/pool", f"spec.eval.continuous={{follow: pool, suites: [{SUITE}]}}"]
    )
    (role,) = evaluator_roles(job, "trl", "1.16.0")
    assert role.name == "evaluator" and role.outlives_job and role.restart == "on-failure"
    # at nice 10: where it shares cores with the training, the training's threads get the CPU first
    assert role.argv[:6] == (".venv/bin/python", "-m", "rladapt.evaluate", "--nice", "10", "--settings")
    settings = EvalSettings.from_json(json.loads(role.argv[6]))
    assert settings == EvalSettings(
        continuous=job.spec.eval.continuous,  # type: ignore[arg-type]
        checkpoint_dir="checkpoints/tiny-grpo-trl",
        framework="trl",
        version="1.16.0",
        store="/shared/pool",
        final_step=30,
    )
    native = NativeLaunch.model_validate(
        {k: v for k, v in NativeLaunch.from_job(job, framework="trl", version="1.16.0", argv=["x"]).to_dict().items()
         if k != "format"}
    )  # fmt: skip
    assert native.services == (role,)


def test_malformed_settings_exit_2_without_a_traceback() -> None:
    res = subprocess.run([sys.executable, "-m", "rladapt.evaluate", "--settings", "{}"], capture_output=True,
                         text=True, cwd=REPO)  # fmt: skip
    assert res.returncode == 2 and "malformed --settings" in res.stderr and "Traceback" not in res.stderr


def test_the_evaluator_lowers_its_own_cpu_priority() -> None:
    code = "import os; from rladapt.evaluate.__main__ import lower_priority; b = os.nice(0); lower_priority(7); print(os.nice(0) - b)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert int(res.stdout) == min(7, 19 - os.nice(0))
