"""`rladapt pin` and `rladapt check`, as a business repo uses them in its own CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.test_cli import rladapt
from tests.conftest import GPU_EXAMPLES, REPO
from tests.support.wheels import download_wheel

# the TRL example uses HF rollout, which no pinned verl release expresses
SPECS = [str(p) for p in GPU_EXAMPLES]


def test_pin_writes_constraints_from_the_matrix(tmp_path: Path) -> None:
    out = tmp_path / "rladapt-pin.txt"
    res = rladapt("pin", "-f", "verl==0.9.1", "-o", str(out))
    assert res.returncode == 0, res.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "# rladapt-pin: framework=verl version=0.9.1 rladapt=0.1.0"
    assert "verl==0.9.1" in lines and "vllm==0.24.0" in lines and "torch==2.11.0" in lines
    assert "ray>=2.41.0" in lines  # a range the matrix leaves open stays a range
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rladapt-pin.txt"]  # no temp file left behind
    # nemo-rl has no PyPI release: nothing to pin for the framework itself, only what it was tested with
    res = rladapt("pin", "-f", "nemo-rl==0.7.0")
    assert res.returncode == 0
    assert "nemo-rl==" not in res.stdout and "is not installed from PyPI" in res.stdout


def test_pin_outside_the_matrix_is_a_usage_error(tmp_path: Path) -> None:
    res = rladapt("pin", "-f", "verl==0.4.1", "-o", str(tmp_path / "pin.txt"))
    assert res.returncode == 2 and "verl==0.4.1 is outside the compatibility matrix" in res.stderr
    assert not list(tmp_path.iterdir())


def test_check_specs_against_the_pin(tmp_path: Path) -> None:
    new, old = tmp_path / "new.txt", tmp_path / "old.txt"
    assert rladapt("pin", "-f", "verl==0.9.1", "-o", str(new)).returncode == 0
    assert rladapt("pin", "-f", "verl==0.7.1", "-o", str(old)).returncode == 0
    res = rladapt("check", "--no-env", str(new), *SPECS)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("renders on verl 0.9.1") == len(SPECS)
    res = rladapt("check", "--no-env", str(old), *SPECS)
    assert res.returncode == 2
    assert "FAIL " + repr(str(REPO / "examples" / "async-grpo-separate.yaml")) in res.stderr
    assert (
        "spec.placement: verl 0.7.1 cannot express placement.separate (first supported in verl 0.8.0)"
        in res.stderr
    )
    assert "renders on verl 0.7.1" in res.stdout  # the other examples still pass


def test_check_rejects_a_pin_this_rladapt_no_longer_supports(tmp_path: Path) -> None:
    pin = tmp_path / "pin.txt"
    pin.write_text("# rladapt-pin: framework=verl version=0.4.1 rladapt=0.0.9\nverl==0.4.1\n")
    res = rladapt("check", "--no-env", str(pin), SPECS[0])
    assert res.returncode == 2
    assert f"{str(pin)!r} pins verl==0.4.1: verl==0.4.1 is outside the compatibility matrix" in res.stderr
    pin.write_text("verl==0.9.1\n")
    res = rladapt("check", str(pin))
    assert res.returncode == 2 and "no '# rladapt-pin: framework=NAME version=X' line" in res.stderr


def test_check_environment_against_a_real_install(tmp_path: Path) -> None:
    """The real OpenRLHF wheel installed (without its GPU dependencies) into a site directory of its own."""
    site = tmp_path / "site"
    wheel = download_wheel("openrlhf", "0.11.2")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        timeout=300,
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    pin = tmp_path / "pin.txt"
    header = "# rladapt-pin: framework=openrlhf version=0.11.2 rladapt=0.1.0\n"
    pin.write_text(header + "openrlhf==0.11.2  # the framework only: its GPU stack is not installable here\n")
    res = rladapt("check", str(pin), SPECS[1], env=env)
    assert res.returncode == 0, res.stderr
    assert "ok   environment matches" in res.stdout
    pin.write_text(header + "openrlhf==0.10.2\nsurely-not-installed-pkg==1.0\n")
    res = rladapt("check", str(pin), env=env)
    assert res.returncode == 1
    assert "FAIL environment: openrlhf 0.11.2 is installed, the pin asks for ==0.10.2" in res.stderr
    assert "FAIL environment: surely-not-installed-pkg is not installed (pinned ==1.0)" in res.stderr
