"""verl: import(script) renders to the same effective config as the script, on several pinned versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl.effective import verl_effective
from rladapt.importing.importer import Imported, build, differences, read_back_only
from rladapt.importing.script import Launch, read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import load_job_text

VERSIONS = ["0.5.0", "0.6.1", "0.7.1", "0.9.1"]

# every spec field the verl adapter maps, set through the idioms of a real launch script
SCRIPT = r"""#!/usr/bin/env bash
set -xeuo pipefail
export VLLM_ATTENTION_BACKEND=XFORMERS
MODEL=${MODEL_PATH:-Qwen/Qwen2.5-0.5B-Instruct}
DATA=/data/gsm8k
NGPU=4
TRAIN=(data.train_files="['$DATA/train.parquet']" data.val_files="['$DATA/test.parquet']")
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    "${TRAIN[@]}" \
    data.prompt_key=question \
    data.train_batch_size=64 \
    data.max_prompt_length=512 \
    data.max_response_length=768 \
    data.shuffle=False \
    data.filter_overlong_prompts=True \
    actor_rollout_ref.model.path=$MODEL \
    actor_rollout_ref.model.enable_gradient_checkpointing=False \
    actor_rollout_ref.actor.optim.lr=3e-6 \
    actor_rollout_ref.actor.optim.weight_decay=0.05 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=k3 \
    actor_rollout_ref.actor.clip_ratio_high=0.28 \
    actor_rollout_ref.actor.entropy_coeff=0.001 \
    actor_rollout_ref.actor.ppo_epochs=2 \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=$((NGPU/2)) \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.7 \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.temperature=0.9 \
    actor_rollout_ref.rollout.top_k=50 \
    actor_rollout_ref.rollout.val_kwargs.n=2 \
    actor_rollout_ref.rollout.val_kwargs.temperature=0.6 \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console","wandb"]' \
    trainer.project_name=gsm8k \
    trainer.experiment_name=qwen_grpo_${NGPU}gpu \
    trainer.n_gpus_per_node=$NGPU \
    trainer.nnodes=2 \
    trainer.save_freq=10 \
    trainer.test_freq=5 \
    trainer.total_training_steps=100 \
    trainer.critic_warmup=0 "$@" 2>&1 | tee verl_demo.log
