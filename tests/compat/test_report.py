"""The matrix report is generated, never hand-written: the committed copy must equal a fresh generation."""

from __future__ import annotations

from rladapt.compat.report import markdown_report
from rladapt.plugins import load_registry
from tests.conftest import REPO


def test_committed_report_is_current() -> None:
    fresh = markdown_report(load_registry(use_entry_points=False))
    committed = (REPO / "compat-matrix" / "REPORT.md").read_text(encoding="utf-8")
    assert committed == fresh, (
        "compat-matrix/REPORT.md is stale: run `rladapt matrix show --write compat-matrix/REPORT.md`"
    )


def test_report_covers_every_pinned_version_and_patch() -> None:
    registry = load_registry(use_entry_points=False)
    report = markdown_report(registry)
    for name, entry in registry.frameworks.items():
        assert f"\n## {name}\n" in report
        for version in entry.obj.versions():
            assert f"| {version.version} |" in report
    for patch_id in registry.patches:
        assert f"`{patch_id}`" in report
