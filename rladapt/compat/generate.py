"""``make_snapshot``: what ``rladapt matrix snapshot`` runs. Finds the release (downloading a wheel if needed) and
hands it to the framework's adapter (``FrameworkAdapter.generate_snapshot``): the generators live in the adapter
folders (``rladapt/adapters/<fw>/snapshot.py``), and a third-party adapter's works the same way."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from rladapt.compat.schema import Snapshot
from rladapt.plugins import BUILTIN_PLUGINS, Registry, get_registry
from rladapt.primitives.errors import RladaptError, UsageError


def generators(registry: Registry | None = None) -> dict[str, str]:
    """Framework -> what its adapter's snapshot generator reads, for every adapter that has one."""
    found = (registry or get_registry()).frameworks
    # the built-in ones first, in their order, then the plugins' by name (a stable list for messages)
    order = list(BUILTIN_PLUGINS)
    names = sorted(found, key=lambda n: (order.index(n) if n in order else len(order), n))
    return {n: source for n in names if (source := found[n].obj.SNAPSHOT_SOURCE) is not None}


def distribution(framework: str, registry: Registry | None = None) -> str | None:
    """The PyPI distribution of ``framework``'s release (its adapter's ``DISTRIBUTION``); None: none, or no such
    framework."""
    found = (registry or get_registry()).frameworks.get(framework)
    return None if found is None else found.obj.DISTRIBUTION


def bundled_dir() -> Path:
    """The snapshots directory of this rladapt (in a checkout: ``rladapt/compat/matrix/snapshots``)."""
    return Path(__file__).resolve().parent / "matrix" / "snapshots"


def generate(framework: str, version: str, source: Path, registry: Registry | None = None) -> Snapshot:
    """The snapshot of ``framework`` ``version`` built from ``source`` by its adapter (``generate_snapshot``)."""
    adapter = (registry or get_registry()).framework(framework)
    snap = adapter.generate_snapshot(version, source)
    if snap is None:
        raise UsageError(f"framework {framework!r} cannot generate schema snapshots")
    return snap


def make_snapshot(
    framework: str, version: str, source: Path | None, registry: Registry | None = None
) -> Snapshot:
    """The snapshot of ``framework`` ``version`` from ``source``, or from its wheel downloaded without deps."""
    registry = registry or get_registry()
    known = generators(registry)
    if framework not in known:
        raise UsageError(
            f"--framework {framework}=={version}: no snapshot generator for {framework!r}; "
            f"expected one of {', '.join(known)}"
        )
    if source is not None:
        return _run(framework, version, source, registry)
    distribution = registry.framework(framework).DISTRIBUTION
    if distribution is None:
        raise UsageError(f"--source: {framework} snapshots are built from {known[framework]}; pass it")
    with tempfile.TemporaryDirectory(prefix="rladapt-snapshot-") as tmp:
        return _run(framework, version, download(distribution, version, Path(tmp)), registry)


def _run(framework: str, version: str, source: Path, registry: Registry) -> Snapshot:
    try:
        return generate(framework, version, source, registry)
    except ValueError as exc:
        raise UsageError(f"--source {source}: {exc} (expected {generators(registry)[framework]})") from None


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