"""


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)


def _imported(registry: Registry, version: str, text: str = SCRIPT) -> tuple[Launch, Imported]:
    launch = read_launch(text, "run_grpo.sh", fw.match)
    imported = build(
        fw, version, list(launch.argv), source="run_grpo.sh", registry=registry, env=launch.env, header="h"
    )
    return launch, imported


@pytest.mark.parametrize("version", VERSIONS)
def test_round_trip_gives_the_scripts_effective_config(registry: Registry, version: str) -> None:
    launch, imported = _imported(registry, version)
    # independently of build's own check: load the written text, render it, compare with the script
    job = load_job_text(imported.text, [], "job.yaml")
    rendered = render_native(job, f"verl=={version}", registry).native
    assert (
        differences(fw.effective(list(launch.argv), version), fw.effective(list(rendered.argv), version))
        == []
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_settings_land_in_spec_fields(registry: Registry, version: str) -> None:
    _, imported = _imported(registry, version)
    spec = imported.job.spec
    assert imported.job.name == "qwen-grpo-4gpu"
    assert spec.model.path == "Qwen/Qwen2.5-0.5B-Instruct"
    assert spec.model.gradient_checkpointing is False
    assert spec.data.train == ["/data/gsm8k/train.parquet"] and spec.data.val == ["/data/gsm8k/test.parquet"]
    assert (spec.data.prompt_key, spec.data.max_prompt_length, spec.data.max_response_length) == (
        "question",
        512,
        768,
    )
    assert spec.data.shuffle is False
    assert (spec.algorithm.name, spec.algorithm.group_size, spec.algorithm.ppo_epochs) == ("grpo", 8, 2)
    assert (spec.algorithm.kl.coef, spec.algorithm.kl.in_, spec.algorithm.kl.estimator) == (
        0.001,
        "loss",
        "k3",
    )
    assert spec.algorithm.clip.high == 0.28 and spec.algorithm.entropy_coef == 0.001
    tr = spec.training
    assert (tr.global_batch, tr.mini_batch, tr.micro_batch_per_gpu, tr.steps) == (64, 16, 4, 100)
    assert (tr.optimizer.lr, tr.optimizer.weight_decay) == (3e-6, 0.05)
    ro = spec.rollout
    assert (ro.tensor_parallel, ro.gpu_memory_utilization, ro.temperature, ro.top_k) == (2, 0.7, 0.9, 50)
    assert (ro.val.n, ro.val.temperature) == (2, 0.6)
    assert (spec.checkpoint.every_steps, spec.eval.every_steps) == (10, 5)
    assert spec.logging.backends == ["console", "wandb"] and spec.logging.project == "gsm8k"
    pool = imported.job.placement.pools[0]
    assert (pool.nodes, pool.gpus_per_node) == (2, 4)
    assert spec.env == {"VLLM_ATTENTION_BACKEND": "XFORMERS"}


@pytest.mark.parametrize("version", VERSIONS)
def test_nothing_is_dropped_unmapped_items_keep_their_order(registry: Registry, version: str) -> None:
    _, imported = _imported(registry, version)
    native = imported.job.spec.native["verl"]
    # the script's trainer.critic_warmup=0 is a spec field now (no critic-only steps), not native residue
    assert imported.job.spec.training.critic_warmup_steps == 0
    assert not any(item.startswith("trainer.critic_warmup=") for item in native)
    # the prompt filter and the actor's parameter offload are spec fields now (issue 12), not native residue
    spec = imported.job.spec
    assert spec.data.overlong_prompts == "drop" and spec.training.offload.actor.params is True
    assert not any("filter_overlong" in item or "param_offload" in item for item in native)


@pytest.mark.parametrize("version", VERSIONS)
def test_framework_defaults_that_rladapt_would_change_are_written_out(
    registry: Registry, version: str
) -> None:
    _, imported = _imported(registry, version)
    # verl validates before training by default; rladapt's default is false
    assert imported.job.spec.eval.before_training is True
    # verl's lr_warmup_steps default -1 (use the ratio) is what an unset spec.training.optimizer.warmup_steps
    # means now (null: the framework's own), so the import needs neither a field nor a native item for it
    assert imported.job.spec.training.optimizer.warmup_steps is None
    assert not any("lr_warmup_steps=" in item for item in imported.job.spec.native["verl"])
    if version != "0.5.0":  # data.seed from 0.6.1: verl's null is what an unset spec.data.seed means
        target = fw.effective(list(read_launch(SCRIPT, "s", fw.match).argv), version)
        assert target.values["data.seed"] is None
        assert imported.job.spec.data.seed is None
        assert not any(item.startswith("data.seed=") for item in imported.job.spec.native["verl"])


def test_header_and_framework_interpolations_stay_literal(registry: Registry) -> None:
    text = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t 'trainer.default_local_dir=/ck/${oc.env:USER}'"
    launch = read_launch(text, "cmd", fw.match)
    imported = build(
        fw, "0.7.1", list(launch.argv), source="cmd", registry=registry, header="from cmd, verl 0.7.1"
    )
    assert imported.text.startswith("# from cmd, verl 0.7.1\n")
    assert "\\${oc.env:USER}" in imported.text
    assert imported.job.spec.checkpoint.dir == "/ck/${oc.env:USER}"


def test_megatron_config_name(registry: Registry) -> None:
    text = (
        "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer actor_rollout_ref.model.path=m "
        "data.train_files=t actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.9.1", list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.training.backend == "megatron"
    assert imported.job.spec.training.parallel.tp == 2


def test_effective_applies_add_force_and_delete() -> None:
    eff = verl_effective(
        "0.7.1", "ppo_trainer", ["+x.y=1", "++data.seed=3", "~data.val_files", "trainer.nnodes=2"]
    )
    assert eff.values["x.y"] == 1 and eff.values["data.seed"] == 3 and eff.values["trainer.nnodes"] == 2
    assert "data.val_files" not in eff.values
    assert eff.values["actor_rollout_ref.rollout.response_length"] == eff.values["data.max_response_length"]


VERL_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "verl"


@pytest.mark.parametrize("version", VERSIONS)
def test_deep_round_trip_with_verls_own_hydra_composition(registry: Registry, version: str) -> None:
    """verl's real composed and resolved config (from its wheel) is the same for the script and the spec."""
    from omegaconf import OmegaConf

    from rladapt.adapters.verl.validate import compose, parse_argv

    package = VERL_CACHE / version / "verl"
    if not package.is_dir():
        pytest.skip(f"verl {version} wheel not unpacked in .cache/verl (the conformance suite fetches it)")
    launch, imported = _imported(registry, version)
    rendered = render_native(imported.job, f"verl=={version}", registry).native
    mine = OmegaConf.to_container(compose(package, parse_argv(list(launch.argv))), resolve=True)
    theirs = OmegaConf.to_container(compose(package, parse_argv(list(rendered.argv))), resolve=True)
    # the one difference: TensorBoard beside the script's loggers, which rladapt reads the metrics back from
    assert isinstance(mine, dict) and isinstance(theirs, dict)
    assert read_back_only("verl", "trainer.logger", mine["trainer"]["logger"], theirs["trainer"]["logger"])
    assert theirs["trainer"].pop("logger") == [*mine["trainer"].pop("logger"), "tensorboard"]
    assert mine == theirs


