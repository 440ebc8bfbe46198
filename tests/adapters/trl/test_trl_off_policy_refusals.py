"""TRL refuses the rollout IS correction with the reason its code gives: the correction is applied only with vLLM
generation (trl/trainer/grpo_trainer.py, 0.23.1 to 1.16.0: ``if self.use_vllm and
self.vllm_importance_sampling_correction``), which rladapt does not map. Renders only: no torch needed."""

from __future__ import annotations

import pytest

from tests.cli.test_cli import rladapt
from tests.conftest import REPO

from .conftest import PINNED, trl_root

EXAMPLE = str(REPO / "examples" / "grpo-tiny-trl.yaml")


@pytest.mark.parametrize("version", PINNED)
def test_correction_is_refused_with_the_reason(version: str) -> None:
    res = rladapt(
        "render", "-f", f"trl=={version}", EXAMPLE, "spec.algorithm.off_policy_correction={max_ratio: 2.0}"
    )
    assert res.returncode == 2, res.stdout + res.stderr
    text = " ".join(res.stderr.split())
    assert (
        f"spec.algorithm.off_policy_correction: trl {version} cannot express off_policy_correction.token"
        in text
    )
    assert "only with vLLM generation" in text and "Traceback" not in res.stderr
    # the reason, in this version's trainer
    trainer = (trl_root(version) / "trl" / "trainer" / "grpo_trainer.py").read_text(encoding="utf-8")
    assert "self.use_vllm and self.vllm_importance_sampling_correction" in trainer
