"""The wheel: every sub-package and the compatibility matrix data are real files in it, and it runs on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        timeout=300,
    )
    return next(out.glob("rladapt-*.whl"))


def test_wheel_holds_every_module_and_the_matrix(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for top, pkg in (
        ("primitives", "rladapt/primitives"),
        ("plugins", "rladapt/plugins"),
        ("adapters", "rladapt/adapters"),
        ("compat-matrix", "rladapt/compat/matrix"),
    ):
        for path in (REPO / top).rglob("*"):
            if path.suffix in {".py", ".toml", ".json"} and "__pycache__" not in path.parts:
                expected.add(f"{pkg}/{path.relative_to(REPO / top).as_posix()}")
    for path in (REPO / "rladapt").rglob("*.py"):
        rel = path.relative_to(REPO)
        if not any(p.is_symlink() for p in [REPO / Path(*rel.parts[:i]) for i in range(1, len(rel.parts))]):
            expected.add(rel.as_posix())
    assert not expected - names, sorted(expected - names)
    assert "rladapt/py.typed" in names


def test_installed_wheel_runs_without_the_source_tree(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import rladapt.primitives as p; print(p.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(target))
    res = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "plugins", "--format", "json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["broken"] == []
    for framework in ("verl", "openrlhf", "nemo-rl"):
        assert report["frameworks"][framework]["versions"], framework
