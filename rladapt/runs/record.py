"""The run record (``run.json``) as a typed, immutable value: ``RunRecord`` and its parts.

A record is read back through one reader (``read_record``): a record that is not JSON, not UTF-8, misses a field,
holds a field of the wrong type or is of a format this rladapt does not know is ``DamagedRecord`` naming the file
and the field, so every attribute read later has its type and no reader decodes JSON by itself.

A record is never edited in place: each change is a method that returns the next value (``submitting``,
``with_handle``, ``with_status``, ``with_attempt`` ...), and only the run store (``rladapt.runs.store``) writes one.
What a launcher keeps (``handle``, ``intent``, ``options``, ``artifacts.request``) is the launcher's own JSON and
stays a mapping here: each launcher checks the handle it reads back.

Formats: 1 is what rladapt wrote before the record was typed; 2 always lists the submissions in ``attempts``
(the launch is attempt 1), which format 1 left out in records from before ``rladapt resume``. A format-1 record
is read as format 2 (``_from_format_1``) and written as format 2 the next time it changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from rladapt.plugins.launcher import TERMINAL_STATES, Artifacts, RunState, RunStatus
from rladapt.plugins.metrics import METRICS_DIR
from rladapt.primitives.errors import RladaptError, UsageError

if TYPE_CHECKING:
    from rladapt.primitives.spec import Health

__all__ = [
    "CREATED",
    "RECORD_FILE",
    "RECORD_FORMAT",
    "SUBMITTING",
    "Attempt",
    "CheckpointFacts",
    "DamagedRecord",
    "RecordState",
    "RecordedArtifacts",
    "RunRecord",
    "Submitter",
    "read_record",
]

#: The format this rladapt writes; it reads every format from 1 up to it.
RECORD_FORMAT = 2
RECORD_FILE = "run.json"
#: The record's state between "about to submit" and "the launcher's handle is saved" (shown as PENDING).
SUBMITTING = "SUBMITTING"
#: The record's state of a run rendered and recorded but not (yet) handed to its launcher.
CREATED = "CREATED"

RecordState = Literal[
    "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN", "SUBMITTING", "CREATED"
]
_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"})

# Strict scalars: a record is JSON that rladapt wrote, so `true` is no integer and "3" no number; a value of
# another type means the file was edited or damaged, and is refused by name rather than converted.
_Int = Annotated[int, Field(strict=True)]
_Str = Annotated[str, Field(strict=True)]
_Seconds = Annotated[float, Field(strict=True, allow_inf_nan=False)]


def now() -> str:
    """The time stamps a record holds: UTC, to the second, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Value(BaseModel):
    # extra="allow": a field this rladapt does not know (written by a newer one of the same format) is kept as it
    # is and written back, never dropped.
    # defer_build: the validators are built when the first record is read, not at import (pydantic docs, "Model
    # config: defer_build"): ``runs`` answered from its index reads no record.
    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)


class Submitter(_Value):
    """The process that submits (or submitted) the run: it holds the submission lock while it does."""

    pid: Annotated[int, Field(strict=True, gt=0)]
    host: _Str | None = None
    start_time: _Int | None = None


class Attempt(_Value):
    """One submission of the run: the launch (attempt 1), then each ``rladapt resume``."""

    attempt: Annotated[int, Field(strict=True, gt=0)]
    kind: Literal["launch", "resume"] = "launch"
    submitted: _Str | None = None
    #: The step a resume started from (None: its newest complete step, or the beginning).
    from_step: _Int | None = None
    #: The id the launcher named this attempt's job after (a resume's job needs a name of its own).
    job: _Str | None = None


class CheckpointFacts(_Value):
    """What a checkpoint of the run depends on, recorded at launch so that ``resume`` can tell what changed."""

    #: Absolute, as seen from where the run was launched; None for a spec without a checkpoint directory.
    dir: _Str | None = None
    model: _Str | None = None
    world_size: _Int | None = None


class BadStep(_Value):
    """A step a start of the run failed to load (``rladapt.plugins.checkpoints.mark_bad``): never chosen again."""

    step: _Int
    #: Relative to the checkpoint directory, as the mark in it says.
    path: _Str
    reason: _Str
    marked: _Str | None = None
    #: The attempt (job name) whose start failed to load it.
    attempt: _Str | None = None


class ServiceRecord(_Value):
    """The last known state of one service role of the run (``Launcher.services``); a record written before
    service roles existed has none."""

    name: _Str
    state: _Str
    restarts: _Int = 0
    #: What the launcher runs it as: ``pid 123``, a Ray job id, a Slurm step, a Kubernetes object.
    unit: _Str = ""
    message: _Str = ""


