"""Matching log lines against the catalogue: each signature that matches is one ``Match`` with its evidence.

The log is streamed, in linear time and bounded memory whatever its size or its lines:

- lines are read a chunk at a time (``CHUNK_LINES``); a line longer than ``MAX_LINE`` characters is cut to its
  head and tail (``cap_line``: a message is at the start of its line, an exception's text at its end), both when
  read from a file (``capped_lines``: the middle of a gigabyte line is never held) and when given as strings;
- a pattern's required literal text (``literals``, read from the compiled pattern) is searched in the whole chunk
  at once, so that only the lines that contain it are tried with the regular expression; a pattern without one is
  tried on every line;
- what is kept is bounded: per signature the first ``MAX_HITS`` hits (a refinement reads their matches), the
  ``CONTEXT`` lines before its first hit (an OOM's traceback), and the evidence lines; ``Found.lines`` reads as
  empty elsewhere.

The built-in patterns have no unbounded repetition that can backtrack (``tests/triage/test_linear.py`` checks it
from the parsed patterns), so each line costs at most its length times a bounded factor.
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, count, islice
from typing import IO, Any, overload

from rladapt.plugins.signature import Found, Signature, strip_ansi

__all__ = [
    "CONTEXT",
    "MAX_EVIDENCE",
    "MAX_HITS",
    "MAX_LINE",
    "Match",
    "Triaged",
    "cap_line",
    "capped_lines",
    "literals",
    "scan",
    "scan_chunks",
    "strip_ansi",
    "text_chunks",
    "triage",
]

#: Lines of evidence kept per match: the first ones (the first failure is the cause, the rest its echo).
MAX_EVIDENCE = 5
#: The characters of a line patterns see: its first and last MAX_LINE // 2.
MAX_LINE = 8192
#: Hits kept per signature (the evidence shows MAX_EVIDENCE; a refinement reads the matches of these).
MAX_HITS = 1000
#: Lines kept before a signature's first hit, for its refinement (an OOM's traceback: ``refine.oom_where``).
CONTEXT = 200
#: Lines matched at a time.
CHUNK_LINES = 4096


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


@dataclass(frozen=True)
class Triaged:
    """The matches and how many lines the log had."""

    matches: list[Match]
    lines: int


def cap_line(line: str, limit: int = MAX_LINE) -> str:
    """``line`` when it is at most ``limit`` characters, else its head and tail around a note of what was cut."""
    if len(line) <= limit:
        return line
    half = limit // 2
    return f"{line[:half]} [... {len(line) - 2 * half} characters cut ...] {line[-half:]}"


def capped_lines(stream: IO[str], limit: int = MAX_LINE) -> Iterator[str]:
    """The lines of a text stream (opened with ``newline=""``: ``\\n``, ``\\r\\n`` and ``\\r`` end a line), each
    cut as ``cap_line`` cuts it, without ever holding more than ``limit`` characters of one line."""
    half = limit // 2
    while True:
        piece = stream.readline(limit)
        if not piece:
            return
        if len(piece) < limit or piece.endswith(("\n", "\r")):
            yield piece
            continue
        # a line of at least ``limit`` characters: its head, a rolling tail, and its whole text while it is short
        head, tail, total = piece[:half], piece[half:], len(piece)
        whole: str | None = piece
        while True:
            more = stream.readline(limit)
            if not more:
                break
            total += len(more)
            tail = (tail + more)[-(half + 2) :]
            whole = whole + more if whole is not None and total <= limit + 2 else None
            if more.endswith(("\n", "\r")):
                break
        end = tail.rstrip("\r\n")
        ending = tail[len(end) :]
        if whole is not None and total - len(ending) <= limit:
            yield whole
            continue
        cut = total - len(ending) - 2 * half
        yield f"{head} [... {cut} characters cut ...] {end[-half:]}{ending}"


def literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Texts one of which every match of ``pattern`` contains (the longest literal run of each top-level
    alternative), or None when none can be read from it (the pattern is then tried on every line)."""
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        import re._parser as parser  # type: ignore[import-not-found]  # Python 3.11+
    except ImportError:  # Python 3.10
        import sre_parse as parser
    tree: Any = parser.parse(pattern.pattern, pattern.flags)
    items = list(tree)
    # a pattern that is one group (or one alternation) as a whole: its alternatives
    while len(items) == 1 and str(items[0][0]) == "SUBPATTERN":
        items = list(items[0][1][-1])
    if len(items) == 1 and str(items[0][0]) == "BRANCH":
        out = []
        for branch in items[0][1][1]:
            run = _longest_literal(list(branch))
            if not run:
                return None
            out.append(run)
        return tuple(out)
    run = _longest_literal(items)
    return (run,) if run else None


