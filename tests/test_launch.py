"""The library runner (``rladapt.launch.Runner``) called directly, with real local runs of a stub entrypoint.

As in ``tests/launchers``, only the framework entrypoint is replaced (no GPU): the registry holds the real
built-in plugins plus ``EngineStubPlugin``; here it is handed to the runner instead of patched into the CLI.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rladapt.launch import Planned, Runner
from rladapt.launchers.local import LOG_FILE, SCRIPT, LocalLauncher
from rladapt.plugins import Artifacts, Launcher, Registry, RunStatus, hookimpl, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives.errors import LaunchError, UsageError
from rladapt.runs import RunStore, spec_hash
from tests.launchers.conftest import (
    HERE,
    PATCH_MODULE,
    PATCH_SOURCE,
    STUB,
    EngineStubPlugin,
    make_example_files,
    render_job,
    stub_report,
    wait_for,
    write_spec,
)


class UnreachableLauncher(LocalLauncher):
    """A plugin's launcher whose engine is down: ``submit`` raises what a client library would, not a LaunchError."""

    PLUGIN_NAME = "unreachable"
    LOCAL_STATUS = False

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        raise ConnectionRefusedError(111, "Connection refused")


class UnreachablePlugin:
    @hookimpl
    def rladapt_register_launchers(self) -> list[Launcher]:
        return [UnreachableLauncher()]


@pytest.fixture
def registry() -> Registry:
    return load_registry(extra=[("engine-stub", EngineStubPlugin()), ("unreachable", UnreachablePlugin())])


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "home")


@pytest.fixture
def runner(registry: Registry, store: RunStore) -> Runner:
    return Runner(registry, store)


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's working directory with the stub and the patch module in it, and a spec there."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(HERE / STUB, work / STUB)
    (work / f"{PATCH_MODULE}.py").write_text(PATCH_SOURCE)
    make_example_files(work)  # the local launcher refuses a job whose input files are missing
    monkeypatch.chdir(work)
    return write_spec(work, env={"STUB_EXIT": "0"})


@pytest.fixture
def cleanup() -> Iterator[list[dict[str, Any]]]:
    """Handles of local runs to kill at the end, whatever the test did (the stub's child outlives it)."""
    handles: list[dict[str, Any]] = []
    yield handles
    for handle in handles:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(handle["pgid"]), signal.SIGKILL)


def test_dryrun_is_what_the_dry_run_prints_merges_options_and_records_nothing(
    runner: Runner, registry: Registry, store: RunStore, spec: Path
) -> None:
    planned = runner.dryrun(spec, ["spec.launcher.local.stop_grace=5"], framework="verl")
    again = runner.dryrun(spec, ["spec.launcher.local.stop_grace=5"], framework="verl")
    assert isinstance(planned, Planned)
    assert planned.describe() == again.describe()  # no run id: the same bytes, run after run
    native = render_job(registry, spec)
    assert planned.describe() == render_artifacts(LocalLauncher(), native, {"stop_grace": 5}).describe()
    assert planned.options == {"stop_grace": 5}  # from spec.launcher.local
    assert planned.spec_hash == spec_hash(spec.read_text(), ["spec.launcher.local.stop_grace=5"])
    assert planned.launcher_name == "local" and planned.native.framework == "verl"

    given = runner.dryrun(
        spec, ["spec.launcher.local.stop_grace=5"], framework="verl", options={"stop_grace": "7"}
    )
    assert given.options == {"stop_grace": 7.0}  # the caller's options win over the spec's, typed
    assert given.artifacts.request["stop_grace"] == 7.0
    with pytest.raises(UsageError, match="run_id is set by the runner"):
        runner.dryrun(spec, framework="verl", options={"run_id": "mine-0a1b2c3d"})
    assert store.list() == []
    assert not store.runs_dir.exists()


def test_launch_records_the_run_saves_the_handle_and_follows_it_to_success(
    runner: Runner, store: RunStore, spec: Path
) -> None:
    run = runner.launch(spec, framework="verl", options={"stop_grace": "3"})
    assert run.handle is not None

    record = json.loads((run.dir / "run.json").read_text())
    assert record["id"] == run.id and run.id.startswith("launch-test-")
    assert (record["launcher"], record["framework"], record["job_name"]) == ("local", "verl", "launch-test")
    assert record["options"] == {
        "stop_grace": 3.0
    }  # typed as the launcher declares; the run id is the record's
    assert record["spec_path"] == str(spec)
    assert record["spec_hash"] == spec_hash(spec.read_text())
    assert record["handle"] == run.handle and record["handle"]["pid"] > 0
    assert record["state"] == "PENDING" and "submitted" in record
    assert (run.dir / "artifacts" / SCRIPT).read_text() == record["artifacts"]["files"][SCRIPT]
    assert store.get(run.id[:-2]).id == run.id
    assert runner.get().id == run.id  # no id: the latest run

    lines: list[str] = []
    final = runner.follow(run, lines.append)
    assert final == RunStatus("SUCCEEDED", 0, "")
    output = "".join(lines)
    assert "STUB-EXIT 0" in output and stub_report(output)["patched_in_process"] is True
    assert store.get(run.id).recorded_status() == final  # recorded, for every other shell
    assert "".join(runner.logs(run)) == (run.dir / LOG_FILE).read_text()
    assert runner.status(run) == final
    ended = runner.stop(run)  # stopping a run that has ended changes nothing
    assert ended is not None and (ended.state, ended.exit_code) == ("SUCCEEDED", 0)
    assert "nothing to stop" in ended.message
    assert store.get(run.id).state == "SUCCEEDED"