class RecordedArtifacts(_Value):
    """The rendered files (name -> text) and the request of the current attempt, as submitted."""

    files: dict[str, _Str] = Field(default_factory=dict)
    request: dict[str, Any] = Field(default_factory=dict)


class RunRecord(_Value):
    """Everything the run store knows about one run (``run.json``); immutable, changed by returning a new one."""

    format: _Int = RECORD_FORMAT
    id: _Str
    launcher: _Str
    framework: _Str
    version: _Str
    job_name: _Str
    created: _Str
    created_ts: _Seconds
    state: RecordState
    handle: dict[str, Any] | None
    spec_hash: _Str | None = None
    spec_path: _Str | None = None
    #: The launcher options the artifacts were rendered with, typed as the launcher declares them.
    options: dict[str, Any] = Field(default_factory=dict)
    artifacts: RecordedArtifacts = Field(default_factory=RecordedArtifacts)
    exit_code: _Int | None = None
    #: Why the run is in its state ("" when there is nothing to say; format 1 also wrote null for that).
    message: Annotated[_Str, BeforeValidator(lambda value: "" if value is None else value)] = ""
    #: What identifies the job before its handle is saved (``Launcher.intent``).
    intent: dict[str, Any] | None = None
    submitter: Submitter | None = None
    submitted: _Str | None = None
    updated: _Str | None = None
    overrides: tuple[_Str, ...] = ()
    checkpoint: CheckpointFacts | None = None
    #: Where the job writes the TensorBoard events rladapt reads back (``NativeLaunch.metrics_dir``), absolute as
    #: seen from where the run was launched; None (and absent from the file, as in records from before the field):
    #: ``<checkpoint dir>/rladapt-metrics``.
    metrics_dir: _Str | None = None
    #: ``spec.training.steps``: the total of the progress line.
    total_steps: _Int | None = None
    #: ``spec.health`` as launched (``thresholds`` reads it).
    health: dict[str, Any] | None = None
    attempts: tuple[Attempt, ...] = ()
    #: The steps of its checkpoint directory that a start failed to load, as the job marked them there (the
    #: runner copies them here when it looks at the run: the job never writes the record).
    bad_steps: tuple[BadStep, ...] = ()
    #: The service roles launched beside the job, as last seen (``Launcher.services``).
    services: tuple[ServiceRecord, ...] = ()

    # --- reading ---------------------------------------------------------------------------------------------

    @property
    def framework_version(self) -> str:
        """``NAME==VERSION``, as ``-f`` takes it."""
        return f"{self.framework}=={self.version}"

    @property
    def submitting_now(self) -> bool:
        """The record says the submission began and was not seen to end (no handle, no outcome)."""
        return self.state == SUBMITTING and self.handle is None

    def recorded_status(self) -> RunStatus:
        """The last state written: ``CREATED`` (never submitted) reads as UNKNOWN, ``SUBMITTING`` as PENDING."""
        if self.state == SUBMITTING:
            by = f" by pid {self.submitter.pid}" if self.submitter is not None else ""
            host = f" on {self.submitter.host}" if self.submitter is not None and self.submitter.host else ""
            return RunStatus("PENDING", None, f"being submitted{by}{host}")
        state = self.state if self.state in _STATES else "UNKNOWN"
        return RunStatus(cast(RunState, state), self.exit_code, self.message)

    def launcher_artifacts(self) -> Artifacts:
        return Artifacts(
            launcher=self.launcher, files=dict(self.artifacts.files), request=dict(self.artifacts.request)
        )

    def checkpoint_root(self) -> Path:
        """The checkpoint directory the run writes to; a UsageError for a run recorded without one."""
        where = self.checkpoint.dir if self.checkpoint is not None else None
        if not where:
            raise UsageError(
                f"run {self.id} has no checkpoint directory in its record (launched by an older rladapt, or "
                "without spec.checkpoint.dir); give the directory instead: rladapt checkpoints DIR -f NAME==VERSION"
            )
        return Path(where)

    def metrics_root(self) -> Path:
        """The directory the run's TensorBoard events are under: the recorded location, else
        ``<checkpoint dir>/rladapt-metrics`` (a UsageError for a run recorded with neither)."""
        if self.metrics_dir:
            return Path(self.metrics_dir)
        return self.checkpoint_root() / METRICS_DIR

    def thresholds(self) -> Health:
        """The ``spec.health`` the run was launched with; the defaults for a record without (or with an
        unreadable) one: a threshold that no longer validates must not hide the run's progress."""
        # imported here: the spec's models cost every verb that reads a record (``runs``) a tenth of a second
        from rladapt.primitives.spec import Health

        if self.health is not None:
            try:
                return Health.model_validate(self.health)
            except ValidationError:
                pass
        return Health()

    @property
    def steps_total(self) -> int | None:
        """``total_steps`` when it is a count of steps; None otherwise."""
        return self.total_steps if self.total_steps is not None and self.total_steps > 0 else None

    def to_json(self, *, artifacts: bool = True) -> dict[str, Any]:
        """The record as written in ``run.json`` (without ``artifacts`` when asked, as ``status --json`` shows)."""
        data = self.model_dump(mode="json")
        # an attempt keeps the fields it was given: a launch has no `from_step` or `job`, not null ones
        data["attempts"] = [attempt.model_dump(mode="json", exclude_unset=True) for attempt in self.attempts]
        for name in ("submitted", "updated"):  # absent rather than null: what every format-1 reader expects
            if data.get(name) is None:
                data.pop(name, None)
        if not self.bad_steps:  # absent until there is one: a record reads as it did before the field
            data.pop("bad_steps", None)
        if not self.services:  # likewise: a run without service roles reads as it did before the field
            data.pop("services", None)
        if self.metrics_dir is None:  # likewise: a record of the default location reads as before the field
            data.pop("metrics_dir", None)
        if not artifacts:
            data.pop("artifacts", None)
        return data

    # --- the next value --------------------------------------------------------------------------------------

    def _next(self, **changes: Any) -> RunRecord:
        # model_copy does not validate: every change below is typed by its method's signature.
        return self.model_copy(update={"format": RECORD_FORMAT, **changes})

    def touched(self) -> RunRecord:
        return self._next(updated=now())

    def submitting(self, intent: Mapping[str, Any], submitter: Submitter) -> RunRecord:
        """About to call the launcher: what will identify the job and who submits it."""
        return self._next(state=SUBMITTING, intent=dict(intent), submitter=submitter, message="")

    def with_handle(self, handle: Mapping[str, Any]) -> RunRecord:
        """The launcher accepted the job: its handle; a state not yet known to the launcher becomes PENDING."""
        state = "PENDING" if self.state in ("UNKNOWN", CREATED, SUBMITTING) else self.state
        return self._next(handle=dict(handle), submitted=now(), state=state)

    def with_bad_steps(self, marks: Sequence[BadStep]) -> RunRecord:
        """The record with the checkpoint directory's marks; itself when they are the ones it holds."""
        if tuple(marks) == self.bad_steps:
            return self
        return self._next(bad_steps=tuple(marks), updated=now())

    def with_services(self, services: Sequence[ServiceRecord]) -> RunRecord:
        """The record with the services' last known states; itself when they are the ones it holds."""
        if tuple(services) == self.services:
            return self
        return self._next(services=tuple(services), updated=now())

    def with_status(self, status: RunStatus) -> RunRecord:
        """The last known state; a terminal state is never replaced by a non-terminal one."""
        if self.state in TERMINAL_STATES and not status.terminal:
            return self
        if (self.state, self.exit_code, self.message) == (status.state, status.exit_code, status.message):
            # Nothing new: the same record, so a status poll does not rewrite run.json (nor its ``updated``).
            return self
        return self._next(state=status.state, exit_code=status.exit_code, message=status.message)

    def not_submitted(self, status: RunStatus) -> RunRecord:
        """The job was never handed to its launcher (refused, or stopped first): no intent to look it up by."""
        return self._next(intent=None, state=status.state, exit_code=status.exit_code, message=status.message)

    def with_attempt(
        self, kind: Literal["launch", "resume"], artifacts: Artifacts, **facts: Any
    ) -> RunRecord:
        """The next submission of the run: a new attempt with the artifacts it submits, no handle, no outcome.

        ``facts`` are the attempt's own (``from_step``, ``job``).
        """
        attempt = Attempt(attempt=len(self.attempts) + 1, kind=kind, submitted=now(), **facts)
        return self._next(
            attempts=(*self.attempts, attempt),
            artifacts=RecordedArtifacts(files=dict(artifacts.files), request=dict(artifacts.request)),
            handle=None,
            exit_code=None,
            message="",
        )


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


