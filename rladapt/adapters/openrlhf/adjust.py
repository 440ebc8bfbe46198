"""The values OpenRLHF changes after parsing its flags: the namespace ``train_ppo_ray`` really runs with.

``openrlhf/cli/train_ppo_ray.py`` parses its flags and then, in its ``__main__`` block before ``train(args)``,
rewrites some of them (the asserts of the same block are ``checks``). Read in the wheel of every pinned version:

- every version: a non-``gae`` estimator drops ``critic_pretrain``; under ``gae`` an unset one is the first
  ``reward_pretrain``, or ``pretrain`` with a remote reward; ``remote_rm_url`` is split at commas; an
  ``input_template`` without ``{}`` becomes None; ``vllm_enable_sleep`` is turned off without
  ``colocate_all_models`` (0.5.9.post1 lines 388-431, 0.7.5 lines 420-478, 0.9.10 lines 527-630);
- 0.5.9.post1 and 0.7.5: ``packing_samples`` turns ``flash_attn`` on (0.5.9.post1 line 417, 0.7.5 line 450);
- from 0.8.11: an unset ``eps_clip_low_high`` is ``(eps_clip, eps_clip)``; ``agent_func_path`` sets
  ``remote_rm_url`` to ``agent``; ``ring_attn_size > 1`` and ``use_dynamic_batch`` turn ``packing_samples`` on;
  ``use_dynamic_batch`` fills an unset ``rollout_max_tokens_per_gpu`` with ``train_max_tokens_per_gpu``;
  ``packing_samples`` makes a non-flash ``attn_implementation`` ``flash_attention_2``; an unset
  ``vllm_generate_batch_size`` is ``rollout_batch_size`` (0.8.11 lines 471-571, 0.9.10 lines 527-630,
  0.10.1.post2 lines 540-661);
- 0.10.2 on: the same rules on the dotted names, after ``hierarchize`` nests the namespace by its dots
  (0.10.2 lines 588-717, ``openrlhf/utils/config.py``), which changes no value;
- 0.11.2: a one-value ``--algo.advantage.is_correction_threshold`` gets the lower bound 0.0 (lines 639-641).

``adjust`` applies them to a flag -> value mapping keyed by option strings (``--pretrain``, ``--actor.eps_clip``)
and says, for each value it changed, which rule did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from packaging.version import Version

from .versions import option

#: First pinned version with the rules of the 0.8 line (eps_clip_low_high, agent mode, packing, dynamic batch).
_RULES_0_8 = Version("0.8.11")
#: Last pinned version whose packing rule switches --flash_attn on (the flag is gone from 0.8.10 on).
_FLASH_ATTN_UNTIL = Version("0.8.10")
_THRESHOLD_SINCE = Version("0.11.2")
_THRESHOLD = "--algo.advantage.is_correction_threshold"


def adjust(values: dict[str, Any], version: str) -> dict[str, str]:
    """Apply ``version``'s post-parse rules to ``values`` in place; changed flag -> the rule, as text."""
    v = Version(version)
    changed: dict[str, str] = {}

    def name(flat: str) -> str:
        return option(v, flat)

    def get(flat: str) -> Any:
        return values.get(name(flat))

    def set_(flat: str, value: Any, why: str) -> None:
        key = name(flat)
        if key in values and values[key] != value:
            values[key] = value
            changed[key] = why

    rules_0_8 = v >= _RULES_0_8
    if rules_0_8 and get("eps_clip_low_high") is None:
        eps = get("eps_clip")
        set_("eps_clip_low_high", (eps, eps), f"unset: ({name('eps_clip')}, {name('eps_clip')})")
    if rules_0_8 and get("agent_func_path"):
        set_("remote_rm_url", "agent", f"'agent' because {name('agent_func_path')} is set")

    _critic(get, set_, name)

    remote = get("remote_rm_url")
    if isinstance(remote, str) and remote:
        set_("remote_rm_url", remote.split(","), "split at commas")
    template = get("input_template")
    if template and "{}" not in template:
        set_("input_template", None, "None: it has no {}")

    if v < _FLASH_ATTN_UNTIL and get("packing_samples") and not get("flash_attn"):
        set_("flash_attn", True, f"on because {name('packing_samples')} is set")
    if rules_0_8:
        if (get("ring_attn_size") or 1) > 1 and not get("packing_samples"):
            set_("packing_samples", True, f"on because {name('ring_attn_size')} > 1")
        if get("use_dynamic_batch"):
            if not get("packing_samples"):
                set_("packing_samples", True, f"on because {name('use_dynamic_batch')} is set")
            if get("rollout_max_tokens_per_gpu") is None:
                set_(
                    "rollout_max_tokens_per_gpu",
                    get("train_max_tokens_per_gpu"),
                    f"unset: {name('train_max_tokens_per_gpu')}",
                )
        if get("packing_samples") and "flash_attention" not in str(get("attn_implementation")):
            set_("attn_implementation", "flash_attention_2", f"because {name('packing_samples')} is set")

    if get("vllm_enable_sleep") and not get("colocate_all_models"):
        set_("vllm_enable_sleep", False, f"off without {name('colocate_all_models')}")

    if rules_0_8 and not get("vllm_generate_batch_size"):
        set_("vllm_generate_batch_size", get("rollout_batch_size"), f"unset: {name('rollout_batch_size')}")

    threshold = values.get(_THRESHOLD)
    if v >= _THRESHOLD_SINCE and isinstance(threshold, list) and len(threshold) == 1:
        values[_THRESHOLD] = [0.0, *threshold]
        changed[_THRESHOLD] = "one value: the upper bound, with the lower bound 0.0"
    return changed


def _critic(
    get: Callable[[str], Any], set_: Callable[[str, Any, str], None], name: Callable[[str], str]
) -> None:
    """The critic's model: none without GAE, else the reward model's (first) or, with a remote reward, the
    policy's (every pinned version, the first rule after parse_args)."""
    if get("advantage_estimator") != "gae":
        set_("critic_pretrain", None, f"None: {name('advantage_estimator')} is not gae")
    elif get("critic_pretrain") is None:
        if not get("remote_rm_url"):
            reward = get("reward_pretrain")
            if isinstance(reward, str):  # None: OpenRLHF itself fails here (None.split)
                set_("critic_pretrain", reward.split(",")[0], f"unset: the first {name('reward_pretrain')}")
        else:
            set_("critic_pretrain", get("pretrain"), f"unset: {name('pretrain')} (a remote reward)")
