"""The launches issue 22 names that an import refused or turned into a spec it then rejected: each now imports to a
spec that passes ``rladapt validate`` and renders the launch's own effective configuration.

The launches are written here in the shape of the upstream files named beside each (their settings that matter;
never the files themselves).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.adapters.nemo_rl import importer as nemo
from rladapt.adapters.openrlhf import importer as openrlhf
from rladapt.importing.importer import Imported, build, differences, launch_effective, read_native
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import SpecError, load_job_text
from tests.adapters.nemo_rl.conftest import tag
from tests.importing.test_nemo_rl_import import REWARD_MODEL


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(
        builtins={"nemo-rl": "rladapt.adapters.nemo_rl", "openrlhf": "rladapt.adapters.openrlhf"},
        use_entry_points=False,
    )


def _round_trip(fw: Any, registry: Registry, version: str, imported: Imported) -> list[str]:
    job = load_job_text(imported.text, [], "imported.yaml")
    final = launch_effective(fw, render_native(job, f"{fw.FRAMEWORK}=={version}", registry).native)
    return differences(imported.target, final)


def _validates(tmp_path: Path, framework: str, imported: Imported) -> None:
    """``rladapt validate -f FRAMEWORK==VERSION`` of the written spec exits 0."""
    path = tmp_path / "imported.yaml"
    path.write_text(imported.text)
    result = subprocess.run(
        # the launch's files are on its cluster, not here: the spec itself is what is checked
        [sys.executable, "-m", "rladapt.cli", "validate", "--no-path-check", "-f", framework, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("version", ["0.4.0", "0.6.0", "0.7.0"])
def test_reward_model_on_the_policys_one_node(
    version: str, registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream's grpo_rm_1B.yaml (v0.4.0 to v0.7.0): cluster 1 node x 2 GPUs, env.reward_model.resources 1 x 1.
    NeMo-RL splits the one node (grpo.py setup, total_nodes == 1); the import used to write a shared pool of 0
    nodes. It is the reward's share of the one pool now: spec.roles.reward.gpus."""
    root = tag(version).root
    monkeypatch.chdir(root)
    rm: dict[str, Any] = {**REWARD_MODEL, "resources": {"gpus_per_node": 1, "num_nodes": 1}}
    body: dict[str, Any] = {
        "defaults": str(root / "examples" / "configs" / "grpo_math_1B.yaml"),
        "cluster": {"num_nodes": 1, "gpus_per_node": 2},
        "env": {"reward_model": rm},
    }
    if version < "0.5.0":
        rm["enabled"] = True
    else:
        body["data"] = {"default": {"env_name": "reward_model"}}
    config = tmp_path / "grpo_rm_1B.yaml"
    config.write_text(yaml.safe_dump(body))
    launch = read_native(nemo, config.read_text(), str(config), {}, version)
    imported = build(nemo, version, list(launch.argv), source=str(config), registry=registry, header="h")
    assert _round_trip(nemo, registry, version, imported) == []
    spec = yaml.safe_load(imported.text)["spec"]
    assert spec["roles"] == {"reward": {"gpus": 1}}
    assert [(p["nodes"], p["gpus_per_node"]) for p in spec["placement"]["pools"]] == [(1, 2)]
    _validates(tmp_path, f"nemo-rl=={version}", imported)


def test_reward_model_sharing_a_pool_of_several_nodes_is_still_refused(registry: Registry) -> None:
    """Only one node is split (grpo.py: with more nodes the reward model takes whole nodes of its own)."""
    data = yaml.safe_load(
        """
apiVersion: rladapt/v1alpha1
kind: RLJob
metadata: {name: rm}
spec:
  model: {path: m}
  algorithm: {group_size: 4}
  data: {train: [t.jsonl]}
  reward: {model: {path: rm}}
  roles: {reward: {gpus: 1}}
  placement: {pools: [{name: default, nodes: 2, gpus_per_node: 2, roles: [actor, rollout, reward]}]}
"""
    )
    with pytest.raises(SpecError, match="reward model sharing the actor's GPUs"):
        render_native(load_job_text(yaml.safe_dump(data), [], "job.yaml"), "nemo-rl==0.7.0", registry)


