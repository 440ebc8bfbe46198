"""Refinements of catalogue entries: what the matched lines and the schema snapshots tell beyond the generic text.

``oom_where`` names the role and phase of a CUDA out-of-memory error from the traceback above it and the Ray actor
prefix of its lines; ``renamed_key`` names the key that replaced an unknown one, from the bundled schema snapshots
and the rename heuristics of ``rladapt.compat.schema_diff`` (the ones ``rladapt upgrade`` uses).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from rladapt.compat.schema._check import suggest
from rladapt.compat.schema_diff import diff_snapshots
from rladapt.plugins import Detail, Found
from rladapt.plugins.snapshots import find_snapshot, snapshot_versions, versions_having

__all__ = ["KeyFate", "key_fate", "missing_column", "oom_where", "renamed_key"]

# A Python traceback frame: `  File "/x/verl/workers/fsdp_workers.py", line 674, in update_actor`
_FRAME = re.compile(r'File "[^"]+", line \d+, in (?P<func>\w+)')
# Ray prints each actor's output behind `(ClassName pid=123, ip=10.0.0.1)`
_RAY_PREFIX = re.compile(r"\((?P<cls>[A-Za-z_]\w*)(?:\[rank=\d+\])? pid=\d+")
#: How far above an OOM line its traceback may start.
_LOOKBACK = 200

#: Traceback function -> (role, phase).
_FRAMES: dict[str, tuple[str, str]] = {
    # verl/workers/fsdp_workers.py (0.5.0: lines 674-1584; the same names in 0.6.1 .. 0.9.1's workers)
    "update_actor": ("actor", "training (update_actor)"),
    "generate_sequences": ("rollout", "generation (generate_sequences)"),
    "compute_log_prob": ("actor", "old log-prob recomputation (compute_log_prob)"),
    "compute_ref_log_prob": ("ref", "reference log-prob (compute_ref_log_prob)"),
    "compute_values": ("critic", "value computation (compute_values)"),
    "update_critic": ("critic", "training (update_critic)"),
    "compute_rm_score": ("reward model", "scoring (compute_rm_score)"),
    # trl/trainer/grpo_trainer.py (1.16.0: _generate line 2193, _generate_and_score_completions 2324,
    # _get_per_token_logps_and_entropies 1419, compute_loss 2939, _compute_loss 3020)
    "_generate": ("rollout", "generation (_generate)"),
    "_generate_and_score_completions": ("rollout", "generation (_generate_and_score_completions)"),
    "_get_per_token_logps_and_entropies": (
        "actor",
        "log-prob computation (_get_per_token_logps_and_entropies)",
    ),
    "compute_loss": ("actor", "training (compute_loss)"),
    "_compute_loss": ("actor", "training (compute_loss)"),
    # nemo_rl/models/policy/dtensor_policy_worker.py (NeMo-RL 0.4.0 .. 0.7.0): the policy worker also computes the
    # reference model's log-probs (get_reference_policy_logprobs) and its own (get_logprobs)
    "get_reference_policy_logprobs": ("ref", "reference log-prob (get_reference_policy_logprobs)"),
    "get_logprobs": ("actor", "log-prob computation (get_logprobs)"),
}

#: Ray actor class -> role. openrlhf/trainer/ray/ (0.11.2): ppo_actor.py PolicyModelActor, ppo_critic.py
#: CriticModelActor, launcher.py ReferenceModelActor and RewardModelActor, vllm_engine.py RolloutRayActor
#: (LLMRayActor before 0.9). vLLM's own workers print as RayWorkerWrapper (vllm/executor/ray_utils.py).
_ACTORS: dict[str, str] = {
    "PolicyModelActor": "actor",
    "ActorModelRayActor": "actor",
    "CriticModelActor": "critic",
    "ReferenceModelActor": "ref",
    "RewardModelActor": "reward model",
    "RolloutRayActor": "rollout",
    "LLMRayActor": "rollout",
    "RayWorkerWrapper": "rollout",
    # nemo_rl/models/policy/dtensor_policy_worker.py, dtensor_policy_worker_v2.py, megatron_policy_worker.py and
    # nemo_rl/models/generation/vllm/vllm_worker.py (NeMo-RL 0.4.0 .. 0.7.0): each __repr__ sets the Ray log
    # prefix, e.g. "(DTensorPolicyWorkerV2[rank=1] pid=..)"
    "DTensorPolicyWorker": "actor",
    "DTensorPolicyWorkerV2": "actor",
    "MegatronPolicyWorker": "actor",
    "VllmGenerationWorker": "rollout",
}

_FIXES: dict[str, str] = {
    "rollout": (
        "lower spec.rollout.gpu_memory_utilization (the share vLLM takes for weights and KV cache; colocated "
        "training needs the rest), raise spec.rollout.tensor_parallel, or shorten spec.data.max_response_length"
    ),
    "actor": (
        "lower spec.training.micro_batch_per_gpu (or spec.training.dynamic_batch.max_tokens_per_gpu), set "
        "spec.model.gradient_checkpointing: true, or shard more (spec.training.parallel.sp, "
        "spec.training.parallel.zero_stage: 3)"
    ),
    "critic": (
        "lower spec.training.micro_batch_per_gpu, set spec.model.gradient_checkpointing: true, or give the critic "
        "its own GPUs (spec.placement.pools)"
    ),
    "ref": "lower spec.training.micro_batch_per_gpu, or place the reference model in its own pool (spec.placement)",
    "reward model": "lower spec.reward.model.micro_batch_per_gpu, or give the reward model its own pool",
}


def oom_where(found: Found) -> Detail | None:
    """The role and phase of the first OOM: the innermost known frame above it, else its Ray actor prefix."""
    first = found.hits[0]
    role: str | None = None
    phase: str | None = None
    start = max(0, first - _LOOKBACK)
    # only the OOM's own traceback: the frames of an earlier, unrelated one must not name its role
    for index in range(first, start - 1, -1):
        if "Traceback (most recent call last)" in found.lines[index]:
            start = index
            break
    for line in found.lines[start : first + 1]:
        frame = _FRAME.search(line)
        if frame and frame.group("func") in _FRAMES:
            role, phase = _FRAMES[frame.group("func")]  # the last one wins: the innermost call
    prefix = _RAY_PREFIX.search(found.lines[first])
    if role is None and prefix and prefix.group("cls") in _ACTORS:
        role = _ACTORS[prefix.group("cls")]
    if role is None:
        return None
    where = f"in the {role}" + (f", during {phase}" if phase else "")
    return Detail(cause=f"CUDA ran out of memory {where}.", fix=_FIXES[role])


def missing_column(found: Found) -> Detail | None:
    """The column asked for and the ones the data has, when the message names them (the TRL driver's does)."""
    for m in found.matches:
        named = m.groupdict()
        if named.get("column"):
            have = f"; the data's columns are: {named['have']}" if named.get("have") else ""
            return Detail(
                cause=f"The training data has no column {named['column']!r} (spec.data.prompt_key){have}."
            )
        if named.get("key"):
            return Detail(
                cause=f"The training data has no column {named['key']!r}, which the dataset reader asks for."
            )
    return None


# --- unknown configuration keys --------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyFate:
    """What became of a key unknown to ``framework`` ``version``."""

    key: str
    framework: str
    version: str
    #: the bundled versions that do have the key
    known_in: tuple[str, ...]
    #: the key that replaced it (a rename found by ``schema_diff``), else the nearest key (``suggest``)
    new: str | None
    #: ``renamed`` (schema_diff paired the two), ``nearest`` (a close name), or None
    how: str | None

    def describe(self) -> str:
        where = f"{self.framework} {self.version}"
        if self.new and self.how == "renamed":
            return f"`{self.key}` is `{self.new}` in {where} (renamed; the old name is in {', '.join(self.known_in)})"
        text = f"{where} has no `{self.key}`"
        if self.known_in:
            text += f" (it exists in {', '.join(self.known_in)})"
        if self.new:
            text += f"; the nearest key is `{self.new}`"
        return text


_FRAMEWORKS = ("verl", "openrlhf", "nemo-rl", "trl")


def _parsed(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def _newest(versions: list[str]) -> str:
    return max(versions, key=_parsed)


def key_fate(key: str, framework: str | None, version: str | None) -> KeyFate | None:
    """What happened to ``key`` in ``framework`` ``version`` (default: each framework's newest snapshot).

    None when no bundled snapshot knows anything of it (a typo, or a key of something else).
    """
    fates: list[KeyFate] = []
    for fw in (framework,) if framework else _FRAMEWORKS:
        have = snapshot_versions(fw)
        if not have:
            continue
        target = version if version in have else _newest(have)
        snap = find_snapshot(fw, target)
        if snap is None or snap.has(key):
            continue
        known_in = tuple(versions_having(fw, key, exclude=target))
        new: str | None = None
        how: str | None = None
        if known_in:
            # follow the key release by release from the newest version that had it: each step's diff pairs
            # fewer candidates than one diff across several releases (verl 0.6.1 -> 0.7.1 -> 0.9.1)
            order = sorted(have, key=_parsed)
            start = max(known_in, key=_parsed)
            steps = [v for v in order if _parsed(start) <= _parsed(v) <= _parsed(target)]
            current: str | None = key
            for before, after in itertools.pairwise(steps):
                a, b = find_snapshot(fw, before), find_snapshot(fw, after)
                if a is None or b is None or current is None:
                    break
                if not b.has(current):
                    current = diff_snapshots(a, b).rename_of.get(current)
            if current is not None and current != key and snap.has(current):
                new, how = current, "renamed"
        if new is None:
            new = suggest(snap, key)
            how = "nearest" if new else None
        if framework or known_in:
            fates.append(KeyFate(key, fw, target, known_in, new, how))
    return fates[0] if fates else None


def _unknown_keys(found: Found) -> list[str]:
    keys: list[str] = []
    for m in found.matches:
        named = m.groupdict()
        if named.get("key"):
            keys.append(named["key"].lstrip("+~"))
        for token in (named.get("args") or "").split():
            if token.startswith("--"):
                keys.append(token.split("=", 1)[0])
    return list(dict.fromkeys(keys))


def renamed_key(found: Found) -> Detail | None:
    """The new name of each unknown key, from the schema snapshots."""
    keys = _unknown_keys(found)
    fates = [f for f in (key_fate(k, found.framework, found.version) for k in keys) if f is not None]
    if not fates:
        if not keys:
            return None
        return Detail(cause=f"The framework does not accept {', '.join(f'`{k}`' for k in keys)}.")
    cause = (
        "A configuration key the framework does not accept: " + "; ".join(f.describe() for f in fates) + "."
    )
    fixes = []
    for f in fates:
        where = f"spec.native.{f.framework}"
        if f.new:
            fixes.append(
                f"use `{f.new}` instead of `{f.key}` (in {where}, a patch or the script you imported)"
            )
        else:
            fixes.append(f"drop `{f.key}` from {where} (or pin {f.framework} to {', '.join(f.known_in)})")
    fixes.append("`rladapt upgrade` lists every renamed key between two versions")
    return Detail(cause=cause, fix="; ".join(fixes))
