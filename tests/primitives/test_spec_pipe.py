"""A spec read from a pipe (``rladapt launch -f verl <(cat job.yaml)``) is read once: the hash recorded is the
hash of the text that was launched (issue 9). Real pipes, through the runner and through the CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rladapt.launch import Runner
from rladapt.plugins import load_registry
from rladapt.primitives import SpecError, load_job, read_spec_text
from rladapt.primitives.loading import MAX_SPEC_BYTES
from rladapt.runs import RunStore
from tests.conftest import REPO
from tests.primitives.test_loading import MINIMAL


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@contextmanager
def pipe_of(text: str) -> Iterator[int]:
    """The read end of a real pipe carrying TEXT (written by a thread: a pipe buffer holds only 64 KiB)."""
    read, write = os.pipe()

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError), os.fdopen(write, "w") as out:
            out.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        yield read
    finally:
        os.close(read)  # first: a writer blocked on a full pipe gets EPIPE instead of waiting forever
        writer.join()


def test_runner_hashes_the_text_it_loaded_from_a_pipe(tmp_path: Path) -> None:
    runner = Runner(load_registry(), RunStore(tmp_path / "home"))
    with pipe_of(MINIMAL) as fd:
        planned = runner.dryrun(f"/dev/fd/{fd}", framework="verl")
    assert planned.spec_hash == sha256(MINIMAL)
    assert planned.rendered.native.job_name == "tiny"


def test_read_spec_text_and_load_job_read_once(tmp_path: Path) -> None:
    with pipe_of(MINIMAL) as fd:
        text = read_spec_text(f"/dev/fd/{fd}")
        job = load_job(f"/dev/fd/{fd}", text=text)  # the pipe is empty now: the text given is what loads
    assert text == MINIMAL and job.name == "tiny"


def test_a_pipe_over_the_byte_limit_is_refused_after_the_limit() -> None:
    with pipe_of(MINIMAL + "#" * (5 * MAX_SPEC_BYTES)) as fd, pytest.raises(SpecError) as info:
        read_spec_text(f"/dev/fd/{fd}")
    assert str(info.value.problems[0]) == (
        f"<root>: the spec file is larger than the limit of 4 MiB on a spec; expected at most {MAX_SPEC_BYTES} bytes"
    )


def test_cli_launch_dry_run_and_validate_from_a_pipe(tmp_path: Path) -> None:
    (tmp_path / "train.parquet").write_bytes(b"")  # the files the spec names: validate checks they exist
    (tmp_path / "reward.py").write_text("")
    for args in (["validate"], ["launch", "-f", "verl", "--dry-run"]):
        with pipe_of(MINIMAL) as fd:
            out = subprocess.run(
                [sys.executable, "-m", "rladapt.cli", *args, f"/dev/fd/{fd}"],
                capture_output=True,
                text=True,
                pass_fds=(fd,),
                cwd=tmp_path,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                timeout=120,
            )
        assert out.returncode == 0, out.stderr
        assert "tiny" in out.stdout


def test_cli_launch_records_the_hash_of_the_piped_text(tmp_path: Path) -> None:
    # An interpreter that does not exist: the launch is recorded, then refused by the local preflight, and no
    # process starts. The record is what is checked.
    override = "spec.runtime.python=/nonexistent/python3"
    home = tmp_path / "home"
    with pipe_of(MINIMAL) as fd:
        out = subprocess.run(
            [sys.executable, "-m", "rladapt.cli", "launch", "-f", "verl", f"/dev/fd/{fd}", override],
            capture_output=True,
            text=True,
            pass_fds=(fd,),
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO), "RLADAPT_HOME": str(home)},
            timeout=120,
        )
    assert "Traceback" not in out.stderr
    (record,) = [json.loads(p.read_text()) for p in home.glob("runs/*/run.json")]
    expected = hashlib.sha256(MINIMAL.encode() + b"\0" + override.encode()).hexdigest()
    assert record["spec_hash"] == f"sha256:{expected}", out.stderr
