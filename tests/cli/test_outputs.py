"""Files the CLI writes (``pin -o``, ``matrix show --write``) and JSON it prints: complete or absent, always JSON.

Every output file goes through ``rladapt.files.write_text``: a missing directory is a usage error naming it,
a FIFO or a device at the target is refused (never replaced by a regular file: ``-o /dev/null`` is refused too,
leave ``-o`` out to print to stdout), and a full disk is exit 1 with a clear message and no temporary file.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import GSM8K, rladapt
from tests.conftest import REPO

#: The verbs that write a file, each as the arguments before the target path.
WRITERS = {
    "pin": ("pin", "-f", "verl==0.9.1", "-o"),
    "matrix show": ("matrix", "show", "--write"),
    "matrix": ("matrix", "--write"),  # before `matrix show`, and still
}


def assert_clean_refusal(res: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert res.returncode == code, (res.returncode, res.stderr)
    for needle in needles:
        assert needle in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1, res.stderr  # one error line, nothing else


@pytest.mark.parametrize("verb", WRITERS)
def test_an_output_into_a_missing_directory_is_a_usage_error_naming_it(verb: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    res = rladapt(*WRITERS[verb], str(missing / "out.txt"))
    assert_clean_refusal(res, 2, f"the directory {str(missing)!r} does not exist")
    assert list(tmp_path.iterdir()) == []  # nor was the directory made


@pytest.mark.parametrize("verb", WRITERS)
def test_an_output_onto_a_fifo_is_refused_and_the_fifo_stays(verb: str, tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    res = rladapt(*WRITERS[verb], str(fifo))
    assert_clean_refusal(res, 2, repr(str(fifo)), "is not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # it used to be replaced by a regular file
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]  # no temp file


@pytest.mark.parametrize("verb", WRITERS)
def test_an_output_onto_a_device_is_refused_and_the_device_stays(verb: str, tmp_path: Path) -> None:
    # A null device of the test's own (a real character device, 1:3 as /dev/null): the machine's /dev/null is
    # never the target, since the code this guards against would replace it with a regular file.
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    res = rladapt(*WRITERS[verb], str(device))
    assert_clean_refusal(res, 2, repr(str(device)), "is not a regular file")
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


@pytest.mark.parametrize("verb", WRITERS)
def test_an_output_onto_a_full_disk_is_exit_1_and_leaves_no_temp_file(verb: str, tmp_path: Path) -> None:
    """A real full file system: a 4 KiB tmpfs, filled, mounted in a mount namespace of its own (gone with it)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    full = tmp_path / "full"
    full.mkdir()
    script = (
        'mount -t tmpfs -o size=4k tmpfs "$1" || exit 97\n'
        'head -c 65536 /dev/zero > "$1/filler" 2>/dev/null\n'
        'shift\n"$@"\nrc=$?\nls -A "$OUT_DIR"\nexit $rc\n'
    )
    target = full / "out.txt"
    res = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(full),
         sys.executable, "-m", "rladapt.cli", *WRITERS[verb], str(target)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "OUT_DIR": str(full)},
    )  # fmt: skip
    if res.returncode == 97 or "unshare failed" in res.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    assert_clean_refusal(res, 1, repr(str(target)), "no space left on the device")
    assert res.stdout.split() == ["filler"]  # what the full file system holds: no out.txt, no temp file


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN and Infinity, as every JSON parser but Python's does."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "args",
    [
        ("plugins", "--format", "json"),
        ("render", "-f", "verl", GSM8K, "--format", "json"),
        ("render", "-f", "verl", GSM8K, "-l", "local", "--format", "json"),
        ("render", "-f", "verl", GSM8K, "-l", "ray", "-o", "entrypoint_memory=1e9", "--format", "json"),
        ("render", "-f", "verl", GSM8K, "-l", "slurm", "--format", "json"),
        ("render", "-f", "verl", GSM8K, "-l", "kubernetes", "-o", "image=r/rl:1", "--format", "json"),
    ],
    ids=lambda args: " ".join(a for a in args if a != GSM8K),
)
def test_every_json_the_cli_prints_is_json(args: tuple[str, ...]) -> None:
    res = rladapt(*args)
    assert res.returncode == 0, res.stderr
    strict_json(res.stdout)


@pytest.mark.parametrize(
    ("launcher", "option"),
    [("local", "stop_grace=nan"), ("ray", "entrypoint_memory=inf"), ("ray", "entrypoint_num_gpus=1e999")],
)
def test_render_json_with_a_non_finite_option_is_refused_naming_it(launcher: str, option: str) -> None:
    res = rladapt("render", "-f", "verl", GSM8K, "-l", launcher, "-o", option, "--format", "json")
    name, _, value = option.partition("=")
    assert_clean_refusal(res, 2, f"{launcher} launcher option {name}={value!r}: expected")
    assert res.stdout == ""


def test_render_json_refuses_a_non_finite_number_a_plugin_computed() -> None:
    """The one dump: whatever put infinity into a document (here a plugin's overflow), it is not printed."""
    res = subprocess.run(
        [sys.executable, "-m", "tests.cli.overflow_launcher",
         "render", "-f", "verl", GSM8K, "-l", "overflow", "--format", "json"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert_clean_refusal(res, 2, "cannot print the render as JSON: 'request.memory' is inf")
    assert res.stdout == ""  # not a document with Infinity in it
