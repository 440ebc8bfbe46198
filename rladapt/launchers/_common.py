"""Helpers shared by the launchers.

Most of this renders the parts of a bash script that the script-based launchers (``local``, ``slurm``) have
in common: quoting, environment-variable names, secrets read by reference at run time, and the adapter's
files. The rest is launcher plumbing that every launcher, Kubernetes and Ray included, repeats word for word:
checking the run id, turning log chunks into lines, and the answer to ``stop`` for a run that has already
ended.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rladapt.plugins import NativeLaunch, RunStatus, SecretKind, SecretRef
from rladapt.plugins.launcher import Command
from rladapt.primitives.errors import Problem, SpecError, UsageError

# Used with fullmatch, unanchored: a "$" anchor would also accept a trailing newline.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A DNS-1123 label: what the CLI's run ids are, and all a run id may be where it names things (a Slurm job, a
#: Ray submission, a Kubernetes object and label).
RUN_ID = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
#: The variable through which Ray's job supervisor passes a job's runtime_env to its driver's ``ray.init``.
RAY_JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def quote_path(path: str) -> str:
    """Quote ``path`` for bash, keeping a leading ``~/`` meaning the home directory of whoever runs the script.

    ``~`` alone becomes ``"$HOME"``; everything else is quoted literally, so a path can hold any character.
    """
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def check_env_name(name: str, what: str) -> str:
    """Return ``name`` if it is a valid environment variable name, else raise a UsageError naming ``what``.

    Names are written into the script unquoted (``export NAME=...``, ``${NAME?...}``), so this check is what
    keeps them from injecting anything.
    """
    if not ENV_NAME.fullmatch(name):
        raise UsageError(f"{what} {name!r} is not a valid environment variable name")
    return name


def ray_job_config_lines(command: Command) -> list[str]:
    """Script lines that hand ``command.ray_runtime_env`` to the driver's ``ray.init``, for a script that starts
    the driver itself rather than submitting a Ray job.

    It is what Ray's job supervisor hands a submitted driver: ``ray.init`` merges it with the framework's own
    runtime_env, so every Ray worker of the job runs the patch hook first.
    """
    if not command.ray_runtime_env:
        return []
    job_config = {"runtime_env": dict(command.ray_runtime_env)}
    return [f"export {RAY_JOB_CONFIG_ENV}={shlex.quote(json.dumps(job_config))}"]


def check_run_id(run_id: str | None, launcher: str) -> str | None:
    """``run_id`` as ``render`` was given it (None for a dry run), refused unless it is a DNS label.

    The runner passes its own run ids; anything else reaching a launcher (a library caller's) would name a job, a
    submission or an object unchecked.
    """
    if run_id is None:
        return None
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise UsageError(
            f"{launcher} launcher: run_id={run_id!r}: expected a run id, a DNS label of at most 63 lowercase "
            "letters, digits and '-'"
        )
    return run_id


#: What a bash script of the ``local`` and ``slurm`` launchers can read a secret from, where the job starts.
SCRIPT_SECRET_KINDS: tuple[SecretKind, ...] = ("env", "file")
_WHAT_KINDS_ARE = {
    "env": "a variable of the submitting shell (`from: {env: VAR}`)",
    "file": "a file (`from: {file: PATH}`)",
    "k8s_secret": "a Kubernetes secret (`from: {k8s_secret: {name: NAME, key: KEY}}`)",
}


def no_readable_source(secret: SecretRef, launcher_label: str, kinds: Sequence[SecretKind]) -> UsageError:
    """The error for a secret none of whose sources ``launcher_label`` can read: it names the secret, the sources
    given and what this launcher reads, so the fix (one more source in the list) is plain."""
    reads = " or ".join(_WHAT_KINDS_ARE[k] for k in kinds)
    return UsageError(
        f"secret {secret.env}: {launcher_label} can read none of its sources ({secret.labels}); it reads "
        f"{reads}: add one to spec.secrets[].from, a list of sources tried in order"
    )


def secret_lines(native: NativeLaunch, launcher_label: str) -> list[str]:
    """Script lines that export each secret of ``native``, read by reference when the script runs.

    Each secret's ``env`` and ``file`` sources are tried in order where the script runs: the first variable that
    is set (in the submitting shell's environment, which sbatch exports to the job) or file that is a readable
    regular file gives the value; none is an error naming them all. The values never appear in the script; a
    comment line says which sources the script tries. ``launcher_label`` (e.g. ``"the local launcher"``, ``"a
    Slurm job"``) is named in the UsageError for a secret with none of these kinds (only Kubernetes secrets).
    """
    lines = []
    for secret in native.secrets:
        env = check_env_name(secret.env, "secret env")
        sources = secret.readable(SCRIPT_SECRET_KINDS)
        if not sources:
            raise no_readable_source(secret, launcher_label, SCRIPT_SECRET_KINDS)
        tried = ", else ".join(s.label for s in sources)
        lines.append(f"# secret {env} <- {tried} (the first set or readable when the job starts)")
        missing = []
        for index, source in enumerate(sources):
            keyword = "if" if index == 0 else "elif"
            if source.kind == "env":
                name = check_env_name(source.name, f"secret {env}: source variable")
                # ${VAR+set}: set, even to the empty string, is what counts (as for ${VAR?}).
                lines.append(f'{keyword} [[ -n "${{{name}+set}}" ]]; then {env}="${name}"')
                missing.append(f"${name} is not set")
            else:
                path = quote_path(source.name)
                # In the branch, not the test: set -e stops the script when cat fails (a race, an I/O error).
                lines.append(f'{keyword} [[ -f {path} && -r {path} ]]; then {env}="$(cat -- {path})"')
                missing.append(f"{source.label} is not a readable file")
        message = f"rladapt: no source of the secret {env} can be read here: {'; '.join(missing)}"
        lines.append(f"else printf '%s\\n' {shlex.quote(message)} >&2; exit 1; fi")
        lines.append(f"export {env}")
    return lines


def script_secret_plan(native: NativeLaunch) -> list[dict[str, Any]]:
    """Each secret's sources that a script reads, by name only, for ``submit`` to check before anything starts:
    ``[{"env": JOB_VAR, "sources": [{"env": VAR} | {"file": PATH}, ...]}]``."""
    return [
        {"env": s.env, "sources": [{src.kind: src.name} for src in s.readable(SCRIPT_SECRET_KINDS)]}
        for s in native.secrets
    ]


def unreadable_secrets(plan: Sequence[Mapping[str, Any]], files_from: Path | None) -> list[str]:
    """The secrets of ``plan`` (``script_secret_plan``) none of whose sources can be read here, each with why.

    Variables are looked up in this process's environment (the one the job inherits). Files are looked up
    relative to ``files_from`` (the job's working directory on this machine); with None they are taken on trust,
    since they are read on other machines (a Slurm node).
    """
    found = []
    for secret in plan:
        reasons = []
        for source in secret.get("sources", []):
            if "env" in source:
                if source["env"] in os.environ:
                    break
                reasons.append(f"${source['env']} is not set")
            elif "file" in source:
                if files_from is None:
                    break
                reason = _unreadable_file(local_path(str(source["file"]), files_from))
                if reason is None:
                    break
                reasons.append(f"file {json.dumps(source['file'])}: {reason}")
        else:
            found.append(f"{secret['env']} ({'; '.join(reasons)})")
    return found


def local_path(path: str, base: Path) -> Path:
    """``path`` as the script's bash sees it from ``base``: ``~`` and ``~/`` mean $HOME, as in quote_path."""
    if path == "~" or path.startswith("~/"):
        return Path(os.environ.get("HOME", "~"), path[2:])
    return base / path


def _unreadable_file(path: Path) -> str | None:
    """Why the script's ``[[ -f P && -r P ]]`` test would fail for ``path``; None when it would pass."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if path.is_file() else "not a regular file"


def file_lines(files: dict[str, str]) -> list[str]:
    """Script lines that write each of ``files`` (relative path -> text) under the current directory.

    Raises a UsageError for a path that is empty, absolute or climbs out with ``..``.
    """
    lines = []
    for name, text in files.items():
        rel = PurePosixPath(name)
        if not name or rel.is_absolute() or ".." in rel.parts:
            raise UsageError(f"native file {name!r} must be a relative path inside the working directory")
        if str(rel.parent) != ".":
            lines.append(f"mkdir -p -- {shlex.quote(str(rel.parent))}")
        lines.append(f"printf '%s' {shlex.quote(text)} > {shlex.quote(name)}")
    return lines


def complete_lines(pending: str, chunk: str) -> tuple[list[str], str]:
    """Split the unfinished text ``pending`` plus a new log ``chunk`` into complete lines and a new rest.

    Each complete line keeps its ``\\n``; the rest (text after the last newline) waits for the next chunk, and
    a ``logs`` implementation yields it as is once the log has ended.
    """
    if not chunk:
        return [], pending
    *lines, rest = (pending + chunk).split("\n")
    return [line + "\n" for line in lines], rest


def nothing_to_stop(current: RunStatus) -> RunStatus:
    """The answer of ``stop`` for a run whose ``current`` status is already terminal."""
    verb = "stopped" if current.state == "STOPPED" else "finished"
    return RunStatus(current.state, current.exit_code, f"already {verb}; nothing to stop")


# --- what the roles of a pool ask of each node (spec.roles.<role>.cpus_per_gpu and .memory) ---------------------

_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|K|M|G|T|P|E)?")
_SIZE_FACTORS: dict[str | None, int] = {
    None: 1,
    **{unit: 1024 ** (i + 1) for i, unit in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{unit: 1000 ** (i + 1) for i, unit in enumerate(("k", "M", "G", "T", "P", "E"))},
    "K": 1000,
}


def size_bytes(text: str) -> int | None:
    """A Kubernetes-style size (``200Gi``, ``64G``, ``500M``) in bytes; None when it is not one."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    return math.ceil(float(match.group(1)) * _SIZE_FACTORS[match.group(2)])


@dataclass(frozen=True)
class PoolNeeds:
    """What one pool's node must hold for its roles: the most demanding role's, since colocated roles share the
    pool's nodes, GPUs and (in the frameworks' hybrid engines) worker processes."""

    cpus_per_gpu: int | None = None
    cpus_role: str | None = None
    memory: str | None = None
    memory_bytes: int | None = None
    memory_role: str | None = None


def pool_needs(native: NativeLaunch) -> dict[str, PoolNeeds]:
    """Each pool's ``PoolNeeds`` (pools whose roles ask for nothing are left out).

    Raises a SpecError at ``spec.roles.<role>.memory`` for a memory that is not a size.
    """
    problems = []
    found: dict[str, PoolNeeds] = {}
    for role, where in sorted(native.placement.items()):
        needs = found.get(where.pool, PoolNeeds())
        if where.cpus_per_gpu is not None and (needs.cpus_per_gpu or 0) < where.cpus_per_gpu:
            needs = PoolNeeds(where.cpus_per_gpu, role, needs.memory, needs.memory_bytes, needs.memory_role)
        if where.memory is not None:
            amount = size_bytes(where.memory)
            if amount is None:
                problems.append(
                    Problem(
                        f"spec.roles.{role}.memory",
                        "not a memory size",
                        "a size such as 200Gi, 64G or 500Mi",
                        repr(where.memory),
                    )
                )
            elif (needs.memory_bytes or 0) < amount:
                needs = PoolNeeds(needs.cpus_per_gpu, needs.cpus_role, where.memory.strip(), amount, role)
        if needs != PoolNeeds():
            found[where.pool] = needs
    if problems:
        raise SpecError(problems, "the role resources cannot be rendered")
    return found


def refuse_role_resources(native: NativeLaunch, launcher: str, why: str) -> None:
    """Refuse ``spec.roles.<role>.cpus_per_gpu`` and ``.memory``, which ``launcher`` cannot reserve (``why``).

    A SpecError (exit 2) with one problem per field set, raised from ``render``: nothing is submitted.
    """
    problems = []
    for role, where in sorted(native.placement.items()):
        for field, value in (("cpus_per_gpu", where.cpus_per_gpu), ("memory", where.memory)):
            if value is not None:
                problems.append(
                    Problem(
                        f"spec.roles.{role}.{field}",
                        f"the {launcher} launcher cannot reserve it: {why}",
                        f"no {field} for the role with --launcher {launcher} (the slurm and kubernetes launchers "
                        "reserve it)",
                        str(value),
                    )
                )
    if problems:
        raise SpecError(problems, f"the {launcher} launcher cannot express this job")


def refuse_claim_creation(native: NativeLaunch, launcher: str, why: str) -> None:
    """Refuse ``spec.volumes[i].source.size`` (and ``storage_class``, ``access_mode``): a claim to create, which
    only the kubernetes launcher creates; ``launcher`` has nothing to create it with (``why``).

    A SpecError (exit 2) with one problem per field set, raised from ``render``: nothing is submitted.
    """
    problems = []
    # NativeLaunch.volumes keeps the order of spec.volumes: the index names the spec's entry
    for index, volume in enumerate(native.volumes):
        for field in ("size", "storage_class", "access_mode"):
            value = getattr(volume, field)
            if value is not None:
                problems.append(
                    Problem(
                        f"spec.volumes[{index}].source.{field}",
                        f"the {launcher} launcher creates no claim: {why}",
                        f"no {field} with --launcher {launcher} (only the kubernetes launcher creates the "
                        "PersistentVolumeClaim); the storage must already be at the mount path",
                        str(value),
                    )
                )
    if problems:
        raise SpecError(problems, f"the {launcher} launcher cannot express this job")


# --- the paths the job reads (NativeLaunch.inputs), checked before submit ---------------------------------------


def missing_inputs_problems(
    inputs: Mapping[str, str], working_dir: str, cwd: Path, shared: Sequence[str] | None = None
) -> list[Problem]:
    """A problem for each local path of ``inputs`` that the job would not find, looked at from here.

    Relative paths are resolved in ``working_dir`` (seen from ``cwd``). With ``shared`` None every absolute path
    is looked at here (the job reads this machine's file system, or a Slurm cluster's shared one); with a list (a
    Ray cluster), only those under a shared directory that is mounted here, the others being judged at render.
    """
    from rladapt.primitives import JobInput, missing_inputs
    from rladapt.primitives.paths import input_kind, is_local, resolve

    base = resolve(working_dir, cwd)
    checked = []
    for name, value in inputs.items():
        kind = input_kind(name)
        if not is_local(value, kind, base):
            continue
        if shared is not None and value.startswith(("/", "~")):
            where = Path(os.path.normpath(resolve(value, base)))
            mounted = [Path(s) for s in shared if Path(s).is_dir()]
            if not any(where == d or d in where.parents for d in mounted):
                continue
        checked.append(JobInput(name, value, kind))
    return missing_inputs(checked, base)


def refuse_missing_inputs(
    inputs: Mapping[str, str], working_dir: str, launcher: str, shared: Sequence[str] | None = None
) -> None:
    """Raise a SpecError (exit 2, nothing submitted) naming each path of ``inputs`` the job would not find."""
    problems = missing_inputs_problems(inputs, working_dir, Path.cwd(), shared)
    if problems:
        raise SpecError(
            problems,
            f"the {launcher} launcher: files the job reads are missing (fix the path, or make the file exist "
            "where the job runs)",
        )


# --- service roles (NativeLaunch.services) ------------------------------------------------------------------


def check_services(native: NativeLaunch, launcher: str) -> None:
    """Refuse service roles that no launcher can run apart: two of one name (their unit and log would be one)."""
    seen: set[str] = set()
    for role in native.services:
        if role.name in seen:
            raise UsageError(
                f"{launcher} launcher: services: two service roles are named {role.name!r}; expected unique names "
                "(each names its own unit and log)"
            )
        seen.add(role.name)
        for key in role.env:
            check_env_name(key, f"services.{role.name}.env")
        if not role.argv:
            raise UsageError(f"{launcher} launcher: services.{role.name}.argv is empty; expected a command")
