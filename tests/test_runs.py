"""The run store (run.json records found from any shell) and the patch bootstrap."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rladapt.bootstrap import FILES_ENV, LITERAL_ENV, PATCHES_ENV, json_env_value
from rladapt.plugins import Artifacts, RunStatus
from rladapt.primitives.errors import UsageError
from rladapt.runs import (
    RECORD_FORMAT,
    Attempt,
    CheckpointFacts,
    DamagedRecord,
    RunRecord,
    RunStore,
    Submitter,
    new_run_id,
    read_record,
    spec_hash,
    state_home,
)
from tests.conftest import REPO

#: A record as rladapt wrote it before the record was typed (format 1): made by that rladapt's ``Runner`` (a
#: local launch of the test stub, then a resume), its paths of the machine replaced by neutral ones.
FORMAT_1 = REPO / "tests" / "fixtures" / "run_record_format1" / "launch-test-e330dac8"

ARTIFACTS = Artifacts(
    launcher="local", files={"run.sh": "echo hi\n", "sub/x.yaml": "a: 1\n"}, request={"k": 1}
)


def make(store: RunStore, run_id: str) -> None:
    store.create(
        run_id=run_id, launcher="local", framework="verl", version="0.9.1", job_name="job",
        spec_hash=spec_hash("spec"), artifacts=ARTIFACTS, options={"run_id": run_id, "stop_grace": "3"},
    )  # fmt: skip


def test_home_defaults_to_xdg_state_and_honours_rladapt_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RLADAPT_HOME")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert state_home() == tmp_path / "state" / "rladapt"
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "elsewhere"))
    assert state_home() == tmp_path / "elsewhere"


def test_create_writes_record_and_artifacts_and_get_finds_by_id_or_unique_prefix(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    make(store, "job-aaaa1111")
    make(store, "job-aaaa2222")
    make(store, "job-bbbb3333")
    run = store.get("job-b")
    assert run.id == "job-bbbb3333"
    assert (run.dir / "artifacts" / "run.sh").read_text() == "echo hi\n"
    assert (run.dir / "artifacts" / "sub" / "x.yaml").read_text() == "a: 1\n"
    assert json.loads((run.dir / "artifacts" / "request.json").read_text()) == {"k": 1}
    record = json.loads((run.dir / "run.json").read_text())
    assert record["state"] == "CREATED" and record["handle"] is None
    assert record["options"] == {"stop_grace": "3"}  # the run id is the record's, not an option
    assert store.get("job-aaaa1111").id == "job-aaaa1111"
    with pytest.raises(UsageError, match="ambiguous: job-aaaa1111, job-aaaa2222"):
        store.get("job-aaaa")
    with pytest.raises(UsageError, match="no run 'nope'"):
        store.get("nope")
    with pytest.raises(UsageError, match="invalid run id"):
        store.get("../job-aaaa1111")
    with pytest.raises(UsageError, match="already exists"):
        make(store, "job-aaaa1111")
    assert [r.id for r in store.list()] == ["job-aaaa1111", "job-aaaa2222", "job-bbbb3333"]


def test_record_updates_are_atomic_and_a_terminal_state_sticks(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    make(store, "job-cccc4444")
    run = store.get("job-cccc4444")
    run.save_handle({"pid": 1})
    assert store.get("job-cccc4444").state == "PENDING"
    run.save_status(RunStatus("FAILED", 3, "exited with code 3"))
    run.save_status(
        RunStatus("UNKNOWN", None, "cluster gone")
    )  # never overwrites what is known to have ended
    fresh = store.get("job-cccc4444")
    assert fresh.recorded_status() == RunStatus("FAILED", 3, "exited with code 3")
    assert fresh.handle == {"pid": 1}
    assert sorted(p.name for p in run.dir.iterdir()) == ["artifacts", "run.json"]  # no temp files left behind


def test_a_record_of_format_1_reads_as_a_typed_record_and_is_written_back_as_the_current_format(
    tmp_path: Path,
) -> None:
    record = read_record(FORMAT_1)
    assert isinstance(record, RunRecord) and record.format == RECORD_FORMAT
    assert (record.id, record.launcher, record.framework, record.version) == (
        "launch-test-e330dac8", "local", "verl", "0.9.1",
    )  # fmt: skip
    assert record.recorded_status() == RunStatus("SUCCEEDED", 0, "")
    assert record.submitter == Submitter(pid=5215, host="vm", start_time=24206)
    assert [(a.attempt, a.kind, a.from_step, a.job) for a in record.attempts] == [
        (1, "launch", None, None),
        (2, "resume", None, "launch-test-e330dac8-a2"),
    ]
    assert record.checkpoint == CheckpointFacts(
        dir="/home/user/project/run/checkpoints/qwen2-5-3b-grpo-gsm8k",
        model="Qwen/Qwen2.5-3B-Instruct",
        world_size=8,
    )
    assert record.checkpoint_root() == Path("/home/user/project/run/checkpoints/qwen2-5-3b-grpo-gsm8k")
    assert record.thresholds().kl_max_nats == 1.0 and record.steps_total is None
    assert (
        record.options == {"stop_grace": 3.0} and record.handle is not None and record.handle["pid"] == 5295
    )
    assert "run.sh" in record.artifacts.files and record.overrides == ()
    # what rladapt wrote is what it writes again, but for the format
    written = json.loads((FORMAT_1 / "run.json").read_text())
    assert record.to_json() == {**written, "format": RECORD_FORMAT}

    shutil.copytree(FORMAT_1, tmp_path / "runs" / FORMAT_1.name)
    run = RunStore(tmp_path).get(FORMAT_1.name)
    run.save_status(RunStatus("STOPPED", None, "by hand"))
    again = json.loads((run.dir / "run.json").read_text())
    assert again["format"] == RECORD_FORMAT and again["attempts"] == written["attempts"]


def test_the_cli_lists_and_shows_a_format_1_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    shutil.copytree(FORMAT_1, tmp_path / "home" / "runs" / FORMAT_1.name)
    code, out, err = cli("runs", capsys=capsys)
    assert code == 0, err
    assert out.splitlines()[1].split()[:7] == [
        FORMAT_1.name,
        "local",
        "verl",
        "0.9.1",
        "SUCCEEDED",
        "(0)",
        "2",
    ]
    code, out, err = cli("runs", "--json", capsys=capsys)
    (listed,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and listed["id"] == FORMAT_1.name and "artifacts" not in listed
    assert [a["kind"] for a in listed["attempts"]] == ["launch", "resume"]


def test_a_format_1_record_from_before_resume_has_its_launch_as_its_one_attempt(tmp_path: Path) -> None:
    written = json.loads((FORMAT_1 / "run.json").read_text())
    del written["attempts"]
    run_dir = tmp_path / FORMAT_1.name
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps(written))
    assert read_record(run_dir).attempts == (
        Attempt(attempt=1, kind="launch", submitted=written["submitted"]),
    )


def test_a_record_is_a_value_changed_only_through_the_store(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    make(store, "job-ffff7777")
    run = store.get("job-ffff7777")
    before = run.record
    with pytest.raises(ValueError, match="frozen"):
        before.state = "RUNNING"  # type: ignore[misc]
    run.save_handle({"pid": 1})
    assert before.state == "CREATED" and run.record.state == "PENDING"  # a new value, the old one unchanged
    assert store.get("job-ffff7777").record == run.record
    attempt = run.save_attempt(
        Artifacts("local", {"run.sh": "echo again\n"}), from_step=4, job="job-ffff7777-a2"
    )
    assert (attempt.attempt, attempt.kind, attempt.from_step) == (2, "resume", 4)
    fresh = store.get("job-ffff7777")
    assert fresh.handle is None and fresh.record.attempts[-1] == attempt
    assert (fresh.dir / "artifacts" / "run.sh").read_text() == "echo again\n"
    assert fresh.artifacts.files == {"run.sh": "echo again\n"}
    with pytest.raises(DamagedRecord, match="run.json: id is 'job-ffff7777'"):
        shutil.copytree(fresh.dir, tmp_path / "runs" / "job-other0000")
        read_record(tmp_path / "runs" / "job-other0000")


def test_failed_submission_leaves_a_consistent_record(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    make(store, "job-dddd5555")
    store.get("job-dddd5555").mark_submit_failed("cannot reach the Ray cluster")
    run = store.get("job-dddd5555")
    assert run.handle is None
    assert run.recorded_status() == RunStatus(
        "FAILED", None, "submission failed: cannot reach the Ray cluster"
    )


def test_artifact_names_cannot_escape_the_run_directory(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "home")
    bad = Artifacts(launcher="local", files={"../../escape.sh": "x"})
    with pytest.raises(UsageError, match="must be a relative path"):
        store.create(run_id="job-eeee6666", launcher="local", framework="verl", version="1", job_name="j",
                     spec_hash="h", artifacts=bad)  # fmt: skip
    assert not (tmp_path / "escape.sh").exists()


@pytest.mark.parametrize("name", ["Qwen2.5 7B / GRPO!!", "a" * 100, "---", "ok-name"])
def test_run_ids_are_dns_labels(name: str) -> None:
    run_id = new_run_id(name)
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", run_id), run_id
    assert new_run_id(name) != run_id


def test_spec_hash_covers_the_text_and_the_overrides() -> None:
    assert spec_hash("a: 1\n") == spec_hash("a: 1\n")
    assert spec_hash("a: 1\n") != spec_hash("a: 2\n")
    assert spec_hash("a: 1\n", ["x=1"]) != spec_hash("a: 1\n")
    assert spec_hash("a: 1\n", ["x=1", "y=2"]) != spec_hash("a: 1\n", ["x=1y=2"])


# --- the patch bootstrap, as a real process ------------------------------------------------------------------

PATCH = "import sys\n\ndef apply():\n    sys.bootstrap_probe = 'patched'\n\ndef boom():\n    raise RuntimeError('no')\n"


def bootstrap(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(cwd), **(env or {})}
    full_env.pop(PATCHES_ENV, None)
    return subprocess.run([sys.executable, "-m", "rladapt.bootstrap", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture
def patch_dir(tmp_path: Path) -> Path:
    (tmp_path / "probe_patch.py").write_text(PATCH)
    (tmp_path / "prog.py").write_text(
        "import os, sys\nprint(getattr(sys, 'bootstrap_probe', None), sys.argv[1:], os.environ.get('RLADAPT_RUNTIME_PATCHES'))\n"
        "sys.exit(int(os.environ.get('CODE', '0')))\n"
    )
    return tmp_path


def test_bootstrap_applies_patches_in_process_and_keeps_argv_and_exit_code(patch_dir: Path) -> None:
    out = bootstrap(["--patch", "probe_patch:apply", "--", sys.executable, "prog.py", "$(x)", "a b"], patch_dir,
                    {"CODE": "7"})  # fmt: skip
    assert out.returncode == 7, out.stderr
    assert out.stdout == "patched ['$(x)', 'a b'] probe_patch:apply\n"
    as_module = bootstrap(["--patch=probe_patch:apply", "--", sys.executable, "-m", "prog", "x"], patch_dir)
    assert as_module.returncode == 0 and as_module.stdout.startswith("patched ['x']")


def test_bootstrap_refuses_to_run_unpatched_when_a_patch_fails(patch_dir: Path) -> None:
    out = bootstrap(["--patch", "probe_patch:boom", "--", sys.executable, "prog.py"], patch_dir)
    assert out.returncode == 1
    assert out.stdout == ""
    assert "runtime patch probe_patch:boom failed: RuntimeError: no" in out.stderr
    assert "Traceback" not in out.stderr


def test_bootstrap_execs_other_programs_and_reports_missing_ones(patch_dir: Path) -> None:
    out = bootstrap(["--", "sh", "-c", 'echo "$0"; exit 4', "$(touch pwned)"], patch_dir)
    assert (out.returncode, out.stdout) == (4, "$(touch pwned)\n")
    missing = bootstrap(["--", "no-such-program-xyz"], patch_dir)
    assert missing.returncode == 127 and "cannot run 'no-such-program-xyz'" in missing.stderr
    usage = bootstrap([sys.executable, "prog.py"], patch_dir)
    assert usage.returncode == 2 and "usage:" in usage.stderr
    assert not (patch_dir / "pwned").exists()


def test_bootstrap_writes_files_and_literal_env_from_the_launcher(patch_dir: Path) -> None:
    files = {"conf/a.yaml": "x: $HOME ${oc.env:Y}\n"}
    literal = {"LIT": "$HOME ${HOME} $(touch pwned)"}
    env = {FILES_ENV: json_env_value(files), LITERAL_ENV: json_env_value(literal)}
    code = "import os; print(open('conf/a.yaml').read(), end=''); print(os.environ['LIT'])"
    out = bootstrap(["--", sys.executable, "-c", code], patch_dir, env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "x: $HOME ${oc.env:Y}\n$HOME ${HOME} $(touch pwned)\n"
    escaping = bootstrap(
        ["--", sys.executable, "prog.py"], patch_dir, {FILES_ENV: json.dumps({"../up": "x"})}
    )
    assert escaping.returncode == 1 and "not a relative path inside the working directory" in escaping.stderr
    assert not (patch_dir.parent / "up").exists()


# --- the store through the CLI: damaged records, paths read back, run ids, writes that cannot complete -----


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI in this process, with main()'s exit-code policy."""
    from rladapt.cli import main as cli_main

    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def finished(store: RunStore, run_id: str) -> Path:
    """A local run that has ended with exit code 0 (its handle's pid is long gone), as launch leaves one."""
    make(store, run_id)
    run = store.get(run_id)
    run.save_handle({"pid": 2**22 + 7, "pgid": 2**22 + 7, "start_time": 1, "host": None, "log": "output.log"})
    (run.dir / "exit_code").write_text("0\n")
    (run.dir / "output.log").write_text("hello from the job\n")
    return run.dir


