"""verl: ``data.overlong_prompts``, ``training.offload`` and ``training.pack_sequences`` reach the keys each pinned
version's own code reads, or are refused.

Every launch is composed with the real wheel's Hydra config; which key a version reads is checked in the wheel's
source, so a verl release that moves the read fails here instead of running with the setting dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl.versions import keys
from rladapt.importing.importer import build
from rladapt.importing.script import read_launch
from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .test_verl_honest_defaults import ARR, composed, render, select


def _source(package: Path, *globs: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for g in globs for p in sorted(package.glob(g)))


@pytest.mark.parametrize("how", ["truncate_left", "truncate_right", "truncate_middle"])
def test_truncation_is_the_datasets_where_it_reads_it(
    pinned: tuple[str, Path], registry: Registry, how: str
) -> None:
    version, package = pinned
    dataset = _source(package, "utils/dataset/rl_dataset.py")
    side = how.removeprefix("truncate_")
    if keys(version).reads_truncation:
        cfg = composed(render(registry, version, data__overlong_prompts=how), version)
        assert select(cfg, "data.truncation") == side
        # the dataset itself cuts the tokenized prompt with it (0.5.0 and 0.6.1)
        assert f'self.truncation == "{side}"' in dataset
        # ...but the async agent loop tokenizes the raw chat again: refused there
        with pytest.raises(SpecError, match="re-tokenizes the raw chat"):
            render(registry, version, data__overlong_prompts=how, rollout__mode="async")
        return
    # from 0.7.1 the key is stored but never applied
    assert "self.truncation ==" not in dataset
    agent_loop = _source(package, "experimental/agent_loop/agent_loop.py")
    if how == "truncate_left" and keys(version).agent_loop_truncates_left:
        native = render(registry, version, data__overlong_prompts=how)
        assert "data.truncation" not in " ".join(native.argv)
        assert "prompt_ids[-prompt_length:]" in agent_loop
        assert any("cuts every prompt" in note for note in native.notes)
        return
    with pytest.raises(SpecError, match=f"data.overlong_prompts.{how}|spec.data.overlong_prompts"):
        render(registry, version, data__overlong_prompts=how)


@pytest.mark.parametrize("backend", [None, "megatron"])
def test_drop_offload_and_packing_reach_every_role(
    pinned: tuple[str, Path], registry: Registry, backend: str | None
) -> None:
    """One composition per version and backend: the prompt filter, every role's offload and, on FSDP, packing
    set to the opposite of the version's own default (off to 0.6.1, on from 0.7.1)."""
    version, package = pinned
    megatron = backend == "megatron"
    pack = Version(version) < Version("0.7.1")
    spec: dict[str, object] = {
        "algorithm": {"name": "ppo", "kl": {"coef": 0.01}},
        "data": {"train": ["data/train.parquet"], "overlong_prompts": "drop"},
        "training": {
            "steps": 10,
            "global_batch": 64,
            "mini_batch": 16,
            "offload": {
                "actor": {"params": True, "optimizer": True},
                "ref": {"params": True},
                "critic": {"params": True, "optimizer": False},
            },
            **({"backend": backend} if backend else {"pack_sequences": pack}),
        },
    }
    cfg = composed(render(registry, version, **spec), version)
    assert select(cfg, "data.filter_overlong_prompts") is True
    dataset = _source(package, "utils/dataset/rl_dataset.py")
    assert 'config.get("filter_overlong_prompts"' in dataset
    assert "doc2len(doc) <= self.max_prompt_length" in dataset
    actor = f"{ARR}.actor.megatron" if megatron else f"{ARR}.actor.fsdp_config"
    ref = f"{ARR}.ref.megatron" if megatron else f"{ARR}.ref.fsdp_config"
    critic = "critic.megatron" if megatron else keys(version).critic_fsdp
    assert select(cfg, f"{actor}.param_offload") is True
    assert select(cfg, f"{actor}.optimizer_offload") is True
    assert select(cfg, f"{ref}.param_offload") is True
    assert select(cfg, f"{critic}.param_offload") is True
    assert select(cfg, f"{critic}.optimizer_offload") is False
    # the workers (legacy or engine) read exactly these names
    workers = _source(package, "workers/*.py", "workers/engine/**/*.py", "workers/config/*.py")
    for key in ("param_offload", "optimizer_offload"):
        assert key in workers, (version, key)
    if not megatron:
        assert select(cfg, f"{ARR}.model.use_remove_padding") is pack
        assert select(cfg, "critic.model.use_remove_padding") is pack
        assert "use_remove_padding" in _source(
            package, "workers/fsdp_workers.py", "workers/engine_workers.py"
        )


