"""The run store (run.json records found from any shell) and the patch bootstrap."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.bootstrap import FILES_ENV, LITERAL_ENV, PATCHES_ENV, json_env_value
from rladapt.plugins import Artifacts, RunStatus
from rladapt.primitives.errors import UsageError
from rladapt.runs import RunStore, new_run_id, spec_hash, state_home

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
