"""Generating a suite's answers from one version's weights with transformers (the ``engine`` extra).

The answers are what the pool's reference engine (``rladapt.pool.engine``) returns for the same prompt and
settings: its own ``generate`` (``rladapt.pool.engine.generate``), greedy at temperature 0, the new tokens decoded
without special tokens. One thread: the evaluator runs beside the training on the same machine and must not take
all its cores.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rladapt.pool.engine import generate, load_weights
from rladapt.primitives.errors import RladaptError
from rladapt.primitives.spec import SuiteGeneration

__all__ = ["EngineModel", "Model", "NotServed", "load_model"]


_WHO = "the evaluator"


@dataclass
class Model:
    model: Any
    tokenizer: Any

    def text_of(self, prompt: Any) -> str:
        """A prompt as the model reads it: a string as is, chat messages through the model's chat template."""
        if isinstance(prompt, str):
            return prompt
        return str(self.tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True))

    def answers(self, prompt: Any, generation: SuiteGeneration, seed: int) -> list[str]:
        text = self.text_of(prompt)
        out = []
        for k in range(generation.samples):
            # a sampled suite is reproducible: the same answers on a re-run
            new, _ = generate(self.model, self.tokenizer, text, max_new_tokens=generation.max_new_tokens,
                              temperature=generation.temperature, seed=seed + k, who=_WHO)  # fmt: skip
            out.append(str(self.tokenizer.decode(new, skip_special_tokens=True)))
        return out


def load_model(folder: Path) -> Model:
    """The model in ``folder`` (Hugging Face files) on the CPU, in float32; RladaptError when it does not load."""
    try:
        model, tokenizer = load_weights(folder, _WHO)
    except (OSError, ValueError) as exc:
        raise RladaptError(f"cannot load the model in {str(folder)!r}: {exc}") from None
    return Model(model, tokenizer)


class NotServed(RladaptError):
    """The serving engine cannot answer for the version (it switched away, a chat prompt, unreachable): the
    evaluator loads the weights itself instead."""


@dataclass
class EngineModel:
    """A replica of the pool's serving group that serves the version being evaluated (``rladapt pool serve``):
    its OpenAI-compatible ``/v1/completions``, each answer checked to come from that version."""

    url: str
    version: str
    timeout: float = 600.0

    def answers(self, prompt: Any, generation: SuiteGeneration, seed: int) -> list[str]:
        if not isinstance(prompt, str):
            raise NotServed("a chat prompt needs the model's chat template: generated locally")
        body = {
            "prompt": prompt,
            "max_tokens": generation.max_new_tokens,
            "temperature": generation.temperature,
        }
        out = []
        for _ in range(generation.samples):
            request = urllib.request.Request(self.url.rstrip("/") + "/v1/completions", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})  # fmt: skip
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    answer = json.loads(response.read())
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise NotServed(f"{self.url}: {getattr(exc, 'reason', exc)}") from None
            if answer.get("weight_version") != self.version:  # the alias moved on meanwhile
                raise NotServed(f"{self.url} now serves {answer.get('weight_version')}, not {self.version}")
            out.append(str(answer["choices"][0]["text"]))
        return out
