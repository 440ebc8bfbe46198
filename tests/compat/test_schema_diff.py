"""The pieces of ``matrix onboard``: snapshot diffs with their rename heuristic, and a release's pins and entrypoints.

The snapshots are the bundled real ones; the small releases are built here (a NeMo-RL-style checkout with its
``pyproject.toml``, a wheel whose METADATA pins an engine in several places), since those shapes are the rules.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from rladapt.compat.release import read_release
from rladapt.compat.schema import KeySpec, Snapshot
from rladapt.compat.schema_diff import collapse, diff_snapshots
from rladapt.plugins.snapshots import snapshot


def snap(version: str, keys: dict[str, KeySpec]) -> Snapshot:
    return Snapshot(framework="verl", version=version, source="test", scopes=("ppo_trainer",), keys=keys)


def test_a_bare_common_leaf_is_not_paired_across_sections() -> None:
    # verl 0.7.1 dropped reward_model.profiler.enable and added reward.reward_model.enable, both bool False:
    # the same leaf and default, but not the same key moved
    diff = diff_snapshots(snapshot("verl", "0.6.1"), snapshot("verl", "0.7.1"))
    assert "reward_model.profiler.enable" not in diff.rename_of
    assert diff.rename_of["reward_model.sandbox_fusion.url"] == "reward.sandbox_fusion.url"
    assert ("reward_model", "reward", 3) in diff.moved_sections


def test_renames_need_the_same_type_and_default_unless_only_respelled() -> None:
    old = snap(
        "1",
        {
            "a.lr": KeySpec(type="float", default=0.1),
            "a.steps": KeySpec(type="int", default=5),
            "--actor_num_nodes": KeySpec(type="int", default=1),
        },
    )
    new = snap(
        "2",
        {
            "b.a.lr": KeySpec(type="float", default=0.1),  # moved with its parent's name: a rename
            "b.a.steps": KeySpec(type="int", default=6),  # the default changed too: not paired
            "--actor.num_nodes": KeySpec(type="str", default="1"),  # the same name respelled: paired anyway
        },
    )
    diff = diff_snapshots(old, new)
    assert {(r.old, r.new, r.why) for r in diff.renamed} == {
        ("a.lr", "b.a.lr", "moved"),
        ("--actor_num_nodes", "--actor.num_nodes", "spelling"),
    }
    assert diff.removed == ("a.steps",) and diff.added == ("b.a.steps",)


def test_types_and_defaults_changed_and_computed_defaults_ignored() -> None:
    old = snap(
        "1",
        {
            "x": KeySpec(type="int", default=1),
            "y": KeySpec(type="str", default="a"),
            "--run": KeySpec(type="str", default="<computed: now()>"),
        },
    )
    new = snap(
        "2",
        {
            "x": KeySpec(type="int|float", default=1),
            "y": KeySpec(type="str", default="b"),
            "--run": KeySpec(type="str", default="<computed: now() + 1>"),
        },
    )
    diff = diff_snapshots(old, new)
    assert [(c.key, c.old, c.new) for c in diff.types] == [("x", "int", "int|float")]
    assert [(c.key, c.old, c.new) for c in diff.defaults] == [("y", "a", "b")]


def test_collapse_folds_a_whole_new_section() -> None:
    assert collapse(["r", "r.a", "r.b.c", "r.b", "s.x"]) == ["r.* (4 keys)", "s.x"]


def test_nemo_rl_0_6_0_moves_train_data_path_into_the_train_block() -> None:
    diff = diff_snapshots(snapshot("nemo-rl", "0.5.0"), snapshot("nemo-rl", "0.6.0"))
    assert diff.rename_of["data.train_data_path"] == "data.train.data_path"


def test_pins_prefer_an_exact_pin_of_the_vllm_extra(tmp_path: Path) -> None:
    wheel = tmp_path / "verl-9.0.0-py3-none-any.whl"
    metadata = "\n".join(
        [
            "Metadata-Version: 2.1",
            "Name: verl",
            "Version: 9.0.0",
            "Requires-Python: >=3.11",
            "Requires-Dist: ray[default]>=2.41.0",
            "Requires-Dist: transformers<6,>=5",
            "Requires-Dist: torch==3.0.0; extra == 'sglang'",
            'Requires-Dist: torch==3.1.0; extra == "vllm"',
            'Requires-Dist: vllm<=1.0,>=0.9; extra == "vllm"',
            "Requires-Dist: numpy==2.0",
            "",
        ]
    )
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("verl-9.0.0.dist-info/METADATA", metadata)
        archive.writestr("verl/trainer/config/ppo_trainer.yaml", "{}")
        archive.writestr("verl/trainer/config/actor/dp_actor.yaml", "{}")
    release = read_release("verl", "9.0.0", wheel)
    assert release.pins == {
        "torch": "3.1.0",
        "vllm": "<=1.0,>=0.9",
        "ray": ">=2.41.0",
        "transformers": "<6,>=5",
    }
    assert release.requires_python == ">=3.11"
    assert release.entrypoints == ("actor/dp_actor", "ppo_trainer")


def test_a_checkout_gives_its_pyproject_pins_and_run_scripts(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run_grpo.py").write_text("")
    (tmp_path / "examples" / "helper.py").write_text("")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "nemo-rl"\nrequires-python = ">=3.13"\n'
        'dependencies = ["torch==2.11.0", "ray[default]==2.55.1"]\n'
        '[project.optional-dependencies]\nvllm = ["vllm==0.20.0"]\n'
    )
    release = read_release("nemo-rl", "0.8.0", tmp_path)
    assert release.pins == {"torch": "2.11.0", "vllm": "0.20.0", "ray": "2.55.1"}
    assert release.entrypoints == ("run_grpo",)
    assert release.metadata == "pyproject.toml"
