"""A table of user mistakes (issue 9, "No internal errors on user input"): each one, through the real CLI in a
subprocess with a real spec file, is exit 2 with a message naming the field or argument, never a traceback or an
"internal error", and leaves nothing behind: no run directory, no artifact, no file in the output location.

A case is a command line (``{spec}`` is the GSM8K example, ``{tmp}`` the test's own directory), the spec files to
write first, what stderr must name, and what to set up in ``{tmp}`` (a FIFO, a device) before it runs.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rladapt.runs import spec_hash
from tests.cli.test_cli import GSM8K, rladapt

EXAMPLE = Path(GSM8K).read_text(encoding="utf-8")
DEEP = 20_000
NESTED = "[" * DEEP + "]" * DEEP
#: What a value with newlines would print as extra lines of the error if it were not quoted.
FORGED_LINES = ("  - spec.x: forged", "error: forged")
FORGERY = "\n  - spec.x: forged\nerror: forged"
#: The job's interpreter for local launches: this one, which has rladapt (the launcher's preflight checks it).
JOB_PYTHON = f"spec.runtime.python={sys.executable}"


def _fifo(tmp: Path) -> None:
    os.mkfifo(tmp / "out.fifo")


def _device(tmp: Path) -> None:
    # A null device of the test's own: the machine's /dev/null is never aimed at (old code replaced the target).
    try:
        os.mknod(tmp / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    #: What stderr must contain: the field or argument the mistake is in.
    names: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None


def _verbs(argv: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """The same spec mistake through validate, render and launch (local: a launch that would really start)."""
    return [
        ("validate", ("validate", *argv)),
        ("render", ("render", "-f", "verl", *argv)),
        ("launch", ("launch", "-f", "verl", *argv, JOB_PYTHON, "-l", "local")),
    ]


def _spec_cases(
    name: str, argv: tuple[str, ...], names: tuple[str, ...], files: dict[str, str] | None = None
) -> list[Case]:
    return [Case(f"{name}-{verb}", args, names, files=files or {}) for verb, args in _verbs(argv)]


CASES: list[Case] = [
    # --- self-referential YAML anchors, in an override and in the file
    *_spec_cases("anchor-list-override", ("{spec}", "spec.training.global_batch=&a [*a]"), ("spec.training.global_batch",)),
    *_spec_cases("anchor-map-override", ("{spec}", "spec.env=&a {A: *a}"), ("spec.env",)),
    *_spec_cases(
        "anchor-map-file", ("{tmp}/anchor.yaml",), ("spec.env",),
        files={"anchor.yaml": EXAMPLE + "  env: &a {A: *a}\n"},
    ),
    # --- 20,000 nested lists, in an override and in the file
    *_spec_cases("nesting-override", ("{spec}", f"spec.data.train={NESTED}"), ("spec.data.train",)),
    *_spec_cases(
        "nesting-file", ("{tmp}/deep.yaml",), ("spec.data.train",),
        files={"deep.yaml": EXAMPLE.replace("train: [data/gsm8k/train.parquet]", f"train: {NESTED}")},
    ),
    # --- a lone surrogate in string fields (a YAML escape: the text itself is plain ASCII)
    *_spec_cases("surrogate-model-path", ("{spec}", r'spec.model.path="\ud800"'), ("spec.model.path",)),
    *_spec_cases("surrogate-env", ("{spec}", r'spec.env={A: "x\ud800"}'), ("spec.env.A",)),
    *_spec_cases("surrogate-data", ("{spec}", r'spec.data.train=["\udfff.parquet"]'), ("spec.data.train",)),
    *_spec_cases("surrogate-label", ("{spec}", r'metadata.labels={team: "\ud800"}'), ("metadata.labels.team",)),
    *_spec_cases(
        "surrogate-file", ("{tmp}/surrogate.yaml",), ("spec.model.path",),
        files={"surrogate.yaml": EXAMPLE.replace("path: Qwen/Qwen2.5-3B-Instruct", r'path: "Qwen\ud800"')},
    ),
    # --- output files: a missing directory, a FIFO, a device
    Case("pin-missing-dir", ("pin", "-f", "verl", "-o", "{tmp}/no-dir/pin.txt"), ("'{tmp}/no-dir'", "does not exist")),
    Case("matrix-missing-dir", ("matrix", "--write", "{tmp}/no-dir/m.md"), ("'{tmp}/no-dir'", "does not exist")),
    Case("matrix-show-missing-dir", ("matrix", "show", "--write", "{tmp}/no-dir/m.md"), ("'{tmp}/no-dir'", "does not exist")),
    Case("pin-fifo", ("pin", "-f", "verl", "-o", "{tmp}/out.fifo"), ("'{tmp}/out.fifo'", "not a regular file"), setup=_fifo),
    Case("matrix-fifo", ("matrix", "--write", "{tmp}/out.fifo"), ("'{tmp}/out.fifo'", "not a regular file"), setup=_fifo),
    Case("pin-device", ("pin", "-f", "verl", "-o", "{tmp}/null"), ("'{tmp}/null'", "not a regular file"), setup=_device),
    Case("matrix-device", ("matrix", "--write", "{tmp}/null"), ("'{tmp}/null'", "not a regular file"), setup=_device),
    # --- non-finite numbers in launcher options, from -o and from the spec
    Case(
        "stop-grace-nan-render-json",
        ("render", "-f", "verl", "{spec}", "-l", "local", "-o", "stop_grace=nan", "--format", "json"),
        ("local launcher option stop_grace='nan'",),
    ),
    Case(
        "stop-grace-nan-launch",
        ("launch", "-f", "verl", "{spec}", "-l", "local", "-o", "stop_grace=nan"),
        ("local launcher option stop_grace='nan'",),
    ),
    Case(
        "entrypoint-memory-inf-render-json",
        ("render", "-f", "verl", "{spec}", "-l", "ray", "-o", "entrypoint_memory=inf", "--format", "json"),
        ("ray launcher option entrypoint_memory='inf'",),
    ),
    Case(
        "stop-grace-yaml-inf",
        ("render", "-f", "verl", "{spec}", "spec.launcher.local.stop_grace=.inf", "-l", "local", "--format", "json"),
        ("spec.launcher.local.stop_grace",),
    ),
    Case(
        "entrypoint-memory-yaml-nan-file",
        ("render", "-f", "verl", "{tmp}/nan.yaml", "-l", "ray", "--format", "json"),
        ("spec.launcher.ray.entrypoint_memory",),
        files={"nan.yaml": EXAMPLE + "  launcher: {ray: {entrypoint_memory: .nan}}\n"},
    ),
]  # fmt: skip


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_user_mistake_is_exit_2_naming_it_and_leaves_nothing_behind(case: Case, tmp_path: Path) -> None:
    for name, text in case.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    if case.setup is not None:
        case.setup(tmp_path)
    before = _listing(tmp_path)
    runs = Path(os.environ["RLADAPT_HOME"]) / "runs"
    argv = [arg.replace("{spec}", GSM8K).replace("{tmp}", str(tmp_path)) for arg in case.argv]
    res = rladapt(*argv, cwd=tmp_path)
    try:
        assert res.returncode == 2, f"exit {res.returncode}: {res.stderr[-2000:]}"
        assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr[-2000:]
        for needle in case.names:
            assert needle.replace("{tmp}", str(tmp_path)) in res.stderr, res.stderr[-2000:]
        assert _listing(tmp_path) == before  # no output file, no temp file, the FIFO or device untouched
        if case.setup is _fifo:
            assert stat.S_ISFIFO((tmp_path / "out.fifo").lstat().st_mode)
        if case.setup is _device:
            assert stat.S_ISCHR((tmp_path / "null").lstat().st_mode)
        assert _listing(runs) == set(), "a refused launch left a run behind"
    finally:
        # a mistake that got through started a real job: stop it, whatever the assertions said
        for run_dir in runs.iterdir() if runs.is_dir() else ():
            rladapt("stop", run_dir.name)


#: Error messages that embed what the user typed, each with a value whose newlines would forge lines.
QUOTING = [
    ("field-value", ("validate", "{spec}", f"spec.algorithm.name={FORGERY!r}")),
    ("field-value-int", ("validate", "{spec}", f"spec.training.global_batch={FORGERY!r}")),
    ("override-key", ("validate", "{spec}", f"spec.training.global_batch{FORGERY}=1")),
    ("spec-file-name", ("validate", "{tmp}/job" + FORGERY + ".yaml", "spec.training.global_batch=x")),
    ("missing-spec-file", ("validate", "{tmp}/none" + FORGERY + ".yaml")),
    ("framework-version", ("render", "-f", "verl==0.0" + FORGERY, "{spec}")),
    ("framework-name", ("render", "-f", "verl" + FORGERY, "{spec}")),
    ("launcher-name", ("render", "-f", "verl", "{spec}", "-l", "x" + FORGERY)),
    ("launcher-option", ("render", "-f", "verl", "{spec}", "-l", "slurm", "-o", "partition=a" + FORGERY)),
    ("run-id", ("status", "x" + FORGERY)),
    ("pin-file", ("check", "{tmp}/pin" + FORGERY)),
    ("pin-output", ("pin", "-f", "verl", "-o", "{tmp}/d" + FORGERY + "/p.txt")),
    ("pin-file-content", ("check", "{tmp}/bad" + FORGERY + ".txt")),
    ("check-spec-name", ("check", "--no-env", "{tmp}/good.txt", "{tmp}/none" + FORGERY + ".yaml")),
]  # fmt: skip


@pytest.mark.parametrize("argv", [argv for _, argv in QUOTING], ids=[name for name, _ in QUOTING])
def test_a_newline_in_a_value_cannot_forge_an_error_line(argv: tuple[str, ...], tmp_path: Path) -> None:
    """Values in messages are quoted (``'a\\nb'``): whatever the user typed stays on the line that shows it."""
    args = [arg.replace("{spec}", GSM8K).replace("{tmp}", str(tmp_path)) for arg in argv]
    if argv[1].startswith("{tmp}/job"):
        Path(args[1]).write_text(EXAMPLE, encoding="utf-8")
    # pin files for `check`: one that is not a pin (its name printed with the complaint), one that is good
    (tmp_path / f"bad{FORGERY}.txt").write_text("not a requirement !\n", encoding="utf-8")
    good = rladapt("pin", "-f", "verl", "-o", str(tmp_path / "good.txt")) if "check" in argv else None
    assert good is None or good.returncode == 0, good.stderr
    res = rladapt(*args, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    forged = [line for line in res.stderr.splitlines() if line.startswith(FORGED_LINES)]
    assert forged == [], res.stderr


def test_a_spec_read_from_a_pipe_is_read_once_and_its_text_is_what_is_hashed(tmp_path: Path) -> None:
    """``launch -f verl <(cat job.yaml)``: the recorded hash is that of the text launched, not of "" (the pipe
    read a second time). Real bash process substitution, a real local launch (stopped at once)."""
    script = 'exec "$0" -m rladapt.cli launch -f verl <(cat "$1") "$2" -l local -o stop_grace=0'
    for name in ("data/gsm8k/train.parquet", "data/gsm8k/test.parquet", "rewards/gsm8k.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)  # the files the example names: the local
        (tmp_path / name).write_text("")  # launcher refuses a job whose files are missing
    res = subprocess.run(
        ["bash", "-c", script, sys.executable, GSM8K, JOB_PYTHON],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip().splitlines()[-1]
    try:
        record = json.loads((Path(os.environ["RLADAPT_HOME"]) / "runs" / run_id / "run.json").read_text())
        assert record["spec_hash"] == spec_hash(EXAMPLE, [JOB_PYTHON]), (
            "the hash is not that of the text launched"
        )
    finally:
        rladapt("stop", run_id)
