"""A resume certificate: what was run, each check with what was expected and found, and the verdict.

The checks compare a run killed and resumed with the same job run uninterrupted (``compare``), from what each
run logged (``rladapt.plugins.ResumeTrace``): the steps, each step's metrics, each step's samples (the data order
must survive the resume: no prompt skipped or trained twice) and the final weights.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from rladapt.plugins.resumes import ResumeTrace

#: The certificate's JSON format (``rladapt certify --format json``).
CERTIFICATE_FORMAT = 1


@dataclass(frozen=True)
class Check:
    """One named check: passed, and what was expected and found (shown when it failed)."""

    name: str
    passed: bool
    expected: str
    found: str


@dataclass(frozen=True)
class Interruption:
    """One run killed and resumed: how and when it was killed, and the step its resume started from."""

    label: str
    run_id: str
    how: str
    killed: bool
    resumed_from: int | None
    checkpoint_dir: str


@dataclass(frozen=True)
class Certificate:
    framework: str
    version: str
    spec: str
    overrides: tuple[str, ...]
    baseline_run: str
    interruptions: tuple[Interruption, ...]
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def certified(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CERTIFICATE_FORMAT,
            "certified": self.certified,
            "framework": self.framework,
            "version": self.version,
            "spec": self.spec,
            "overrides": list(self.overrides),
            "uninterrupted_run": self.baseline_run,
            "interrupted_runs": [asdict(i) for i in self.interruptions],
            "checks": [asdict(c) for c in self.checks],
            "notes": list(self.notes),
        }

    def text(self) -> str:
        verdict = "CERTIFIED" if self.certified else "NOT CERTIFIED"
        lines = [
            f"resume certificate: {self.spec} on {self.framework} {self.version}: {verdict}",
            f"  uninterrupted run: {self.baseline_run}",
        ]
        for i in self.interruptions:
            start = "the start" if i.resumed_from is None else f"step {i.resumed_from}"
            lines.append(f"  {i.label}: run {i.run_id}, {i.how}, resumed from {start}")
        for c in self.checks:
            mark = "ok  " if c.passed else "FAIL"
            lines.append(f"  {mark} {c.name}")
            if not c.passed:
                lines.append(f"       expected: {c.expected}")
                lines.append(f"       found:    {c.found}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


def _first_difference(expected: dict[int, Any], found: dict[int, Any]) -> tuple[int, Any, Any] | None:
    for step in sorted(set(expected) | set(found)):
        if expected.get(step) != found.get(step):
            return step, expected.get(step), found.get(step)
    return None


def _same_metrics(a: dict[str, float | None], b: dict[str, float | None], rtol: float) -> bool:
    if set(a) != set(b):
        return False
    for key, x in a.items():
        y = b[key]
        if x is None or y is None:
            if x is not y:
                return False
        elif abs(x - y) > rtol * max(abs(x), abs(y)) and x != y:
            return False
    return True


def compare(label: str, baseline: ResumeTrace, resumed: ResumeTrace, *, rtol: float = 0.0) -> list[Check]:
    """The checks of one resumed run against the uninterrupted one (``rtol``: the relative tolerance of a metric;
    0: equal to the bit, which a deterministic CPU run achieves)."""
    checks = []
    steps_a, steps_b = sorted(baseline.metrics), sorted(resumed.metrics)
    checks.append(
        Check(
            f"{label}: the same steps logged",
            steps_a == steps_b and bool(steps_a),
            f"steps {_short(steps_a)}" if steps_a else "the uninterrupted run to log steps",
            f"steps {_short(steps_b)}",
        )
    )
    diff = [
        s
        for s in steps_a
        if s in resumed.metrics and not _same_metrics(baseline.metrics[s], resumed.metrics[s], rtol)
    ]
    checks.append(
        Check(
            f"{label}: per-step metrics" + (f" (relative tolerance {rtol:g})" if rtol else " (equal)"),
            not diff and steps_a == steps_b,
            "each step's metrics as uninterrupted"
            + (f"; step {diff[0]}: {_short(baseline.metrics[diff[0]])}" if diff else ""),
            f"{len(diff)} step(s) differ"
            + (f"; step {diff[0]}: {_short(resumed.metrics[diff[0]])}" if diff else ""),
        )
    )
    if not baseline.samples:
        checks.append(
            Check(
                f"{label}: samples consumed per step",
                False,
                "the uninterrupted run to log the samples of each step",
                "no samples logged",
            )
        )
    else:
        first = _first_difference(baseline.samples, resumed.samples)
        if first is None:
            found = f"the same prompts in the same order at each of {len(baseline.samples)} steps"
        else:
            step, _, got = first
            before = {p for s, ps in resumed.samples.items() if s < step for p in ps}
            repeated = sorted(p for p in (got or ()) if p in before)
            found = f"step {step}: {_short(got)}" + (
                f" ({len(repeated)} prompt(s) already trained at an earlier step)" if repeated else ""
            )
        checks.append(
            Check(
                f"{label}: samples consumed per step (no prompt skipped or repeated)",
                first is None,
                "the prompts of the uninterrupted run, step by step"
                + ("" if first is None else f"; step {first[0]}: {_short(first[1])}"),
                found,
            )
        )
    checks.append(
        Check(
            f"{label}: final weights",
            baseline.weights is not None and baseline.weights == resumed.weights,
            f"sha256 {baseline.weights} ({baseline.weights_from})"
            if baseline.weights
            else "the uninterrupted run to leave final weights",
            f"sha256 {resumed.weights} ({resumed.weights_from})" if resumed.weights else "no final weights",
        )
    )
    return checks