def _edit(key: str, value: object) -> Callable[[Path], None]:
    def edit(run_dir: Path) -> None:
        record = json.loads((run_dir / "run.json").read_text())
        if value is _DELETE:
            del record[key]
        elif key.startswith("handle."):
            record["handle"][key[len("handle.") :]] = value
        else:
            record[key] = value
        (run_dir / "run.json").write_text(json.dumps(record))

    return edit


_DELETE = object()


def _write(data: bytes) -> Callable[[Path], None]:
    def write(run_dir: Path) -> None:
        (run_dir / "run.json").write_bytes(data)

    return write


def _truncate(run_dir: Path) -> None:
    raw = (run_dir / "run.json").read_bytes()
    (run_dir / "run.json").write_bytes(raw[: len(raw) // 2])


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "pid-not-a-number": (_edit("handle.pid", "abc"), "handle.pid is 'abc', expected a positive integer"),
    "created-yesterday": (
        _edit("created_ts", "yesterday"),
        "run.json: created_ts is 'yesterday', expected a number (seconds since the epoch)",
    ),
    "missing-field": (_edit("launcher", _DELETE), "run.json: missing field launcher"),
    "a-list": (_write(b"[1, 2]\n"), "run.json holds a list, expected a JSON object"),
    "invalid-utf8": (_write(b'{"id": "\xff"}'), "run.json is not UTF-8 text (byte 0xff at offset 8)"),
    "truncated": (_truncate, "run.json is not JSON: "),
    "no-record": (lambda run_dir: (run_dir / "run.json").unlink(), "it has no run.json"),
    "state-forged": (
        _edit("state", "RUNNING\nerror: forged"),
        "run.json: state is 'RUNNING\\nerror: forged'",
    ),
    "format-from-the-future": (
        _edit("format", 99),
        "run.json: format is 99, this rladapt reads formats 1 to 2 (written by a newer rladapt",
    ),
    "attempt-of-no-kind": (
        _edit("attempts", [{"attempt": 1, "kind": "relaunch"}]),
        "run.json: attempts[0].kind is 'relaunch', expected launch or resume",
    ),
    "checkpoint-world-size": (
        _edit("checkpoint", {"dir": "/x", "model": "m", "world_size": "8"}),
        "run.json: checkpoint.world_size is '8', expected an integer or null",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_record_is_listed_with_its_reason_and_breaks_no_other_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    store = RunStore()
    finished(store, "good-00000001")
    bad = finished(store, "bad-00000002")
    edit, reason = DAMAGE[damage]
    edit(bad)

    code, out, err = cli("runs", capsys=capsys)
    assert code == 0, err
    _, *rows = out.splitlines()
    assert [row.split()[:5] for row in rows] == [
        ["good-00000001", "local", "verl", "0.9.1", "SUCCEEDED"],
        ["bad-00000002", "-", "-", "DAMAGED", "-"],
    ]
    (warning,) = err.splitlines()  # one line, whatever the record holds
    assert warning.startswith("warning: bad-00000002: damaged: ") and reason in warning
    code, out, _ = cli("runs", "--json", capsys=capsys)
    listed = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [entry["id"] for entry in listed] == ["good-00000001", "bad-00000002"]
    assert listed[1]["state"] == "DAMAGED" and reason in listed[1]["damaged"]

    for verb in ("status", "logs", "stop"):
        code, out, err = cli(verb, "bad-00000002", capsys=capsys)
        assert code == 1, (verb, err)
        assert err.startswith("error: run 'bad-00000002' is damaged: ") and reason in err
        assert "internal error" not in err and "Traceback" not in err
    code, out, _ = cli("status", "good-00000001", capsys=capsys)
    assert code == 0 and "state:     SUCCEEDED (exit code 0)" in out
    code, out, _ = cli("logs", "good", capsys=capsys)
    assert (code, out) == (0, "hello from the job\n")


def test_runs_never_says_no_runs_when_a_run_directory_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    (RunStore().runs_dir / "lost-00000003").mkdir(parents=True)
    code, out, err = cli("runs", capsys=capsys)
    assert code == 0
    assert out.splitlines()[1].split() == ["lost-00000003", "-", "-", "DAMAGED", "-", "-", "-"]
    assert "no runs" not in err and "lost-00000003: damaged: it has no run.json" in err


def test_a_deleted_output_log_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    run_dir = finished(RunStore(), "gone-00000004")
    (run_dir / "output.log").unlink()
    code, out, err = cli("logs", "gone-00000004", capsys=capsys)
    assert (code, out) == (1, "")
    assert err == (
        f"error: the output of run gone-00000004 is gone: {str(run_dir / 'output.log')!r} does not exist "
        "(deleted?)\n"
    )


@pytest.mark.parametrize("where", ["absolute", "climbing", "symlink"])
def test_logs_read_only_files_inside_the_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    secret = tmp_path / "not-yours.txt"
    secret.write_text("private key material\n")
    run_dir = finished(RunStore(), "peek-00000005")
    log = {"absolute": str(secret), "climbing": "../../../not-yours.txt", "symlink": "output.log"}[where]
    if where == "symlink":
        (run_dir / "output.log").unlink()
        (run_dir / "output.log").symlink_to(secret)
    _edit("handle.log", log)(run_dir)
    code, out, err = cli("logs", "peek-00000005", capsys=capsys)
    assert code == 1 and "private key material" not in out + err
    leads = "links out of" if where == "symlink" else "leads out of"
    assert f"is damaged: handle.log is {log!r:.20}" in err and f"which {leads} the run directory" in err


@pytest.mark.parametrize("key", ["a" * 300, "a" * 64, "Job-1", "job\nerror: forged", "jöb", "a b", "_x", "."])
def test_a_run_id_that_cannot_be_one_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    finished(RunStore(), "real-00000006")
    for verb in ("status", "logs", "stop"):
        code, out, err = cli(verb, key, capsys=capsys)
        assert (code, out) == (2, ""), (verb, err)
        (line,) = err.splitlines()  # quoted: a newline in the id cannot forge a line
        assert line.startswith("error: invalid run id ")
        assert "at most 63 lowercase letters, digits and '-'" in line
        if len(key) > 63:
            assert f"({len(key)} characters)" in line


def _namespace_mounts() -> bool:
    """Whether this machine lets an unprivileged user namespace mount a tmpfs (for a real full or read-only disk)."""
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /mnt"]
    return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0


# In a private mount namespace: HOME is a fresh tmpfs, made read-only or filled up, then rladapt launches; what
# is left in HOME is listed before the namespace (and the tmpfs) goes away.
_ON_A_BROKEN_DISK = """
set -u
home=$1 how=$2; shift 2
mount -t tmpfs -o size=64k tmpfs "$home"
if [ "$how" = read-only ]; then mount -o remount,ro "$home"; else head -c 1M /dev/zero > "$home/filler" 2>/dev/null; fi
RLADAPT_HOME=$home "$@"
echo "RC $?"
find "$home" -mindepth 1 -printf 'LEFT %P\\n'
"""


@pytest.mark.skipif(not _namespace_mounts(), reason="needs unshare and tmpfs mounts in a user namespace")
@pytest.mark.parametrize("how", ["read-only", "full"])
def test_launch_on_a_read_only_or_full_home_fails_cleanly_and_leaves_nothing(
    tmp_path: Path, how: str
) -> None:
    from tests.conftest import REPO

    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _ON_A_BROKEN_DISK, "sh", str(home), how,
         sys.executable, "-m", "rladapt", "launch", "--framework", "verl", str(REPO / "examples" / "grpo-gsm8k.yaml")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert "RC 1" in done.stdout, (done.stdout, done.stderr)
    reason = "the file system is read-only" if how == "read-only" else "no space left on the device"
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: cannot ") and line.endswith(reason), line
    assert "Traceback" not in done.stderr
    left = sorted(line.split(" ", 1)[1] for line in done.stdout.splitlines() if line.startswith("LEFT "))
    # No run directory, no half-written artifact, no temp file: at most the (empty) runs folder.
    assert left == ([] if how == "read-only" else ["filler", "runs"])


def _events(directory: Path, values: dict[int, float]) -> None:
    """TensorBoard events as the frameworks write them: torch's own SummaryWriter."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(directory))
    for step, value in values.items():
        writer.add_scalar("train/reward", value, step)
    writer.close()


def test_a_run_s_metrics_are_its_own_when_runs_share_a_checkpoint_directory(tmp_path: Path) -> None:
    """Run B launched into run A's checkpoint directory after A ended (resume: auto continues A's steps) logs
    into the same rladapt-metrics: before, A's `rladapt metrics` showed B's values for every step B logged."""
    from rladapt.metrics import read_run_metrics
    from rladapt.runs.owner import release, take

    ckpt = tmp_path / "ckpt"
    store = RunStore(tmp_path / "home")
    facts = CheckpointFacts(dir=str(ckpt), model="m", world_size=1)
    runs = {}
    for run_id in ("grpo-aaaa1111", "grpo-bbbb2222"):
        runs[run_id] = store.create(
            run_id=run_id, launcher="local", framework="trl", version="1.16.0", job_name="grpo",
            spec_hash=spec_hash("spec"), artifacts=ARTIFACTS, checkpoint=facts,
        )  # fmt: skip
    # A's job: takes the directory at its start, logs steps 1-4, ends
    a, _ = take(ckpt, "grpo-aaaa1111", "grpo-aaaa1111")
    _events(ckpt / "rladapt-metrics", {1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4})
    release(ckpt, a)
    time.sleep(1.1)  # an event file names the second its writer opened: B's is a later one, as in a real run
    # B's job (another learning rate) takes the directory once A ended, and logs its steps 3-6 there
    take(ckpt, "grpo-bbbb2222", "grpo-bbbb2222")
    _events(ckpt / "rladapt-metrics", {3: 3.0, 4: 4.0, 5: 5.0, 6: 6.0})

    own_a = read_run_metrics(store.get("grpo-aaaa1111"))
    assert own_a.series["reward_mean"] == pytest.approx({1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4})
    own_b = read_run_metrics(store.get("grpo-bbbb2222"))
    assert own_b.series["reward_mean"] == pytest.approx({3: 3.0, 4: 4.0, 5: 5.0, 6: 6.0})
    # the files themselves are untouched: a directory without the holders' record is read whole, as before
    assert len(list((ckpt / "rladapt-metrics").glob("events.out.tfevents.*"))) == 2
    (ckpt / ".rladapt-holders.jsonl").unlink()
    whole = read_run_metrics(store.get("grpo-aaaa1111"))
    assert whole.series["reward_mean"] == pytest.approx({1: 0.1, 2: 0.2, 3: 3.0, 4: 4.0, 5: 5.0, 6: 6.0})


def test_the_steps_a_job_failed_to_load_reach_the_run_s_record(tmp_path: Path) -> None:
    """The job marks them in the checkpoint directory (it never writes the record); the runner copies them in
    when it looks at the run, and leaves the record as it was when nothing changed."""
    from rladapt.launch import note_bad_steps
    from rladapt.plugins.checkpoints import Checkpoint, mark_bad

    ckpt = tmp_path / "ckpt"
    (ckpt / "step_2").mkdir(parents=True)
    store = RunStore(tmp_path / "home")
    run = store.create(
        run_id="grpo-cccc3333", launcher="local", framework="nemo-rl", version="0.7.0", job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=ARTIFACTS,
        checkpoint=CheckpointFacts(dir=str(ckpt), model="m", world_size=1),
    )  # fmt: skip
    note_bad_steps(run)
    assert store.get(run.id).record.bad_steps == () and "bad_steps" not in store.get(run.id).record.to_json()
    reason = "the first start resumed from it and exited with 1 before committing a later step"
    mark_bad(ckpt, Checkpoint(2, ckpt / "step_2", True), reason, "grpo-cccc3333")
    note_bad_steps(run)
    recorded = store.get(run.id).record
    assert [(b.step, b.path, b.reason, b.attempt) for b in recorded.bad_steps] == [
        (2, "step_2", reason, "grpo-cccc3333")
    ]
    assert (
        recorded.to_json()["bad_steps"][0]["reason"] == reason
        and "id" not in recorded.to_json()["bad_steps"][0]
    )
    before = (run.dir / "run.json").read_text()
    again = store.get(run.id)
    note_bad_steps(again)
    assert (run.dir / "run.json").read_text() == before


def test_an_event_file_opened_a_little_before_the_take_is_the_first_holder_s(tmp_path: Path) -> None:
    """The trainer may run on another host than the job's bootstrap, its clock behind: its first event file then
    names a second before the take. It is still the run's own, not another's and not dropped."""
    from rladapt.metrics import read_run_metrics
    from rladapt.runs.owner import HOLDERS_FILE

    ckpt = tmp_path / "ckpt"
    store = RunStore(tmp_path / "home")
    store.create(
        run_id="grpo-dddd4444", launcher="local", framework="trl", version="1.16.0", job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=ARTIFACTS,
        checkpoint=CheckpointFacts(dir=str(ckpt), model="m", world_size=1),
    )  # fmt: skip
    _events(ckpt / "rladapt-metrics", {1: 0.1, 2: 0.2})
    # the take, as the bootstrap on the other host recorded it: 5 s after the trainer's clock opened the file
    stamp = int(next((ckpt / "rladapt-metrics").glob("events.out.tfevents.*")).name.split(".")[3])
    line = {"run": "grpo-dddd4444", "attempt": "grpo-dddd4444", "taken": stamp + 5.0}
    (ckpt / HOLDERS_FILE).write_text(json.dumps(line) + "\n")
    own = read_run_metrics(store.get("grpo-dddd4444"))
    assert own.series["reward_mean"] == pytest.approx({1: 0.1, 2: 0.2})
