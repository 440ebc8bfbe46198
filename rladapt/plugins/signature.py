"""The record of one known failure: how to recognise it in a log, what it means, how to fix it, and where the
message text comes from; what ``rladapt_register_signatures`` returns.

How a signature recognises its lines (``Signature.hits``) is the record's own, so that the conformance kit's
``check_signature`` and ``rladapt triage``'s matcher (``rladapt.triage.match``) judge a line the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["Detail", "Found", "Signature", "log_lines", "strip_ansi"]

#: vLLM and Ray colour their log prefixes (``\x1b[36m(WorkerDict pid=..)\x1b[0m``): matched without them.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line)


def log_lines(lines: Iterable[str]) -> list[str]:
    """``lines`` as signatures are matched against them: without line ends and terminal colours."""
    return [strip_ansi(line.rstrip("\r\n")) for line in lines]


@dataclass(frozen=True)
class Found:
    """What a refinement sees: the framework and version triaged for (when known) and the matched lines."""

    framework: str | None
    version: str | None
    #: every line of the log, without line ends
    lines: Sequence[str]
    #: the indexes in ``lines`` of the lines that matched ``Signature.patterns``
    hits: tuple[int, ...]
    #: the regex match of each hit, in the same order
    matches: tuple[re.Match[str], ...]


@dataclass(frozen=True)
class Detail:
    """A refinement's finding: replaces the signature's generic cause and fix where it could say more."""

    cause: str | None = None
    fix: str | None = None


@dataclass(frozen=True)
class Signature:
    """One failure signature of the triage catalogue.

    ``patterns`` are regular expressions tried on each log line (``re.search``); a line matching one of them is
    evidence. Each pattern is built from the message text of the code that prints it, named in ``source``
    (file and version, or the public report it was read from). ``near``, when given, must also match the hit or one of
    the ``window`` lines before it (a traceback frame above a bare ``KeyError``), so that a message this common
    is not taken for this failure anywhere else. ``frameworks`` empty means every framework (NCCL, CUDA, Ray);
    ``versions`` is a PEP 440 specifier judged when the version is known. ``refine`` may read the matched lines
    and the schema snapshots to name what the generic text cannot (the role and phase of an OOM, the new name
    of a key).
    """

    id: str
    patterns: tuple[str, ...]
    cause: str
    fix: str
    source: str
    frameworks: tuple[str, ...] = ()
    versions: str = ""
    near: tuple[str, ...] = ()
    window: int = 40
    refine: Callable[[Found], Detail | None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # a broken record is the author's mistake: fail where it is declared, not on the first log read
        if not self.id or not self.patterns:
            raise ValueError(f"signature {self.id!r}: an id and at least one pattern are required")
        for pattern in (*self.patterns, *self.near):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"signature {self.id!r}: pattern {pattern!r} is not a regex: {exc}"
                ) from None
        try:
            SpecifierSet(self.versions)
        except InvalidSpecifier:
            raise ValueError(
                f"signature {self.id!r}: versions {self.versions!r} is not a specifier"
            ) from None

    @cached_property
    def compiled(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p) for p in self.patterns)

    @cached_property
    def compiled_near(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p) for p in self.near)

    def applies_to(self, framework: str | None, version: str | None) -> bool:
        """Whether this signature can occur on ``framework`` ``version`` (unknown ones: it can)."""
        if framework is None or not self.frameworks:
            return True
        if framework not in self.frameworks:
            return False
        if version is None or not self.versions:
            return True
        try:
            return Version(version) in SpecifierSet(self.versions)
        except InvalidVersion:
            return True

    def hits(self, lines: Sequence[str]) -> tuple[list[int], list[re.Match[str]]]:
        """The indexes of the lines of ``lines`` (as ``log_lines`` gives them) that are evidence of this failure,
        and the regex match of each: a line matching one of ``patterns``, with a ``near`` line at or above it
        within ``window`` lines when ``near`` is given."""
        hits: list[int] = []
        found: list[re.Match[str]] = []
        for index, line in enumerate(lines):
            for pattern in self.compiled:
                m = pattern.search(line)
                if m is None:
                    continue
                if self.near and not any(
                    p.search(lines[j])
                    for p in self.compiled_near
                    for j in range(max(0, index - self.window), index + 1)
                ):
                    continue
                hits.append(index)
                found.append(m)
                break
        return hits, found
