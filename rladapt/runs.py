"""The run store: one directory per launched run, so that ``status``/``logs``/``stop`` work from any shell.

Layout: ``$RLADAPT_HOME/runs/<run-id>/`` (default ``$XDG_STATE_HOME/rladapt``, that is
``~/.local/state/rladapt``) holding ``run.json`` (the record), ``artifacts/`` (the rendered files and
request, verbatim) and whatever the launcher keeps there (the local launcher's ``output.log`` and exit-code
file). Every file is written through ``rladapt.files.write_text``, so a reader in another shell never sees half
a record, and a run directory appears only once its artifacts and first record are complete (it is built
under a hidden name and renamed into place).

A record is read back through one typed reader (``read_record``): a record that is not JSON, not UTF-8, misses
a field or holds a field of the wrong type is ``DamagedRecord`` with the reason, so every field read later has
its type, and one damaged run never hides the others (``RunStore.scan``).

The run id is made before rendering and handed to the launcher as the ``run_id`` option (``RUN_ID_OPTION``):
it names the Ray submission, the Slurm job and the Kubernetes objects, so it is a DNS label (lowercase
letters, digits and ``-``, at most 63 characters).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, cast

from rladapt.files import write_text
from rladapt.plugins.launcher import (
    RUN_ID_OPTION,
    STOP_REQUEST_FILE,
    TERMINAL_STATES,
    Artifacts,
    RunState,
    RunStatus,
)
from rladapt.primitives.errors import OutputError, RladaptError, UsageError

HOME_ENV = "RLADAPT_HOME"
__all__ = ["RUN_ID_OPTION", "DamagedRecord", "DamagedRun", "Run", "RunStore", "read_record", "run_path"]
RECORD_FORMAT = 1
RECORD_FILE = "run.json"
ARTIFACTS_DIR = "artifacts"
#: Locked (``flock``) by the submitting process for as long as it submits: see ``Run.submission``.
SUBMIT_LOCK = "submit.lock"
#: The record's state between "about to submit" and "the launcher's handle is saved" (shown as PENDING).
SUBMITTING = "SUBMITTING"
#: The record's state of a run rendered and recorded but not (yet) handed to its launcher.
CREATED = "CREATED"

_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"})
_RECORD_STATES = _STATES | {SUBMITTING, CREATED}
_SLUG_DROP = re.compile(r"[^a-z0-9-]+")
_RUN_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
#: What a run id or a prefix of one given to ``status``/``logs``/``stop`` may be: checked before it is made a path.
_RUN_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_RUN_ID_MAX = 63


class DamagedRecord(RladaptError):
    """A run record (or a path read back from it) that cannot be trusted; ``reason`` says why.

    Exit code 1: the record on disk is wrong, not the command line.
    """

    def __init__(self, run_dir: Path, reason: str) -> None:
        super().__init__(
            f"run {run_dir.name!r} is damaged: {reason} (its directory is {str(run_dir)!r}; repair or remove it)"
        )
        self.run_dir = run_dir
        self.reason = reason


def state_home() -> Path:
    """``$RLADAPT_HOME``, else ``$XDG_STATE_HOME/rladapt``, else ``~/.local/state/rladapt``."""
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "rladapt"


def new_run_id(job_name: str) -> str:
    """``<job-name>-<8 hex>``: readable, unique, a DNS label, a Ray submission id and a Slurm job name."""
    slug = _SLUG_DROP.sub("-", job_name.lower()).strip("-")
    slug = re.sub(r"-{2,}", "-", slug)[:40].rstrip("-") or "run"
    return f"{slug}-{secrets.token_hex(4)}"


def spec_hash(spec_text: str, overrides: Iterable[str] = ()) -> str:
    """sha256 over the spec file's text and the overrides, so two runs of the same inputs share a hash."""
    digest = hashlib.sha256(spec_text.encode())
    for item in overrides:
        digest.update(b"\0")
        digest.update(item.encode())
    return "sha256:" + digest.hexdigest()


