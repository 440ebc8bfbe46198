"""What the evaluation and serving tests share: the README's held-out suite (the share of ``a`` in the answers to
``examples/tiny/val.jsonl``, greedy) as a spec override and as a suite, the check of a run's results, and the
oracle every one of them compares with: a model folder's greedy answers computed with transformers alone, never
through rladapt (torch and transformers are imported on first use: a test that needs them skips without them)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from rladapt.evaluate import read_results
from rladapt.pool import VersionStore
from tests.conftest import REPO

SUITE = "share-of-a"
VAL = REPO / "examples" / "tiny" / "val.jsonl"
REWARD = REPO / "examples" / "tiny" / "reward.py"
MAX_TOKENS = 8


def continuous(gate: str = "") -> str:
    """``spec.eval.continuous`` following the pool, the README's suite (greedy), optionally a gate (``", gate:
    {...}"``)."""
    return (
        f"spec.eval.continuous={{follow: pool, suites: [{{name: {SUITE}, data: [examples/tiny/val.jsonl], "
        "scorer: {function: {path: examples/tiny/reward.py, name: share_of_a}}, "
        f"generation: {{max_new_tokens: {MAX_TOKENS}, temperature: 0.0}}}}]{gate}}}"
    )


def suite(name: str = SUITE, **generation: Any) -> dict[str, Any]:
    """The README's suite as one entry of ``ContinuousEval.suites`` (absolute paths), with ``generation``."""
    return {
        "name": name,
        "data": [str(VAL)],
        "scorer": {"function": {"path": str(REWARD), "name": "share_of_a"}},
        "generation": generation,
    }


def greedy_texts(folder: Path, prompts: list[str], max_tokens: int) -> list[str]:
    """What ``folder``'s weights answer to each prompt, greedily, the new tokens decoded without special tokens."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    answers = []
    for prompt in prompts:
        inputs = tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)  # fmt: skip
        answers.append(
            str(tokenizer.decode(out[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True))
        )
    return answers


def independent_score(folder: Path) -> float:
    """The suite's score of ``folder``'s weights, computed without rladapt: greedy answers, share of 'a'."""
    prompts = [json.loads(line)["prompt"] for line in VAL.read_text().splitlines()]
    return statistics.fmean(
        text.count("a") / max(len(text), 1) for text in greedy_texts(folder, prompts, MAX_TOKENS)
    )


def check_results(ck: Path, pool: Path, run_id: str, steps: list[int]) -> dict[int, float]:
    """Exactly one result per version, each the independent greedy score of that version's weights."""
    store = VersionStore(pool)
    versions = [(m.version, m.source.step) for m, _ in store.of_run(run_id)]
    assert [s for _, s in versions] == steps
    found, warnings = read_results(ck / "rladapt-eval", run_id)
    assert warnings == []
    assert sorted((r.version, r.suite, r.step) for r in found) == [(v, SUITE, s) for v, s in versions]
    for result in found:
        assert result.score == pytest.approx(independent_score(store.path(result.version)), abs=1e-9)
        assert len(result.samples) == len(VAL.read_text().splitlines())
    assert [lease for lease in store.leases() if lease.holder == "evaluator"] == []
    return {r.step: r.score for r in found}


def check_metrics(run_id: str, scores: dict[int, float]) -> None:
    """The results are the run's metrics (``rladapt metrics``): the suite's score at the step of each version."""
    from tests.cli.test_cli import rladapt

    metrics = rladapt("metrics", run_id, "--format", "json", "--metric", f"eval/{SUITE}/score", cwd=REPO)
    assert metrics.returncode == 0, metrics.stderr
    rows = json.loads(metrics.stdout)["steps"]
    assert [
        (r["step"], r[f"eval/{SUITE}/score"]) for r in rows if r[f"eval/{SUITE}/score"] is not None
    ] == sorted(scores.items())
