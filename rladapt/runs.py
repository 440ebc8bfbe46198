"""The run store: one directory per launched run, so that ``status``/``logs``/``stop`` work from any shell.

Layout: ``$RLADAPT_HOME/runs/<run-id>/`` (default ``$XDG_STATE_HOME/rladapt``, that is
``~/.local/state/rladapt``) holding ``run.json`` (the record), ``artifacts/`` (the rendered files and
request, verbatim) and whatever the launcher keeps there (the local launcher's ``output.log`` and exit-code
file). ``run.json`` is always replaced atomically, so a reader in another shell never sees half a record.

The run id is made before rendering and handed to the launcher as the ``run_id`` option (``RUN_ID_OPTION``):
it names the Ray submission, the Slurm job and the Kubernetes objects, so it is a DNS label (lowercase
letters, digits and ``-``, at most 63 characters).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, cast

from rladapt.files import write_text
from rladapt.plugins.launcher import RUN_ID_OPTION, TERMINAL_STATES, Artifacts, RunState, RunStatus
from rladapt.primitives.errors import UsageError

HOME_ENV = "RLADAPT_HOME"
__all__ = ["RUN_ID_OPTION", "Run", "RunStore"]
RECORD_FORMAT = 1
RECORD_FILE = "run.json"
ARTIFACTS_DIR = "artifacts"

_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"})
_SLUG_DROP = re.compile(r"[^a-z0-9-]+")
_RUN_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")


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


def _safe_relative(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts or name.startswith("~"):
        raise UsageError(f"artifact file name {name!r} must be a relative path inside the run directory")
    return rel


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
    def state(self) -> str:
        return str(self.record.get("state", "UNKNOWN"))

    @property
    def artifacts(self) -> Artifacts:
        data = self.record.get("artifacts") or {}
        return Artifacts(
            launcher=self.launcher, files=dict(data.get("files", {})), request=dict(data.get("request", {}))
        )

    def recorded_status(self) -> RunStatus:
        """The last state written to the record (``CREATED`` - rendered, never submitted - reads as UNKNOWN)."""
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
        self.record = _read_record(self.dir)
        return self

    def save_handle(self, handle: dict[str, Any]) -> None:
        self.record["handle"] = handle
        self.record["submitted"] = _now()
        if self.record.get("state") in (None, "UNKNOWN", "CREATED"):
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
        self.record["state"] = "FAILED"
        self.record["exit_code"] = None
        self.record["message"] = f"submission failed: {message}"
        self.save()


def _read_record(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RECORD_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"run directory {run_dir} has no {RECORD_FILE}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the run record {path}: {exc}") from None
    if not isinstance(data, dict) or "id" not in data or "launcher" not in data:
        raise UsageError(f"the run record {path} is not a rladapt run record")
    return data


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
    ) -> Run:
        if not _RUN_ID.match(run_id):
            raise UsageError(f"run id {run_id!r} is not a DNS label (lowercase letters, digits, '-')")
        run_dir = self.runs_dir / run_id
        try:
            run_dir.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise UsageError(f"run {run_id!r} already exists in {self.runs_dir}") from None
        art_dir = run_dir / ARTIFACTS_DIR
        for name, text in artifacts.files.items():
            target = art_dir / _safe_relative(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        if artifacts.request:
            art_dir.mkdir(exist_ok=True)
            (art_dir / "request.json").write_text(
                json.dumps(artifacts.request, indent=2, sort_keys=True) + "\n", encoding="utf-8"
            )
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
            "state": "CREATED",
            "exit_code": None,
            "message": "",
        }
        run = Run(dir=run_dir, record=record)
        run.save()
        return run

    def get(self, id_or_prefix: str) -> Run:
        """The run with this id, or the only run whose id starts with it; anything else is a UsageError."""
        key = id_or_prefix.strip()
        if not key or "/" in key or key.startswith("."):
            raise UsageError(f"invalid run id {id_or_prefix!r}")
        exact = self.runs_dir / key
        if (exact / RECORD_FILE).is_file():
            return Run(dir=exact, record=_read_record(exact))
        matches = sorted(p.name for p in self._run_dirs() if p.name.startswith(key))
        if len(matches) == 1:
            return Run(dir=self.runs_dir / matches[0], record=_read_record(self.runs_dir / matches[0]))
        if not matches:
            raise UsageError(f"no run {key!r} in {self.runs_dir} (see `rladapt runs`)")
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise UsageError(f"run id prefix {key!r} is ambiguous: {shown}")

    def list(self) -> list[Run]:
        """Every readable run, oldest first; unreadable directories are skipped, not fatal."""
        runs = []
        for run_dir in self._run_dirs():
            try:
                runs.append(Run(dir=run_dir, record=_read_record(run_dir)))
            except UsageError:
                continue
        return sorted(runs, key=lambda r: (float(r.record.get("created_ts", 0.0)), r.id))

    def _run_dirs(self) -> Iterator[Path]:
        if not self.runs_dir.is_dir():
            return iter(())
        return (p for p in self.runs_dir.iterdir() if p.is_dir() and (p / RECORD_FILE).is_file())