def write_atomic(path: Path, text: str) -> None:
    """A run-store file (mode 0600, parents made), replaced atomically: readers never see a partial file."""
    write_text(path, text, what="run file", make_parents=True, private=True)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _shown(value: Any, limit: int = 60) -> str:
    """``value`` quoted for a message, cut short: a newline in it cannot start a line of its own."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_relative(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts or name.startswith("~"):
        raise UsageError(f"artifact file name {name!r} must be a relative path inside the run directory")
    return rel


def run_path(run_dir: Path, name: Any, field: str) -> Path:
    """The file ``name`` (read back from the record at ``field``) inside ``run_dir``; else ``DamagedRecord``.

    A record is a file anyone with access to the home can edit: an absolute name, ``..`` or a symlink that
    leads out of the run directory would let ``logs`` print (or ``find`` read) any file of the user.
    """
    if not isinstance(name, str) or not name or "\0" in name:
        raise DamagedRecord(
            run_dir, f"{field} is {_shown(name)}, expected a file name inside the run directory"
        )
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise DamagedRecord(run_dir, f"{field} is {_shown(name)}, which leads out of the run directory")
    path = run_dir / rel
    try:
        inside = path.resolve().is_relative_to(run_dir.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside:
        raise DamagedRecord(run_dir, f"{field} is {_shown(name)}, which links out of the run directory")
    return path


# --- the typed reader of run.json ----------------------------------------------------------------------------

_Check = Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


def _or_none(check: _Check) -> _Check:
    return lambda value: value is None or check(value)


def _is_state(value: Any) -> bool:
    return value in _RECORD_STATES


def _is_str_dict(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


#: Every field of a record: (check, what it should be, required). Fields not named here are kept as they are.
_FIELDS: dict[str, tuple[_Check, str, bool]] = {
    "format": (_is_int, "an integer", True),
    "id": (_is_str, "a string", True),
    "launcher": (_is_str, "a string", True),
    "framework": (_is_str, "a string", True),
    "version": (_is_str, "a string", True),
    "job_name": (_is_str, "a string", True),
    "created": (_is_str, "a string", True),
    "created_ts": (_is_number, "a number (seconds since the epoch)", True),
    "state": (_is_state, "one of " + ", ".join(sorted(_RECORD_STATES)), True),
    "handle": (_or_none(_is_dict), "an object or null", True),
    "spec_hash": (_or_none(_is_str), "a string", False),
    "spec_path": (_or_none(_is_str), "a string or null", False),
    "options": (_is_dict, "an object", False),
    "artifacts": (_is_dict, "an object", False),
    "exit_code": (_or_none(_is_int), "an integer or null", False),
    "message": (_or_none(_is_str), "a string", False),
    "intent": (_or_none(_is_dict), "an object or null", False),
    "submitter": (_or_none(_is_dict), "an object or null", False),
    "submitted": (_is_str, "a string", False),
    "updated": (_is_str, "a string", False),
    "overrides": (
        lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
        "a list of strings",
        False,
    ),
    "checkpoint": (_or_none(_is_dict), "an object or null", False),
    "total_steps": (_or_none(_is_int), "an integer or null", False),
    "health": (_or_none(_is_dict), "an object or null", False),
    "attempts": (
        lambda v: isinstance(v, list) and all(isinstance(i, dict) for i in v),
        "a list of objects",
        False,
    ),
}
_SUBMITTER: dict[str, tuple[_Check, str, bool]] = {
    "pid": (lambda v: _is_int(v) and v > 0, "a positive integer", True),
    "host": (_or_none(_is_str), "a string or null", False),
    "start_time": (_or_none(_is_int), "an integer or null", False),
}
_ARTIFACTS: dict[str, tuple[_Check, str, bool]] = {
    "files": (_is_str_dict, "an object of strings", False),
    "request": (_is_dict, "an object", False),
}


def _check_fields(
    data: dict[str, Any], fields: dict[str, tuple[_Check, str, bool]], prefix: str
) -> list[str]:
    problems = []
    missing = [
        f"{prefix}{name}" for name, (_, _, required) in fields.items() if required and name not in data
    ]
    if missing:
        problems.append("missing field" + ("s" if len(missing) > 1 else "") + " " + ", ".join(missing))
    for name, (check, expected, _) in fields.items():
        if name in data and not check(data[name]):
            problems.append(f"{prefix}{name} is {_shown(data[name])}, expected {expected}")
    return problems


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN/Infinity, which no other JSON reader does: a record holding them was hand-edited.
    raise ValueError(f"{name} is not a JSON value")


def read_record(run_dir: Path) -> dict[str, Any]:
    """The record in ``run_dir/run.json``, every field of its type; ``DamagedRecord`` says what is wrong."""
    path = run_dir / RECORD_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DamagedRecord(run_dir, f"it has no {RECORD_FILE}") from None
    except OSError as exc:
        raise DamagedRecord(run_dir, f"{RECORD_FILE} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DamagedRecord(
            run_dir, f"{RECORD_FILE} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})"
        ) from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        reason = "it is empty" if not text.strip() else str(exc)
        raise DamagedRecord(run_dir, f"{RECORD_FILE} is not JSON: {reason}") from None
    if not isinstance(data, dict):
        raise DamagedRecord(run_dir, f"{RECORD_FILE} holds a {type(data).__name__}, expected a JSON object")
    problems = _check_fields(data, _FIELDS, "")
    if isinstance(data.get("submitter"), dict):
        problems += _check_fields(data["submitter"], _SUBMITTER, "submitter.")
    if isinstance(data.get("artifacts"), dict):
        problems += _check_fields(data["artifacts"], _ARTIFACTS, "artifacts.")
    if not problems and data["id"] != run_dir.name:
        problems.append(f"id is {_shown(data['id'])}, but the run's directory is {_shown(run_dir.name)}")
    if problems:
        raise DamagedRecord(run_dir, f"{RECORD_FILE}: " + "; ".join(problems))
    return cast(dict[str, Any], data)


@dataclass
class Run:
    """One run: its directory and the record in ``run.json`` (reloaded by ``refresh``)."""

    dir: Path
    record: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def launcher(self) -> str:
        return str(self.record["launcher"])

    @property
    def handle(self) -> dict[str, Any] | None:
        handle = self.record.get("handle")
        return dict(handle) if isinstance(handle, dict) else None

    @property
    def intent(self) -> dict[str, Any] | None:
        """What identifies the job before its handle is saved (``Launcher.intent``); None for older records."""
        intent = self.record.get("intent")
        return dict(intent) if isinstance(intent, dict) else None

    @property
    def submitter(self) -> dict[str, Any] | None:
        """``{pid, host, start_time}`` of the process that submits (or submitted) the run."""
        submitter = self.record.get("submitter")
        return dict(submitter) if isinstance(submitter, dict) else None

    @property
    def state(self) -> str:
        return str(self.record.get("state", "UNKNOWN"))

    @property
    def submitting(self) -> bool:
        """The record says the submission began and was not seen to end (no handle, no outcome)."""
        return self.state == SUBMITTING and self.handle is None

    @property
    def artifacts(self) -> Artifacts:
        data = self.record.get("artifacts") or {}
        return Artifacts(
            launcher=self.launcher, files=dict(data.get("files", {})), request=dict(data.get("request", {}))
        )

    def recorded_status(self) -> RunStatus:
        """The last state written to the record: ``CREATED`` (never submitted) reads as UNKNOWN, ``SUBMITTING``
        as PENDING."""
        if self.state == SUBMITTING:
            submitter = self.submitter or {}
            by = f" by pid {submitter['pid']}" if "pid" in submitter else ""
            host = f" on {submitter['host']}" if submitter.get("host") else ""
            return RunStatus("PENDING", None, f"being submitted{by}{host}")
        state = self.state if self.state in _STATES else "UNKNOWN"
        code = self.record.get("exit_code")
        return RunStatus(
            cast(RunState, state),
            code if isinstance(code, int) else None,
            str(self.record.get("message") or ""),
        )

    def save(self) -> None:
        self.record["updated"] = _now()
        write_atomic(self.dir / RECORD_FILE, json.dumps(self.record, indent=2, sort_keys=True) + "\n")

    def refresh(self) -> Run:
        self.record = read_record(self.dir)
        return self

    def save_submitting(self, intent: dict[str, Any], submitter: dict[str, Any]) -> None:
        """Record, before the launcher is called, what will identify the job and who submits it."""
        self.record["state"] = SUBMITTING
        self.record["intent"] = intent
        self.record["submitter"] = submitter
        self.record["message"] = ""
        self.save()

    def save_handle(self, handle: dict[str, Any]) -> None:
        self.record["handle"] = handle
        self.record["submitted"] = _now()
        if self.record.get("state") in (None, "UNKNOWN", CREATED, SUBMITTING):
            self.record["state"] = "PENDING"
        self.save()

    def save_status(self, status: RunStatus) -> None:
        """Record the last known state; a terminal state is never overwritten by a non-terminal one."""
        if self.state in TERMINAL_STATES and not status.terminal:
            return
        self.record["state"] = status.state
        self.record["exit_code"] = status.exit_code
        self.record["message"] = status.message
        self.save()

    def mark_submit_failed(self, message: str) -> None:
        """Keep the record consistent when ``submit`` raised: no handle, state FAILED, the reason."""
        self.save_not_submitted(RunStatus("FAILED", None, f"submission failed: {message}"))

    def save_not_submitted(self, status: RunStatus) -> None:
        """Record that the job was never handed to its launcher (refused, or stopped first): no handle, and no
        intent left to look a job up by."""
        self.record["intent"] = None
        self.record["state"] = status.state
        self.record["exit_code"] = status.exit_code
        self.record["message"] = status.message
        self.save()

    @contextmanager
    def submission(self) -> Iterator[None]:
        """Hold the submission lock (an ``flock`` on ``SUBMIT_LOCK``) while the job is being submitted.

        The kernel drops the lock when its holder dies, however it dies (``kill -9`` included), and when the
        submission returns or raises, so ``being_submitted`` tells a submission under way from one that was cut
        short, also in a long-lived process that goes on after a failed submission. The descriptor is not
        inherited (PEP 446, and subprocess closes the rest): the preflight and the job never hold it.
        """
        path = self.dir / SUBMIT_LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise OutputError(f"cannot create the submission lock {str(path)!r}: {_os_reason(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UsageError(f"run {self.id} is already being submitted by another process") from None
        try:
            yield
        finally:
            os.close(fd)  # closing the only descriptor of the lock releases it

    def being_submitted(self) -> bool | None:
        """True while a process holds the submission lock, False when none does, None without a lock file."""
        try:
            fd = os.open(self.dir / SUBMIT_LOCK, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        finally:
            os.close(fd)
        return False

    def request_stop(self) -> None:
        """Create ``STOP_REQUEST_FILE`` (exclusively, empty): whoever is about to start the job sees it and does not.

        Created with O_CREAT|O_EXCL, never replaced: a second request changes nothing, and the file cannot be
        a symlink planted to truncate another file.
        """
        path = self.dir / STOP_REQUEST_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return
        except OSError as exc:
            raise OutputError(
                f"cannot ask run {self.id} to stop: cannot create {str(path)!r}: {exc.strerror}"
            ) from None
        os.close(fd)


@dataclass(frozen=True)
class DamagedRun:
    """A directory of the store whose record cannot be read: listed with the reason, never silently skipped."""

    dir: Path
    reason: str

    @property
    def id(self) -> str:
        return self.dir.name


class RunStore:
    """Create, find and list runs under ``root/runs`` (``root`` defaults to ``state_home()``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else state_home()
        self.runs_dir = self.root / "runs"

    def create(
        self,
        *,
        run_id: str,
        launcher: str,
        framework: str,
        version: str,
        job_name: str,
        spec_hash: str,
        artifacts: Artifacts,
        options: dict[str, Any] | None = None,
        spec_path: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Run:
        """Record a new run; its directory appears complete (artifacts and record) or not at all.

        Raises ``UsageError`` for a bad run id or artifact name and when the run exists, ``OutputError`` when the
        store cannot be written (a full disk, a read-only home); nothing is left behind either way.
        """
        if not _RUN_ID.match(run_id):
            raise UsageError(f"run id {run_id!r} is not a DNS label (lowercase letters, digits, '-')")
        names = [(name, _safe_relative(name)) for name in artifacts.files]
        run_dir = self.runs_dir / run_id
        if run_dir.exists():
            raise UsageError(f"run {run_id!r} already exists in {self.runs_dir}")
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            # Built under a hidden name (skipped by scan) and renamed into place once complete.
            building = Path(tempfile.mkdtemp(prefix=f".{run_id}.", suffix=".new", dir=self.runs_dir))
        except OSError as exc:
            raise OutputError(f"cannot create a run in {str(self.runs_dir)!r}: {_os_reason(exc)}") from None
        record: dict[str, Any] = {
            "format": RECORD_FORMAT,
            "id": run_id,
            "launcher": launcher,
            "framework": framework,
            "version": version,
            "job_name": job_name,
            "spec_hash": spec_hash,
            "spec_path": spec_path,
            "options": {k: v for k, v in (options or {}).items() if k != RUN_ID_OPTION},
            "created": _now(),
            "created_ts": time.time(),
            "artifacts": {"files": dict(artifacts.files), "request": dict(artifacts.request)},
            "handle": None,
            "state": CREATED,
            "exit_code": None,
            "message": "",
            # what `rladapt resume` needs: the overrides, the checkpoint facts, the attempts (launch.py)
            **(extra or {}),
        }
        try:
            art_dir = building / ARTIFACTS_DIR
            for name, rel in names:
                write_atomic(art_dir / rel, artifacts.files[name])
            if artifacts.request:
                write_atomic(
                    art_dir / "request.json", json.dumps(artifacts.request, indent=2, sort_keys=True) + "\n"
                )
            Run(dir=building, record=record).save()
            try:
                # rename(2) of a directory onto a non-empty one fails: a run of the same id is never replaced.
                os.rename(building, run_dir)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    raise UsageError(f"run {run_id!r} already exists in {self.runs_dir}") from None
                raise OutputError(
                    f"cannot create the run directory {str(run_dir)!r}: {_os_reason(exc)}"
                ) from None
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        return Run(dir=run_dir, record=record)

    def get(self, id_or_prefix: str) -> Run:
        """The run with this id, or the only run whose id starts with it; anything else is a UsageError.

        A run whose record is damaged is ``DamagedRecord`` (exit 1), with the reason.
        """
        key = id_or_prefix.strip()
        if not _RUN_KEY.fullmatch(key):
            raise UsageError(_bad_key(id_or_prefix))
        exact = self.runs_dir / key
        if exact.is_dir():
            return Run(dir=exact, record=read_record(exact))
        matches = sorted(p.name for p in self._run_dirs() if p.name.startswith(key))
        if len(matches) == 1:
            return Run(dir=self.runs_dir / matches[0], record=read_record(self.runs_dir / matches[0]))
        if not matches:
            raise UsageError(f"no run {key!r} in {self.runs_dir} (see `rladapt runs`)")
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise UsageError(f"run id prefix {key!r} is ambiguous: {shown}")

    def scan(self) -> tuple[list[Run], list[DamagedRun]]:
        """Every run, oldest first, and every run directory whose record cannot be read, with the reason."""
        runs, damaged = [], []
        for run_dir in self._run_dirs():
            try:
                runs.append(Run(dir=run_dir, record=read_record(run_dir)))
            except DamagedRecord as exc:
                damaged.append(DamagedRun(run_dir, exc.reason))
        runs.sort(key=lambda r: (float(r.record["created_ts"]), r.id))
        damaged.sort(key=lambda d: d.id)
        return runs, damaged

    def list(self) -> list[Run]:
        """Every readable run, oldest first (``scan`` also says which directories could not be read)."""
        return self.scan()[0]

    def _run_dirs(self) -> Iterator[Path]:
        try:
            entries = list(self.runs_dir.iterdir())
        except FileNotFoundError:
            return iter(())
        except OSError as exc:
            raise OutputError(f"cannot list the runs in {str(self.runs_dir)!r}: {_os_reason(exc)}") from None
        # Hidden names are runs still being created (see create): not runs yet.
        return (p for p in sorted(entries) if not p.name.startswith(".") and p.is_dir())


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)


def _bad_key(given: str) -> str:
    expected = f"a run id or a prefix of one: at most {_RUN_ID_MAX} lowercase letters, digits and '-'"
    if len(given) > _RUN_ID_MAX:
        return f"invalid run id {_shown(given, 40)} ({len(given)} characters): expected {expected}"
    return f"invalid run id {_shown(given)}: expected {expected}"