def test_wait_and_refresh_record_how_the_run_ended(runner: Runner, store: RunStore, spec: Path) -> None:
    failing = write_spec(spec.parent, env={"STUB_EXIT": "3"})
    run = runner.launch(failing, framework="verl")
    assert run.handle is not None
    # Until told, the record only knows the run was submitted; refresh asks the local launcher unasked.
    wait_for(lambda: LocalLauncher().status(run.handle or {}, run.dir).terminal, "the stub job to end")
    assert store.get(run.id).state == "PENDING"
    assert runner.refresh(store.get(run.id)) == RunStatus("FAILED", 3, "exited with code 3")
    assert store.get(run.id).recorded_status() == RunStatus("FAILED", 3, "exited with code 3")
    assert runner.wait(store.get(run.id), timeout=120) == RunStatus("FAILED", 3, "exited with code 3")


def test_stop_ends_a_running_job_and_records_it(
    runner: Runner, store: RunStore, spec: Path, cleanup: list[dict[str, Any]]
) -> None:
    sleeping = write_spec(spec.parent, env={"STUB_SLEEP": "300"})
    run = runner.launch(sleeping, framework="verl")
    assert run.handle is not None
    cleanup.append(run.handle)
    wait_for(lambda: "STUB-CHILD" in (run.dir / LOG_FILE).read_text(), "the stub to start its child")
    assert runner.status(run).state == "RUNNING"
    with pytest.raises(LaunchError, match=f"run {run.id} has not ended after 0 s \\(it is RUNNING\\)"):
        runner.wait(run, timeout=0)  # gives up; the run goes on
    assert runner.status(run).state == "RUNNING"
    stopped = runner.stop(run)
    assert stopped is not None and stopped.state == "STOPPED"
    assert store.get(run.id).state == "STOPPED"
    again = runner.stop(run)
    assert (
        again is not None and again.state == "STOPPED" and "already stopped; nothing to stop" in again.message
    )


