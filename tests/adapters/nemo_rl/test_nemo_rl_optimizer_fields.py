"""NeMo-RL: ``max_grad_norm`` reaches ``policy.max_grad_norm`` (and Megatron's clip_grad through the tag's own
interpolation); ``warmup_ratio`` is refused, since NeMo-RL's warmup is a number of iterations.

The merged config is each tag's real grpo_math_1B.yaml with the generated file over it.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import tag
from .test_nemo_rl_conformance import merged
from .test_nemo_rl_honest_defaults import render


# 0.2.1 reads no local data files (its built-in datasets only), so no job of this shape renders there
@pytest.mark.parametrize("version", ["0.4.0", "0.5.0", "0.6.0", "0.7.0"])
def test_gradient_clip_reaches_the_policy(version: str, registry: Registry) -> None:
    spec = {
        "training": {"steps": 10, "global_batch": 32, "mini_batch": 8, "optimizer": {"max_grad_norm": 0.37}}
    }
    cfg = merged(render(registry, version, **spec), tag(version))
    assert OmegaConf.select(cfg, "policy.max_grad_norm") == 0.37
    # the Megatron optimizer's clip follows it through the tag's own ${policy.max_grad_norm}
    megatron_clip = OmegaConf.select(cfg, "policy.megatron_cfg.optimizer.clip_grad", default=None)
    if megatron_clip is not None:
        assert megatron_clip == 0.37


def test_unset_clip_keeps_the_tags_own(registry: Registry) -> None:
    t = tag("0.7.0")
    cfg = merged(render(registry, "0.7.0"), t)
    assert OmegaConf.select(cfg, "policy.max_grad_norm") == OmegaConf.select(
        OmegaConf.create(t.base()), "policy.max_grad_norm"
    )


def test_warmup_ratio_is_refused_with_the_reason(registry: Registry) -> None:
    spec = {
        "training": {"steps": 10, "global_batch": 32, "mini_batch": 8, "optimizer": {"warmup_ratio": 0.1}}
    }
    with pytest.raises(SpecError) as err:
        render(registry, "0.7.0", **spec)
    text = str(err.value)
    assert "spec.training.optimizer.warmup_ratio" in text and "use training.optimizer.warmup_steps" in text