def test_unset_fields_keep_verls_own(pinned: tuple[str, Path], registry: Registry) -> None:
    version, _ = pinned
    argv = " ".join(render(registry, version).argv)
    for key in ("offload", "use_remove_padding", "filter_overlong_prompts", "truncation"):
        assert key not in argv


def test_megatron_packing_is_decided_where_each_version_reads_it(
    pinned: tuple[str, Path], registry: Registry
) -> None:
    version, package = pinned
    decides = keys(version).megatron_remove_padding
    if decides == "model":
        cfg = composed(
            render(registry, version, training__backend="megatron", training__pack_sequences=False), version
        )
        assert select(cfg, f"{ARR}.model.use_remove_padding") is False
        assert 'model_config.get("use_remove_padding"' in _source(package, "workers/engine_workers.py")
        return
    if decides == "actor":
        cfg = composed(
            render(registry, version, training__backend="megatron", training__pack_sequences=False), version
        )
        assert select(cfg, f"{ARR}.actor.megatron.use_remove_padding") is False
        assert "self.config.megatron.use_remove_padding" in _source(
            package, "workers/actor/megatron_actor.py"
        )
        assert "use_remove_padding" not in _source(package, "workers/critic/megatron_critic.py")
    else:
        forward = _source(package, "models/mcore/model_forward.py")
        # 0.5.0: gptmodel_forward(..., pack_seqs=True); 0.6.1: every forward packs
        assert "pack_seqs=True" in forward or "Forward pass for models with sequence packing" in forward
        assert "use_remove_padding" not in _source(package, "workers/actor/megatron_actor.py")
        native = render(registry, version, training__backend="megatron", training__pack_sequences=True)
        assert "use_remove_padding" not in " ".join(native.argv)
    with pytest.raises(SpecError, match="always packs them before 0.8.0"):
        render(
            registry,
            version,
            algorithm={"name": "ppo"},
            training={
                "backend": "megatron",
                "pack_sequences": False,
                "steps": 10,
                "global_batch": 64,
                "mini_batch": 16,
            },
        )


def test_offload_of_a_role_the_job_has_not_is_an_error(registry: Registry) -> None:
    with pytest.raises(SpecError, match="spec.training.offload.critic"):
        render(registry, "0.9.1", training__offload={"critic": {"params": True}})
    with pytest.raises(SpecError, match="no reference policy"):
        render(registry, "0.9.1", training__offload={"ref": {"params": True}})


@pytest.mark.parametrize("version", ["0.6.1", "0.9.1"])
def test_import_maps_filter_offload_and_remove_padding(registry: Registry, version: str) -> None:
    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
        f"data.train_files=t data.filter_overlong_prompts=true {ARR}.actor.fsdp_config.param_offload=true "
        f"{ARR}.actor.fsdp_config.optimizer_offload=true {ARR}.model.use_remove_padding="
        + ("true" if version == "0.6.1" else "false")
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    spec = imported.job.spec
    assert spec.data.overlong_prompts == "drop"
    assert (spec.training.offload.actor.params, spec.training.offload.actor.optimizer) == (True, True)
    assert spec.training.pack_sequences is (version == "0.6.1")
    native = " ".join(spec.native.get("verl", []))
    assert "offload" not in native and "filter_overlong" not in native and "remove_padding" not in native


def test_import_maps_the_datasets_truncation_where_it_is_read(registry: Registry) -> None:
    text = (
        f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo {ARR}.rollout.n=4 {ARR}.model.path=m "
        "data.train_files=t data.truncation=middle"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.6.1", list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.data.overlong_prompts == "truncate_middle"
    assert not any("truncation" in item for item in imported.job.spec.native.get("verl", []))
