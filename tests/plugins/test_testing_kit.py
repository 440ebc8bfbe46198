"""The conformance kit bites: adapters, launchers and patches that break the contract fail it, with a message
naming what is wrong; conformant ones pass."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rladapt.bootstrap import bootstrap_argv
from rladapt.pipeline import render_native
from rladapt.plugins import (
    KNOWN_CAPABILITIES,
    Artifacts,
    Command,
    FrameworkAdapter,
    FrameworkVersion,
    Launcher,
    NativeLaunch,
    Option,
    Patch,
    RunStatus,
    load_registry,
)
from rladapt.plugins.testing import check_adapter, check_launcher, check_patch, host_registry
from rladapt.primitives import Problem, RLJob, UnsupportedError, load_job_text
from tests.conftest import REPO
from tests.primitives.test_loading import MINIMAL

JOB = load_job_text(MINIMAL, [])
REGISTRY = load_registry(use_entry_points=False)

REFUSER = '''
from rladapt.plugins import KNOWN_CAPABILITIES, FrameworkAdapter, FrameworkVersion
from rladapt.plugins.testing import AdapterConformance
from rladapt.primitives import Problem, UnsupportedError, load_job_text

class Refuser(FrameworkAdapter):
    """Declares every capability, then refuses every job: the kit before issue 8 passed it."""

    PLUGIN_NAME = "refuser"

    def versions(self):
        return [FrameworkVersion("1.0", frozenset(KNOWN_CAPABILITIES))]

    def translate(self, job, version):
        raise UnsupportedError([Problem("spec.model.path", "refuser cannot express any model")])

class TestRefuser(AdapterConformance):
    adapter = Refuser()
    specs = [load_job_text({minimal!r}, [])]
'''


class Refuser(FrameworkAdapter):
    PLUGIN_NAME = "refuser"

    def versions(self) -> list[FrameworkVersion]:
        return [FrameworkVersion("1.0", frozenset(KNOWN_CAPABILITIES))]

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        raise UnsupportedError([Problem("spec.model.path", "refuser cannot express any model")])


def test_an_adapter_that_refuses_every_job_fails_the_kit_classes(tmp_path: Path) -> None:
    (tmp_path / "test_refuser.py").write_text(REFUSER.format(minimal=MINIMAL))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-rA",
            "test_refuser.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    assert "FAILED test_refuser.py::TestRefuser::test_every_version_translates_a_spec[1.0]" in out.stdout
    assert (
        "refuser 1.0 translates none of the 1 specs (tiny): every declared version must translate"
        in out.stdout
    )
    # the refused case itself is a visible skip with the reason, never a pass
    assert "SKIPPED" in out.stdout and "refuser cannot express any model" in out.stdout
    assert "PASSED test_refuser.py::TestRefuser::test_translate" not in out.stdout


def test_an_adapter_that_refuses_every_job_fails_check_adapter() -> None:
    failures = check_adapter(Refuser(), [JOB])
    assert failures == [
        "refuser 1.0 translates none of the 1 specs (tiny): every declared version must translate at least "
        "one; first refusal: 1 problem in the spec   - spec.model.path: refuser cannot express any model"
    ]


def test_an_adapter_object_is_registered_through_the_host() -> None:
    registry = host_registry(Refuser())
    assert registry.frameworks["refuser"].plugin == "refuser-under-test"
    assert {"verl", "local"} <= set(registry.frameworks) | set(registry.launchers)


# --- launchers -------------------------------------------------------------------------------------------------


class Plain(Launcher):
    """A small conformant launcher: the bootstrap argv in a script, its one option in the request."""

    PLUGIN_NAME = "plain"
    DESCRIPTION = "a conformant test launcher"
    OPTIONS: ClassVar[tuple[Option, ...]] = (Option("queue", str, help="queue to submit to"),)

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        opts = self.merge_options(native, options)
        script = shlex.join(bootstrap_argv(native)) + "\n"
        return Artifacts(self.PLUGIN_NAME, files={"run.sh": script}, request={"queue": opts.get("queue")})

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        raise NotImplementedError

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        raise NotImplementedError

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        raise NotImplementedError

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        raise NotImplementedError


class Counting(Plain):
    count = 0

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        Counting.count += 1
        out = super().render(native, command, options, run_id=run_id)
        return Artifacts(out.launcher, out.files, {**out.request, "n": Counting.count})


class Writing(Plain):
    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        Path("run.sh").write_text("# written at render time\n")
        return super().render(native, command, options, run_id=run_id)


class Consuming(Plain):
    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        options.setdefault("queue", "consumed")  # the caller's options, changed under it
        return super().render(native, command, options, run_id=run_id)


class Ignoring(Plain):
    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        return Artifacts(self.PLUGIN_NAME, files={"run.sh": shlex.join(bootstrap_argv(native))})


class Unpatched(Plain):
    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        self.merge_options(native, options)
        return Artifacts(self.PLUGIN_NAME, files={"run.sh": shlex.join(native.argv)})


class Undocumented(Plain):
    OPTIONS: ClassVar[tuple[Option, ...]] = (Option("queue", str),)


class Refusing(Plain):
    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        raise UnsupportedError([Problem("spec.runtime", "refusing runs nothing")])


NATIVE = render_native(JOB, "verl", REGISTRY).native
WHERE = f"plain render of tiny (verl {NATIVE.version})"


def test_a_conformant_launcher_passes() -> None:
    assert check_launcher(Plain(), [NATIVE]) == []


@pytest.mark.parametrize(
    ("launcher", "expected"),
    [
        (Counting(), f"{WHERE} (dry run): two renders of the same native differ"),
        (Writing(), f"{WHERE}: render wrote to the filesystem: run.sh"),
        (Consuming(), f"{WHERE} (dry run): render changed its options"),
        (
            Ignoring(),
            "plain: accepts the unknown option 'rladapt_conformance_unknown_option' (silently ignored)",
        ),
        (
            Unpatched(),
            "plain: the runtime patch 'rladapt_conformance_probe:apply' reaches none of the artifacts",
        ),
        (Undocumented(), "launcher 'plain': option 'queue' has no help text"),
        (Refusing(), "plain: renders none of the 1 native launches"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Launcher) else "",
)
def test_a_launcher_breaking_the_contract_fails(launcher: Launcher, expected: str) -> None:
    failures = check_launcher(launcher, [NATIVE])
    assert any(f.startswith(expected) for f in failures), failures


# --- patches ---------------------------------------------------------------------------------------------------


def _patch(**changes: Any) -> Patch:
    fields: dict[str, Any] = {
        "id": "verl-fix",
        "framework": "verl",
        "versions": ">=0.5.0",
        "issue": "https://github.com/verl-project/verl/issues/1",
        "summary": "a fix",
        "kind": "env",
        "apply": lambda native, job: native,
    }
    return Patch(**{**fields, **changes})


def test_a_well_formed_patch_passes() -> None:
    assert check_patch(_patch(), REGISTRY) == []
    assert check_patch(_patch(issue="verl-project/verl#1"), REGISTRY) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"versions": "~=bogus"}, "versions '~=bogus' is not a PEP 440 specifier"),
        ({"versions": "<0.1"}, "versions '<0.1' matches none of verl's declared versions"),
        ({"issue": "see the team chat"}, "issue 'see the team chat' must be the upstream issue's URL"),
        ({"framework": "nope"}, "framework 'nope' is not registered"),
        (
            {"kind": "runtime", "runtime_hook": "no_such_module:fix"},
            "runtime_hook 'no_such_module:fix' does not",
        ),
        ({"kind": "runtime", "runtime_hook": None}, "a runtime patch needs runtime_hook 'module:function'"),
        ({"apply": None}, "an env patch needs apply"),
    ],
)
def test_a_malformed_patch_fails(changes: dict[str, Any], expected: str) -> None:
    failures = check_patch(_patch(**changes), REGISTRY)
    assert any(expected in f for f in failures), failures


def test_an_option_without_help_fails_the_declaration() -> None:
    from rladapt.plugins.testing import check_launcher_declaration, declared_options

    class Terse(Plain):
        OPTIONS: ClassVar[tuple[Option, ...]] = (
            Option("queue", str, help="queue to submit to"),
            Option("quiet", bool),
        )

    assert declared_options(Terse()) == {"queue": "queue to submit to", "quiet": ""}
    assert check_launcher_declaration(Terse()) == ["launcher 'plain': option 'quiet' has no help text"]


# --- fields an adapter covers must reach the render (issue 24) ---------------------------------------------------

#: The six fields the toy below drops (the probes' names), and the capabilities whose fields it drops too.
DROPPED = (
    "spec.data.train",
    "spec.training.optimizer.warmup_steps",
    "spec.rollout.tensor_parallel",
    "spec.rollout.temperature",
    "spec.checkpoint.dir",
    "spec.placement.pools[0] (nodes x gpus_per_node)",
)


class Dropper(FrameworkAdapter):
    """Renders the model and nothing else of the job: before issue 24 the kit passed it ("10 passed")."""

    PLUGIN_NAME = "dropper"

    def versions(self) -> list[FrameworkVersion]:
        return [FrameworkVersion("1.0", frozenset(KNOWN_CAPABILITIES))]

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        return NativeLaunch.from_job(
            job,
            framework=self.PLUGIN_NAME,
            version=version.version,
            argv=("python3", "-m", "dropper", "--model", job.spec.model.path),
        )


def test_an_adapter_that_drops_fields_fails_the_kit() -> None:
    failures = check_adapter(Dropper(), [JOB])
    for field in DROPPED:
        assert (
            f"tiny on dropper 1.0: {field} changed and the render did not: the field is ignored"
            in "\n".join(failures)
        ), field
    # the capabilities it claims cover more fields it drops: each names the capability to drop
    assert any(
        "spec.checkpoint.keep_last changed" in f and "or drop 'checkpoint.keep_last' from the version's" in f
        for f in failures
    )


class Honest(Dropper):
    """The same toy, rendering what it can and refusing the rest with a message: it passes the field probes."""

    PLUGIN_NAME = "honest"

    def versions(self) -> list[FrameworkVersion]:
        return [
            FrameworkVersion(
                "1.0",
                frozenset(
                    {"placement.colocated", "rollout.engine.vllm", "algorithm.grpo", "reward.function"}
                ),
            )
        ]

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        spec, pool = job.spec, job.placement.pools[0]
        if spec.training.optimizer.warmup_steps is not None or spec.rollout.tensor_parallel != 1:
            raise UnsupportedError([Problem("spec.rollout.tensor_parallel", "honest has no such setting")])
        return NativeLaunch.from_job(
            job,
            framework=self.PLUGIN_NAME,
            version=version.version,
            argv=("python3", "-m", "honest", "--model", spec.model.path, "--data", *spec.data.train),
            files={
                "honest.txt": f"{spec.rollout.temperature} {job.checkpoint_dir} {pool.nodes}x{pool.gpus_per_node}\n"
            },
        )


def test_an_adapter_that_renders_or_refuses_each_field_passes_the_probes() -> None:
    from rladapt.plugins.testing import check_fields_reach

    adapter = Honest()
    assert adapter.translate(JOB, adapter.versions()[0]).argv[-1] == "train.parquet"
    assert check_fields_reach(adapter, adapter.versions()[0], JOB) == []


def test_a_capability_typo_fails_the_kit_with_the_name_meant() -> None:
    class Typo(Dropper):
        PLUGIN_NAME = "typo"

        def versions(self) -> list[FrameworkVersion]:
            return [FrameworkVersion("1.0", frozenset({"algorithm.grp", "reward.function", "my.own"}))]

    failures = check_adapter(Typo(), [])
    assert (
        "1.0: unknown capability 'algorithm.grp'; did you mean 'algorithm.grpo'? (a name of "
        "rladapt.plugins.KNOWN_CAPABILITIES, or one the adapter declares in OWN_CAPABILITIES)"
    ) in failures
    assert any("unknown capability 'my.own'" in f for f in failures)

    class Declared(Typo):
        OWN_CAPABILITIES: ClassVar[dict[str, str]] = {"my.own": "the in-house trainer's own switch"}

    declared = check_adapter(Declared(), [])
    assert not any("'my.own'" in f for f in declared) and any("'algorithm.grp'" in f for f in declared)


def test_rladapt_plugins_names_a_capability_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import rladapt.plugins
    from rladapt.cli.inspect import plugins, plugins_report

    class Typo(Dropper):
        PLUGIN_NAME = "typo"

        def versions(self) -> list[FrameworkVersion]:
            return [FrameworkVersion("1.0", frozenset({"algorithm.grp", "reward.function"}))]

    monkeypatch.setattr(rladapt.plugins, "get_registry", lambda: host_registry(Typo()))
    report = plugins_report()
    assert report["frameworks"]["typo"]["unknown_capabilities"] == [
        "unknown capability 'algorithm.grp'; did you mean 'algorithm.grpo'? (a name of "
        "rladapt.plugins.KNOWN_CAPABILITIES, or one the adapter declares in OWN_CAPABILITIES)"
    ]
    assert "unknown_capabilities" not in report["frameworks"]["verl"]
    res = CliRunner().invoke(plugins, [])
    assert res.exit_code == 0, res.output
    assert "framework typo: unknown capability 'algorithm.grp'; did you mean 'algorithm.grpo'?" in " ".join(
        res.output.split()
    )
