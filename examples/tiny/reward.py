"""The tiny TRL example's reward: the share of the letter ``a`` in the completion, which no prompt contains.

TRL calls a reward function with the batch's prompts and completions (and every other data column) as keyword
arguments and takes one float per completion (trl/trainer/grpo_trainer.py ``_calculate_rewards``, 0.23.1 to
1.16.0). A randomly initialised model says ``a`` about once in 64 tokens; GRPO on this reward raises it within a
few dozen steps, which shows that rollouts, rewards and updates are wired together.
"""

from __future__ import annotations

from typing import Any


def share_of_a(completions: list[str], **kwargs: Any) -> list[float]:
    return [text.count("a") / max(len(text), 1) for text in completions]