#: upstream's examples/scripts/train_reinforce_baseline_ray_agent_async.sh (OpenRLHF v0.10.2, v0.11.0): async
#: training on shared GPUs with DeepSpeed sleeping, vLLM not (no --vllm.enable_sleep)
ASYNC_AGENT = """\
python3 -m openrlhf.cli.train_ppo_ray \\
   --actor.model_name_or_path Qwen/Qwen3-4B-Thinking-2507 \\
   --train.agent_func_path examples/python/agent_func.py \\
   --data.prompt_dataset zhuzilin/dapo-math-17k --data.input_key prompt --data.label_key label \\
   --data.apply_chat_template \\
   --rollout.batch_size 128 --rollout.n_samples_per_prompt 8 --train.batch_size 1024 \\
   --train.async_enable --train.partial_rollout_enable \\
   --ref.num_nodes 1 --ref.num_gpus_per_node 4 --actor.num_nodes 1 --actor.num_gpus_per_node 4 \\
   --vllm.num_engines 2 --vllm.tensor_parallel_size 2 \\
   --train.colocate_all --ds.enable_sleep --vllm.sync_backend nccl \\
   --algo.advantage.estimator reinforce_baseline
"""


def test_async_launch_on_shared_gpus_keeps_vllm_awake(registry: Registry, tmp_path: Path) -> None:
    """The render used to add --vllm.enable_sleep (the hybrid engine's own) to a launch that leaves it off."""
    argv = list(read_native(openrlhf, ASYNC_AGENT, "run.sh", {}, "0.10.2").argv)
    imported = build(openrlhf, "0.10.2", argv, source="run.sh", registry=registry)
    assert _round_trip(openrlhf, registry, "0.10.2", imported) == []
    spec = yaml.safe_load(imported.text)["spec"]
    assert spec["rollout"]["engine_settings"]["free_cache_between_phases"] is False
    rendered = render_native(imported.job, "openrlhf==0.10.2", registry).native
    assert "--vllm.enable_sleep" not in rendered.argv and "--train.async_enable" in rendered.argv
    _validates(tmp_path, "openrlhf==0.10.2", imported)