def test_a_launcher_error_at_submit_leaves_a_failed_record_and_is_raised_as_it_is(
    runner: Runner, store: RunStore, spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SRC_KEY", raising=False)
    secret = write_spec(spec.parent, secrets=[{"env": "API_KEY", "from": {"env": "SRC_KEY"}}])
    with pytest.raises(LaunchError) as caught:
        runner.launch(secret, framework="verl")
    assert (
        caught.value.message
        == "no source of these secrets can be read in this shell: API_KEY ($SRC_KEY is not set)"
    )
    (run,) = store.list()
    assert run.handle is None and not (run.dir / LOG_FILE).exists()
    assert run.recorded_status() == RunStatus("FAILED", None, f"submission failed: {caught.value.message}")


def test_any_other_submit_failure_is_a_launch_error_naming_the_launcher_and_the_run(
    runner: Runner, store: RunStore, spec: Path
) -> None:
    with pytest.raises(LaunchError) as caught:
        runner.launch(spec, framework="verl", launcher="unreachable")
    (run,) = store.list()
    assert caught.value.message == (
        f"unreachable launcher failed to submit run {run.id}: ConnectionRefusedError: [Errno 111] Connection refused"
    )
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    assert run.launcher == "unreachable" and run.handle is None
    assert run.recorded_status() == RunStatus(
        "FAILED", None, "submission failed: ConnectionRefusedError: [Errno 111] Connection refused"
    )

    # A run never submitted: its recorded state stands, it has no logs and nothing to stop.
    assert runner.status(run) == run.recorded_status()
    assert runner.refresh(run, remote=True) == run.recorded_status()
    assert runner.stop(run) is None
    with pytest.raises(LaunchError, match=f"run {run.id} was never submitted \\(submission failed: "):
        runner.logs(run)


def test_get_without_runs_is_a_usage_error(runner: Runner, store: RunStore) -> None:
    with pytest.raises(UsageError, match=f"no runs yet in {store.runs_dir}"):
        runner.get()
    with pytest.raises(UsageError, match="no run 'nope'"):
        runner.get("nope")


def test_concurrent_resumes_of_one_run_submit_one_job(
    registry: Registry, store: RunStore, spec: Path, cleanup: list[dict[str, Any]]
) -> None:
    """Two `resume`s of an ended run meet at a barrier once each has rendered the run again, then one goes on
    at once and the other after 0 to 3 s (longer than a local submission takes): each time the run gets exactly one new attempt and the other resume is refused,
    since whether the run has ended is decided under its submission lock, which the winner holds until its
    job is submitted."""
    import threading
    import time

    meet: list[threading.Barrier] = []
    local = threading.local()

    class Racing(Runner):
        def dryrun(self, *args: Any, **kwargs: Any) -> Planned:
            planned = super().dryrun(*args, **kwargs)
            if not meet:  # the launch
                return planned
            with contextlib.suppress(threading.BrokenBarrierError):
                # the other resume may have been refused already: then there is no one to meet
                meet[-1].wait(timeout=3)
            time.sleep(getattr(local, "delay", 0.0))
            return planned

    runner = Racing(registry, store)
    failing = write_spec(spec.parent, env={"STUB_EXIT": "3"})
    run = runner.launch(failing, framework="verl")
    assert run.handle is not None
    cleanup.append(run.handle)
    assert runner.wait(run, interval=0.1, timeout=60).state == "FAILED"
    for attempt, stagger in enumerate([0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.0]):
        meet.append(threading.Barrier(2))
        results: list[object] = []

        def one(delay: float, results: list[object] = results) -> None:
            mine = store.get(run.id)  # each `rladapt resume` reads the record itself
            local.delay = delay
            try:
                results.append(runner.resume(mine, force=True))
            except UsageError as exc:
                results.append(exc)

        threads = [threading.Thread(target=one, args=(d,)) for d in (0.0, stagger)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        current = store.get(run.id)
        assert current.handle is not None
        cleanup.append(current.handle)
        submitted = [r for r in results if isinstance(r, tuple)]
        assert len(submitted) == 1, (stagger, results)
        refused = [r for r in results if isinstance(r, UsageError)]
        assert len(refused) == 1 and (
            "only a run that has ended can be resumed" in refused[0].message
            or "already being submitted" in refused[0].message
        ), refused
        assert len(current.record.attempts) == attempt + 2
        assert runner.wait(current, interval=0.1, timeout=60).state == "FAILED"


def test_a_second_run_into_a_held_checkpoint_directory_is_refused_before_submit(
    runner: Runner,
    store: RunStore,
    spec: Path,
    cleanup: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two launches of one spec (one checkpoint directory), on the local launcher with real processes: the
    first run's job holds the directory; the second launch is refused before anything is recorded, naming the
    holder; `--take-over` starts it anyway; a resume of the first run may take its own directory back."""
    from rladapt.runs.owner import HEARTBEAT_ENV, DirectoryHeld, read_owner

    monkeypatch.setenv(HEARTBEAT_ENV, "1")
    sleeping = write_spec(spec.parent, env={"STUB_EXIT": "0", "STUB_SLEEP": "60"})
    first = runner.launch(sleeping, framework="verl")
    assert first.handle is not None
    cleanup.append(first.handle)
    root = Path(first.checkpoint_root())
    holder = wait_for(lambda: read_owner(root), "the job to hold its checkpoint directory", timeout=60)
    assert (holder.run, holder.attempt) == (first.id, first.id) and holder.holds()
    with pytest.raises(DirectoryHeld) as refused:
        runner.launch(sleeping, framework="verl")
    message = refused.value.message
    assert f"held by run {first.id}" in message and f"pid {holder.pid}" in message
    assert "last heartbeat" in message and "--take-over" in message
    assert [r.id for r in store.list()] == [first.id]  # nothing recorded for the refused launch

    second = runner.launch(sleeping, framework="verl", take_over=True)
    assert second.handle is not None
    cleanup.append(second.handle)
    taken = wait_for(
        lambda: (o := read_owner(root)) is not None and o.run == second.id and o, "the take-over", timeout=60
    )
    assert taken.holds()
    ended = runner.stop(second)
    assert ended is not None and ended.state == "STOPPED"
    runner.stop(first)
    # the holder's heartbeat stops with its job (said ended, or stale STALE_AFTER beats later): free again
    wait_for(lambda: (o := read_owner(root)) is not None and not o.holds(), "the directory to be free")
    # the first run resumes (a run may take its own directory back from a holder that is still alive)
    number, _ = runner.resume(store.get(first.id), force=True)
    resumed = store.get(first.id)
    assert resumed.handle is not None
    cleanup.append(resumed.handle)
    again = wait_for(
        lambda: (o := read_owner(root)) is not None and o.run == first.id and o.ended is None and o,
        "the resumed job to hold the directory",
        timeout=60,
    )
    assert again.attempt == f"{first.id}-a{number}"
    with pytest.raises(DirectoryHeld, match=f"held by run {first.id}"):
        runner.resume(store.get(second.id), force=True)  # another run's resume is refused too
    runner.stop(resumed)
