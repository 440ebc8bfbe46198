"""The plugin manager: registration by unique name, isolation of broken plugins, blocking, chain hooks."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from rladapt.pipeline import parse_framework, render_native
from rladapt.plugins import FrameworkAdapter, FrameworkVersion, NativeLaunch, Patch, hookimpl, load_registry
from rladapt.plugins.adapter import nearest_pinned
from rladapt.plugins.testing import check_adapter
from rladapt.primitives import (
    PluginError,
    Problem,
    RLJob,
    SpecError,
    UnsupportedError,
    UsageError,
    load_job_text,
)
from tests.cli.test_cli import rladapt
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


class ToyAdapter(FrameworkAdapter):
    PLUGIN_NAME = "toy"

    def versions(self) -> list[FrameworkVersion]:
        return [
            FrameworkVersion("1.0", CAPS - {"rollout.async"}),
            FrameworkVersion("2.0", CAPS - {"rollout.sync"}),
        ]

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        args = [f"--batch={job.spec.training.global_batch}", *job.spec.native.get("toy", [])]
        return NativeLaunch.from_job(
            job, framework="toy", version=version.version, argv=("python3", "-m", "toy", *args)
        )

    def validate_native(self, native: NativeLaunch) -> list[Problem]:
        return [
            Problem("spec.native.toy", "unknown flag", "--batch=N", a)
            for a in native.argv[3:]
            if not a.startswith("--batch=")
        ]


def plugin(**hooks: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{name: hookimpl(fn) for name, fn in hooks.items()})


def toy_plugin() -> types.SimpleNamespace:
    return plugin(rladapt_register_frameworks=lambda: [ToyAdapter()])


def registry(*extra: tuple[str, object]) -> Any:
    return load_registry(builtins={}, extra=[("toy", toy_plugin()), *extra], use_entry_points=False)


JOB = load_job_text(MINIMAL, [])


def test_render_through_registered_adapter() -> None:
    rendered = render_native(JOB, "toy", registry())
    assert rendered.version.version == "2.0"  # newest supported by default
    assert rendered.native.argv == ("python3", "-m", "toy", "--batch=64")


def test_version_outside_matrix_is_usage_error() -> None:
    with pytest.raises(
        UsageError,
        match=r"toy==3.0 is outside the compatibility matrix; nearest pinned: 2.0 \(an older major, the newest "
        r"pinned\); expected one of: 1.0, 2.0",
    ):
        render_native(JOB, "toy==3.0", registry())


@pytest.mark.parametrize(
    ("framework", "nearest"),
    [
        (
            "verl==0.9.0",
            "nearest pinned: 0.9.1 (a newer patch), 0.8.0 (an older minor); expected one of: 0.5.0",
        ),
        (
            "openrlhf==0.11.0",
            "nearest pinned: 0.11.2 (a newer patch), 0.10.2 (an older minor); expected one of",
        ),
    ],
)
def test_import_of_a_version_outside_the_matrix_names_the_nearest_pinned(
    tmp_path: Path, framework: str, nearest: str
) -> None:
    launch = tmp_path / "run.sh"
    entry = (
        "verl.trainer.main_ppo trainer.total_epochs=1"
        if framework.startswith("verl")
        else "openrlhf.cli.train_ppo_ray"
    )
    launch.write_text(f"python3 -m {entry}\n")
    res = rladapt("import", "-f", framework, str(launch))
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"error: {framework} is outside the compatibility matrix; {nearest}"), (
        res.stderr
    )


@pytest.mark.parametrize(
    ("wanted", "nearest"),
    [
        # issue 22: verl 0.9.0 and OpenRLHF 0.11.0 sit between two pinned versions
        ("0.9.0", "0.9.1 (a newer patch), 0.8.0 (an older minor)"),
        ("0.11.0", "0.11.2 (a newer patch), 0.10.2 (an older minor)"),
        ("0.3.0", "0.4.0 (a newer minor), 0.2.1 (an older minor)"),  # a tie: the newer first
        ("0.10.1", "0.10.1.post2 (a newer post-release), 0.9.10 (an older minor)"),
        ("0.10.1.post3", "0.10.1.post2 (an older post-release), 0.10.2 (a newer patch)"),
        ("0.1", "0.2.1 (a newer minor, the oldest pinned)"),
        ("1.0.0", "0.11.2 (an older major, the newest pinned)"),
    ],
)
def test_a_version_outside_the_matrix_names_the_nearest_pinned(wanted: str, nearest: str) -> None:
    pinned = ["0.2.1", "0.4.0", "0.8.0", "0.9.1", "0.9.10", "0.10.1.post2", "0.10.2", "0.11.2"]
    assert nearest_pinned(Version(wanted), [Version(v) for v in pinned]) == nearest


def test_capability_missing_names_field_version_and_first_supporting_version() -> None:
    with pytest.raises(UnsupportedError) as info:
        render_native(load_job_text(MINIMAL, ["spec.rollout.mode=async"]), "toy==1.0", registry())
    assert [str(p) for p in info.value.problems] == [
        "spec.rollout.mode: toy 1.0 cannot express rollout.async (first supported in toy 2.0), found async"
    ]


def test_unknown_framework_suggests() -> None:
    with pytest.raises(UsageError, match=r"unknown framework 'tox' \(did you mean 'toy'\?\)"):
        render_native(JOB, "tox", registry())
    with pytest.raises(UsageError, match="expected NAME or NAME==VERSION"):
        parse_framework("toy>=1")


def test_native_escape_hatch_is_validated_and_unknown_framework_rejected() -> None:
    job = load_job_text(MINIMAL + "  native: {toy: ['--nope']}\n", [])
    with pytest.raises(SpecError, match="spec.native.toy: unknown flag; expected --batch=N, found --nope"):
        render_native(job, "toy", registry())
    job = load_job_text(MINIMAL + "  native: {tot: ['--batch=1']}\n", [])
    with pytest.raises(SpecError, match=r"spec.native.tot: no such framework \(did you mean 'toy'\?\)"):
        render_native(job, "toy", registry())


def test_broken_plugin_is_isolated() -> None:
    def boom() -> list[Any]:
        raise RuntimeError("kaput")

    reg = registry(("bad", plugin(rladapt_register_frameworks=boom)))
    assert [b.name for b in reg.broken] == ["bad"] and "kaput" in reg.broken[0].error
    assert render_native(JOB, "toy", reg).native.framework == "toy"
    reg = load_registry(
        builtins={"missing": "rladapt_no_such_module"}, extra=[("toy", toy_plugin())], use_entry_points=False
    )
    assert reg.broken[0].name == "missing" and "ModuleNotFoundError" in reg.broken[0].error
    with pytest.raises(PluginError, match="plugin 'missing' is broken"):
        reg.framework("missing")


def test_wrong_object_from_register_hook_is_reported() -> None:
    reg = registry(("odd", plugin(rladapt_register_frameworks=lambda: ["not an adapter"])))
    assert reg.broken[0].name == "odd" and "expected a FrameworkAdapter" in reg.broken[0].error


def test_duplicate_names_are_an_error_naming_both() -> None:
    reg = registry(("toy2", toy_plugin()))
    with pytest.raises(PluginError, match="framework 'toy' is registered by more than one plugin: toy2, toy"):
        reg.framework("toy")


def test_block_env_blocks_builtins_and_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLADAPT_BLOCK_PLUGINS", "toy, verl")
    reg = load_registry(
        builtins={"verl": "rladapt.adapters.verl"}, extra=[("toy", toy_plugin())], use_entry_points=False
    )
    assert sorted(reg.blocked) == ["toy", "verl"] and not reg.frameworks
    with pytest.raises(UsageError, match="blocked by RLADAPT_BLOCK_PLUGINS"):
        reg.framework("toy")


def test_modify_hooks_chain_in_order_and_checks_collect() -> None:
    def add_label(job: RLJob) -> RLJob:
        data = job.model_dump(by_alias=True)
        data["metadata"]["labels"]["cost-center"] = "rl"
        return RLJob.model_validate(data)

    first = plugin(rladapt_modify_native=lambda native: native.with_env({"A": "1", "B": "first"}))
    second = plugin(
        rladapt_modify_native=lambda native: native.with_env({"B": native.env["B"] + "+second"}),
        rladapt_modify_job=add_label,
        rladapt_add_checks=lambda job: (
            [] if "team" in job.metadata.labels else [Problem("metadata.labels.team", "required by policy")]
        ),
    )
    reg = registry(("second", second), ("first", first))  # pluggy order: the last registered runs first
    with pytest.raises(SpecError, match="metadata.labels.team: required by policy"):
        render_native(JOB, "toy", reg)
    job = load_job_text(MINIMAL, ["metadata.labels.team=rl"])
    rendered = render_native(job, "toy", reg)
    assert rendered.native.env == {"A": "1", "B": "first+second"}
    assert rendered.native.labels == {"team": "rl", "cost-center": "rl"}
    assert job.metadata.labels == {"team": "rl"}  # the input job is untouched


def test_policy_plugin_that_raises_is_named() -> None:
    def bad(native: NativeLaunch) -> NativeLaunch:
        raise KeyError("x")

    with pytest.raises(PluginError, match="plugin 'pol' raised KeyError"):
        render_native(JOB, "toy", registry(("pol", plugin(rladapt_modify_native=bad))))


def test_patches_apply_by_version_range_in_order() -> None:
    patch = Patch(
        id="toy-env-fix",
        framework="toy",
        versions=">=2.0",
        issue="https://example.org/toy/issues/1",
        summary="set FIX",
        kind="env",
        apply=lambda n, j: n.with_env({"FIX": "1"}),
    )
    reg = registry(("patches", plugin(rladapt_register_patches=lambda: [patch])))
    native = render_native(JOB, "toy==2.0", reg).native
    assert native.patches == ("toy-env-fix",) and native.env["FIX"] == "1"
    job = load_job_text(MINIMAL, ["spec.rollout.mode=sync"])
    old = render_native(job, "toy==1.0", reg).native
    assert old.patches == () and "FIX" not in old.env


class Faithful(ToyAdapter):
    """The toy with the whole job in a file its trainer reads: every field reaches the render."""

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        native = super().translate(job, version)
        return native.model_copy(update={"files": {"toy.json": job.model_dump_json()}})


def test_conformance_kit_passes_toy_and_catches_a_bad_adapter() -> None:
    # toy 1.0 cannot express JOB's async rollout: every version must translate one of the specs
    specs = [JOB, load_job_text(MINIMAL, ["spec.rollout.mode=sync"])]
    assert check_adapter(Faithful(), specs) == []
    # the toy itself renders the batch size only: the kit's field probes catch it (issue 24)
    assert (
        "tiny on toy 2.0: spec.data.train changed and the render did not: the field is ignored"
        in "\n".join(check_adapter(ToyAdapter(), specs))
    )

    class Leaky(ToyAdapter):
        def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
            native = super().translate(job, version)
            return native.model_copy(update={"files": {"/etc/passwd": "x"}, "version": "9"})

    failures = check_adapter(Leaky(), [JOB])
    assert any("must be a relative path" in f for f in failures)
    assert any("native.version is '9'" in f for f in failures)
