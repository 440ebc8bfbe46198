"""Matching log lines against the catalogue: each signature that matches is one ``Match`` with its evidence."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rladapt.plugins.signature import Found, Signature, log_lines, strip_ansi

__all__ = ["MAX_EVIDENCE", "Match", "strip_ansi", "triage"]

#: Lines of evidence kept per match: the first ones (the first failure is the cause, the rest its echo).
MAX_EVIDENCE = 5


@dataclass(frozen=True)
class Match:
    signature: str
    cause: str
    fix: str
    evidence: tuple[str, ...]
    #: 1-based line numbers of ``evidence`` in the log
    line_numbers: tuple[int, ...]
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "cause": self.cause,
            "fix": self.fix,
            "evidence": list(self.evidence),
        }


def _with_near(sig: Signature, lines: Sequence[str], hits: list[int]) -> list[int]:
    """The hits, each preceded by the nearest line that matched ``near`` (the frame that makes it this failure)."""
    if not sig.near:
        return hits
    out: list[int] = []
    for index in hits:
        for j in range(index, max(-1, index - sig.window - 1), -1):
            if any(p.search(lines[j]) for p in sig.compiled_near):
                out.append(j)
                break
        out.append(index)
    return sorted(set(out))


def triage(
    lines: Iterable[str], signatures: Iterable[Signature], framework: str | None, version: str | None
) -> list[Match]:
    """Every signature of ``signatures`` that applies to ``framework`` ``version`` and matches ``lines``, in the
    order of its first evidence line (the earliest failure first)."""
    text = log_lines(lines)
    out: list[tuple[int, Match]] = []
    for sig in signatures:
        if not sig.applies_to(framework, version):
            continue
        hits, found = sig.hits(text)
        if not hits:
            continue
        cause, fix = sig.cause, sig.fix
        if sig.refine is not None:
            detail = sig.refine(Found(framework, version, text, tuple(hits), tuple(found)))
            if detail is not None:
                cause = detail.cause or cause
                fix = detail.fix or fix
        shown = _with_near(sig, text, hits)[:MAX_EVIDENCE]
        out.append(
            (
                hits[0],
                Match(
                    signature=sig.id,
                    cause=cause,
                    fix=fix,
                    evidence=tuple(text[i] for i in shown),
                    line_numbers=tuple(i + 1 for i in shown),
                    source=sig.source,
                ),
            )
        )
    out.sort(key=lambda item: item[0])
    return [m for _, m in out]
