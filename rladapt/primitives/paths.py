"""The local paths a job reads: which spec fields name files, and which of their values are local paths.

``job_inputs`` lists them (spec field -> path as written), leaving out what is not a local path: a Hugging Face
Hub id, a remote URL, an interpreter named without a directory (looked up on the job's PATH). ``missing_inputs``
says which of them do not exist from a given directory: ``rladapt validate`` runs it where the user stands, and
the launchers that read these paths from this machine's file system (local, Slurm) before they submit.

A value the user could mean either way (``org/name`` for a model: a Hub id or a directory) is a local path when it
exists here and a Hub id otherwise; a value that cannot be a Hub id (two slashes, ``./``, a data file's suffix) is
always a local path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .errors import Problem, quote

if TYPE_CHECKING:
    from .spec import RLJob

#: A Hub repository id: an optional namespace, then a name, each of word characters, '-' and '.', not starting or
#: ending with '-' or '.' (huggingface_hub 0.36.2, utils/_validators.py ``REPO_ID_REGEX``; at most 96 characters,
#: no '--' or '..', checked by ``validate_repo_id``).
_HUB_ID = re.compile(r"(?:[\w\-.]+/)?[\w\-.]+")
_HUB_ID_MAX = 96
#: URL schemes a framework reads itself (fsspec, datasets, the Hub client): not on this machine's disk.
_REMOTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
#: Suffixes of data files: a Hub dataset id never has them, so ``data/train.parquet`` is a local file.
_DATA_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv", ".arrow", ".txt", ".tsv")

Kind = Literal["interpreter", "model", "data", "file"]


@dataclass(frozen=True)
class JobInput:
    """One local path the job reads: the spec ``field`` that names it, the ``path`` as written, what it is."""

    field: str
    path: str
    kind: Kind


def is_remote(path: str) -> bool:
    """A URL (``s3://``, ``hf://``, ``https://``...): read by the framework over the network."""
    return bool(_REMOTE.match(path))


def _could_be_hub_id(path: str) -> bool:
    if path.startswith(("/", "./", "../", "~")) or len(path) > _HUB_ID_MAX:
        return False
    if "--" in path or ".." in path or not _HUB_ID.fullmatch(path):
        return False
    return not any(part.startswith(("-", ".")) or part.endswith(("-", ".")) for part in path.split("/"))


def is_local(path: str, kind: Kind, base: Path) -> bool:
    """Whether ``path`` (a value of a field of ``kind``) names something on a file system, seen from ``base``.

    A model or data value that could be a Hub id is local only when it exists under ``base``.
    """
    if is_remote(path):
        return False
    if kind == "interpreter":
        return "/" in path  # a bare name (python3) is looked up on the job's PATH
    if kind in ("model", "data") and _could_be_hub_id(path):
        if kind == "data" and path.lower().endswith(_DATA_SUFFIXES):
            return True
        return resolve(path, base).exists()
    return True


def resolve(path: str, base: Path) -> Path:
    """``path`` as the job's shell sees it from ``base``: ``~`` is the home directory, relative is under ``base``."""
    if path == "~" or path.startswith("~/"):
        return Path(os.path.expanduser(path))
    return base / path


def _candidates(job: RLJob) -> list[JobInput]:
    spec = job.spec
    found = [JobInput("spec.runtime.python", spec.runtime.python, "interpreter")]
    if spec.runtime.config:  # the launch's own config file the framework composes (verl: --config-path/-name)
        found.append(JobInput("spec.runtime.config", spec.runtime.config, "file"))
    found.append(JobInput("spec.model.path", spec.model.path, "model"))
    if spec.model.tokenizer:
        found.append(JobInput("spec.model.tokenizer", spec.model.tokenizer, "model"))
    if spec.model.critic_path:
        found.append(JobInput("spec.model.critic_path", spec.model.critic_path, "model"))
    found += [JobInput(f"spec.data.train[{i}]", p, "data") for i, p in enumerate(spec.data.train)]
    found += [JobInput(f"spec.data.val[{i}]", p, "data") for i, p in enumerate(spec.data.val)]
    # the adapters pass them to the framework with the validation files (verl data.val_files, TRL's val split...)
    found += [JobInput(f"spec.eval.datasets[{i}]", p, "data") for i, p in enumerate(spec.eval.datasets)]
    reward = spec.reward
    if reward.function is not None:
        found.append(JobInput("spec.reward.function.path", reward.function.path, "file"))
    if reward.model is not None:
        found.append(JobInput("spec.reward.model.path", reward.model.path, "model"))
    rollout = spec.rollout
    if rollout.agent is not None:
        found.append(JobInput("spec.rollout.agent.path", rollout.agent.path, "file"))
    if rollout.multi_turn is not None:
        for name in ("tool_config", "interaction_config"):
            value = getattr(rollout.multi_turn, name)
            if value:
                found.append(JobInput(f"spec.rollout.multi_turn.{name}", value, "file"))
    continuous = spec.eval.continuous
    if continuous is not None:
        for i, suite in enumerate(continuous.suites):
            at = f"spec.eval.continuous.suites[{i}]"
            found += [JobInput(f"{at}.data[{j}]", p, "data") for j, p in enumerate(suite.data)]
            if suite.scorer.function is not None:
                found.append(JobInput(f"{at}.scorer.function.path", suite.scorer.function.path, "file"))
    return found


def job_inputs(job: RLJob, base: Path) -> list[JobInput]:
    """The local paths ``job`` reads, relative ones as written (the job resolves them from its working
    directory, which ``base`` is on this machine)."""
    return [item for item in _candidates(job) if is_local(item.path, item.kind, base)]


def input_kind(field: str) -> Kind:
    """The kind of path the spec ``field`` names (as ``job_inputs`` lists it)."""
    if field == "spec.runtime.python":
        return "interpreter"
    if field.startswith(("spec.data.", "spec.eval.datasets[")) or (
        field.startswith("spec.eval.continuous.") and ".data[" in field
    ):
        return "data"
    if field.startswith("spec.model.") or field == "spec.reward.model.path":
        return "model"
    return "file"


def all_inputs(job: RLJob) -> dict[str, str]:
    """Every spec field of ``job`` that names a path the job reads -> its value, local or not (``is_local``
    tells, from where the job runs)."""
    return {item.field: item.path for item in _candidates(job)}


def _why_missing(item: JobInput, where: Path) -> str | None:
    if not where.exists():
        return "no such file or directory"
    if item.kind == "interpreter" and not (where.is_file() and os.access(where, os.X_OK)):
        return "not an executable file"
    if item.kind == "file" and not where.is_file():
        return "not a file"
    return None


def missing_inputs(inputs: list[JobInput], base: Path) -> list[Problem]:
    """A problem for each of ``inputs`` that does not exist seen from ``base`` (the job's working directory)."""
    problems = []
    for item in inputs:
        where = resolve(item.path, base)
        reason = _why_missing(item, where)
        if reason is None:
            continue
        expected = {
            "interpreter": "an executable Python interpreter",
            "model": "a model directory, or a Hugging Face Hub id (org/name)",
            "data": "a data file or directory, or a Hugging Face Hub dataset id",
            "file": "an existing file",
        }[item.kind]
        seen = "" if item.path.startswith(("/", "~")) else " (relative to the job's working directory)"
        # the whole path, however long: it is what the user has to find and fix
        problems.append(Problem(item.field, f"{reason}{seen}", expected, quote(item.path, limit=4096)))
    return problems
