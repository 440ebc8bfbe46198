"""``Launcher.render(native, command, options, *, run_id)``: what the runner hands a launcher, and how often.

The runner builds the ``Command`` once per run and renders the artifacts once per run (a launch, a dry run, a
resume); a launcher written against the earlier contract, ``render(native, options)`` with the run id inside the
options, still works, with a ``DeprecationWarning`` naming it and the new signature.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rladapt.launch import Runner
from rladapt.launchers.local import LocalLauncher
from rladapt.plugins import (
    Artifacts,
    Command,
    Launcher,
    NativeLaunch,
    Registry,
    RunStatus,
    hookimpl,
    load_registry,
)
from rladapt.plugins.launcher import RUN_ID_OPTION, legacy_render, render_artifacts
from rladapt.plugins.testing.checks import check_launcher
from rladapt.runs import RunStore

from .conftest import (
    HERE,
    PATCH_MODULE,
    PATCH_SOURCE,
    STUB,
    EngineStubPlugin,
    make_example_files,
    render_job,
    write_spec,
)


class OldStyle(Launcher):
    """A third-party launcher as written before render took the command and the run id."""

    PLUGIN_NAME = "old-style"
    DESCRIPTION = "a launcher of the earlier render contract"
    LOCAL_STATUS = True
    seen: ClassVar[list[dict[str, Any]]] = []

    def render(self, native: NativeLaunch, options: dict[str, Any]) -> Artifacts:  # type: ignore[override]
        OldStyle.seen.append(dict(options))
        opts = self.merge_options(native, options)
        command = self.command(native)
        return Artifacts(
            self.PLUGIN_NAME,
            files={"run.sh": " ".join(command.argv) + "\n"},
            request={"name": opts.get(RUN_ID_OPTION) or native.job_name},
        )

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        return {"name": artifacts.request["name"]}

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        return RunStatus("SUCCEEDED", 0)

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        return iter(())

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        return RunStatus("SUCCEEDED", 0, "already finished; nothing to stop")


class Counting(LocalLauncher):
    """The local launcher, counting what the runner asks of it."""

    PLUGIN_NAME = "counting"
    calls: ClassVar[dict[str, list[str | None]]] = {"render": [], "command": []}

    def command(self, native: NativeLaunch) -> Command:
        Counting.calls["command"].append(native.job_name)
        return super().command(native)

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        Counting.calls["render"].append(run_id)
        return super().render(native, command, options, run_id=run_id)


class TestLaunchers:
    @hookimpl
    def rladapt_register_launchers(self) -> list[Launcher]:
        return [OldStyle(), Counting()]


@pytest.fixture
def registry() -> Registry:
    return load_registry(extra=[("engine-stub", EngineStubPlugin()), ("test-launchers", TestLaunchers())])


@pytest.fixture
def runner(registry: Registry, tmp_path: Path) -> Runner:
    return Runner(registry, RunStore(tmp_path / "home"))


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(HERE / STUB, work / STUB)
    (work / f"{PATCH_MODULE}.py").write_text(PATCH_SOURCE)
    make_example_files(work)
    monkeypatch.chdir(work)
    return write_spec(work, env={"STUB_EXIT": "0"})


@pytest.fixture(autouse=True)
def fresh_counts() -> None:
    OldStyle.seen.clear()
    Counting.calls["render"].clear()
    Counting.calls["command"].clear()


def test_a_launcher_of_the_earlier_contract_keeps_working_with_a_deprecation_warning(
    runner: Runner, spec: Path
) -> None:
    assert legacy_render(OldStyle()) and not legacy_render(LocalLauncher())
    with pytest.warns(DeprecationWarning) as caught:
        planned = runner.dryrun(spec, framework="verl", launcher="old-style")
        text = planned.describe()
    (message,) = {str(w.message) for w in caught if w.category is DeprecationWarning}
    assert "the old-style launcher (tests.launchers.test_render_contract.OldStyle)" in message
    assert "render(self, native, command, options, *, run_id)" in message and "0.3.0" in message
    assert "-m rladapt.bootstrap" in text and OldStyle.seen == [{}]  # a dry run: no run id

    with pytest.warns(DeprecationWarning, match="old-style launcher"):
        run = runner.schedule(runner.dryrun(spec, framework="verl", launcher="old-style"))
    # the run id reached it where it used to, and the record keeps it out of the options
    assert OldStyle.seen[-1] == {RUN_ID_OPTION: run.id}
    assert run.handle == {"name": run.id} and run.record.options == {}
    assert runner.refresh(run) == RunStatus("SUCCEEDED", 0)


def test_the_conformance_kit_checks_a_launcher_of_the_earlier_contract(
    registry: Registry, spec: Path
) -> None:
    native = render_job(registry, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert check_launcher(OldStyle(), [native]) == []


def test_a_launch_builds_the_command_once_and_renders_once(runner: Runner, spec: Path) -> None:
    # Before: the dry run inside `launch` rendered once without a run id, `schedule` again with it (2 renders,
    # 2 commands); a resume rendered 3 times.
    run = runner.launch(spec, framework="verl", launcher="counting")
    assert Counting.calls == {"render": [run.id], "command": ["launch-test"]}
    runner.wait(run, interval=0.2, timeout=120)

    Counting.calls["render"].clear()
    Counting.calls["command"].clear()
    planned = runner.dryrun(spec, framework="verl", launcher="counting")
    assert Counting.calls["render"] == []  # nothing rendered until the dry run is shown
    planned.describe()
    planned.describe()
    assert Counting.calls == {"render": [None], "command": ["launch-test"]}

    Counting.calls["render"].clear()
    Counting.calls["command"].clear()
    number, chosen = runner.resume(run, force=True)
    assert (number, chosen) == (2, None)
    assert Counting.calls == {"render": [f"{run.id}-a2"], "command": ["launch-test"]}
    runner.wait(run, interval=0.2, timeout=120)


def test_render_artifacts_passes_the_command_it_is_given(registry: Registry, spec: Path) -> None:
    native = render_job(registry, spec)
    command = Command(argv=("python3", "-m", "elsewhere"))
    artifacts = render_artifacts(Counting(), native, {}, run_id="job-0a1b2c3d", command=command)
    assert "python3 -m elsewhere" in artifacts.files["run.sh"] and Counting.calls["command"] == []