def shown(value: Any, limit: int = 60) -> str:
    """``value`` quoted for a message, cut short: a newline in it cannot start a line of its own."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: What a good value of a field is, for messages (by the field's path, list indexes as ``[]``).
_EXPECTED = {
    "format": "an integer",
    "created_ts": "a number (seconds since the epoch)",
    "state": "one of " + ", ".join(sorted(_STATES | {SUBMITTING, CREATED})),
    "handle": "an object or null",
    "intent": "an object or null",
    "submitter": "an object or null",
    "checkpoint": "an object or null",
    "health": "an object or null",
    "options": "an object",
    "artifacts": "an object",
    "artifacts.files": "an object of strings",
    "artifacts.files.*": "a string",
    "artifacts.request": "an object",
    "exit_code": "an integer or null",
    "total_steps": "an integer or null",
    "overrides": "a list of strings",
    "overrides[]": "a string",
    "attempts": "a list of objects",
    "attempts[]": "an object",
    "attempts[].attempt": "a positive integer",
    "attempts[].kind": "launch or resume",
    "attempts[].from_step": "an integer or null",
    "submitter.pid": "a positive integer",
    "submitter.start_time": "an integer or null",
    "checkpoint.world_size": "an integer or null",
    "bad_steps": "a list of objects",
    "bad_steps[]": "an object",
    "bad_steps[].step": "an integer",
    "bad_steps[].path": "a string",
    "bad_steps[].reason": "a string",
}


def _where(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """The field's path as shown (``attempts[1].kind``) and as looked up in ``_EXPECTED`` (``attempts[].kind``)."""
    shown_path, key = "", ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            shown_path, key = f"{shown_path}[{part}]", f"{key}[]"
        elif index and isinstance(loc[index - 1], str) and loc[index - 1] == "files":
            shown_path, key = f"{shown_path}.{part}", f"{key}.*"
        else:
            shown_path += ("." if shown_path else "") + part
            key += ("." if key else "") + part
    return shown_path, key


