"""The committed ledgers of the script reader over upstream launch scripts, and the command that makes them."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
LEDGERS = sorted((Path(__file__).parent / "fixtures").glob("script_reader_ledger_*.tsv"))


def _command() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "script_reader_ledger", ROOT / "scripts" / "script_reader_ledger.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("ledger", LEDGERS, ids=[p.stem for p in LEDGERS])
def test_ledger_figures_match_its_rows_and_nothing_crashed(ledger: Path) -> None:
    lines = ledger.read_text().splitlines()
    assert re.match(r"# Launch-script reader ledger: \w+ scripts of [\w.-]+/[\w.-]+@[\w.-]+$", lines[0])
    figure = next(line for line in lines if line.startswith("# read "))
    rows = [line.split("\t") for line in lines if not line.startswith("#")]
    assert all(len(row) == 3 and row[1] in ("read", "refused") for row in rows)
    assert figure == f"# read {sum(row[1] == 'read' for row in rows)} of {len(rows)}"
    # "no launch found" only where no matcher accepts the module the script runs, and it names that module
    missing = [row for row in rows if row[2].endswith("found in it")]
    assert not missing


def test_the_command_writes_a_ledger_of_a_checkout(tmp_path: Path) -> None:
    scripts = tmp_path / "examples" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "train_ppo.sh").write_text(
        'DIR=$(cd "$(dirname "$0")" && pwd)\npython3 -m openrlhf.cli.train_ppo_ray --pretrain $DIR/m\n'
    )
    (scripts / "train_grpo.sh").write_text("python3 -m openrlhf.cli.train_ppo_ray --pretrain $MODEL\n")
    (scripts / "train_sft.sh").write_text("python3 -m openrlhf.cli.train_sft --pretrain x\n")
    out = tmp_path / "ledger.tsv"
    assert _command().main(["openrlhf", str(tmp_path), "--source", "o/r@v1", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "# Launch-script reader ledger: openrlhf scripts of o/r@v1"
    assert "# read 1 of 2" in lines
    assert lines[-2:] == [
        "examples/scripts/train_grpo.sh\trefused\texamples/scripts/train_grpo.sh:1: variable MODEL cannot be "
        "resolved without running the script (MODEL: not set in the script, so it comes from the caller's "
        "environment); give --set MODEL=VALUE or --unset MODEL when the caller does not set it",
        "examples/scripts/train_ppo.sh\tread\tline 2: 2 arguments",
    ]


def test_check_fails_on_a_script_that_is_read_no_more(tmp_path: Path) -> None:
    command = _command()
    ledger = "# header\na.sh\tread\tline 1: 2 arguments\nb.sh\trefused\tb.sh:1: why\nc.sh\tread\tline 3: 1 arguments\n"
    rows = [("a.sh", "refused", "a.sh:1: now refused"), ("b.sh", "read", "line 1: 1 arguments")]
    assert command.regressions(ledger, rows) == [
        "a.sh: read before, now refused: a.sh:1: now refused",
        "c.sh: read before, not in the field now",
    ]
    assert command.regressions(ledger, [("a.sh", "read", "x"), ("c.sh", "read", "y")]) == []
