"""NeMo-RL: a launch's own config file is part of the run. The import keeps it (spec.runtime.config) and the
render inherits from it, so what the recipe sets without a spec field stays in the recipe, not in spec.native;
a top-level null key of the rendered config that the launch lacks is removed (0.7.0's on_policy_distillation).

The tag's configs are the real upstream files (``tests/adapters/nemo_rl/conftest.py``); each test runs from that
folder as a launch runs from a NeMo-RL checkout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.nemo_rl import importer as fw
from rladapt.adapters.nemo_rl.effective import nemo_rl_effective
from rladapt.importing.importer import build, differences, launch_effective
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.plugins.effective import Effective
from rladapt.primitives import load_job_text
from tests.adapters.nemo_rl.conftest import tag


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"nemo-rl": "rladapt.adapters.nemo_rl"}, use_entry_points=False)


@pytest.mark.parametrize("version", ["0.5.0", "0.7.0"])
def test_the_launchs_config_is_composed_on_not_copied_into_native(
    registry: Registry, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tag(version).root)
    config = "examples/configs/grpo_math_8B.yaml"  # defaults: grpo_math_1B.yaml, and 8B's own settings
    argv = fw.config_launch(config, version, ["grpo.val_period=7"])
    target = fw.effective(argv, version)
    assert target.values["(config)"] == config
    imported = build(fw, version, argv, source=config, registry=registry, header="h")
    spec = imported.job.spec
    assert spec.runtime.config == config
    native = render_native(imported.job, f"nemo-rl=={version}", registry).native
    # beside the recipe: before 0.6.0 a chain's parents resolve against the first file's folder
    path = native.argv[native.argv.index("--config") + 1]
    assert path.startswith("examples/configs/rladapt-") and native.files[path].count(
        "defaults: grpo_math_8B.yaml"
    )
    assert differences(target, launch_effective(fw, native)) == []
    # 8B's settings the spec has no field for (its optimizer schedule, its cluster) stay in the file
    items = spec.native.get("nemo-rl", [])
    own = [
        k
        for k, s in target.sources.items()
        if s.startswith("config ") and k.startswith(("policy.optimizer", "cluster."))
    ]
    assert own and not [
        i for i in items if i.lstrip("~").split("=")[0].startswith(("policy.optimizer", "cluster."))
    ], items
    # the file is part of the run: the same spec on the tag's grpo_math_1B.yaml is another one
    plain = load_job_text(imported.text.replace(f"config: {config}", "config: null"), [], "plain.yaml")
    other = launch_effective(fw, render_native(plain, f"nemo-rl=={version}", registry).native)
    assert "(config)" in differences(target, other)


def test_a_top_level_null_key_the_launch_lacks_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hydra deletes no null key ("Could not delete from config"): an empty mapping first, then the deletion."""
    monkeypatch.chdir(tag("0.7.0").root)
    base = "examples/configs/grpo_math_1B.yaml"
    got = nemo_rl_effective("0.7.0", base, [])
    assert "on_policy_distillation" in got.values and got.values["on_policy_distillation"] is None
    target = Effective(
        "nemo-rl", "0.7.0", {k: v for k, v in got.values.items() if k != "on_policy_distillation"}, {}
    )
    fixes = fw.fixups(target, got)
    assert fixes == ["on_policy_distillation={}", "~on_policy_distillation"]
    fixed = nemo_rl_effective("0.7.0", base, fixes)
    assert "on_policy_distillation" not in fixed.values
    assert fw.fixups(target, fixed) == []


def test_a_relative_config_outside_the_checkout_gets_the_generated_folder(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = tag("0.7.0").root
    monkeypatch.chdir(root)
    config = "examples/configs/grpo_math_8B.yaml"
    imported = build(fw, "0.7.0", fw.config_launch(config, "0.7.0", []), source=config, registry=registry)
    up = Path("..") / root.name / config
    job = load_job_text(imported.text.replace(f"config: {config}", f"config: {up}"), [], "up.yaml")
    native = render_native(job, "nemo-rl==0.7.0", registry).native
    path = native.argv[native.argv.index("--config") + 1]
    assert path.startswith("rladapt-configs/")
    # the parent is named from the generated file's folder, and is the file the spec names
    (parent,) = [
        line.split(": ", 1)[1] for line in native.files[path].splitlines() if line.startswith("defaults:")
    ]
    assert (root / Path(path).parent / parent).resolve() == (root / up).resolve()
    # the same file named by another path: the same run
    assert differences(imported.target, launch_effective(fw, native)) == []


@pytest.mark.parametrize("version", ["0.6.0", "0.7.0"])
def test_a_builtin_dataset_is_imported_by_name_not_restored_by_native_items(
    registry: Registry, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream's OpenMathInstruct-2 block (data.train.dataset_name with a validation split) is spec.data.builtin:
    before, a stand-in file took its place and five data.train.* items plus data.default.prompt_file restored
    it from spec.native. Its interpolated seed (${grpo.seed}) stays the config's."""
    monkeypatch.chdir(tag(version).root)
    config = "examples/configs/grpo_math_8B.yaml"
    argv = fw.config_launch(config, version, [])
    imported = build(fw, version, argv, source=config, registry=registry, header="h")
    data = imported.job.spec.data
    assert data.train == [] and data.builtin is not None
    assert (data.builtin.name, data.builtin.options) == (
        "OpenMathInstruct-2",
        {"split_validation_size": 0.05},
    )
    items = imported.job.spec.native.get("nemo-rl", [])
    assert not [i for i in items if i.lstrip("~+").startswith(("data.train", "data.default.prompt_file"))], (
        items
    )
    native = render_native(imported.job, f"nemo-rl=={version}", registry).native
    assert differences(fw.effective(argv, version), launch_effective(fw, native)) == []
