"""The bundled schema snapshots are current: CI regenerates the verl, OpenRLHF and TRL ones from the real wheels.

A failure here means a committed snapshot differs from what its generator makes of the real release: run
``rladapt matrix snapshot -f <framework>==<version>`` and commit the file. NeMo-RL's are generated from a checkout
of each tag (not available in CI); they are checked against the tags' derived key trees in the shared fixtures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt import compat
from rladapt.compat.generate import generate
from rladapt.compat.schema._format import Snapshot
from rladapt.plugins.snapshots import snapshot, snapshot_versions
from tests.support.wheels import REPO, download_wheel

BUNDLED = REPO / "rladapt" / "compat" / "matrix" / "snapshots"
NEMO_FIXTURES = REPO / ".." / "shared" / "fixtures" / "nemo-rl"
# trl's generator imports the wheel's config classes with the transformers of this venv (the dev extra pins it)
WHEELS = [(fw, e.version) for fw in ("verl", "openrlhf", "trl") for e in compat.pinned(fw)]


@pytest.mark.conformance
@pytest.mark.parametrize(("framework", "version"), WHEELS, ids=[f"{f}-{v}" for f, v in WHEELS])
def test_committed_snapshot_is_what_the_real_wheel_gives(framework: str, version: str) -> None:
    fresh = generate(framework, version, download_wheel(framework, version)).to_text()
    committed = (BUNDLED / framework / f"{version}.json").read_text(encoding="utf-8")
    assert fresh == committed, f"stale: run `rladapt matrix snapshot -f {framework}=={version}` and commit it"


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "nemo-rl", "trl"])
def test_every_pinned_version_has_exactly_one_snapshot(framework: str) -> None:
    pinned = [e.version for e in compat.pinned(framework)]
    assert snapshot_versions(framework) == sorted(pinned)
    for version in pinned:
        text = (BUNDLED / framework / f"{version}.json").read_text(encoding="utf-8")
        snap = Snapshot.from_text(text, version)
        assert (snap.framework, snap.version) == (framework, version)
        assert snap.to_text() == text  # one key per line, sorted: the file is its own canonical form
        lines = text.splitlines()
        assert len(lines) == len(snap.keys) + 2 and lines[1:-1] == sorted(lines[1:-1])


@pytest.mark.parametrize("version", [e.version for e in compat.pinned("nemo-rl")])
def test_nemo_rl_snapshot_holds_every_key_of_the_tags_typed_config(version: str) -> None:
    tree = NEMO_FIXTURES / f"v{version}" / "grpo_MasterConfig.keytree.json"
    if not tree.is_file():
        pytest.skip(f"{tree} missing: CI provides ../shared/fixtures/nemo-rl")
    typed = json.loads(tree.read_text(encoding="utf-8"))["keys"]
    snap = snapshot("nemo-rl", version)
    missing = sorted(k for k in typed if not snap.has(k))
    assert not missing
    example = NEMO_FIXTURES / f"v{version}" / "examples" / "configs" / "grpo_math_1B.yaml"
    import yaml

    base = yaml.safe_load(example.read_text(encoding="utf-8"))
    assert snap.default("grpo.num_prompts_per_step") == base["grpo"]["num_prompts_per_step"]


# --- the maintainer command ----------------------------------------------------------------------------------


def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


@pytest.mark.conformance
def test_matrix_snapshot_writes_and_checks(tmp_path: Path) -> None:
    wheel = str(download_wheel("openrlhf", "0.11.2"))
    res = rladapt("matrix", "snapshot", "-f", "openrlhf==0.11.2", "--source", wheel, "-o", str(tmp_path))
    assert res.returncode == 0, res.stderr
    written = tmp_path / "openrlhf" / "0.11.2.json"
    assert written.read_text() == (BUNDLED / "openrlhf" / "0.11.2.json").read_text()
    res = rladapt("matrix", "snapshot", "-f", "openrlhf==0.11.2", "--source", wheel, "--check")
    assert res.returncode == 0 and "is current" in res.stdout, res.stderr
    written.write_text(written.read_text().replace('"--actor.adam.lr"', '"--actor.adam.learning_rate"'))
    args = ("matrix", "snapshot", "-f", "openrlhf==0.11.2", "--source", wheel, "-o", str(tmp_path), "--check")
    res = rladapt(*args)
    assert res.returncode == 1 and "STALE" in res.stderr and "rladapt matrix snapshot" in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "verl"], "--framework 'verl': expected NAME==VERSION, e.g. verl==0.9.1"),
        (
            ["-f", "deepspeed==1.0"],
            "no snapshot generator for 'deepspeed'; expected one of verl, openrlhf, nemo-rl",
        ),
        (
            ["-f", "nemo-rl==0.7.0"],
            "--source: nemo-rl snapshots are built from a checkout of the NeMo-RL tag",
        ),
        (
            ["-f", "nemo-rl==0.7.0", "--source", "examples"],
            "is not a NeMo-RL checkout (no nemo_rl/algorithms/grpo.py)",
        ),
    ],
)
def test_matrix_snapshot_usage_errors_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    res = rladapt("matrix", "snapshot", *args, "-o", str(tmp_path))
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not any(tmp_path.iterdir())  # nothing half-written