def _problems(errors: list[ErrorDetails]) -> list[str]:
    missing: list[str] = []
    wrong: dict[str, str] = {}
    for error in errors:
        path, key = _where(error["loc"])
        if error["type"] == "missing":
            missing.append(path)
        elif path not in wrong:  # one message per field
            expected = _EXPECTED.get(key) or ("a string" if "string" in error["type"] else error["msg"])
            wrong[path] = f"{path} is {shown(error['input'])}, expected {expected}"
    problems = []
    if missing:
        problems.append("missing field" + ("s" if len(missing) > 1 else "") + " " + ", ".join(missing))
    return problems + list(wrong.values())


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN/Infinity, which no other JSON reader does: a record holding them was hand-edited.
    raise ValueError(f"{name} is not a JSON value")


def _from_format_1(data: dict[str, Any]) -> dict[str, Any]:
    """A format-1 record as format 2: a record from before ``rladapt resume`` lists no attempts (the launch was
    its only one)."""
    if "attempts" not in data:
        data = {**data, "attempts": [{"attempt": 1, "kind": "launch", "submitted": data.get("submitted")}]}
    return {**data, "format": RECORD_FORMAT}


def parse_record(text: str, run_dir: Path) -> RunRecord:
    """The record in ``text`` (``run.json`` of ``run_dir``); ``DamagedRecord`` names the file and the field."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        reason = "it is empty" if not text.strip() else str(exc)
        raise DamagedRecord(run_dir, f"{RECORD_FILE} is not JSON: {reason}") from None
    if not isinstance(data, dict):
        raise DamagedRecord(run_dir, f"{RECORD_FILE} holds a {type(data).__name__}, expected a JSON object")
    version = data.get("format")
    if "format" not in data:
        raise DamagedRecord(run_dir, f"{RECORD_FILE}: missing field format")
    if not isinstance(version, int) or isinstance(version, bool):
        raise DamagedRecord(run_dir, f"{RECORD_FILE}: format is {shown(version)}, expected an integer")
    if not 1 <= version <= RECORD_FORMAT:
        newer = " (written by a newer rladapt: upgrade rladapt to read it)" if version > RECORD_FORMAT else ""
        raise DamagedRecord(
            run_dir,
            f"{RECORD_FILE}: format is {version}, this rladapt reads formats 1 to {RECORD_FORMAT}{newer}",
        )
    if version == 1:
        data = _from_format_1(data)
    try:
        record = RunRecord.model_validate(data)
    except ValidationError as exc:
        raise DamagedRecord(run_dir, f"{RECORD_FILE}: " + "; ".join(_problems(exc.errors()))) from None
    if record.id != run_dir.name:
        raise DamagedRecord(
            run_dir,
            f"{RECORD_FILE}: id is {shown(record.id)}, but the run's directory is {shown(run_dir.name)}",
        )
    return record


def read_record(run_dir: Path) -> RunRecord:
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
    return parse_record(text, run_dir)
