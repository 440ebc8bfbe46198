"""OpenRLHF: ``data.overlong_prompts``, ``training.offload`` and ``training.pack_sequences`` parse to the flags each
pinned version's code reads, or are refused.

Parsed by each version's REAL parser (built from its train_ppo_ray.py); what the flag does is checked in the
wheel's source, so a release that moves the read fails here.
"""

from __future__ import annotations

import copy
import zipfile
from typing import Any

import pytest

from rladapt.adapters.openrlhf.versions import dest, dotted, has_flag
from rladapt.pipeline import render_native
from rladapt.plugins import Registry
from rladapt.primitives import SpecError, validate_data

from .conftest import PINNED, parse_ok, wheel
from .test_openrlhf_honest_defaults import PPO


def _job(**spec: Any) -> Any:
    data = copy.deepcopy(PPO)
    for section, values in spec.items():
        data["spec"].setdefault(section, {}).update(values)
    return validate_data(data, "<test>")


def _render(registry: Registry, version: str, **spec: Any) -> Any:
    return render_native(_job(**spec), f"openrlhf=={version}", registry).native


def _wheel_source(version: str, suffix: str) -> str:
    with zipfile.ZipFile(wheel(version)) as whl:
        return "\n".join(
            whl.read(name).decode("utf-8", "replace") for name in whl.namelist() if name.endswith(suffix)
        )


@pytest.mark.parametrize("version", PINNED)
def test_overlong_prompts_are_cut_where_this_version_cuts_them(version: str, registry: Registry) -> None:
    if has_flag(version, "max_new_tokens"):
        # 0.9.8+: the agent executor keeps the prompt's last max_len - max_new_tokens tokens
        assert "prompt_token_ids[-max_prompt_length:]" in _wheel_source(version, "utils/agent.py")
        native = _render(registry, version, data={"overlong_prompts": "truncate_left"})
        ns = parse_ok(version, native.argv[3:])
        max_len, new = getattr(ns, dest(version, "max_len")), getattr(ns, dest(version, "max_new_tokens"))
        assert max_len - new == PPO["spec"]["data"].get("max_prompt_length", 1024)
        with pytest.raises(SpecError, match="truncate_right"):
            _render(registry, version, data={"overlong_prompts": "truncate_right"})
        with pytest.raises(SpecError, match="keeps the last --max_len - --max_new_tokens"):
            _render(
                registry, version, data={"overlong_prompts": "truncate_left"}, rollout={"max_tokens": 100}
            )
    else:
        # to 0.9.8: the tokenizer cuts at --prompt_max_len (truncation=True, its own side)
        maker = _wheel_source(version, "ppo_utils/experience_maker.py")
        assert "self.tokenize_fn(all_prompts, self.prompt_max_len, padding=False)" in maker
        assert "truncation=True" in maker
        native = _render(registry, version, data={"overlong_prompts": "truncate_right"})
        assert any("truncation_side" in note for note in native.notes)
        with pytest.raises(SpecError, match="truncate_left"):
            _render(registry, version, data={"overlong_prompts": "truncate_left"})
    for how in ("drop", "truncate_middle"):
        with pytest.raises(SpecError, match=f"data.overlong_prompts.{how}"):
            _render(registry, version, data={"overlong_prompts": how})


@pytest.mark.parametrize("version", PINNED)
def test_optimizer_and_reference_offload(version: str, registry: Registry) -> None:
    native = _render(
        registry,
        version,
        training={"offload": {"actor": {"optimizer": True}, "ref": {"params": True}}},
    )
    ns = parse_ok(version, native.argv[3:])
    assert getattr(ns, dest(version, "adam_offload")) is True
    assert getattr(ns, dest(version, "ref_reward_offload")) is True
    strategy = _wheel_source(version, "utils/deepspeed/deepspeed.py")
    assert "adam_offload=self.adam_offload" in strategy
    launcher = _wheel_source(version, "trainer/ray/launcher.py")
    # one switch for reference and reward model to 0.10.1.post2, the reference's own from 0.10.2
    read = "ref.offload" if dotted(version) else "ref_reward_offload"
    assert f"get_ds_eval_config(offload=strategy.args.{read})" in launcher
    # one --adam_offload for both roles: a critic of its own is refused
    with pytest.raises(SpecError, match="one --adam_offload serves both"):
        _render(
            registry,
            version,
            training={"offload": {"actor": {"optimizer": True}, "critic": {"optimizer": False}}},
        )


@pytest.mark.parametrize("version", ["0.5.9.post1", "0.11.2"])
def test_parameter_offload_of_a_trained_model_is_refused(version: str, registry: Registry) -> None:
    for role in ("actor", "critic"):
        with pytest.raises(SpecError, match=f"offload.{role}.params"):
            _render(registry, version, training={"offload": {role: {"params": True}}})


@pytest.mark.parametrize("version", ["0.7.5", "0.8.11", "0.11.2"])
def test_actor_params_on_the_gpu_keep_deepspeed_awake_beside_a_sleeping_rollout(
    version: str, registry: Registry
) -> None:
    """Every model on shared GPUs: DeepSpeed's states go to CPU while vLLM generates (--deepspeed_enable_sleep)
    unless the spec keeps the actor's parameters on the GPU, as upstream's own tensor-parallel script does
    (train_ppo_llama_ray_tensor_parallelism.sh, 0.7.5 and 0.8.11: --colocate_all_models --vllm_enable_sleep, no
    --deepspeed_enable_sleep); before, that spec was refused, and the script with it."""
    default = parse_ok(version, _render(registry, version).argv[3:])
    assert getattr(default, dest(version, "colocate_all_models")) is True
    assert getattr(default, dest(version, "deepspeed_enable_sleep")) is True
    kept = parse_ok(
        version, _render(registry, version, training={"offload": {"actor": {"params": False}}}).argv[3:]
    )
    assert getattr(kept, dest(version, "vllm_enable_sleep")) is True
    assert getattr(kept, dest(version, "deepspeed_enable_sleep")) is False


@pytest.mark.parametrize("version", PINNED)
def test_pack_sequences(version: str, registry: Registry) -> None:
    ns = parse_ok(version, _render(registry, version, training={"pack_sequences": True}).argv[3:])
    assert getattr(ns, dest(version, "packing_samples")) is True
    ns = parse_ok(version, _render(registry, version).argv[3:])
    assert getattr(ns, dest(version, "packing_samples")) is False
    if has_flag(version, "use_dynamic_batch"):
        # the post-parse rule turns packing on for dynamic batching: false cannot hold
        with pytest.raises(SpecError, match="it packs them for both"):
            _render(registry, version, training={"pack_sequences": False, "dynamic_batch": {"enabled": True}})
