"""Real framework wheels for conformance tests: downloaded once from PyPI, cached under ``.cache/wheels/``.

Safe under pytest-xdist: every download and extraction holds an exclusive file lock, and a finished extraction
is marked by a stamp file, so concurrent workers wait for the first one and then reuse its result.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("RLADAPT_WHEEL_CACHE", REPO / ".cache" / "wheels"))


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _normalized(package: str) -> str:
    return package.lower().replace("-", "_")


def _find(package: str, version: str) -> Path | None:
    matches = sorted(CACHE.glob(f"{_normalized(package)}-{version}-*.whl"))
    return matches[0] if matches else None


def download_wheel(package: str, version: str) -> Path:
    """The wheel of ``package==version`` (``pip download --no-deps``; reused when already cached)."""
    with file_lock(CACHE / f".{_normalized(package)}-{version}.lock"):
        found = _find(package, version)
        if found is not None:
            return found
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(CACHE),
            f"{package}=={version}",
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = _find(package, version)
        if result.returncode != 0 or found is None:
            raise RuntimeError(f"pip download {package}=={version} failed:\n{result.stderr[-2000:]}")
        return found


def extract(wheel: Path, dest: Path) -> Path:
    """Unzip ``wheel`` into ``dest`` once (a wheel is a zip file; nothing of it is imported)."""
    stamp = dest / ".extracted"
    with file_lock(dest.parent / f".{dest.name}.lock"):
        if stamp.is_file() and stamp.read_text() == wheel.name:
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(dest)
        stamp.write_text(wheel.name)
    return dest
