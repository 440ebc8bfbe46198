"""Checks of the harness itself: the parser built from a wheel's source with ``ast`` is the real one.

The wheels ship no example scripts; the research notes (``../shared/research/``) hold flag tables extracted
independently from the same wheels and the argv fragments of the upstream Slurm example scripts at v0.8.11 and
v0.11.0. Both must agree with the parsers this suite builds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rladapt.adapters.openrlhf.parser import parse

from .conftest import PINNED, RESEARCH, real_parser

pytestmark = pytest.mark.conformance

TABLES = sorted((RESEARCH / "openrlhf-flags").glob("[0-9]*.json"))
NOTES = RESEARCH / "openrlhf.md"


def test_research_tables_exist_for_pinned_versions() -> None:
    assert {json.loads(t.read_text())["version"] for t in TABLES} <= set(PINNED)
    assert len(TABLES) >= 4


@pytest.mark.parametrize("table", TABLES, ids=[t.stem for t in TABLES])
def test_parser_matches_the_independently_extracted_flag_table(table: Path) -> None:
    data = json.loads(table.read_text())
    parser = real_parser(data["version"])
    actions = {a.option_strings[0]: a for a in parser._actions if a.option_strings and a.dest != "help"}
    assert set(actions) == {f["flag"] for f in data["flags"]}
    for flag in data["flags"]:
        action = actions[flag["flag"]]
        assert action.dest == flag["dest"]
        assert list(action.option_strings[1:]) == flag.get("aliases", [])
        assert (list(action.choices) if action.choices else None) == flag["choices"]
        default = action.default
        if isinstance(default, float) and default in (float("inf"), float("-inf")):
            default = str(default)
        if isinstance(flag["default"], str) and "datetime.now()" in flag["default"]:
            # the run name is stamped at parse time: the module's own `datetime` import must have been executed
            assert isinstance(default, str), (flag["flag"], default)
            assert re.fullmatch(r"ppo_\d{4}T\d{2}:\d{2}", default), (flag["flag"], default)
            continue
        assert (list(default) if isinstance(default, tuple) else default) == flag["default"], flag["flag"]


def _fragments(marker: str) -> list[list[str]]:
    """Backticked argv fragments on the research-notes line starting with ``marker``, split at the ellipses."""
    line = next(ln for ln in NOTES.read_text().splitlines() if ln.startswith(marker))
    runs: list[list[str]] = []
    for span in re.findall(r"`([^`]*--[^`]*)`", line):
        runs.extend(part.split() for part in span.split("…") if part.strip())
    assert runs, f"no argv fragments on the line {marker!r}"
    return runs


SLURM_LINE = "- The args at v0.8.11 are flat"


def test_upstream_slurm_example_args_parse_with_their_versions() -> None:
    flat: list[list[str]] = []
    dotted: list[list[str]] = []
    for run in _fragments(SLURM_LINE):
        (dotted if any("." in tok for tok in run if tok.startswith("--")) else flat).append(run)
    assert flat and dotted
    for run in flat:
        result = parse(real_parser("0.8.11"), run)
        assert result.error is None and not result.unknown, (run, result.unknown)
    for run in dotted:  # v0.11.0 is not pinned; its dotted flags are all still in 0.11.2
        result = parse(real_parser("0.11.2"), run)
        assert result.error is None and not result.unknown, (run, result.unknown)


def test_research_notes_findings_hold_for_the_pinned_parsers() -> None:
    flat_args = [
        tok for run in _fragments(SLURM_LINE) for tok in run if tok.startswith("--") and "." not in tok
    ]
    # --bf16 was removed in 0.9.2, --prompt_max_len/--generate_max_len in 0.9.8: a v0.8.11 script fails on 0.9.10
    for flag, version, ok in [
        ("--bf16", "0.8.11", True),
        ("--bf16", "0.9.10", False),
        ("--prompt_max_len", "0.9.10", False),
        ("--generate_max_len", "0.9.10", False),
    ]:
        assert (flag in _flags(version)) is ok, (flag, version)
    # the upstream DAPO script's --vllm_enable_is_correction is a typo of --enable_vllm_is_correction
    for version in ("0.9.10", "0.10.1.post2"):
        assert "--vllm_enable_is_correction" not in _flags(version)
        assert "--enable_vllm_is_correction" in _flags(version)
    # and from 0.10.2 every flat flag is gone
    for version in ("0.10.2", "0.11.2"):
        result = parse(real_parser(version), flat_args)
        assert set(result.unknown) >= set(flat_args)


def _flags(version: str) -> set[str]:
    return {opt for a in real_parser(version)._actions for opt in a.option_strings}


def test_prefix_abbreviations_are_refused() -> None:
    result = parse(real_parser("0.8.11"), ["--actor_num_node", "2"])
    assert "--actor_num_node" in result.unknown
