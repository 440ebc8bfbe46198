"""What a Ray job sees of the paths it reads: shipped with the working directory, or on shared storage.

Ray uploads ``runtime_env.working_dir`` (ray 2.60, ``ray/_private/runtime_env/packaging.py``): it walks the tree and
skips every directory or file that a rule matches: its default excludes (``.git``, ``.venv``, ``venv``,
``__pycache__``: ``ray/_private/ray_constants.py`` ``RAY_RUNTIME_ENV_DEFAULT_EXCLUDES``, replaced by
``$RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES``) followed by the runtime_env's ``excludes`` in one gitignore-style
list, then each directory's ``.gitignore`` (unless ``$RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1``) and ``.rayignore``.
The upload is refused above 512 MiB (``GCS_STORAGE_MAX_SIZE``, the gRPC message limit).

``check_inputs`` judges each path the job reads (``NativeLaunch.inputs``) the way that walk will:

- a relative path in the working directory that a rule drops: a file the excludes drop by a file pattern (weights,
  ``*.safetensors``) is shipped by a negated exclude added after them (``!/examples/tiny/model/model.safetensors``);
  the interpreter in a dropped virtualenv (never shipped: a virtualenv is not relocatable) is run from the working
  directory's place on storage the user declares shared (``-o shared=DIR``), else the launch is refused;
- an absolute path must lie on a declared shared directory (the nodes are other machines);
- what Ray would not ship for any rladapt can add (a ``.gitignore`` rule, a directory rule) is refused, naming the
  rule and the fix.

``off_shared_storage`` judges each directory the job writes that others read (the pool store, the checkpoint
directory): the job runs in its own copy of the upload, so a relative one lands there, unseen by ``rladapt`` here
and by the service roles' Ray jobs; it must lie in a declared shared directory.

The gitignore matching follows the gitwildmatch rules Ray applies (its vendored ``pathspec``): a pattern with a
slash before its end is anchored at the directory of its list, one without matches a name at any depth, a trailing
slash matches directories only (their contents), ``**`` spans directories, ``!`` re-includes, the last rule that
matches decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rladapt.primitives.paths import input_kind, is_local, resolve

#: ray 2.60 ray/_private/ray_constants.py RAY_RUNTIME_ENV_DEFAULT_EXCLUDES
RAY_DEFAULT_EXCLUDES = (".git", ".venv", "venv", "__pycache__")
DEFAULT_EXCLUDES_ENV = "RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES"
IGNORE_GITIGNORE_ENV = "RAY_RUNTIME_ENV_IGNORE_GITIGNORE"
#: ray 2.60 ray/_private/ray_constants.py GRPC_CPP_MAX_MESSAGE_SIZE: the largest working directory Ray uploads
UPLOAD_LIMIT = 512 * 1024 * 1024


@dataclass(frozen=True)
class Rule:
    """One gitignore-style line, where it comes from, and the regex it stands for (on a path relative to
    ``base``, the directory of its list)."""

    text: str
    origin: str
    base: str
    regex: re.Pattern[str]
    negated: bool

    def label(self) -> str:
        return f"{self.origin} {self.text!r}"


def _glob(part: str) -> str:
    out = ""
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = part.find("]", i + 1)
            if end == -1:
                out += re.escape(c)
            else:
                body = part[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out += f"[{body}]"
                i = end
        elif c == "\\" and i + 1 < len(part):
            i += 1
            out += re.escape(part[i])
        else:
            out += re.escape(c)
        i += 1
    return out


def rule(text: str, origin: str, base: str = "") -> Rule | None:
    """The rule of one gitignore line (None for a blank or comment line)."""
    line = text.rstrip()
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.strip("/") if line.startswith("/") or dir_only else line
    anchored = text.lstrip("!").startswith("/") or "/" in line
    parts = [p for p in line.split("/") if p]
    pieces = []
    for index, part in enumerate(parts):
        if part == "**":
            pieces.append("(?:[^/]+/)*" if index < len(parts) - 1 else ".*")
        else:
            pieces.append(_glob(part) + ("/" if index < len(parts) - 1 else ""))
    body = "".join(pieces).replace("(?:[^/]+/)*/", "(?:[^/]+/)*")
    head = "" if anchored else "(?:[^/]+/)*"
    tail = "/.+" if dir_only else "(?:/.+)?"
    return Rule(text, origin, base, re.compile(f"{head}{body}{tail}"), negated)


def _decides(rules: Iterable[Rule], rel: str) -> Rule | None:
    """The last rule that matches ``rel`` (a path relative to the working directory), or None."""
    last = None
    for r in rules:
        inside = rel if not r.base else (rel[len(r.base) + 1 :] if rel.startswith(r.base + "/") else None)
        if inside is not None and r.regex.fullmatch(inside):
            last = r
    return last


@dataclass
class Upload:
    """Ray's walk of the working directory ``root`` with the runtime_env's ``excludes``."""

    root: Path
    excludes: list[str]
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def _list_rules(self) -> list[Rule]:
        defaults = self.env.get(DEFAULT_EXCLUDES_ENV)
        names = (
            RAY_DEFAULT_EXCLUDES
            if defaults is None
            else [d.strip() for d in defaults.split(",") if d.strip()]
        )
        out = [r for d in names if (r := rule(d, "Ray's default exclude"))]
        out += [r for e in self.excludes if (r := rule(e, "the runtime_env exclude"))]
        return out

    def _ignore_rules(self, directory: str) -> list[Rule]:
        out: list[Rule] = []
        names = [".rayignore"]
        if self.env.get(IGNORE_GITIGNORE_ENV, "") != "1":
            names.insert(0, ".gitignore")
        for name in names:
            path = self.root / directory / name
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            where = f"{directory}/{name}" if directory else name
            out += [r for line in lines if (r := rule(line, f"the {where} rule", directory))]
        return out

    def dropped_by(self, rel: str) -> tuple[Rule, bool] | None:
        """The rule that keeps ``rel`` out of the upload and whether a negated exclude can ship it (it decides
        for the file itself in the excludes list, not for a directory above it or in an ignore file)."""
        parts = PurePosixPath(rel).parts
        rules = self._list_rules()
        ignore: list[Rule] = []
        for depth in range(len(parts)):
            directory = "/".join(parts[:depth])
            ignore += self._ignore_rules(directory)
            prefix = "/".join(parts[: depth + 1])
            is_file = depth == len(parts) - 1
            decided = _decides(rules, prefix)
            if decided is not None and not decided.negated:
                return decided, is_file
            decided = _decides(ignore, prefix)
            if decided is not None and not decided.negated:
                return decided, False
        return None


@dataclass
class Verdict:
    """What ``check_inputs`` found: files to ship by negated excludes, the interpreter to run from shared
    storage, notes for the dry run, and problems (field, message) that refuse the launch."""

    ship: list[str] = field(default_factory=list)
    interpreter: str | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _under(path: Path, directories: Iterable[Path]) -> bool:
    return any(path == d or d in path.parents for d in directories)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path] if path.exists() else []


def check_inputs(
    inputs: Mapping[str, str], working_dir: str, excludes: list[str], shared: list[str], cwd: Path
) -> Verdict:
    """Judge each of ``inputs`` (spec field -> path) for a Ray job shipped as ``working_dir`` (seen from ``cwd``)
    with ``excludes``, with ``shared`` the directories every node mounts at the same path."""
    verdict = Verdict()
    root = resolve(working_dir, cwd).absolute()
    shared_dirs = [Path(os.path.normpath(s)) for s in shared]
    upload = Upload(root, excludes)
    fix = (
        "declare the directory every node mounts at the same path with -o shared=DIR (then rladapt checks the "
        "path there), or place the file inside spec.runtime.working_dir"
    )
    shipped_bytes = 0
    for name, value in inputs.items():
        kind = input_kind(name)
        if not is_local(value, kind, root):
            continue
        path = resolve(value, root)
        absolute = Path(os.path.normpath(path.absolute()))
        if value.startswith(("/", "~")) or root not in absolute.parents:
            if not _under(absolute, shared_dirs):
                where = (
                    "on no declared shared storage" if shared_dirs else "and no shared storage is declared"
                )
                verdict.problems.append(
                    (name, f"{value!r} is outside the working directory Ray uploads, {where}: {fix}")
                )
            continue
        for file in _files(path) or [path]:
            rel = file.absolute().relative_to(root).as_posix()
            dropped = upload.dropped_by(rel)
            if dropped is None:
                continue
            by, negatable = dropped
            if kind == "interpreter":
                if _under(absolute, shared_dirs):
                    verdict.interpreter = str(absolute)
                    verdict.notes.append(
                        f"{name} {value!r} is left out of Ray's upload by {by.label()} (a virtualenv is not "
                        f"shipped): the job runs it from the shared storage, {str(absolute)!r}"
                    )
                else:
                    verdict.problems.append(
                        (
                            name,
                            f"{value!r} is left out of Ray's upload of the working directory by {by.label()} (a "
                            "virtualenv is not shipped): give an interpreter every node has (a name on its PATH, "
                            "an absolute path on shared storage), or declare the working directory's storage "
                            "shared with -o shared=DIR",
                        )
                    )
                break
            if negatable:
                verdict.ship.append("!/" + rel)
                shipped_bytes += file.stat().st_size if file.exists() else 0
                continue
            verdict.problems.append(
                (
                    name,
                    f"{rel!r} is left out of Ray's upload of the working directory by {by.label()}, which rladapt "
                    f"cannot override: remove that rule, or {fix}",
                )
            )
            break
    if verdict.ship:
        verdict.notes.append(
            f"shipped with the working directory although an exclude matches them (the job reads them): "
            f"{', '.join(s[2:] for s in verdict.ship)}"
        )
    if shipped_bytes >= UPLOAD_LIMIT // 2:
        verdict.problems.append(
            (
                "spec.runtime.working_dir",
                f"the files the job reads that rladapt would ship weigh {shipped_bytes} bytes, too close to Ray's "
                f"upload limit of {UPLOAD_LIMIT} bytes: give them as absolute paths on storage every node mounts "
                "and declare it with -o shared=DIR",
            )
        )
    return verdict


def off_shared_storage(value: str, working_dir: str | None, shared: list[str], cwd: Path) -> str | None:
    """Why a directory the job WRITES (``value``, as written in the spec) is not where anything but the job
    itself sees it, or None when it lies on a declared ``shared`` directory (or is a URL, the framework's own).

    A Ray job runs in its own unpacked copy of the uploaded working directory, on whichever node Ray chose: a
    relative path lands in that copy (a temporary directory of the node), which neither ``rladapt`` here
    (``pool``, ``status``, ``checkpoints``, ``metrics``) nor a service role's Ray job (a copy of its own) sees; an
    absolute path is one node's disk unless every node mounts it. ``working_dir`` is None when it is a remote
    package (downloaded by Ray, nothing of it here)."""
    if "://" in value:
        return None
    shared_dirs = [Path(os.path.normpath(s)) for s in shared]
    if not value.startswith(("/", "~")):
        where = ""
        if working_dir is not None:
            here = Path(os.path.normpath(resolve(value, resolve(working_dir, cwd)).absolute()))
            if _under(here, shared_dirs):  # the user's storage is shared, but the job's copy is not
                where = f" (here, on the shared storage: {str(here)!r})"
        return (
            f"{value!r} is relative: the job would write it in its own copy of the working directory Ray uploads "
            "(a temporary directory of the node that runs it), which rladapt here and each service role's Ray job "
            f"(a copy of its own) never see: give an absolute path on storage every node mounts{where} and "
            "declare that storage with -o shared=DIR"
        )
    absolute = Path(os.path.normpath(resolve(value, cwd)))
    if _under(absolute, shared_dirs):
        return None
    where = "on no declared shared storage" if shared_dirs else "and no shared storage is declared"
    return (
        f"{value!r} is {where}: it would be on the disk of the node that runs the job, which rladapt here and "
        "the other nodes may not see: declare the directory every node mounts at the same path with "
        "-o shared=DIR, or give a path under one"
    )
