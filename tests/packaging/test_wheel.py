"""File path = module path: the wheel built from a checkout without symbolic links holds every module and the
matrix data and runs on its own; coverage measures every module; every module imports without shadowing another
name."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import rladapt
from tests.conftest import REPO

PACKAGE = REPO / "rladapt"


def test_no_module_lives_behind_a_link() -> None:
    linked = [p for p in PACKAGE.rglob("*") if p.is_symlink()]
    assert linked == []


def test_wheel_from_a_checkout_without_symlinks_holds_every_module_and_the_matrix(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        p.relative_to(REPO).as_posix()
        for p in PACKAGE.rglob("*")
        if p.suffix in {".py", ".toml", ".json", ".txt"} and "__pycache__" not in p.parts
    }
    assert {"rladapt/primitives/spec.py", "rladapt/compat/matrix/verl.toml"} <= expected
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
    for framework in ("verl", "openrlhf", "nemo-rl", "trl"):
        assert report["frameworks"][framework]["versions"], framework


def test_coverage_measures_every_module(tmp_path: Path) -> None:
    """``pytest --cov=rladapt`` sees the whole package: no module is resolved outside ``rladapt/``."""
    pytest.importorskip("coverage")
    data = tmp_path / ".coverage"
    env = {**os.environ, "COVERAGE_FILE": str(data)}
    run = [sys.executable, "-m", "coverage"]
    subprocess.run(
        [*run, "run", "--source=rladapt", "-m", "rladapt.cli", "plugins", "--format", "json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=300,
    )
    report = tmp_path / "coverage.json"
    subprocess.run([*run, "json", "-o", str(report)], env=env, cwd=REPO, capture_output=True, check=True)
    measured = {Path(name).resolve() for name in json.loads(report.read_text())["files"]}
    modules = {p.resolve() for p in PACKAGE.rglob("*.py") if p.stat().st_size}
    assert not modules - measured, sorted(str(p.relative_to(REPO)) for p in modules - measured)


def test_importing_every_module_shadows_no_name() -> None:
    """``import rladapt.compat.matrix`` (autodoc, import-everything tools) once replaced ``compat.matrix()``."""
    for info in pkgutil.walk_packages(rladapt.__path__, "rladapt."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    importlib.import_module("rladapt.compat.matrix")
    from rladapt.plugins import load_registry

    registry = load_registry(use_entry_points=False)
    for name, entry in registry.frameworks.items():
        assert entry.obj.versions(), name
