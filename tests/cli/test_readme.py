"""The README's shown sessions (`$ rladapt ...` followed by its output) are what rladapt prints today."""

from __future__ import annotations

import shlex

import pytest

from tests.cli.test_cli import rladapt
from tests.conftest import REPO


def sessions() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("$ rladapt "):
            found.append((line[2:], []))
        elif found and line.startswith("```"):
            found.append(("", []))  # a closed block ends the output of the last command
        elif found and found[-1][0]:
            found[-1][1].append(line)
    return [s for s in found if s[0]]


@pytest.mark.parametrize(("command", "expected"), sessions(), ids=lambda v: v if isinstance(v, str) else "")
def test_readme_session_is_current(command: str, expected: list[str]) -> None:
    res = rladapt(*shlex.split(command)[1:], cwd=REPO)
    shown = (res.stdout + res.stderr).splitlines()
    assert len(shown) == len(expected), (command, shown)
    for want, got in zip(expected, shown, strict=True):
        if want.endswith("..."):  # the README shortens long lines
            assert got.startswith(want[:-3]), (want, got)
        else:
            assert got == want


def test_readme_has_sessions() -> None:
    assert len(sessions()) >= 3
