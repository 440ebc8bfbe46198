"""The TRL metric mapping against each pinned version's real source: every native name is still logged where it
is cited (a rename fails here), in both trainers, and reaches TensorBoard under the tag the reader expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.trl.metrics import GRPO, names
from rladapt.metrics import Absent, Logged, MetricMap
from tests.support.metric_sources import literal_in, missing_names
from tests.support.wheels import CACHE, download_wheel, extract

from .conftest import PINNED, REGISTRY, trl_root

TRANSFORMERS = "4.57.6"  # tested_with of every row of rladapt/compat/matrix/trl.toml


def transformers_root() -> Path:
    wheel = download_wheel("transformers", TRANSFORMERS)
    return extract(wheel, CACHE / "extracted" / f"transformers-{TRANSFORMERS}")


@pytest.mark.parametrize("version", PINNED)
def test_every_mapped_name_is_logged_by_that_version(version: str) -> None:
    mapping = REGISTRY.framework("trl").metric_names(version)
    assert mapping == names(version)
    roots: dict[str | None, Path] = {None: trl_root(version), "transformers": transformers_root()}
    assert mapping is not None and missing_names(mapping, roots) == []
    # RLOOTrainer logs the same names (the driver runs either)
    rloo = (trl_root(version) / "trl/trainer/rloo_trainer.py").read_text()
    for neutral, logged in mapping.logged():
        if logged.file == GRPO:
            assert literal_in(logged.logged, rloo), (neutral, logged.logged)
            # what rewrite_logs makes of it (transformers integration_utils.py): train/<name>, eval/<name>
            assert logged.tag in (f"train/{logged.logged}", f"eval/{logged.logged}")


def test_step_time_is_absent_where_the_version_has_none() -> None:
    source = (trl_root("0.23.1") / GRPO).read_text()
    assert not literal_in("step_time", source)
    assert isinstance(names("0.23.1").entries["step_time_s"], Absent)
    assert literal_in("step_time", (trl_root("0.29.1") / GRPO).read_text())


def test_a_renamed_metric_is_caught() -> None:
    mapping = names("1.16.0")
    renamed = MetricMap(
        framework="trl",
        version="1.16.0",
        entries={**mapping.entries, "entropy": (Logged("train/ent", "ent", GRPO),)},
    )
    roots: dict[str | None, Path] = {None: trl_root("1.16.0"), "transformers": transformers_root()}
    assert missing_names(renamed, roots) == [
        "entropy: 'ent' is not logged in trl/trainer/grpo_trainer.py (1.16.0)"
    ]