def _longest_literal(items: list[Any]) -> str:
    best, current = "", ""
    for op, arg in items:
        if str(op) == "LITERAL":
            current += chr(arg)
            if len(current) > len(best):
                best = current
        elif str(op) == "AT":  # an anchor takes no character: the run goes on across it
            continue
        else:
            current = ""
    return best


class _Lines(Sequence[str]):
    """``Found.lines``: every line of the log by index, the kept ones with their text, the others empty."""

    def __init__(self, kept: dict[int, str], count: int) -> None:
        self._kept, self._count = kept, count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        return self._kept.get(index, "")


@dataclass
class _State:
    sig: Signature
    hits: list[int] = field(default_factory=list)
    found: list[re.Match[str]] = field(default_factory=list)
    #: the nearest line at or above the latest line read that matched ``near``
    last_near: int | None = None
    #: the near line shown before each of the first hits
    near_of: dict[int, int] = field(default_factory=dict)
    count: int = 0


def _candidates(chunk: str, texts: tuple[str, ...] | None, starts: list[int]) -> list[int]:
    """The indexes (in the chunk) of the lines that contain one of ``texts`` (every line when None)."""
    if texts is None:
        return list(range(len(starts)))
    out: set[int] = set()
    for text in texts:
        at = chunk.find(text)
        while at != -1:
            line = bisect.bisect_right(starts, at) - 1
            out.add(line)
            # go on from the next line: one hit per line is enough
            nxt = starts[line + 1] if line + 1 < len(starts) else len(chunk)
            at = chunk.find(text, nxt)
    return sorted(out)


def _line_chunks(lines: Iterable[str]) -> Iterator[str]:
    """``lines`` as chunks of ``CHUNK_LINES`` lines joined by newlines, each without its line end and terminal
    colours, cut by ``cap_line``."""
    source = iter(lines)
    while True:
        chunk_lines = [
            cap_line(strip_ansi(line.rstrip("\r\n")) if "\x1b" in line else line.rstrip("\r\n"))
            for line in islice(source, CHUNK_LINES)
        ]
        if not chunk_lines:
            return
        yield "\n".join(chunk_lines)


def text_chunks(stream: IO[str], limit: int = MAX_LINE, block: int = 1 << 20) -> Iterator[str]:
    """The lines of a text stream opened with universal newlines (``newline=None``: ``\n``, ``\r\n`` and
    ``\r`` end a line, as ``newline=""`` reads them) in chunks of whole lines joined by newlines, read ``block``
    characters at a time: lines are split, cut (``cap_line``) and stripped of terminal colours by C string methods,
    and a line longer than the block is never held whole (its head and a rolling tail)."""
    half = limit // 2
    carry = ""
    head: str | None = None  # the first half of an unfinished long line
    cut = 0  # characters of it dropped between head and carry
    while True:
        data = stream.read(block)
        if not data:
            break
        text = carry + data
        last = text.rfind("\n")
        if last == -1:
            if len(text) > limit:
                rest = text
                if head is None:
                    head, rest = text[:half], text[half:]
                keep = rest[-half:]
                cut += len(rest) - len(keep)
                carry = keep
            else:
                carry = text
            continue
        body, carry = text[:last], text[last + 1 :]
        if head is not None:
            yield _joined(head, cut, body, half, limit)
            head, cut = None, 0
        else:
            yield _clean(body, limit)
    if head is not None:
        yield _joined(head, cut, carry, half, limit)
    elif carry:
        yield _clean(carry, limit)


def _joined(head: str, cut: int, body: str, half: int, limit: int) -> str:
    """``body`` whose first line is the end of a long line begun by ``head``, that line cut as ``cap_line`` cuts,
    the others cleaned (``_clean``)."""
    end = body.find("\n")
    first = body if end == -1 else body[:end]
    total = len(head) + cut + len(first)
    line = f"{head} [... {total - 2 * half} characters cut ...] {first[-half:]}"
    line = strip_ansi(line) if "\x1b" in line else line
    return line if end == -1 else line + "\n" + _clean(body[end + 1 :], limit)


def _clean(body: str, limit: int) -> str:
    if "\x1b" in body:
        body = strip_ansi(body)
    lines = body.split("\n")
    if max(map(len, lines)) > limit:
        body = "\n".join(cap_line(line, limit) for line in lines)
    return body


def scan(
    lines: Iterable[str], signatures: Iterable[Signature], framework: str | None, version: str | None
) -> Triaged:
    """Every signature of ``signatures`` that applies to ``framework`` ``version`` and matches ``lines``, in the
    order of its first evidence line (the earliest failure first), and the number of lines read."""
    return scan_chunks(_line_chunks(lines), signatures, framework, version)


