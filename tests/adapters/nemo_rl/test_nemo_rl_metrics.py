"""The NeMo-RL metric mapping and TensorBoard settings against each pinned tag's source.

NeMo-RL has no wheel: ``metric_literals.json`` holds the string literals of the files the mapping cites, per tag,
derived from the tags' sources by ``scripts/nemo_rl_metric_literals.py`` (commits in the file). Every native name
must be one of them (a rename fails here); with ``RLADAPT_NEMO_RL_GIT`` naming a clone of NVIDIA-NeMo/RL the
derived file is regenerated from the tags and must be the committed one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from rladapt.adapters.nemo_rl.metrics import PERFORMANCE, names
from rladapt.metrics import Absent
from rladapt.plugins import Registry
from tests.conftest import REPO

from .conftest import PINNED

LITERALS = Path(__file__).with_name("metric_literals.json")
DERIVED = json.loads(LITERALS.read_text())


def test_the_derived_literals_cover_every_pinned_tag() -> None:
    assert sorted(DERIVED) == sorted(PINNED)


@pytest.mark.parametrize("version", PINNED)
def test_every_mapped_name_is_logged_by_that_tag(registry: Registry, version: str) -> None:
    mapping = registry.framework("nemo-rl").metric_names(version)
    assert mapping == names(version)
    files = DERIVED[version]["files"]
    missing = [
        (neutral, logged.file, logged.logged)
        for neutral, logged in mapping.logged()
        if logged.logged not in files.get(logged.file, ())
    ]
    assert missing == []
    # the logger: <log_dir>/tensorboard, written when tensorboard_enabled (nemo_rl/utils/logger.py)
    assert {"tensorboard", "tensorboard_enabled", "log_dir"} <= set(files["nemo_rl/utils/logger.py"])
    # the prefixes grpo.py logs with
    assert {"train", "timing/train", "validation"} <= set(files["nemo_rl/algorithms/grpo.py"])
    throughput = mapping.entries["throughput_tokens_per_s_per_gpu"]
    assert isinstance(throughput, Absent) == (Version(version) < PERFORMANCE)
    if isinstance(throughput, Absent):
        assert "tokens_per_sec_per_gpu" not in files["nemo_rl/algorithms/grpo.py"]
    else:
        assert "performance" in files["nemo_rl/algorithms/grpo.py"]


@pytest.mark.skipif(
    not os.environ.get("RLADAPT_NEMO_RL_GIT"), reason="RLADAPT_NEMO_RL_GIT names no NeMo-RL clone"
)
def test_the_derived_literals_are_the_tags_own(tmp_path: Path) -> None:
    out = tmp_path / "literals.json"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "nemo_rl_metric_literals.py"),
            os.environ["RLADAPT_NEMO_RL_GIT"],
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert json.loads(out.read_text()) == DERIVED