@pytest.mark.parametrize("version", VERSIONS)
def test_launch_without_a_custom_reward_imports_verls_builtin_scorer(
    registry: Registry, version: str
) -> None:
    """No custom_reward_function in the launch: verl scores by data_source, the spec's builtin by_data_source,
    and nothing about the reward goes to spec.native (it renders no custom_reward_function either)."""
    launch, imported = _imported(registry, version)
    assert not any("custom_reward_function" in a for a in launch.argv)
    reward = imported.job.spec.reward
    assert reward.builtin is not None and reward.builtin.name == "by_data_source"
    assert reward.function is None
    assert not any("reward" in item for item in imported.job.spec.native.get("verl", []))
    rendered = render_native(imported.job, f"verl=={version}", registry).native
    assert not any("custom_reward_function" in a for a in rendered.argv) and rendered.files == {}


@pytest.mark.parametrize(
    "flags",
    [
        ["--config-path=config", "--config-name='ppo_megatron_trainer.yaml'"],
        ["--config-path", "./config", "--config-name", "ppo_megatron_trainer"],
        ["-cp", "config", "-cn", "ppo_megatron_trainer"],
    ],
)
def test_the_entry_modules_own_config_folder_is_verls_packaged_one(
    registry: Registry, flags: list[str]
) -> None:
    """``--config-path=config`` beside ``verl/trainer/main_ppo.py`` is verl's own config folder (Hydra joins a
    relative config path to the entry module's folder), ``NAME.yaml`` the config NAME: the launch imports as the
    packaged Megatron config, and nothing of the flags lands in spec.native."""
    text = (
        f"python3 -m verl.trainer.main_ppo {' '.join(flags)} actor_rollout_ref.model.path=m data.train_files=t "
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
    )
    launch = read_launch(text, "cmd", fw.match)
    for version in ("0.6.1", "0.9.1"):
        imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
        assert imported.job.spec.training.backend == "megatron"
        assert imported.job.spec.training.parallel.tp == 2
        assert not any("config" in item for item in imported.job.spec.native.get("verl", []))


def test_a_config_folder_hydra_does_not_find_beside_the_module_is_refused_by_name() -> None:
    """A relative folder other than the module's own resolves inside the installed verl package (Hydra joins it
    to the entry module's folder): refused naming the flag and folder, exit 2, never a native item."""
    from rladapt.primitives import UsageError

    argv = ["python3", "-m", "verl.trainer.main_ppo", "--config-path=../../recipe/x/config", "-cn", "x"]
    with pytest.raises(UsageError, match=r"--config-path '\.\./\.\./recipe/x/config'"):
        fw.effective(argv, "0.6.1")


def test_a_logger_given_as_one_string_imports(registry: Registry) -> None:
    """``trainer.logger=console``: verl's Tracking takes one string as the list of it (verl/utils/tracking.py,
    ``if isinstance(default_backend, str)``), so the native check accepts it instead of refusing the spec."""
    text = (
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t "
        "trainer.logger=console trainer.project_name=p"
    )
    launch = read_launch(text, "cmd", fw.match)
    for version in ("0.5.0", "0.6.1"):
        imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
        assert imported.job.spec.logging.backends == ["console"]


OWN_CONFIG = """hydra:
  searchpath:
    - file://verl/trainer/config

defaults:
  - {base}
  - _self_

data:
  max_prompt_length: 1024
  return_raw_chat: True

actor_rollout_ref:
  rollout:
    name: sglang
    multi_turn:
      enable: True
      max_assistant_turns: 5
"""


