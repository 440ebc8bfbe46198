"""``rladapt matrix onboard``: a new framework release's snapshot, and the work list against a pinned version.

The work list: keys added, removed, renamed (a heuristic: ``schema_diff``), types and defaults changed, configs and
entrypoints added or gone, the engine pins of the release as a ready matrix entry, and above all every native key
the adapter emits for the shipped example specs (rendered for the pinned version) that the new release lacks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from rladapt.plugins.snapshots import find_snapshot, snapshot_versions
from rladapt.primitives.errors import RladaptError, UsageError

from .generate import distribution, download, make_snapshot
from .release import Release, matrix_entry, read_release
from .schema import Snapshot
from .schema_diff import SchemaDiff, collapse, diff_snapshots

__all__ = ["EmittedGap", "OnboardReport", "base_version", "onboard"]


@dataclass(frozen=True)
class EmittedGap:
    """A native key the adapter emits for an example on the pinned version that the new release lacks."""

    key: str
    where: str
    renamed_to: str | None = None
    #: the examples that emit it
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class OnboardReport:
    framework: str
    version: str
    against: str
    snapshot: Snapshot
    diff: SchemaDiff
    release: Release
    #: entrypoints (see ``release``) of the pinned version's release; None when it could not be read
    against_entrypoints: tuple[str, ...] | None
    gaps: tuple[EmittedGap, ...] = ()
    #: example -> why it does not render on the pinned version (nothing of it to compare)
    skipped: dict[str, str] = field(default_factory=dict)
    examples: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def entrypoints_added(self) -> list[str]:
        if self.against_entrypoints is None:
            return []
        return sorted(set(self.release.entrypoints) - set(self.against_entrypoints))

    @property
    def entrypoints_removed(self) -> list[str]:
        if self.against_entrypoints is None:
            return []
        return sorted(set(self.against_entrypoints) - set(self.release.entrypoints))

    def matrix_entry(self) -> str:
        return matrix_entry(self.release, f"TODO: what changed since {self.against} (see the work list)")

    def to_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "version": self.version,
            "against": self.against,
            "keys": len(self.snapshot.keys),
            "schema": self.diff.to_json(),
            "entrypoints_added": self.entrypoints_added,
            "entrypoints_removed": self.entrypoints_removed,
            "entrypoints_compared": self.against_entrypoints is not None,
            "examples": list(self.examples),
            "emitted_keys_gone": [
                {"key": g.key, "where": g.where, "renamed_to": g.renamed_to, "examples": list(g.examples)}
                for g in self.gaps
            ],
            "examples_skipped": dict(self.skipped),
            "pins": dict(self.release.pins),
            "requires_python": self.release.requires_python,
            "matrix_entry": self.matrix_entry(),
            "notes": list(self.notes),
        }

    def to_text(self) -> str:
        d = self.diff
        out = [f"onboarding {self.framework} {self.version} against the pinned {self.against}", ""]
        out.append(f"native keys the adapter emits for the examples that {self.version} no longer has:")
        if self.gaps:
            for g in self.gaps:
                hint = f" -> {g.renamed_to} (renamed?)" if g.renamed_to else ""
                out.append(f"  {g.key}{hint}   [{g.where}; {', '.join(g.examples)}]")
        else:
            out.append(f"  none ({len(self.examples)} example renders checked)")
        for example, why in sorted(self.skipped.items()):
            out.append(f"  skipped {example}: does not render on {self.against}: {why}")
        out.append("")
        out.append(
            "renamed (a heuristic: same name respelled, same leaf moved, or same words; same type and default):"
        )
        for old, new, count in d.moved_sections:
            out.append(f"  section {old}.* -> {new}.* ({count} keys)")
        out += [f"  {r.old} -> {r.new}   ({r.why})" for r in d.renamed] or ["  none"]
        out.append(f"removed ({len(d.removed)}):")
        out += [f"  {k}" for k in collapse(d.removed)] or ["  none"]
        out.append(f"added ({len(d.added)}):")
        out += [f"  {k}" for k in collapse(d.added)] or ["  none"]
        out.append(f"types changed ({len(d.types)}):")
        out += [f"  {c.key}: {c.old} -> {c.new}" for c in d.types] or ["  none"]
        out.append(f"defaults changed ({len(d.defaults)}):")
        out += [f"  {c.key}: {_show(c.old)} -> {_show(c.new)}" for c in d.defaults] or ["  none"]
        out.append("configs the adapter can emit: " + _added_gone(d.scopes_added, d.scopes_removed))
        if self.against_entrypoints is None:
            out.append(
                f"entrypoints: not compared ({self.against}'s release not read; pass --against-source)"
            )
        else:
            out.append("entrypoints: " + _added_gone(self.entrypoints_added, self.entrypoints_removed))
        out += [
            "",
            f"matrix entry for compat-matrix/{self.framework}.toml (pins from {self.release.metadata}):",
        ]
        if self.release.metadata is None:
            out.append("  (the release has no metadata with pins: fill in tested_with by hand)")
        out += ["", self.matrix_entry().rstrip("\n")]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out) + "\n"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _added_gone(added: Any, removed: Any) -> str:
    parts = [f"+{a}" for a in added] + [f"-{r}" for r in removed]
    return ", ".join(parts) if parts else "no change"


def base_version(framework: str, version: str, against: str | None) -> str:
    """The pinned version to compare with: ``against``, else the newest pinned version older than ``version``."""
    have = snapshot_versions(framework)
    if against is not None:
        if against not in have:
            raise UsageError(
                f"--against {against!r}: {framework} {against} has no bundled snapshot; "
                f"expected one of {', '.join(have) or 'none'}"
            )
        return against
    try:
        new = Version(version)
        older = [v for v in have if Version(v) < new]
    except InvalidVersion:
        raise UsageError(f"--framework {framework}=={version}: {version!r} is not a version") from None
    if not older:
        raise UsageError(
            f"--framework {framework}=={version}: no pinned {framework} version older than {version} "
            f"to compare with; pass --against (one of {', '.join(have) or 'none'})"
        )
    return max(older, key=Version)


def onboard(
    framework: str,
    version: str,
    source: Path | None,
    *,
    against: str | None = None,
    against_source: Path | None = None,
    examples: list[Path] | None = None,
    render: Callable[[Path, str], Any] | None = None,
) -> OnboardReport:
    """Snapshot ``framework`` ``version`` (from ``source``, or its wheel downloaded without dependencies) and
    compare it with a pinned version. ``render(example, "fw==V")`` renders an example spec (the CLI's renderer)."""
    base = base_version(framework, version, against)
    old = find_snapshot(framework, base)
    assert old is not None  # base_version only returns bundled versions
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rladapt-onboard-") as tmp:
        wheel_name = distribution(framework)
        if source is None and wheel_name is not None:
            source = download(wheel_name, version, Path(tmp))
        new = make_snapshot(framework, version, source)
        assert source is not None  # make_snapshot refuses a framework without a wheel and no source
        release = _release(framework, version, source)
        against_release = None
        if against_source is not None:
            against_release = _release(framework, base, against_source)
        elif wheel_name is not None:
            try:
                wheel = download(wheel_name, base, Path(tmp) / "against")
            except RladaptError as exc:
                notes.append(f"entrypoints not compared: {exc.message}")
            else:
                against_release = _release(framework, base, wheel)
    diff = diff_snapshots(old, new)
    gaps: dict[str, EmittedGap] = {}
    skipped: dict[str, str] = {}
    checked: list[str] = []
    for example in examples or []:
        if render is None:
            break
        try:
            rendered = render(example, f"{framework}=={base}")
        except RladaptError as exc:
            skipped[example.name] = exc.message.splitlines()[-1].strip(" -")
            continue
        checked.append(example.name)
        for gap in _gaps(rendered.native, old, new, diff):
            seen = gaps.get(gap.key)
            found_in = (*seen.examples, example.name) if seen is not None else (example.name,)
            gaps[gap.key] = EmittedGap(gap.key, (seen or gap).where, gap.renamed_to, found_in)
    return OnboardReport(
        framework=framework,
        version=version,
        against=base,
        snapshot=new,
        diff=diff,
        release=release,
        against_entrypoints=against_release.entrypoints if against_release is not None else None,
        gaps=tuple(gaps[k] for k in sorted(gaps)),
        skipped=skipped,
        examples=tuple(checked),
        notes=tuple(notes),
    )


def _release(framework: str, version: str, source: Path) -> Release:
    try:
        return read_release(framework, version, source)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--source {source}: cannot read the {framework} {version} release: {exc}") from None


def _gaps(native: Any, old: Snapshot, new: Snapshot, diff: SchemaDiff) -> list[EmittedGap]:
    from .native_keys import settings

    out = []
    for key, setting in settings(native).items():
        # a key the pinned version lacks too is one the launch adds (Hydra's +key): not a removal
        if new.has(key, setting.scope) or not old.has(key, setting.scope):
            continue
        out.append(EmittedGap(key, setting.where, diff.rename_of.get(key)))
    return out