def scan_chunks(
    chunks: Iterable[str], signatures: Iterable[Signature], framework: str | None, version: str | None
) -> Triaged:
    """``scan`` of a log given as chunks of whole lines joined by newlines (``text_chunks``, ``_line_chunks``)."""
    states = [_State(sig) for sig in signatures if sig.applies_to(framework, version)]
    plans = [
        (
            st,
            [(p, literals(p)) for p in st.sig.compiled],
            [(p, literals(p)) for p in st.sig.compiled_near],
        )
        for st in states
    ]
    kept: dict[int, str] = {}
    previous: list[str] = []
    base = 0
    literal_free = any(texts is None for _, patterns, near in plans for _, texts in (*patterns, *near))
    # the texts to look for in a chunk: once each, and none that contains another (finding the shorter suffices)
    wanted = sorted(
        {t for _, patterns, near in plans for _, ts in (*patterns, *near) for t in (ts or ())}, key=len
    )
    every: list[str] = []
    for t in wanted:
        if not any(e in t for e in every):
            every.append(t)
    # a literal can be in a chunk only if each of its characters is: a character is looked for by memchr (one
    # fast pass each), a literal by a slower substring search; most literals of the catalogue have a character
    # (a capital, a quote, an underscore) that ordinary lines lack, and are then not searched at all
    letters = sorted({c for t in every for c in t})
    every_chars = [(t, frozenset(t)) for t in every]
    previous_text = ""
    for chunk in chunks:
        if not literal_free:
            present = {c for c in letters if c in chunk}
            maybe = [t for t, chars in every_chars if chars <= present]
        if not literal_free and not any(t in chunk for t in maybe):
            # nothing to match here: kept only as the context of a hit early in the next chunk
            previous_text = chunk
            previous = []
            base += chunk.count("\n") + 1
            continue
        if previous_text:
            previous = previous_text.split("\n")[-(CONTEXT + 1) :]
            previous_text = ""
        chunk_lines = chunk.split("\n")
        # where each line starts, by C loops: the cumulative lengths plus one newline per line
        starts = [0, *map(operator.add, accumulate(map(len, chunk_lines)), count(1))][:-1]
        for st, patterns, near in plans:
            hit_lines: set[int] = set()
            for _, texts in patterns:
                hit_lines.update(_candidates(chunk, texts, starts))
            near_lines: set[int] = set()
            for _, texts in near:  # near lines are followed in every chunk: a hit may come in the next one
                near_lines.update(_candidates(chunk, texts, starts))
            if not hit_lines and not near_lines:
                continue
            for i in sorted(hit_lines | near_lines):
                line = chunk_lines[i]
                index = base + i
                if i in near_lines and any(p.search(line) for p, _ in near):
                    st.last_near = index
                if i not in hit_lines:
                    continue
                for p, _ in patterns:
                    m = p.search(line)
                    if m is None:
                        continue
                    if near and (st.last_near is None or index - st.last_near > st.sig.window):
                        break
                    st.count += 1
                    if len(st.hits) < MAX_HITS:
                        if not st.hits:  # the lines above the first hit, for its refinement
                            above = (previous + chunk_lines[: i + 1])[-(CONTEXT + 1) :]
                            first = index - len(above) + 1
                            for j, above_line in enumerate(above):
                                kept[first + j] = above_line
                        st.hits.append(index)
                        st.found.append(m)
                        kept[index] = line
                        if near and len(st.hits) <= MAX_EVIDENCE and st.last_near is not None:
                            st.near_of[index] = st.last_near
                    break
        # near lines are evidence too: keep the text of the ones chosen in this chunk
        for st in states:
            for j in st.near_of.values():
                if base <= j < base + len(chunk_lines):
                    kept[j] = chunk_lines[j - base]
                elif base - len(previous) <= j < base:
                    kept[j] = previous[j - base + len(previous)]
        previous = chunk_lines[-(CONTEXT + 1) :]
        base += len(chunk_lines)
    text = _Lines(kept, base)
    out: list[tuple[int, Match]] = []
    for st in states:
        if not st.hits:
            continue
        sig = st.sig
        cause, fix = sig.cause, sig.fix
        if sig.refine is not None:
            detail = sig.refine(Found(framework, version, text, tuple(st.hits), tuple(st.found)))
            if detail is not None:
                cause = detail.cause or cause
                fix = detail.fix or fix
        first_hits = st.hits[:MAX_EVIDENCE]
        shown = sorted({*first_hits, *(st.near_of[h] for h in first_hits if h in st.near_of)})[:MAX_EVIDENCE]
        out.append(
            (
                st.hits[0],
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
    return Triaged([m for _, m in out], base)


def triage(
    lines: Iterable[str], signatures: Iterable[Signature], framework: str | None, version: str | None
) -> list[Match]:
    """Every signature of ``signatures`` that applies to ``framework`` ``version`` and matches ``lines``, in the
    order of its first evidence line (the earliest failure first)."""
    return scan(lines, signatures, framework, version).matches
