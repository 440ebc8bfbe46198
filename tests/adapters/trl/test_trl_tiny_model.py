"""The committed tiny model and prompts are what ``scripts/make_tiny_model.py`` makes (fixed seed, byte for byte),
and small enough to commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("torch", reason="the trl extra (the dev extra installs it)")

TINY = REPO / "examples" / "tiny"


def test_the_generator_reproduces_the_committed_files(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_tiny_model.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(TINY) for p in TINY.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
    )
    assert made == committed
    for rel in made:
        assert (tmp_path / rel).read_bytes() == (TINY / rel).read_bytes(), (
            f"{rel} differs: regenerate and commit"
        )
    assert sum((TINY / rel).stat().st_size for rel in made) < 200_000


def test_the_tokenizer_is_one_token_per_character() -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(TINY / "model")
    assert len(tok) == 64
    ids = tok("abcXYZ09", add_special_tokens=False)["input_ids"]
    assert len(ids) == 8 and tok.decode(ids) == "abcXYZ09"
