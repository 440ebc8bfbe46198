"""What a launch runs is part of its effective configuration: NeMo-RL's run script, verl's and OpenRLHF's entry
module. An import keeps the launch's run script (``spec.runtime.entrypoint``), the render launches it, and
``rladapt diff`` reports two launches that differ only there.

The NeMo-RL configs are the tag's real ``grpo_math_1B.yaml`` (``tests/adapters/nemo_rl/conftest.py``) and a config
in the shape of upstream's ``examples/configs/grpo_sliding_puzzle.yaml`` (v0.6.0: ``defaults: grpo_math_1B.yaml``,
a multi-turn ``grpo`` block and ``env.sliding_puzzle_game``), written here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from rladapt.adapters.nemo_rl import importer as nemo
from rladapt.adapters.openrlhf import importer as openrlhf
from rladapt.importing.diff import compare, side
from rladapt.importing.importer import build, launch_effective, read_native
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.primitives import SpecError, load_job_text
from tests.adapters.nemo_rl.conftest import tag

SLIDING_PUZZLE = """\
defaults: "grpo_math_1B.yaml"
grpo:
  num_prompts_per_step: 32
  num_generations_per_prompt: 16
  max_rollout_turns: 50
checkpointing:
  checkpoint_dir: "results/grpo-sliding-puzzle"
policy:
  max_total_sequence_length: 1024
data:
  add_system_prompt: false
env:
  sliding_puzzle_game:
    cfg:
      game_config:
        size: 5
        shuffle_moves: 10
      max_moves: 30
"""


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(
        builtins={"nemo-rl": "rladapt.adapters.nemo_rl", "verl": "rladapt.adapters.verl"},
        use_entry_points=False,
    )


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A NeMo-RL v0.6.0 checkout: the tag's base config and the sliding-puzzle config beside it."""
    configs = tmp_path / "examples" / "configs"
    configs.mkdir(parents=True)
    shutil.copy(tag("0.6.0").base_config, configs / "grpo_math_1B.yaml")
    (configs / "grpo_sliding_puzzle.yaml").write_text(SLIDING_PUZZLE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_sliding_puzzle_config_imports_and_renders_its_own_run_script(
    checkout: Path, registry: Registry
) -> None:
    config = "examples/configs/grpo_sliding_puzzle.yaml"
    launch = read_native(nemo, Path(config).read_text(), config, {}, "0.6.0")
    # the script whose own config it is (examples/run_grpo_sliding_puzzle.py loads configs/grpo_sliding_puzzle.yaml)
    assert launch.argv[3] == "examples/run_grpo_sliding_puzzle.py"
    imported = build(nemo, "0.6.0", list(launch.argv), source=config, registry=registry)
    # the script and the config it loads, both kept: the render inherits from the launch's own config file
    assert yaml.safe_load(imported.text)["spec"]["runtime"] == {
        "config": config,
        "entrypoint": "examples/run_grpo_sliding_puzzle.py",
    }
    job = load_job_text(imported.text, [], "imported.yaml")
    native = render_native(job, "nemo-rl==0.6.0", registry).native
    assert native.argv[3] == "examples/run_grpo_sliding_puzzle.py"
    assert launch_effective(nemo, native).values["(entrypoint)"] == "run_grpo_sliding_puzzle.py"


def test_a_launch_of_the_default_script_records_none(checkout: Path, registry: Registry) -> None:
    argv = ["uv", "run", "python", "examples/run_grpo.py", "grpo.max_num_steps=9"]
    imported = build(nemo, "0.6.0", argv, source="run.sh", registry=registry)
    assert "runtime" not in yaml.safe_load(imported.text)["spec"]


def test_diff_of_launches_differing_only_in_run_script(checkout: Path, registry: Registry) -> None:
    config = "--config examples/configs/grpo_sliding_puzzle.yaml\n"
    a, b = checkout / "a.sh", checkout / "b.sh"
    a.write_text("uv run python examples/run_grpo.py " + config)
    b.write_text("uv run python examples/run_grpo_sliding_puzzle.py " + config)
    diffs = compare(
        side(str(a), "nemo-rl", "0.6.0", {}, registry), side(str(b), "nemo-rl", "0.6.0", {}, registry)
    )
    assert [(d.key, d.a, d.b) for d in diffs] == [
        ("(entrypoint)", "run_grpo.py", "run_grpo_sliding_puzzle.py")
    ]


def test_another_program_than_a_grpo_script_is_refused(checkout: Path, registry: Registry) -> None:
    argv = ["uv", "run", "python", "examples/run_grpo.py"]
    text = build(nemo, "0.6.0", argv, source="run.sh", registry=registry).text
    data = yaml.safe_load(text)
    data["spec"]["runtime"] = {"entrypoint": "examples/run_sft.py"}
    job = load_job_text(yaml.safe_dump(data), [], "job.yaml")
    with pytest.raises(SpecError, match="spec.runtime.entrypoint") as info:
        render_native(job, "nemo-rl==0.6.0", registry)
    assert "run_grpo" in str(info.value)


def test_verl_refuses_a_chosen_entrypoint_naming_why(registry: Registry) -> None:
    argv = ["python3", "-m", "verl.trainer.main_ppo", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B"]
    data = yaml.safe_load(build(_verl(), "0.7.1", argv, source="run.sh", registry=registry).text)
    data["spec"]["runtime"] = {"entrypoint": "verl.trainer.main_ppo"}
    with pytest.raises(SpecError, match=r"spec.runtime.entrypoint.*entry module follows from the spec"):
        render_native(load_job_text(yaml.safe_dump(data), [], "job.yaml"), "verl==0.7.1", registry)


def test_openrlhf_entry_module_is_part_of_the_effective_configuration() -> None:
    argv = ["python3", "-m", "openrlhf.cli.train_ppo_ray", "--pretrain", "Qwen/Qwen2.5-0.5B"]
    assert openrlhf.effective(argv, "0.9.10").values["(entrypoint)"] == "openrlhf.cli.train_ppo_ray"


def _verl():  # type: ignore[no-untyped-def]
    from rladapt.adapters.verl import importer

    return importer
