"""A suite's scorer: the spec's reward sources, called the way TRL calls a reward function.

A function (``scorer.function``: a file and a name) is called as ``f(prompts=, completions=, **columns)`` and returns
one float per completion (trl/trainer/grpo_trainer.py ``_calculate_rewards``, 0.23.1 to 1.16.0). The built-in ones
are computed here, without a framework:

- ``gsm8k``: the number after the last ``#### `` in the answer equals the ground truth, 1.0, else 0.0 (verl's strict
  GSM8K check, verl/utils/reward_score/gsm8k.py 0.4.1 to 0.9.1, ``extract_solution(method="strict")``);
- ``math``: Hugging Face math-verify's ``verify(parse(ground truth), parse(answer))`` (``pip install math-verify``).

The ground truth is the row's ``ground_truth`` (or verl's ``reward_model.ground_truth``, TRL's ``solution``, or a
GSM8K ``answer`` after its ``#### ``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rladapt.primitives.errors import UsageError
from rladapt.primitives.functions import NotLoadable, load_function
from rladapt.primitives.spec import SuiteScorer

__all__ = ["Scorer", "load_scorer", "score"]

Scorer = Callable[..., Any]

_GSM8K = re.compile(r"#### (\-?[0-9\.\,]+)")


def load_scorer(scorer: SuiteScorer, field: str) -> Scorer:
    """The callable for ``scorer``; a UsageError naming ``field`` when it cannot be loaded."""
    if scorer.builtin is not None:
        name = scorer.builtin.name
        if name == "gsm8k":
            return _gsm8k
        if name == "math":
            return _math
        raise UsageError(
            f"{field}.builtin.name: the evaluator has no scorer {name!r} (it has gsm8k and math)"
        )
    fn = scorer.function
    assert fn is not None  # the model allows exactly one of builtin and function
    try:
        return load_function(fn.path, fn.name, f"rladapt_scorer_{Path(fn.path).stem}")
    except NotLoadable as exc:
        raise UsageError(f"{field}.function.{exc.part}: {exc.message}") from None
    except Exception as exc:  # the user's module: whatever it raises, say where
        raise UsageError(f"{field}.function.path: importing {fn.path!r} failed: {exc!r}") from None


def score(
    scorer: Scorer, prompts: list[Any], completions: list[str], rows: list[dict[str, Any]]
) -> list[float]:
    """One float per completion; a UsageError when the scorer returns anything else."""
    columns: dict[str, list[Any]] = {}
    for row in rows:
        for key in row:
            if key != "prompt":
                columns.setdefault(key, [])
    for key in columns:
        columns[key] = [row.get(key) for row in rows]
    values = scorer(prompts=prompts, completions=completions, **columns)
    if not isinstance(values, (list, tuple)) or len(values) != len(completions):
        raise UsageError(f"the scorer returned {type(values).__name__}, not one number per completion")
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise UsageError(f"the scorer returned {value!r} for a completion: expected a finite number")
        out.append(float(value))
    return out


def _truth(row: dict[str, Any]) -> str | None:
    for key in ("ground_truth", "solution"):
        if row.get(key) is not None:
            return str(row[key])
    reward_model = row.get("reward_model")
    if isinstance(reward_model, dict) and reward_model.get("ground_truth") is not None:
        return str(reward_model["ground_truth"])
    answer = row.get("answer")
    if answer is not None:
        return str(answer).split("#### ")[-1].strip()
    return None


def _columns_rows(kwargs: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [{key: values[i] for key, values in kwargs.items() if isinstance(values, list)} for i in range(n)]


def _gsm8k(completions: list[str], **kwargs: Any) -> list[float]:
    out = []
    for text, row in zip(completions, _columns_rows(kwargs, len(completions)), strict=True):
        found = _GSM8K.findall(text)
        truth = _truth(row)
        answer = found[-1].replace(",", "").replace("$", "") if found else None
        out.append(
            1.0 if answer is not None and truth is not None and answer == truth.replace(",", "") else 0.0
        )
    return out


def _math(completions: list[str], **kwargs: Any) -> list[float]:
    try:
        from math_verify import parse, verify
    except ImportError:
        raise UsageError(
            "the math scorer needs Hugging Face math-verify: pip install 'rladapt[math]'"
        ) from None
    out = []
    for text, row in zip(completions, _columns_rows(kwargs, len(completions)), strict=True):
        truth = _truth(row)
        if truth is None:
            out.append(0.0)
            continue
        gold = parse(truth if "\\boxed" in truth else f"\\boxed{{{truth}}}")
        out.append(1.0 if verify(gold, parse(text)) else 0.0)
    return out
