from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
#: The examples that run on TRL on a CPU (``*-trl.yaml``); no GPU framework can express their HF rollout.
TRL_EXAMPLES = [p for p in EXAMPLES if p.name.endswith("-trl.yaml")]
#: The examples written for the GPU frameworks (verl renders every one of them).
GPU_EXAMPLES = [p for p in EXAMPLES if p not in TRL_EXAMPLES]


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Run records and caches of one test never leak into another or into the user's home.
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path_factory.mktemp("rladapt-home")))
