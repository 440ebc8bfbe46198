"""The kit as a plugin author meets it: rladapt and examples/plugin pip-installed, then the example's own tests.

Nothing here imports the kit in-process: pytest must find the fixtures through rladapt's ``pytest11`` entry point
and the example adapter through its ``rladapt`` entry point, as in the plugin author's checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

_IGNORE = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache")


def pip_install(target: Path, *sources: Path) -> None:
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"),
            *("--disable-pip-version-check", "--target", str(target), *map(str, sources)),
        ],
        check=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rladapt (this tree) and the example plugin installed into one directory, from private copies (pip
    builds in the source tree; parallel workers must not race on its build/ folder)."""
    src = tmp_path_factory.mktemp("src")
    rladapt = src / "rladapt"
    rladapt.mkdir()
    shutil.copytree(REPO / "rladapt", rladapt / "rladapt", ignore=_IGNORE)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, rladapt / name)
    plugin = src / "plugin"
    shutil.copytree(REPO / "examples" / "plugin", plugin, ignore=_IGNORE)
    target = tmp_path_factory.mktemp("site")
    pip_install(target, rladapt, plugin)
    return target


def run_pytest(site: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    # -P: the current directory is not put on sys.path, so rladapt is imported from the install, not this tree
    return subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=300,
    )


def test_installed_rladapt_registers_its_pytest_plugin(site: Path) -> None:
    out = run_pytest(site, "--trace-config", "--collect-only", "-q", "examples/plugin/tests")
    assert out.returncode == 0, out.stdout + out.stderr
    plugin_lines = [
        line for line in out.stdout.splitlines() if "rladapt.plugins.testing.pytest_plugin" in line
    ]
    assert plugin_lines and str(site) in plugin_lines[0], out.stdout[-3000:]


def test_example_plugin_tests_pass_through_the_kit(site: Path) -> None:
    out = run_pytest(site, "-v", "examples/plugin/tests")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    for test_id in (
        "TestEchoRL::test_translate[1.0.0-echo-grpo] PASSED",
        "TestEchoRL::test_translate[1.1.0-echo-grpo] PASSED",
        "TestEchoRL::test_render_through_host[1.1.0-echo-grpo] PASSED",
        "TestEchoRL::test_every_version_translates_a_spec[1.0.0] PASSED",
        "TestLocalRunsEchoRL::test_render_is_pure[echo-rl-echo-grpo] PASSED",
        "TestEchoRLPatches::test_patch[echo-rl-quiet-logs] PASSED",
        "test_blocked_plugin_registers_nothing PASSED",
        "test_a_patch_applies_from_its_version_on PASSED",
    ):
        assert test_id in out.stdout, out.stdout[-4000:]