@pytest.mark.parametrize("version", ["0.6.0", "0.7.0"])
def test_dataset_keyword_repeat_is_a_setting(
    version: str, registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream's recipes/llm/grpo-deepscaler-1.5b-8K.yaml: ``data.validation.repeat: 16``, a keyword of the AIME
    dataset class (no TypedDict declares it); the import used to be refused as "no config key"."""
    root = tag(version).root
    monkeypatch.chdir(root)
    body = {
        "defaults": str(root / "examples" / "configs" / "grpo_math_1B.yaml"),
        "data": {
            "train": {"dataset_name": "DeepScaler"},
            "validation": {"dataset_name": "AIME2024", "repeat": 16},
        },
    }
    config = tmp_path / "grpo-deepscaler-1.5b-8K.yaml"
    config.write_text(yaml.safe_dump(body))
    launch = read_native(nemo, config.read_text(), str(config), {}, version)
    imported = build(nemo, version, list(launch.argv), source=str(config), registry=registry, header="h")
    assert _round_trip(nemo, registry, version, imported) == []
    # the training dataset is spec.data.builtin; the validation block, repeat included, is the launch's own
    # config's, which the render inherits (spec.runtime.config): the round trip above holds it, no native item
    spec = yaml.safe_load(imported.text)["spec"]
    assert spec["data"]["builtin"]["name"] == "DeepScaler"
    assert not [i for i in spec.get("native", {}).get("nemo-rl", []) if "data.validation" in i]
    _validates(tmp_path, f"nemo-rl=={version}", imported)
    # a misspelt keyword is still no setting of any dataset
    data = yaml.safe_load(imported.text)
    data["spec"].setdefault("native", {}).setdefault("nemo-rl", []).append("+data.validation.repet=2")
    with pytest.raises(SpecError, match="data.validation.repet"):
        render_native(load_job_text(yaml.safe_dump(data), [], "job.yaml"), f"nemo-rl=={version}", registry)


@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
def test_verl_string_for_a_list_is_a_list_of_one(version: str, tmp_path: Path) -> None:
    """``trainer.logger=console`` (verl's Tracking takes a string as one backend) used to stay a native item the
    import's own validation refused ("takes a list, not a string"); ``data.train_files=FILE`` (RLHFDataset makes
    it a list) stayed native too. Both land in spec fields now, and a diff sees no difference to the list form."""
    from rladapt.adapters.verl import importer as verl

    registry = load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)
    base = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
        "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    ]
    argv = [
        *base,
        "data.train_files=/data/train.parquet",
        "data.val_files=/data/test.parquet",
        "trainer.logger=console",
    ]
    imported = build(verl, version, argv, source="run.sh", registry=registry)
    spec = yaml.safe_load(imported.text)["spec"]
    assert spec["data"]["train"] == ["/data/train.parquet"] and spec["data"]["val"] == ["/data/test.parquet"]
    native = spec.get("native", {}).get("verl", [])
    assert not [
        item for item in native if item.startswith(("trainer.logger", "data.train_files", "data.val_files"))
    ]
    assert _round_trip(verl, registry, version, imported) == []
    _validates(tmp_path, f"verl=={version}", imported)
    as_list = [
        *base,
        "data.train_files=[/data/train.parquet]",
        "data.val_files=[/data/test.parquet]",
        "trainer.logger=[console]",
    ]
    assert differences(verl.effective(argv, version), verl.effective(as_list, version)) == []


#: upstream's examples/scripts/train_reinforce_baseline_ray_agent_multiturn.sh (OpenRLHF v0.8.11): the agent
#: function formats the conversation itself, so the launch applies no chat template
MULTI_TURN = """\
python3 -m openrlhf.cli.train_ppo_ray \\
   --ref_num_nodes 1 --ref_num_gpus_per_node 8 --actor_num_nodes 1 --actor_num_gpus_per_node 8 \\
   --vllm_num_engines 8 --vllm_tensor_parallel_size 1 --colocate_all_models \\
   --agent_func_path /openrlhf/examples/python/agent_func_gem_multiturn.py \\
   --pretrain Qwen/Qwen3-1.7B --micro_train_batch_size 8 --train_batch_size 256 \\
   --micro_rollout_batch_size 16 --rollout_batch_size 128 --n_samples_per_prompt 16 \\
   --advantage_estimator reinforce_baseline --prompt_data OpenRLHF/gem_guess_game --input_key query \\
   --label_key label --vllm_enable_sleep --deepspeed_enable_sleep --zero_stage 3 --bf16
"""


def test_agent_launch_without_chat_template_round_trips(registry: Registry, tmp_path: Path) -> None:
    """Every render used to add --apply_chat_template, so this launch was refused (False -> True)."""
    argv = list(read_native(openrlhf, MULTI_TURN, "run.sh", {}, "0.8.11").argv)
    imported = build(openrlhf, "0.8.11", argv, source="run.sh", registry=registry)
    assert _round_trip(openrlhf, registry, "0.8.11", imported) == []
    assert yaml.safe_load(imported.text)["spec"]["data"]["chat_template"] is False
    assert (
        "--apply_chat_template" not in render_native(imported.job, "openrlhf==0.8.11", registry).native.argv
    )
    _validates(tmp_path, "openrlhf==0.8.11", imported)
    # the launch with it: the field stays at its default and the render applies the template
    argv = list(
        read_native(
            openrlhf, MULTI_TURN.replace("--bf16", "--bf16 --apply_chat_template"), "run.sh", {}, "0.8.11"
        ).argv
    )
    imported = build(openrlhf, "0.8.11", argv, source="run.sh", registry=registry)
    assert "chat_template" not in yaml.safe_load(imported.text)["spec"]["data"]
    assert "--apply_chat_template" in render_native(imported.job, "openrlhf==0.8.11", registry).native.argv


def test_a_spec_without_chat_template_is_refused_where_prompts_are_always_templated(
    registry: Registry,
) -> None:
    text = """
apiVersion: rladapt/v1alpha1
kind: RLJob
metadata: {name: raw}
spec:
  model: {path: m}
  algorithm: {group_size: 4}
  data: {train: [t.jsonl], chat_template: false}
  reward: {builtin: {name: math}}
"""
    with pytest.raises(SpecError, match=r"spec.data.chat_template.*data.raw_prompts"):
        render_native(load_job_text(text, [], "job.yaml"), "nemo-rl==0.7.0", registry)


@pytest.mark.parametrize("version", ["0.6.1", "0.9.1"])
def test_verl_overlong_shaping_alone_gets_the_builtin_scorer(version: str, tmp_path: Path) -> None:
    """recipe/dapo's scripts: the dapo reward manager with its overlong buffer and no custom reward function.
    The import used to write spec.reward with overlong_penalty only, which its own validation refused
    (``spec.reward: required key is missing``); the scorer is verl's own (by data source), shaped on top."""
    from rladapt.adapters.verl import importer as verl
    from rladapt.adapters.verl.versions import keys

    registry = load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)
    kw = keys(version).reward_kwargs
    argv = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "algorithm.adv_estimator=grpo",
        "data.train_files=[/data/train.parquet]",
        "data.max_response_length=2048",
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
        "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        f"{keys(version).reward_manager}=dapo",
        f"+{kw}.overlong_buffer_cfg.enable=True",
        f"+{kw}.overlong_buffer_cfg.len=512",
        f"+{kw}.overlong_buffer_cfg.penalty_factor=1.0",
        f"+{kw}.overlong_buffer_cfg.log=False",
        f"+{kw}.max_resp_len=2048",
    ]
    imported = build(verl, version, argv, source="run.sh", registry=registry)
    reward = yaml.safe_load(imported.text)["spec"]["reward"]
    assert reward == {
        "overlong_penalty": {"buffer_tokens": 512, "max_penalty": 1.0},
        "builtin": {"name": "by_data_source"},
    }
    assert _round_trip(verl, registry, version, imported) == []
    _validates(tmp_path, f"verl=={version}", imported)


