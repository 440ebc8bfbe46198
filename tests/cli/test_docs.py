"""The documentation is current: its shown sessions are what rladapt prints, its shown specs are valid, its
generated reference pages cover every verb, field, option, hook and framework, and the site builds strictly
(every link and anchor resolves).

A shown session is a line ``$ rladapt ...`` in a code block of README.md or of any page under docs/, followed by
its output up to the next ``$`` line or the end of the block.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

from rladapt.cli import cli
from tests.cli.test_cli import rladapt
from tests.conftest import REPO

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def sessions(page: Path) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("$ rladapt "):
            found.append((line[2:], []))
        elif found and line.startswith("```"):
            found.append(("", []))  # a closed block ends the output of the last command
        elif found and found[-1][0]:
            found[-1][1].append(line)
    return [s for s in found if s[0]]


SESSIONS = [
    pytest.param(command, expected, id=f"{page.relative_to(REPO)}: {command}")
    for page in PAGES
    for command, expected in sessions(page)
]


@pytest.mark.parametrize(("command", "expected"), SESSIONS)
def test_shown_session_is_current(command: str, expected: list[str]) -> None:
    res = rladapt(*shlex.split(command)[1:], cwd=REPO)
    shown = (res.stdout + res.stderr).splitlines()
    assert len(shown) == len(expected), (command, shown)
    for want, got in zip(expected, shown, strict=True):
        if want.endswith("..."):  # the docs shorten long lines
            assert got.startswith(want[:-3]), (want, got)
        else:
            assert got == want


SPECS = [
    pytest.param(block, id=f"{page.relative_to(REPO)}: spec {i}")
    for page in PAGES
    for i, block in enumerate(
        re.findall(r"^```yaml\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)
    )
    if "kind: RLJob" in block
]


@pytest.mark.parametrize("block", SPECS)
def test_shown_spec_is_valid(block: str, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(block, encoding="utf-8")
    # the pages' specs name a cluster's data and models, not files of this repository
    res = rladapt("validate", str(spec), "--no-path-check", cwd=REPO)
    assert res.returncode == 0, res.stderr


def test_docs_have_sessions() -> None:
    assert SPECS
    assert len(SESSIONS) >= 3
    assert sessions(DOCS / "getting-started.md"), "the getting-started page shows what rladapt prints"


def test_readme_stays_an_entry_point() -> None:
    """The README says what rladapt is, how to start and where to read on; the rest lives in docs/."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "bash scripts/test.sh" in text  # the test command .ci/run and CI run
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):  # relative links, not https://
        assert (REPO / target).exists(), target


def _plugins() -> dict[str, object]:
    res = rladapt("plugins", "--format", "json", cwd=REPO)
    assert res.returncode == 0, res.stderr
    report: dict[str, object] = json.loads(res.stdout)
    return report


def test_frameworks_page_lists_the_pinned_versions() -> None:
    """The one hand-written list of versions (the table of docs/concepts/frameworks.md) is the matrix's."""
    rows = re.findall(
        r"^\| `([\w-]+)` \| ([^|]+) \|", (DOCS / "concepts" / "frameworks.md").read_text(), re.M
    )
    shown = {name: versions.strip() for name, versions in rows}
    frameworks = _plugins()["frameworks"]
    assert isinstance(frameworks, dict)
    pinned = {
        name: ", ".join(
            v["version"] + ("" if v["status"] == "supported" else f" ({v['status']})") for v in fw["versions"]
        )
        for name, fw in frameworks.items()
    }
    assert shown == pinned


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    """docs/gen_reference.py, the MkDocs hook, imported as mkdocs imports it (by path)."""
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_has_every_verb_and_subcommand(generator: ModuleType) -> None:
    page: str = generator.cli_page()

    def visible(group: click.Group, ctx: click.Context) -> list[str]:
        found = []
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None or command.hidden or command.deprecated:
                continue
            path = f"{ctx.command_path} {name}"
            found.append(path)
            if isinstance(command, click.Group):
                found += visible(command, click.Context(command, info_name=name, parent=ctx))
        return found

    paths = visible(cli, click.Context(cli, info_name="rladapt"))
    assert {"rladapt render", "rladapt launch", "rladapt matrix snapshot"} <= set(paths)
    for path in paths:
        assert re.search(rf"^## {path} \{{", page, re.M), path
        assert f"[`{path}`]" in page, path  # in the table of verbs at the top


def test_spec_reference_has_every_section(generator: ModuleType) -> None:
    page: str = generator.spec_page()
    schema = json.loads(rladapt("schema", cwd=REPO).stdout)
    spec_fields = schema["$defs"]["Spec"]["properties"]
    for field in spec_fields:
        assert f"| `{field}` |" in page, field
    assert "## `spec.training.optimizer`" in page
    assert "## `spec.placement.pools[]`" in page


def test_launcher_reference_has_every_option(generator: ModuleType) -> None:
    page: str = generator.launchers_page()
    launchers = _plugins()["launchers"]
    assert isinstance(launchers, dict) and {"local", "ray", "slurm", "kubernetes"} <= set(launchers)
    for name, launcher in launchers.items():
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for option in launcher["options"]:
            assert f"| `{option}` |" in section, (name, option)


def test_hooks_reference_has_every_hook(generator: ModuleType) -> None:
    from rladapt.plugins import hookspecs

    page: str = generator.hooks_page()
    hooks = [name for name in vars(hookspecs) if name.startswith("rladapt_")]
    assert "rladapt_register_frameworks" in hooks
    for hook in hooks:
        assert f"## `{hook}`" in page, hook
    assert ":param" not in page, "reST field lists turned into Markdown"
    assert not re.search(r"(?<!`)``(?!`)", page), "reST literals turned into Markdown"


def test_matrix_reference_has_every_framework(generator: ModuleType) -> None:
    page: str = generator.matrix_page()
    for name in _plugins()["frameworks"]:  # type: ignore[attr-defined]
        assert f"\n## {name}\n" in page, name


def test_site_builds_strictly(tmp_path: Path) -> None:
    """mkdocs.yml's strict build: a broken link or anchor, or a page outside the nav, fails."""
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
