"""spec.data.builtin: a dataset the framework provides, named instead of files (issue 22). Only NeMo-RL 0.6.0+
resolves one by name (its DATASET_REGISTRY); verl, OpenRLHF and TRL load files or Hub ids, and refuse it naming
the field."""

from __future__ import annotations

import pytest

from rladapt.pipeline import render_native
from rladapt.plugins import load_registry
from rladapt.primitives import SpecError, load_job_text

from .test_loading import MINIMAL, problems

BUILTIN = ["spec.data.train=[]", "spec.data.builtin.name=OpenMathInstruct-2"]


def test_a_builtin_dataset_replaces_the_files() -> None:
    job = load_job_text(MINIMAL, [*BUILTIN, "spec.data.builtin.options.split_validation_size=0.05"])
    assert job.spec.data.builtin is not None
    assert (job.spec.data.train, job.spec.data.builtin.name) == ([], "OpenMathInstruct-2")
    assert job.spec.data.builtin.options == {"split_validation_size": 0.05}


def test_files_or_a_builtin_dataset_never_both_nor_neither() -> None:
    (neither,) = problems(MINIMAL, ["spec.data.train=[]"])
    assert neither.startswith("spec.data.train: no training data")
    (both,) = problems(MINIMAL, ["spec.data.builtin.name=OpenMathInstruct-2"])
    assert both.startswith("spec.data.builtin: a built-in dataset replaces the training files")


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "trl"])
def test_frameworks_that_load_files_refuse_it_naming_the_field(framework: str) -> None:
    job = load_job_text(MINIMAL, BUILTIN)
    with pytest.raises(SpecError) as err:
        render_native(job, framework, load_registry())
    assert "spec.data.builtin.name" in str(err.value)