@pytest.mark.parametrize(("version", "base"), [("0.6.1", "ppo_trainer"), ("0.9.1", "ppo_megatron_trainer")])
def test_a_launchs_own_config_folder_is_read_composed_and_kept(
    registry: Registry, tmp_path: Path, version: str, base: str
) -> None:
    """``--config-path DIR --config-name NAME`` of a folder of the launch's own (verl's examples/sglang_multiturn
    idiom): its file is composed on the packaged config it names, the spec keeps where it is
    (spec.runtime.config), the render passes the same flags, and a render without it is another run."""
    (tmp_path / "my_grpo.yaml").write_text(OWN_CONFIG.format(base=base))
    argv = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "--config-path",
        str(tmp_path),
        "--config-name=my_grpo",
        "actor_rollout_ref.model.path=m",
        "data.train_files=t",
        "actor_rollout_ref.rollout.n=4",
    ]
    target = fw.effective(argv, version)
    assert target.values["(config)"] == str(tmp_path / "my_grpo.yaml")
    assert target.values["data.max_prompt_length"] == 1024 and target.values["data.return_raw_chat"] is True
    imported = build(fw, version, argv, source="cmd", registry=registry)
    spec = imported.job.spec
    assert spec.runtime.config == str(tmp_path / "my_grpo.yaml")
    assert spec.rollout.multi_turn is not None and spec.rollout.multi_turn.max_assistant_turns == 5
    assert spec.training.backend == ("megatron" if "megatron" in base else "fsdp")
    assert not any("config" in item for item in spec.native.get("verl", []))
    rendered = render_native(imported.job, f"verl=={version}", registry).native
    assert rendered.argv[3:7] == ("--config-path", str(tmp_path), "--config-name", "my_grpo")
    assert differences(target, fw.effective(list(rendered.argv), version)) == []
    # the folder is part of what runs: the same overrides on verl's packaged config are another run
    plain = [a for a in rendered.argv if a not in rendered.argv[3:7]]
    assert "(config)" in differences(target, fw.effective(plain, version))


def test_an_own_config_rladapt_cannot_compose_is_refused_by_name(tmp_path: Path) -> None:
    from rladapt.primitives import UsageError

    (tmp_path / "odd.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - override actor: dp_actor\n  - _self_\n"
    )
    argv = ["python3", "-m", "verl.trainer.main_ppo", f"--config-path={tmp_path}", "--config-name=odd"]
    with pytest.raises(UsageError, match=r"has defaults \['ppo_trainer', \{'override actor'"):
        fw.effective(argv, "0.6.1")
    with pytest.raises(UsageError, match=r"cannot read the launch's own config file"):
        fw.effective([*argv[:-1], "--config-name=missing"], "0.6.1")


@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
def test_offload_and_packing_set_to_verls_own_values_are_fields_not_native_items(
    registry: Registry, version: str
) -> None:
    """A launch that writes verl's own values out (``param_offload=False``, upstream scripts do it for every
    role) sets them: they become spec fields, rendered from the field, and nothing of them is left native."""
    text = (
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t "
        "actor_rollout_ref.actor.fsdp_config.param_offload=False "
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload=False "
        "actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.ref.fsdp_config.param_offload=True "
        "actor_rollout_ref.model.use_remove_padding=True"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    off = imported.job.spec.training.offload
    assert (off.actor.params, off.actor.optimizer, off.ref.params) == (False, False, True)
    assert imported.job.spec.training.pack_sequences is True
    native = imported.job.spec.native.get("verl", [])
    assert not any(item.startswith("actor_rollout_ref.") and "offload" in item for item in native), native
    assert not any(item.startswith("actor_rollout_ref.model.use_remove_padding") for item in native), native
    # a launch that leaves them unset gets no field: verl's own stays verl's own
    plain = read_launch(
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t", "c", fw.match
    )
    unset = build(fw, version, list(plain.argv), source="c", registry=registry).job.spec.training.offload
    assert (unset.actor.params, unset.actor.optimizer, unset.ref.params) == (None, None, None)


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1", "0.9.1"])
def test_a_dynamic_batching_launch_without_micro_batches_imports_without_null_items(
    registry: Registry, version: str
) -> None:
    """With use_dynamic_bsz verl splits by tokens and asks for no micro batch (utils/config.py validate_config):
    upstream's seq-balance scripts leave them null, the render leaves them null too, and no ``=null`` item is
    written to undo a micro batch rladapt chose."""
    text = (
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t "
        "actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.use_dynamic_bsz=True "
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24000 actor_rollout_ref.rollout.name=vllm "
        # what upstream's scripts write beside them: the passes' own switch and the filter's truncation
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True "
        "data.filter_overlong_prompts=True data.truncation='error'"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, version, list(launch.argv), source="cmd", registry=registry)
    native = imported.job.spec.native.get("verl", [])
    assert not any(item.endswith("=null") for item in native), native
    assert not any("log_prob_use_dynamic_bsz" in item or "truncation" in item for item in native), native
    rendered = render_native(imported.job, f"verl=={version}", registry).native
    assert not any("micro_batch_size_per_gpu=" in a for a in rendered.argv)


@pytest.mark.parametrize("version", ["0.6.1", "0.9.1"])
def test_an_own_config_composes_with_verls_hydra_as_rladapt_reads_it(tmp_path: Path, version: str) -> None:
    """verl's real Hydra composition (the wheel's config tree) of a launch with its own config folder gives the
    values rladapt's offline reading gives."""
    from omegaconf import OmegaConf

    from rladapt.adapters.verl.validate import compose, parse_argv

    package = VERL_CACHE / version / "verl"
    if not package.is_dir():
        pytest.skip(f"verl {version} wheel not unpacked in .cache/verl (the conformance suite fetches it)")
    (tmp_path / "my_grpo.yaml").write_text(OWN_CONFIG.format(base="ppo_trainer"))
    argv = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        f"--config-path={tmp_path}",
        "--config-name=my_grpo",
        "data.max_prompt_length=2048",
    ]
    cfg = compose(package, parse_argv(argv))
    mine = fw.effective(argv, version).values
    for key in ("data.max_prompt_length", "data.return_raw_chat", "actor_rollout_ref.rollout.name"):
        assert OmegaConf.select(cfg, key) == mine[key], key
    assert OmegaConf.select(cfg, "actor_rollout_ref.rollout.multi_turn.max_assistant_turns") == 5