def test_diff_reads_the_script_with_the_sets_the_import_recorded(tmp_path: Path) -> None:
    """The README's import-then-diff needs no --set again: the spec's header records them."""
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.model.path=$MODEL \\\n"
        "  data.train_files=[/data/train.parquet] actor_rollout_ref.rollout.n=$N \\\n"
        "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 trainer.total_epochs=${EPOCHS:-3}\n"
    )
    spec = tmp_path / "job.yaml"
    sets = ["--set", "MODEL=Qwen/Qwen2.5-0.5B-Instruct", "--set", "N=4", "--unset", "EPOCHS"]
    done = _rladapt(tmp_path, "import", "-f", "verl==0.9.1", str(script), "-o", str(spec), *sets)
    assert done.returncode == 0, done.stderr
    assert "# Read with: --set MODEL=Qwen/Qwen2.5-0.5B-Instruct --set N=4 --unset EPOCHS" in spec.read_text()
    same = _rladapt(tmp_path, "diff", "-f", "verl==0.9.1", str(spec), str(script), "--exit-code")
    assert same.returncode == 0, same.stdout + same.stderr
    # sets given to diff replace the recorded ones: another N is another run
    other = _rladapt(
        tmp_path,
        "diff",
        "-f",
        "verl==0.9.1",
        str(spec),
        str(script),
        *sets[:2],
        "--set",
        "N=8",
        "--exit-code",
    )
    assert other.returncode == 1 and "actor_rollout_ref.rollout.n" in other.stdout, (
        other.stdout + other.stderr
    )


def _rladapt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("flag", ["--config-path=config", "-cp config"])
def test_verl_launch_with_its_own_config_folder_is_refused_naming_it(flag: str, tmp_path: Path) -> None:
    """It used to become a spec whose native item its own validation refused ("not a Hydra override"). A relative
    ``config`` beside verl/trainer/main_ppo.py is verl's own folder (Hydra joins it to the entry module's folder),
    which has no my_trainer: refused naming the config, exit 2, no spec written."""
    script = tmp_path / "run.sh"
    script.write_text(
        f"python3 -m verl.trainer.main_ppo {flag} --config-name=my_trainer \\\n"
        "  actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct data.train_files=[/data/train.parquet]\n"
    )
    spec = tmp_path / "job.yaml"
    done = _rladapt(tmp_path, "import", "-f", "verl==0.9.1", str(script), "-o", str(spec))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{script}:1: --config-name 'my_trainer': verl 0.9.1 has no config 'my_trainer'" in done.stderr
    assert "verl/trainer/config" in done.stderr and not spec.exists()
