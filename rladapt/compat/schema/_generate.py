"""``make_snapshot``: what ``rladapt matrix snapshot`` runs. Finds the release (downloading a wheel if needed)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from rladapt.primitives.errors import RladaptError, UsageError

from ._format import Snapshot

#: The frameworks a snapshot can be generated for, and what the generator reads.
GENERATORS: dict[str, str] = {
    "verl": "the verl wheel (or an unpacked verl package directory)",
    "openrlhf": "the openrlhf wheel (or a train_ppo_ray.py, or a checkout)",
    "nemo-rl": "a checkout of the NeMo-RL tag (git worktree add DIR v<version>)",
    "trl": "the trl wheel (or a directory holding trl/), imported with this interpreter's transformers",
}
#: PyPI distribution of each framework that has one (NeMo-RL publishes only a placeholder).
DISTRIBUTIONS = {"verl": "verl", "openrlhf": "openrlhf", "trl": "trl"}


def bundled_dir() -> Path:
    """The snapshots directory of this rladapt (in a checkout: ``rladapt/compat/matrix/snapshots``)."""
    return Path(__file__).resolve().parent.parent / "matrix" / "snapshots"


def generate(framework: str, version: str, source: Path) -> Snapshot:
    """The snapshot of ``framework`` ``version`` built from ``source`` (see ``GENERATORS``)."""
    if framework == "verl":
        from ._verl import generate as run
    elif framework == "openrlhf":
        from ._openrlhf import generate as run
    elif framework == "nemo-rl":
        from ._nemo_rl import generate as run
    elif framework == "trl":
        from ._trl import generate as run
    else:
        raise ValueError(f"no snapshot generator for {framework!r}")
    return run(source, version)


def make_snapshot(framework: str, version: str, source: Path | None) -> Snapshot:
    """The snapshot of ``framework`` ``version`` from ``source``, or from its wheel downloaded without deps."""
    if framework not in GENERATORS:
        raise UsageError(
            f"--framework {framework}=={version}: no snapshot generator for {framework!r}; "
            f"expected one of {', '.join(GENERATORS)}"
        )
    if source is not None:
        return _run(framework, version, source)
    if framework not in DISTRIBUTIONS:
        raise UsageError(f"--source: {framework} snapshots are built from {GENERATORS[framework]}; pass it")
    with tempfile.TemporaryDirectory(prefix="rladapt-snapshot-") as tmp:
        return _run(framework, version, download(DISTRIBUTIONS[framework], version, Path(tmp)))


def _run(framework: str, version: str, source: Path) -> Snapshot:
    try:
        return generate(framework, version, source)
    except ValueError as exc:
        raise UsageError(f"--source {source}: {exc} (expected {GENERATORS[framework]})") from None


def download(distribution: str, version: str, dest: Path) -> Path:
    """``pip download --no-deps`` of ``distribution==version`` into ``dest``; the wheel's path."""
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
        str(dest),
        f"{distribution}=={version}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        tail = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise RladaptError(f"pip download {distribution}=={version} failed: {tail}")
    return wheels[0]