def test_a_key_only_the_launchs_own_config_declares_passes_the_native_check(tmp_path: Path) -> None:
    """recipe/fapo's own config declares reward_model.rollout.* (not in verl 0.6.1's packaged config): a launch
    overriding it composes in verl, so rladapt's key check takes the file's keys as keys of the config."""
    from rladapt.adapters.verl.validate import check_native
    from rladapt.plugins import NativeLaunch

    (tmp_path / "rm.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\nreward_model:\n  rollout:\n    name: vllm\n"
    )
    argv = ["python3", "-m", "verl.trainer.main_ppo", "--config-path", str(tmp_path), "--config-name", "rm"]
    native = NativeLaunch(
        job_name="j", framework="verl", version="0.6.1", argv=(*argv, "reward_model.rollout.name=sglang")
    )
    assert check_native(native) == []
    bad = NativeLaunch(
        job_name="j", framework="verl", version="0.6.1", argv=(*argv, "reward_model.no_such_key=1")
    )
    assert check_native(bad)


def test_an_added_key_the_render_also_writes_stays_an_add_hydra_accepts(registry: Registry) -> None:
    """recipe/fapo and recipe/dapo add the overlong buffer's keys with ``+``; the spec's overlong penalty renders
    ``+...overlong_buffer_cfg.log=False`` itself, so the launch's ``+...log=True`` is kept as ``++`` (a second
    ``+`` on the same key is refused by Hydra: "Could not append to config")."""
    kw = "reward_model.reward_kwargs"
    text = (
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=m data.train_files=t "
        "data.max_response_length=1024 reward_model.reward_manager=dapo "
        f"+{kw}.overlong_buffer_cfg.enable=True +{kw}.overlong_buffer_cfg.len=256 "
        f"+{kw}.overlong_buffer_cfg.penalty_factor=1.0 +{kw}.overlong_buffer_cfg.log=True "
        f"+{kw}.max_resp_len=1024"
    )
    launch = read_launch(text, "cmd", fw.match)
    imported = build(fw, "0.6.1", list(launch.argv), source="cmd", registry=registry)
    assert imported.job.spec.reward.overlong_penalty is not None
    assert f"++{kw}.overlong_buffer_cfg.log=True" in imported.job.spec.native["verl"]


def test_a_relative_own_config_is_refused_for_verl(registry: Registry, tmp_path: Path) -> None:
    """NeMo-RL takes spec.runtime.config relative to its checkout; verl's Hydra would look for a relative
    --config-path inside the installed package, so the render refuses it by name."""
    from rladapt.primitives.errors import UnsupportedError

    (tmp_path / "my_grpo.yaml").write_text(OWN_CONFIG.format(base="ppo_trainer"))
    argv = ["python3", "-m", "verl.trainer.main_ppo", "--config-path", str(tmp_path), "--config-name=my_grpo"]
    argv += ["actor_rollout_ref.model.path=m", "data.train_files=t"]
    imported = build(fw, "0.6.1", argv, source="cmd", registry=registry)
    text = imported.text.replace(str(tmp_path / "my_grpo.yaml"), "configs/my_grpo.yaml")
    job = load_job_text(text, [], "relative.yaml")
    assert job.spec.runtime.config == "configs/my_grpo.yaml"
    with pytest.raises(UnsupportedError, match=r"spec\.runtime\.config.*relative to the working directory"):
        render_native(job, "verl==0.6.1", registry)
