"""Triage of a full disk on the output torch and safetensors really print when a save hits ENOSPC.

The fixtures under ``fixtures/`` were captured on this machine: ``torch.save`` (zip and legacy format, torch
2.13.0) and ``safetensors.torch.save_file`` (safetensors 0.8.0) of a tensor too big for a 64 KiB tmpfs (paths of
the machine replaced by ``/opt/venv`` and ``/ckpt``). Where a tmpfs can be mounted in a namespace
(``unshare -rm``), the zip case is also produced live, and the file it leaves is checked to be found cut.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.plugins.loadable import problem
from rladapt.triage import Match, triage
from rladapt.triage.catalogue import BUILTIN

from .test_trl_failures import _can_mount_in_a_namespace

FIXTURES = Path(__file__).parent / "fixtures"


def run(text: str) -> dict[str, Match]:
    return {m.signature: m for m in triage(text.splitlines(), BUILTIN, None, None)}


@pytest.mark.parametrize(
    ("fixture", "signature", "evidence"),
    [
        (
            "torch_2.13_save_enospc.txt",
            "torch-save-write-failed",
            [
                # the torch.save frame the libstdc++ message must be near, then the two messages
                "zip_file.write_record(name, storage, num_bytes)",
                "RuntimeError: basic_ios::clear: iostream error",
                "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598",
            ],
        ),
        (
            "torch_2.13_save_enospc_last_record.txt",
            "torch-save-write-failed",
            ["self.file_like.write_end_of_file()", "RuntimeError: basic_ios::clear: iostream error"],
        ),
        (
            "torch_2.13_legacy_save_enospc.txt",
            "disk-full",
            ["RuntimeError: write(): fd 3 failed with No space left on device"],
        ),
        (
            "safetensors_0.8.0_save_enospc.txt",
            "disk-full",
            [
                "safetensors._safetensors_rust.SafetensorError: Error while serializing: I/O error: No space left "
                "on device (os error 28)"
            ],
        ),
    ],
)
def test_the_real_full_disk_output_is_triaged(fixture: str, signature: str, evidence: list[str]) -> None:
    found = run((FIXTURES / fixture).read_text())
    assert list(found) == [signature]
    assert [line.strip() for line in found[signature].evidence] == evidence
    assert "spec.checkpoint.dir" in found[signature].fix


def test_an_iostream_error_elsewhere_is_not_taken_for_a_torch_save() -> None:
    # libstdc++'s text without torch.save's frames around it (another C++ extension's failure)
    log = "loading vocabulary\nterminate called: basic_ios::clear: iostream error\n"
    assert "torch-save-write-failed" not in run(log)


@pytest.mark.skipif(
    not _can_mount_in_a_namespace(),
    reason="a full disk needs a tiny tmpfs, mounted in a user and mount namespace (unshare -rm), not allowed here",
)
def test_a_live_torch_save_into_a_full_tmpfs(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    save = 'import sys, torch; torch.save({"w": torch.zeros(100_000)}, sys.argv[1] + "/optimizer.pt")'
    mount = 'mount -t tmpfs -o size=64k tmpfs "$0" && "$@"; code=$?; cp "$0/optimizer.pt" "$0-left-optimizer.pt"; exit $code'
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", mount, str(full), sys.executable, "-c", save, str(full)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert list(run(proc.stderr)) == ["torch-save-write-failed"], proc.stderr
    # the file the failed save left is cut: the checkpoint scan's content check says so
    assert problem(Path(f"{full}-left-optimizer.pt")) == "zip central directory missing (file cut?)"


def _dev_full() -> bool:
    import stat

    try:
        return stat.S_ISCHR(Path("/dev/full").stat().st_mode)
    except OSError:
        return False


@pytest.mark.skipif(not _dev_full(), reason="no /dev/full character device (every write to it is ENOSPC)")
@pytest.mark.parametrize(
    ("zip_format", "signature"), [(True, "torch-save-write-failed"), (False, "disk-full")]
)
def test_a_live_torch_save_into_dev_full(zip_format: bool, signature: str) -> None:
    """ENOSPC without root or a mount: every write to /dev/full fails with it. torch.save opens the path and
    writes in place (its zip writer's std::ofstream, the legacy format's file object), so the device stays a
    device. (safetensors' save_file is not run here: as root it replaces the path instead of writing into it.)"""
    save = (
        "import sys, torch; "
        f"torch.save({{'w': torch.zeros(100_000)}}, '/dev/full', _use_new_zipfile_serialization={zip_format})"
    )
    proc = subprocess.run(
        [sys.executable, "-c", save], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode != 0
    assert list(run(proc.stderr)) == [signature], proc.stderr
    assert _dev_full()
