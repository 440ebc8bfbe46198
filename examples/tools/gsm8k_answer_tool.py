"""A verl tool for examples/multi-turn-tools-gsm8k.yaml: the model submits an answer and learns whether it is right.

verl creates one instance per rollout with the sample's ``extra_info.tools_kwargs.check_gsm8k_answer.create_kwargs``
(the data must carry ``{"ground_truth": "<number>"}`` there), calls ``execute`` for each call the model writes, and
adds ``calc_reward`` to the step's tool reward. verl 0.6.1 changed the return types from text to ``ToolResponse``
(verl/tools/base_tool.py); this tool answers in the installed version's type.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool

try:  # verl >= 0.6.1: create/execute answer with a ToolResponse
    from verl.tools.schemas import ToolResponse
except ImportError:  # verl 0.5: plain text
    ToolResponse = None

_NUMBER = re.compile(r"-?[\d,]*\.?\d+")


def _number(text: str) -> str | None:
    found = _NUMBER.findall(text)
    return found[-1].replace(",", "") if found else None


def _reply(text: str) -> Any:
    return text if ToolResponse is None else ToolResponse(text=text)


class Gsm8kAnswerTool(BaseTool):
    def __init__(self, config: dict, tool_schema: Any) -> None:
        super().__init__(config, tool_schema)
        self._truth: dict[str, str | None] = {}
        self._correct: dict[str, bool] = {}

    async def create(self, instance_id: str | None = None, ground_truth: str = "", **kwargs: Any) -> Any:
        instance_id = instance_id or str(uuid4())
        self._truth[instance_id] = _number(str(ground_truth))
        self._correct[instance_id] = False
        return instance_id if ToolResponse is None else (instance_id, ToolResponse())

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict]:
        answer = _number(str(parameters.get("answer", "")))
        correct = answer is not None and answer == self._truth.get(instance_id)
        self._correct[instance_id] = correct
        text = "Correct." if correct else f"{answer!r} is not the answer. Check your steps and try again."
        return _reply(text), 0.0, {"correct": correct}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 1.0 if self._correct.get(instance_id) else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._truth.pop(instance_id, None)
        self._correct.pop(instance_id, None)
