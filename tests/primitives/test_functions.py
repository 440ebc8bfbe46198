"""The one loader of a user's function named by a file and a name: the TRL driver (in the job) and the evaluator's
scorers find the same function, and word the same faults for their own field."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rladapt.adapters.trl.driver import DriverError, load_reward
from rladapt.evaluate.scorers import load_scorer
from rladapt.primitives import UsageError
from rladapt.primitives.functions import NotLoadable, load_function
from rladapt.primitives.spec import SuiteScorer


def _scorer(path: Path, name: str) -> SuiteScorer:
    return SuiteScorer.model_validate({"function": {"path": str(path), "name": name}})


def test_the_driver_and_the_scorers_load_the_same_function(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(
        "def share(prompts, completions, **kw):\n    return [0.5 for _ in completions]\n"
    )
    reward = load_reward({"function": {"path": str(tmp_path / "r.py"), "name": "share"}})
    scorer = load_scorer(_scorer(tmp_path / "r.py", "share"), "s")
    assert reward(prompts=["p"], completions=["c"]) == scorer(prompts=["p"], completions=["c"]) == [0.5]
    assert load_function(tmp_path / "r.py", "share", "m")(prompts=[], completions=["x", "y"]) == [0.5, 0.5]


def test_each_fault_names_the_part_that_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text("VALUE = 1\n")
    missing, module = tmp_path / "nope.py", tmp_path / "r.py"
    with pytest.raises(NotLoadable) as caught:
        load_function(missing, "f", "m")
    assert (caught.value.part, caught.value.message) == ("path", f"no such file {str(missing)!r}")
    with pytest.raises(NotLoadable) as caught:
        load_function(module, "VALUE", "m")  # not callable: no such function
    assert (caught.value.part, caught.value.message) == (
        "name",
        f"{str(module)!r} defines no function 'VALUE'",
    )

    with pytest.raises(DriverError) as driver:
        load_reward({"function": {"path": str(missing), "name": "f"}})
    assert str(driver.value) == (
        f"spec.reward.function.path: no such file {str(missing)!r} (from {os.getcwd()!r})"
    )
    with pytest.raises(DriverError, match=r"^spec\.reward\.function\.name: .* defines no function 'VALUE'$"):
        load_reward({"function": {"path": str(module), "name": "VALUE"}})
    with pytest.raises(UsageError, match=r"^s\.function\.path: no such file "):
        load_scorer(_scorer(missing, "f"), "s")
    with pytest.raises(UsageError, match=r"^s\.function\.name: .* defines no function 'VALUE'$"):
        load_scorer(_scorer(module, "VALUE"), "s")


def test_what_the_users_module_raises_is_worded_by_the_scorer_and_shown_by_the_driver(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("raise RuntimeError('broken at import')\n")
    with pytest.raises(UsageError, match=r"^s\.function\.path: importing .* failed: RuntimeError"):
        load_scorer(_scorer(tmp_path / "bad.py", "f"), "s")
    with pytest.raises(RuntimeError, match="broken at import"):  # in the job: the user's own traceback
        load_reward({"function": {"path": str(tmp_path / "bad.py"), "name": "f"}})
