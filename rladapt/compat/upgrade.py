"""``rladapt upgrade``: the same spec rendered on two versions of one framework, compared key by key.

Native keys are paired across the versions first by the schema's renames (``schema_diff``), then by the spec field
that produced them (a translation that now spells the same field differently is a rename too). Also compared:
patches applied, and the capabilities the matrix gives each version. The spec is read once.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rladapt.primitives.errors import PluginError, RladaptError, SpecError, UsageError

from .native_keys import NativeSetting, settings
from .schema_diff import jsonable

if TYPE_CHECKING:
    from rladapt.pipeline import Rendered
    from rladapt.plugins import Registry

__all__ = ["KeyChange", "UpgradeReport", "compare"]


@dataclass(frozen=True)
class KeyChange:
    #: the key on the old version (None: added) and on the new one (None: removed)
    old_key: str | None
    new_key: str | None
    where: str
    old_value: Any = None
    new_value: Any = None
    #: how a rename was paired: ``schema`` (the versions' snapshots), ``field`` (the same spec field) or ``value``
    #: (the same text value under an alike name)
    why: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "old_key": self.old_key,
            "new_key": self.new_key,
            "where": self.where,
            "old_value": jsonable(self.old_value),
            "new_value": jsonable(self.new_value),
        }
        if self.why:
            out["paired_by"] = self.why
        return out


@dataclass(frozen=True)
class UpgradeReport:
    framework: str
    old: str
    new: str
    renamed: tuple[KeyChange, ...] = ()
    removed: tuple[KeyChange, ...] = ()
    added: tuple[KeyChange, ...] = ()
    changed: tuple[KeyChange, ...] = ()
    patches_gained: tuple[str, ...] = ()
    patches_dropped: tuple[str, ...] = ()
    capabilities_lost: tuple[str, ...] = ()
    capabilities_gained: tuple[str, ...] = ()
    #: version -> why the spec does not translate there (one line per problem)
    failures: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "from": self.old,
            "to": self.new,
            "translates": {v: v not in self.failures for v in (self.old, self.new)},
            "failures": self.failures,
            "renamed": [c.to_json() for c in self.renamed],
            "removed": [c.to_json() for c in self.removed],
            "added": [c.to_json() for c in self.added],
            "changed": [c.to_json() for c in self.changed],
            "patches_gained": list(self.patches_gained),
            "patches_dropped": list(self.patches_dropped),
            "capabilities_lost": list(self.capabilities_lost),
            "capabilities_gained": list(self.capabilities_gained),
            "notes": self.notes,
        }

    def to_text(self) -> str:
        fw = self.framework
        out = [f"{fw} {self.old} -> {self.new}"]
        for version in (self.old, self.new):
            if version in self.failures:
                out.append(f"does not translate on {fw} {version}:")
                out += [f"  {line}" for line in self.failures[version]]
        if self.renamed:
            out.append(f"renamed ({len(self.renamed)}):")
            for c in self.renamed:
                value = _value_change(c)
                out.append(f"  {c.old_key} -> {c.new_key}{value}   [{c.where}; by {c.why}]")
        if self.removed:
            out.append(f"removed ({len(self.removed)}):")
            out += [f"  {c.old_key} = {_show(c.old_value)}   [{c.where}]" for c in self.removed]
        if self.added:
            out.append(f"added ({len(self.added)}):")
            out += [f"  {c.new_key} = {_show(c.new_value)}   [{c.where}]" for c in self.added]
        if self.changed:
            out.append(f"values changed ({len(self.changed)}):")
            out += [
                f"  {c.new_key}: {_show(c.old_value)} -> {_show(c.new_value)}   [{c.where}]"
                for c in self.changed
            ]
        if self.patches_gained or self.patches_dropped:
            out.append(
                "patches: "
                + ", ".join([f"+{p}" for p in self.patches_gained] + [f"-{p}" for p in self.patches_dropped])
            )
        if self.capabilities_lost:
            out.append(f"capabilities lost: {', '.join(self.capabilities_lost)}")
        if self.capabilities_gained:
            out.append(f"capabilities gained: {', '.join(self.capabilities_gained)}")
        for version, notes in self.notes.items():
            out += [f"note ({fw} {version}): {n}" for n in notes]
        if len(out) == 1:
            out.append("no native change")
        return "\n".join(out) + "\n"


def _show(value: Any) -> str:
    text = repr(jsonable(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _value_change(c: KeyChange) -> str:
    if c.old_value == c.new_value:
        return ""
    return f" ({_show(c.old_value)} -> {_show(c.new_value)})"


def compare(
    spec: str | Path,
    overrides: list[str] | tuple[str, ...],
    framework: str,
    old: str,
    new: str,
    registry: Registry,
) -> UpgradeReport:
    """``spec`` (with ``overrides``) rendered on ``framework`` ``old`` and ``new``, compared."""
    from rladapt.pipeline import parse_framework
    from rladapt.primitives import read_spec_text

    name, pinned = parse_framework(framework)
    if pinned is not None:
        raise UsageError(f"--framework {framework!r}: give the name only; the versions are --from and --to")
    adapter = registry.framework(name)
    versions = {}
    for option, requested in (("--from", old), ("--to", new)):
        try:
            versions[option] = adapter.resolve_version(requested)
        except UsageError as exc:
            raise UsageError(f"{option} {requested!r}: {exc.message}") from None
    old_v, new_v = versions["--from"].version, versions["--to"].version
    text = read_spec_text(spec)
    _load(
        spec, overrides, text
    )  # a spec wrong on any version is the user's to fix first: exit 2 as validate does
    sides: dict[str, Rendered] = {}
    failures: dict[str, list[str]] = {}
    for version in (old_v, new_v):
        try:
            sides[version] = _render(spec, overrides, f"{name}=={version}", registry, text)
        except SpecError as exc:
            failures[version] = [str(p) for p in exc.problems] or [exc.message]
        except PluginError:
            raise
        except RladaptError as exc:
            failures[version] = [exc.message]
    lost = sorted(set(versions["--from"].capabilities) - set(versions["--to"].capabilities))
    gained = sorted(set(versions["--to"].capabilities) - set(versions["--from"].capabilities))
    report = UpgradeReport(
        framework=name,
        old=old_v,
        new=new_v,
        capabilities_lost=tuple(lost),
        capabilities_gained=tuple(gained),
        failures=failures,
        notes={v: list(r.native.notes) for v, r in sides.items() if r.native.notes},
    )
    if old_v not in sides or new_v not in sides:
        return report
    return _diff(report, sides[old_v], sides[new_v])


def _load(spec: str | Path, overrides: Any, text: str) -> None:
    from rladapt.primitives import load_job

    load_job(spec, list(overrides), text=text)  # its errors name the spec file already


def _render(spec: str | Path, overrides: Any, framework: str, registry: Registry, text: str) -> Rendered:
    from rladapt.pipeline import render_spec

    return render_spec(spec, list(overrides), framework, registry, text=text)


def _diff(report: UpgradeReport, before: Rendered, after: Rendered) -> UpgradeReport:
    from dataclasses import replace

    from rladapt.plugins.snapshots import find_snapshot

    from .schema_diff import diff_snapshots

    a, b = settings(before.native), settings(after.native)
    snap_a = find_snapshot(report.framework, report.old)
    snap_b = find_snapshot(report.framework, report.new)
    rename_of = diff_snapshots(snap_a, snap_b).rename_of if snap_a and snap_b else {}
    gone = [k for k in a if k not in b]
    came = [k for k in b if k not in a]
    renamed: list[KeyChange] = []
    for key in list(gone):
        target = rename_of.get(key)
        if target in came:
            renamed.append(_change(a[key], b[target], "schema"))
            gone.remove(key)
            came.remove(target)
    renamed += _by_field(a, b, gone, came)
    changed = [
        KeyChange(k, k, b[k].where, a[k].value, b[k].value) for k in a if k in b and a[k].value != b[k].value
    ]
    return replace(
        report,
        renamed=tuple(renamed),
        removed=tuple(KeyChange(k, None, a[k].where, a[k].value) for k in gone),
        added=tuple(KeyChange(None, k, b[k].where, None, b[k].value) for k in came),
        changed=tuple(changed),
        patches_gained=tuple(p for p in after.native.patches if p not in before.native.patches),
        patches_dropped=tuple(p for p in before.native.patches if p not in after.native.patches),
    )


def _change(old: NativeSetting, new: NativeSetting, why: str) -> KeyChange:
    return KeyChange(old.key, new.key, new.where, old.value, new.value, why)


def _by_field(
    a: dict[str, NativeSetting], b: dict[str, NativeSetting], gone: list[str], came: list[str]
) -> list[KeyChange]:
    """Pairs the schema did not make: keys set from the same spec field on both sides (the translation respelled
    them), then keys holding the same text value under alike names. A spec field may set several keys
    (``spec.data``), so a pair also needs the same leaf, the same value, alike names, or to be that field's only
    key on each side; best pairs first."""
    scored: list[tuple[tuple[int, int, float], str, str, str]] = []
    gone_from = Counter(a[k].where for k in gone)
    came_from = Counter(b[k].where for k in came)
    for old in gone:
        for new in came:
            x, y = a[old], b[new]
            ratio = difflib.SequenceMatcher(None, old.lstrip("-"), new.lstrip("-")).ratio()
            same_leaf = old.rpartition(".")[2] == new.rpartition(".")[2]
            same_value = x.value == y.value
            if x.where == y.where and x.where.startswith(("spec.", "patch ")):
                # the field's only key on each side (``--bf16`` -> ``--param_dtype``) is its respelling
                alone = gone_from[x.where] == 1 and came_from[y.where] == 1
                if same_leaf or same_value or ratio >= 0.6 or alone:
                    scored.append(((1, same_leaf + same_value, ratio), old, new, "field"))
            elif same_value and isinstance(x.value, (str, list)) and x.value and ratio >= 0.6:
                scored.append(((0, same_leaf, ratio), old, new, "value"))
    out = []
    for _, old, new, why in sorted(scored, reverse=True):
        if old in gone and new in came:
            out.append(_change(a[old], b[new], why))
            gone.remove(old)
            came.remove(new)
    return out
