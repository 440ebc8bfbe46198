"""The packaging tests' shared fixture: the wheel a checkout builds, as Git for Windows checks it out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _tracked() -> list[str]:
    return subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\0")[:-1]


def _checkout_without_symlinks(dest: Path) -> Path:
    """The working tree as Git for Windows checks it out by default (``core.symlinks=false``): a link becomes a
    small text file holding its target."""
    for rel in _tracked():
        src = REPO / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet committed
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.write_text(os.readlink(src), encoding="utf-8")
        else:
            shutil.copyfile(src, out)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    checkout = _checkout_without_symlinks(tmp_path_factory.mktemp("nosymlinks"))
    assert not any(p.is_symlink() for p in checkout.rglob("*"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(checkout),
        ],
        check=True,
        timeout=300,
    )
    return next(out.glob("rladapt-*.whl"))
