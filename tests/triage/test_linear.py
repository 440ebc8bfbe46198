"""Triage in linear time and bounded memory: no built-in pattern can backtrack without bound (read from the parsed
patterns, not timed), a pathological line is cut to its head and tail, and a log is streamed a line at a time."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from rladapt.triage import BUILTIN
from rladapt.triage.match import MAX_LINE, cap_line, capped_lines, literals, scan, strip_ansi, text_chunks

#: The most steps one start position of a pattern may take: a line then costs at most its length times this.
STEPS_PER_START = 20_000


try:
    import re._parser as _parser  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_parse as _parser

#: how the parser spells an unbounded repeat's maximum
UNBOUNDED = _parser.MAXREPEAT


def _parse(pattern: str) -> Any:
    return _parser.parse(pattern)


def _steps(items: Any, tail: bool) -> float:
    """An upper bound of the steps a match attempt takes from one start, by the pattern's structure: a repeat costs
    its maximum count times its body (a bounded repeat backtracks at most that often), an alternation the sum of
    its branches. An unbounded repeat of one character at the very end (``.+$``) never backtracks: it runs to the
    end of the line once and the match is over; any other unbounded repeat is infinite."""
    total = 0.0
    items = list(items)
    for n, (op, arg) in enumerate(items):
        name = str(op)
        last = tail and all(str(o) == "AT" for o, _ in items[n + 1 :])
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _low, high, body = arg
            body_steps = _steps(body, False)
            if high == UNBOUNDED:
                if last and body_steps <= 1:
                    total += MAX_LINE
                    continue
                return float("inf")
            total += high * body_steps
        elif name == "SUBPATTERN":
            total += _steps(arg[-1], last)
        elif name == "BRANCH":
            total += sum(_steps(b, last) for b in arg[1])
        else:
            total += 1
    return total


@pytest.mark.parametrize("sig", BUILTIN, ids=lambda s: s.id)
def test_no_builtin_pattern_backtracks_without_bound(sig: Any) -> None:
    for pattern in (*sig.patterns, *sig.near):
        assert _steps(_parse(pattern), True) <= STEPS_PER_START, pattern


def test_the_step_bound_sees_an_unbounded_repeat() -> None:
    # the bound must fail on the kind of pattern that made a 1 MiB line take over 300 s
    assert _steps(_parse(r"Could not override '(?P<key>[^']+)'"), True) == float("inf")
    assert _steps(_parse(r"src \S+, dst \S+"), True) == float("inf")
    assert _steps(_parse(r"found (?P<have>.+)$"), True) < STEPS_PER_START


@pytest.mark.parametrize("sig", BUILTIN, ids=lambda s: s.id)
def test_a_pathological_line_is_cut_and_still_matched_at_its_head(sig: Any) -> None:
    # each pattern's literal text over and over, without what completes it: the worst case for backtracking
    for pattern in sig.patterns:
        texts = literals(re.compile(pattern)) or ("x",)
        junk = (texts[0] + "a" * 7 + " ") * (4 * MAX_LINE // (len(texts[0]) + 8))
        line = junk + "\n"
        (read,) = list(capped_lines(io.StringIO(line, newline="")))
        assert len(read.rstrip("\n")) < MAX_LINE + 64 and read.startswith(junk[: MAX_LINE // 2])
        assert read.rstrip("\n").endswith(junk[-(MAX_LINE // 2) :])
        found = scan([line], BUILTIN, None, None)
        assert found.lines == 1


def test_every_builtin_pattern_has_a_literal_to_search_for() -> None:
    # a pattern without one is tried on every line: the built-in catalogue has none
    for sig in BUILTIN:
        for pattern in (*sig.patterns, *sig.near):
            assert literals(re.compile(pattern)), pattern


def test_cap_line_keeps_head_and_tail() -> None:
    line = "H" * 10_000 + "T" * 10_000
    capped = cap_line(line)
    assert capped.startswith("H" * (MAX_LINE // 2)) and capped.endswith("T" * (MAX_LINE // 2))
    assert f"[... {20_000 - MAX_LINE} characters cut ...]" in capped
    assert cap_line("short") == "short"


def test_a_long_file_line_is_streamed_and_the_lines_around_it_count(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    with log.open("w") as f:
        f.write("first\r\n")
        f.write("z" * (3 * MAX_LINE) + " CUDA out of memory. Tried to allocate 2.00 GiB\n")
        f.write("third\rfourth\n")
    with log.open(encoding="utf-8", newline="") as stream:
        found = scan(capped_lines(stream), BUILTIN, None, None)
    assert found.lines == 4
    (m,) = found.matches
    assert m.signature == "cuda-oom" and m.line_numbers == (2,)


@pytest.mark.parametrize("block", [7, 1000, 1 << 20])
def test_file_chunks_read_the_lines_readline_reads(tmp_path: Path, block: int) -> None:
    log = tmp_path / "job.log"
    text = (
        "first\r\n"
        + "y" * (3 * MAX_LINE + 5)
        + " tail of a long line\n\x1b[36m(WorkerDict pid=1)\x1b[0m colour\rcarriage\n\n"
        + "z" * (MAX_LINE + 1)
        + "\nlast, no newline"
    )
    log.write_text(text, encoding="utf-8")
    with log.open(encoding="utf-8", newline="") as stream:
        expected = [strip_ansi(line.rstrip("\r\n")) for line in capped_lines(stream)]
    with log.open(encoding="utf-8") as stream:
        got = "\n".join(text_chunks(stream, block=block)).split("\n")
    assert got == expected and len(got) == 7
    assert got[1].endswith(" tail of a long line") and "characters cut" in got[1]
