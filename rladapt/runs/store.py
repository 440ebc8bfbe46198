"""The run store: one directory per launched run, so that ``status``/``logs``/``stop`` work from any shell.

Layout: ``$RLADAPT_HOME/runs/<run-id>/`` (default ``$XDG_STATE_HOME/rladapt``, that is
``~/.local/state/rladapt``) holding ``run.json`` (the record), ``artifacts/`` (the rendered files and
request, verbatim) and whatever the launcher keeps there (the local launcher's ``output.log`` and exit-code
file). Every file is written through ``rladapt.files.write_text``, so a reader in another shell never sees half
a record, and a run directory appears only once its artifacts and first record are complete (it is built
under a hidden name and renamed into place).

The record is a typed, immutable ``RunRecord`` (``rladapt.runs.record``) read back through one reader
(``read_record``); one damaged run never hides the others (``RunStore.scan``). This module is the only writer:
a caller asks a ``Run`` for the change (``save_handle``, ``save_status``, ``update`` with a ``RunRecord``
method) and never edits a record itself.

The run id is made before rendering and handed to the launcher's ``render`` as ``run_id``: it names the Ray
submission, the Slurm job and the Kubernetes objects, so it is a DNS label (lowercase letters, digits and
``-``, at most 63 characters).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rladapt.files import write_text
from rladapt.plugins.launcher import RUN_ID_OPTION, STOP_REQUEST_FILE, Artifacts, RunStatus
from rladapt.primitives.errors import OutputError, UsageError

from .record import (
    CREATED,
    RECORD_FILE,
    RECORD_FORMAT,
    SUBMITTING,
    Attempt,
    BadStep,
    CheckpointFacts,
    DamagedRecord,
    RecordedArtifacts,
    RunRecord,
    ServiceRecord,
    Submitter,
    now,
    read_record,
    shown,
)

HOME_ENV = "RLADAPT_HOME"
ARTIFACTS_DIR = "artifacts"
#: Locked (``flock``) by the submitting process for as long as it submits: see ``Run.submission``.
SUBMIT_LOCK = "submit.lock"
__all__ = [
    "ARTIFACTS_DIR",
    "CREATED",
    "HOME_ENV",
    "RECORD_FILE",
    "SUBMITTING",
    "DamagedRun",
    "Run",
    "RunStore",
    "new_run_id",
    "run_path",
    "spec_hash",
    "state_home",
    "write_atomic",
]

_SLUG_DROP = re.compile(r"[^a-z0-9-]+")
_RUN_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
#: What a run id or a prefix of one given to ``status``/``logs``/``stop`` may be: checked before it is made a path.
_RUN_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_RUN_ID_MAX = 63


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


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """A run-store file (mode 0600, parents made), replaced atomically: readers never see a partial file.
    ``durable=False``: a derived file its reader checks and rebuilds, not synced to disk (``rladapt.files``)."""
    write_text(path, text, what="run file", make_parents=True, private=True, durable=durable)


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
            run_dir, f"{field} is {shown(name)}, expected a file name inside the run directory"
        )
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise DamagedRecord(run_dir, f"{field} is {shown(name)}, which leads out of the run directory")
    path = run_dir / rel
    try:
        inside = path.resolve().is_relative_to(run_dir.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside:
        raise DamagedRecord(run_dir, f"{field} is {shown(name)}, which links out of the run directory")
    return path


@dataclass
class Run:
    """One run: its directory and its record (``RunRecord``, reloaded by ``refresh``).

    The record is a value: every change goes through ``update`` (or one of the ``save_*`` shorthands), which
    writes the next record and keeps it.
    """

    dir: Path
    record: RunRecord

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def launcher(self) -> str:
        return self.record.launcher

    @property
    def handle(self) -> dict[str, Any] | None:
        return None if self.record.handle is None else dict(self.record.handle)

    @property
    def intent(self) -> dict[str, Any] | None:
        """What identifies the job before its handle is saved (``Launcher.intent``); None for older records."""
        return None if self.record.intent is None else dict(self.record.intent)

    @property
    def submitter(self) -> Submitter | None:
        """The process that submits (or submitted) the run."""
        return self.record.submitter

    @property
    def state(self) -> str:
        return self.record.state

    @property
    def submitting(self) -> bool:
        """The record says the submission began and was not seen to end (no handle, no outcome)."""
        return self.record.submitting_now

    @property
    def artifacts(self) -> Artifacts:
        return self.record.launcher_artifacts()

    def recorded_status(self) -> RunStatus:
        """The last state written to the record: ``CREATED`` (never submitted) reads as UNKNOWN, ``SUBMITTING``
        as PENDING."""
        return self.record.recorded_status()

    def checkpoint_root(self) -> Path:
        """The checkpoint directory the run writes to; a UsageError for a run recorded without one."""
        return self.record.checkpoint_root()

    def update(self, change: Callable[[RunRecord], RunRecord]) -> RunRecord:
        """Write ``change(record)`` as the run's record, stamped ``updated``; returns it."""
        self.record = change(self.record).touched()
        _write_record(self.dir, self.record)
        return self.record

    def refresh(self) -> Run:
        self.record = read_record(self.dir)
        return self

    def save_submitting(self, intent: Mapping[str, Any], submitter: Mapping[str, Any]) -> None:
        """Record, before the launcher is called, what will identify the job and who submits it."""
        who = Submitter.model_validate(dict(submitter))
        self.update(lambda record: record.submitting(intent, who))

    def save_handle(self, handle: Mapping[str, Any]) -> None:
        self.update(lambda record: record.with_handle(handle))

    def save_status(self, status: RunStatus) -> None:
        """Record the last known state; a terminal state is never overwritten by a non-terminal one."""
        if self.record.with_status(status) is self.record:
            return
        self.update(lambda record: record.with_status(status))

    def save_bad_steps(self, marks: Sequence[BadStep]) -> None:
        """Record the steps a start failed to load; the record is not rewritten when it already holds them."""
        if self.record.with_bad_steps(marks) is self.record:
            return
        self.update(lambda record: record.with_bad_steps(marks))

    def save_services(self, services: Sequence[ServiceRecord]) -> None:
        """Record the service roles' states; the record is not rewritten when it already holds them."""
        if self.record.with_services(services) is self.record:
            return
        self.update(lambda record: record.with_services(services))

    def mark_submit_failed(self, message: str) -> None:
        """Keep the record consistent when ``submit`` raised: no handle, state FAILED, the reason."""
        self.save_not_submitted(RunStatus("FAILED", None, f"submission failed: {message}"))

    def save_not_submitted(self, status: RunStatus) -> None:
        """Record that the job was never handed to its launcher (refused, or stopped first): no handle, and no
        intent left to look a job up by."""
        self.update(lambda record: record.not_submitted(status))

    def save_attempt(self, artifacts: Artifacts, *, from_step: int | None, job: str) -> Attempt:
        """Record the run's next submission (a resume) with the artifacts it submits: its files replace the
        previous attempt's in ``artifacts/``, and the record has no handle and no outcome until it is submitted."""
        names = [(name, _safe_relative(name)) for name in artifacts.files]
        for name, rel in names:
            write_atomic(self.dir / ARTIFACTS_DIR / rel, artifacts.files[name])
        updated = self.update(
            lambda record: record.with_attempt("resume", artifacts, from_step=from_step, job=job)
        )
        return updated.attempts[-1]

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
        options: Mapping[str, Any] | None = None,
        spec_path: str | None = None,
        overrides: Sequence[str] = (),
        checkpoint: CheckpointFacts | None = None,
        metrics_dir: str | None = None,
        total_steps: int | None = None,
        health: Mapping[str, Any] | None = None,
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
        created = now()
        record = RunRecord(
            format=RECORD_FORMAT,
            id=run_id,
            launcher=launcher,
            framework=framework,
            version=version,
            job_name=job_name,
            spec_hash=spec_hash,
            spec_path=spec_path,
            # the run id is the record's: a launcher written before render took it saw it as an option
            options={k: v for k, v in (options or {}).items() if k != RUN_ID_OPTION},
            created=created,
            created_ts=time.time(),
            artifacts=RecordedArtifacts(files=dict(artifacts.files), request=dict(artifacts.request)),
            handle=None,
            state=CREATED,
            exit_code=None,
            message="",
            # what `rladapt resume` needs: the overrides, the checkpoint facts, the attempts
            overrides=tuple(overrides),
            checkpoint=checkpoint,
            metrics_dir=metrics_dir,
            # what `status` and `watch` judge the run's progress and health by (rladapt.metrics.progress)
            total_steps=total_steps,
            health=None if health is None else dict(health),
            attempts=(Attempt(attempt=1, kind="launch", submitted=created),),
        ).touched()
        try:
            art_dir = building / ARTIFACTS_DIR
            for name, rel in names:
                write_atomic(art_dir / rel, artifacts.files[name])
            if artifacts.request:
                write_atomic(
                    art_dir / "request.json", json.dumps(artifacts.request, indent=2, sort_keys=True) + "\n"
                )
            _write_record(building, record)
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
        runs.sort(key=lambda r: (r.record.created_ts, r.id))
        damaged.sort(key=lambda d: d.id)
        return runs, damaged

    def list(self) -> list[Run]:
        """Every readable run, oldest first (``scan`` also says which directories could not be read)."""
        return self.scan()[0]

    def _run_dirs(self) -> Iterator[Path]:
        return (self.runs_dir / name for name in self.run_names())

    def run_names(self) -> tuple[str, ...]:
        """The names of the run directories, sorted (one directory listing: no record is read)."""
        try:
            # scandir's entry types come with the listing: no stat per run (``runs`` lists thousands)
            with os.scandir(self.runs_dir) as entries:
                names = [e.name for e in entries if not e.name.startswith(".") and e.is_dir()]
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise OutputError(f"cannot list the runs in {str(self.runs_dir)!r}: {_os_reason(exc)}") from None
        # Hidden names are runs still being created (see create): not runs yet.
        return tuple(sorted(names))


def _write_record(run_dir: Path, record: RunRecord) -> None:
    write_atomic(run_dir / RECORD_FILE, json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n")


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
        return f"invalid run id {shown(given, 40)} ({len(given)} characters): expected {expected}"
    return f"invalid run id {shown(given)}: expected {expected}"
