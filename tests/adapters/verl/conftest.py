"""Fixtures of the verl conformance suite: the real wheel of every pinned verl version, unpacked."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt import compat
from rladapt.pipeline import DEEP_CHECK_ENV
from rladapt.plugins import Registry, load_registry
from tests.support.wheels import REPO, download_wheel, extract

PINNED: list[str] = [entry.version for entry in compat.pinned("verl")]


def verl_package(version: str) -> Path:
    """The ``verl`` package directory of the real ``verl==version`` wheel (download + unzip, cached)."""
    wheel = download_wheel("verl", version)
    return extract(wheel, REPO / ".cache" / "verl" / version) / "verl"


@pytest.fixture(scope="session", params=PINNED)
def pinned(request: pytest.FixtureRequest) -> tuple[str, Path]:
    version = str(request.param)
    return version, verl_package(version)


@pytest.fixture(scope="session")
def registry() -> Registry:
    reg = load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)
    assert not reg.broken, reg.broken
    return reg


@pytest.fixture(autouse=True)
def deep_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The conformance suite judges launches with the framework's own schema too (``render --deep-check``)."""
    monkeypatch.setenv(DEEP_CHECK_ENV, "1")
