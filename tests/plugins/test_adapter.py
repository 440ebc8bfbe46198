"""The adapter contract an external adapter builds on: versions from its own matrix file, the typed NativeLaunch
constructor and the shared "cannot express" message."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from rladapt.pipeline import render_native
from rladapt.plugins import (
    FrameworkAdapter,
    FrameworkVersion,
    NativeLaunch,
    hookimpl,
    load_registry,
    unsupported,
)
from rladapt.primitives import PluginError, Problem, RLJob, UnsupportedError, load_job, load_job_text
from tests.conftest import REPO
from tests.primitives.test_loading import MINIMAL

CAPS = frozenset(
    {
        "placement.colocated",
        "rollout.async",
        "rollout.sync",
        "rollout.engine.vllm",
        "backend.fsdp2",
        "algorithm.grpo",
        "reward.function",
    }
)

MATRIX = """
[[versions]]
version = "2.0"
python = ">=3.10"
[versions.tested_with]
torch = "2.6.0"

[[versions]]
version = "1.0"
status = "deprecated"
notes = "sync rollout only"
"""


def matrix_adapter(path: Path) -> FrameworkAdapter:
    class MatrixAdapter(FrameworkAdapter):
        PLUGIN_NAME = "toy"
        MATRIX = path

        def capabilities(self, version: str) -> frozenset[str]:
            return CAPS - {"rollout.async"} if version == "1.0" else CAPS

        def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
            return NativeLaunch.from_job(job, framework="toy", version=version.version, argv=("toy",))

    return MatrixAdapter()


def test_versions_come_from_the_adapters_matrix_file(tmp_path: Path) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(MATRIX)
    adapter = matrix_adapter(path)
    assert adapter.versions() == [
        FrameworkVersion("1.0", CAPS - {"rollout.async"}, "deprecated"),
        FrameworkVersion("2.0", CAPS, "supported", {"torch": "2.6.0"}),
    ]
    plugin = types.SimpleNamespace(rladapt_register_frameworks=hookimpl(lambda: [adapter]))
    registry = load_registry(builtins={}, extra=[("toy", plugin)], use_entry_points=False)
    job = load_job_text(MINIMAL, ["spec.rollout.mode=async"])
    assert render_native(job, "toy", registry).version.version == "2.0"
    with pytest.raises(
        UnsupportedError, match=r"toy 1.0 cannot express rollout.async \(first supported in toy 2.0\)"
    ):
        render_native(job, "toy==1.0", registry)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[versions]\nversion = 1", "not valid TOML"),
        ("versions = 3", "'versions' must be an array of tables"),
        ("[[versions]]\nstatus = 'supported'", "versions[0] has no 'version'"),
        ("[[versions]]\nversion = 'one'", "versions[0]: 'one' is not a version"),
        ("[[versions]]\nversion = '1.0'\nstatus = 'beta'", "versions[0]: status 'beta' is not one of"),
        (
            "[[versions]]\nversion = '1.0'\ntested_with = 'torch'",
            "versions[0]: 'tested_with' must be a table",
        ),
    ],
)
def test_a_bad_matrix_file_is_a_plugin_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(text)
    with pytest.raises(PluginError) as info:
        matrix_adapter(path).versions()
    assert info.value.message.startswith(f"{path}: ") and message in info.value.message


def test_a_missing_matrix_file_or_none_at_all_is_a_plugin_error(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="no such compatibility matrix file"):
        matrix_adapter(tmp_path / "absent.toml").versions()

    class NoVersions(FrameworkAdapter):
        PLUGIN_NAME = "bare"

        def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
            raise NotImplementedError

    with pytest.raises(PluginError, match="set MATRIX to its compatibility matrix file or override versions"):
        NoVersions().versions()


def test_from_job_derives_the_framework_independent_fields() -> None:
    job = load_job(REPO / "examples" / "grpo-gsm8k.yaml", [])
    native = NativeLaunch.from_job(
        job, framework="toy", version="1.0", argv=["toy", "--go"], files={"a.txt": "x"}, notes=["n"]
    )
    assert native.argv == ("toy", "--go") and native.notes == ("n",) and native.files == {"a.txt": "x"}
    assert native.job_name == job.metadata.name and native.labels == dict(job.metadata.labels)
    assert native.checkpoint_dir == job.checkpoint_dir and native.working_dir == job.spec.runtime.working_dir
    assert set(native.placement) == {role for pool in job.placement.pools for role in pool.roles}
    assert [p.name for p in native.pools] == [p.name for p in job.placement.pools]
    assert native.lifecycle == job.spec.lifecycle.model_dump()
    # the JSON form: format 2 (secrets carry their sources), the fields in declaration order
    assert list(native.to_dict()) == ["format", *NativeLaunch.model_fields]
    assert native.to_dict()["format"] == 2


def test_unsupported_says_where_else_it_is_supported() -> None:
    def text(problem: Problem) -> str:
        return str(problem).removeprefix("spec.x: fw 1.0 cannot express thing")

    assert text(unsupported("spec.x", "fw", "1.0", "thing", first="2.0", found=3)) == (
        " (first supported in fw 2.0), found 3"
    )
    assert text(unsupported("spec.x", "fw", "1.0", "thing", last="0.9")) == " (last supported in fw 0.9)"
    assert text(unsupported("spec.x", "fw", "1.0", "thing", nowhere="any")) == " (no fw version supports it)"
    assert text(unsupported("spec.x", "fw", "1.0", "thing", nowhere="pinned")) == (
        " (no pinned fw version supports it)"
    )
    assert text(unsupported("spec.x", "fw", "1.0", "thing", expected="1", found=3)) == "; expected 1, found 3"
