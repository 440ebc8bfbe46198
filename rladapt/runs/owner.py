"""One writer per checkpoint directory: the owner file ``<checkpoint dir>/.rladapt-owner.json`` and its heartbeat.

Two runs writing one checkpoint directory overwrite each other's steps, and each start moves aside what the other
is still writing. The job's bootstrap takes the directory at its start and a small heartbeat process refreshes
the file while the job lives; the runner reads the file before it submits (``check_free``) and the bootstrap
takes it where the job runs (``take``), since a Slurm requeue or a pod restart never passes through the runner.

``flock`` does not hold across the hosts of a shared filesystem (NFS, Lustre and object-store mounts may ignore
it or keep it per host), so the lock is the file's heartbeat and a staleness rule: the holder rewrites the file
every ``interval`` seconds (``HEARTBEAT_ENV``, default ``DEFAULT_INTERVAL``); a file whose heartbeat is older
than ``STALE_AFTER`` intervals, or that says its job ended, holds nothing. Taking a free directory is an atomic
create (``link(2)`` of a complete temporary file, which fails when the name exists, also over NFS); taking over
a stale one renames the old file away first, so of two takers only one wins.

The same run takes its own directory over whatever the heartbeat says: a restart, a requeue or ``rladapt
resume`` of the run continues its own steps. The file also tells a requeue of an attempt (same run, same
attempt) from its first start, which is how the resume rule knows that a start is a restart (``rladapt.resume``).

Each take is also appended to ``HOLDERS_FILE`` (one JSON line: run, attempt, when), kept for good: who held the
directory at a given moment (``holder_at``) is how a run reads back only the TensorBoard events it wrote, when
runs one after another write into one checkpoint directory's ``rladapt-metrics`` (``rladapt.metrics.store``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rladapt.files import read_json_lines
from rladapt.primitives.errors import UsageError

__all__ = [
    "DEFAULT_INTERVAL",
    "HOLDERS_FILE",
    "OWNER_FILE",
    "SETTLE_AFTER",
    "STALE_AFTER",
    "DirectoryHeld",
    "Owner",
    "check_free",
    "ended_for_good",
    "heartbeat_interval",
    "holder_at",
    "job_ended",
    "read_holders",
    "read_owner",
    "release",
    "start_heartbeat",
    "take",
]

OWNER_FILE = ".rladapt-owner.json"
#: Every take of the directory, oldest first: ``{"run", "attempt", "taken"}`` per line (``read_holders``).
HOLDERS_FILE = ".rladapt-holders.jsonl"
#: Seconds between two heartbeats of the holder (the environment can shorten it, e.g. for tests).
HEARTBEAT_ENV = "RLADAPT_OWNER_HEARTBEAT"
DEFAULT_INTERVAL = 30.0
#: A holder whose heartbeat is older than this many intervals is gone: 4 x 30 s = 2 minutes by default, long
#: enough for a loaded filesystem to delay a few writes, short enough that a crashed job does not block a new run.
STALE_AFTER = 4
#: How many heartbeat intervals an end must last before what runs beside the job takes it as the end: a restart of
#: the attempt by the job script (Slurm's restart loop waits at most 30 s) takes the directory again within it.
SETTLE_AFTER = 2


def heartbeat_interval() -> float:
    try:
        value = float(os.environ.get(HEARTBEAT_ENV) or DEFAULT_INTERVAL)
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 else DEFAULT_INTERVAL


@dataclass(frozen=True)
class Owner:
    """Who holds a checkpoint directory: the run and its attempt (the job name), where, and its last heartbeat."""

    run: str
    attempt: str
    host: str
    pid: int
    heartbeat: float
    interval: float
    token: str
    ended: float | None = None

    def age(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.heartbeat)

    def holds(self, now: float | None = None) -> bool:
        """Its job is running as far as the file can tell: not ended, heartbeat within ``STALE_AFTER`` intervals."""
        return self.ended is None and self.age(now) <= STALE_AFTER * self.interval

    def describe(self, now: float | None = None) -> str:
        return (
            f"run {self.run} (host {self.host}, pid {self.pid}, last heartbeat {self.age(now):.0f} s ago; "
            f"stale after {STALE_AFTER * self.interval:g} s without one)"
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True) + "\n"


class DirectoryHeld(UsageError):
    """Another run holds the checkpoint directory: this one must not start (exit 2)."""


def _path(root: Path) -> Path:
    return root / OWNER_FILE


def _parse(text: str) -> Owner:
    data = json.loads(text)
    return Owner(
        run=str(data["run"]),
        attempt=str(data["attempt"]),
        host=str(data["host"]),
        pid=int(data["pid"]),
        heartbeat=float(data["heartbeat"]),
        interval=float(data["interval"]),
        token=str(data["token"]),
        ended=None if data.get("ended") is None else float(data["ended"]),
    )


def _read(path: Path) -> Owner | None:
    """The owner file at ``path``; None without one. A file that cannot be read as one holds nothing."""
    try:
        return _parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError):
        # written whole (a temporary file linked or renamed into place), so this is not a write in progress
        return Owner("?", "?", "?", 0, 0.0, DEFAULT_INTERVAL, "", ended=0.0)


def read_owner(root: Path) -> Owner | None:
    """The owner file of the checkpoint directory ``root``; None without one."""
    return _read(_path(root))


def _refusal(root: Path, holder: Owner, flag: str) -> DirectoryHeld:
    return DirectoryHeld(
        f"the checkpoint directory {str(root)!r} is held by {holder.describe()}: two runs must not write one "
        f"checkpoint directory. Wait for that run to end, or use another spec.checkpoint.dir; if that run is "
        f"gone (check pid {holder.pid} on {holder.host}), take the directory over with {flag} or remove "
        f"{str(_path(root))!r}"
    )


def check_free(
    root: Path,
    run_id: str | None,
    *,
    take_over: bool = False,
    flag: str = "--take-over",
    ended: Callable[[str], bool] | None = None,
) -> None:
    """Refuse (``DirectoryHeld``) when another run than ``run_id`` holds ``root``; nothing is written.

    ``ended(run)`` tells from the caller's own run store that the holder's run has ended: its heartbeat process
    notices within a second, or never when the scheduler kills the job's whole step (Slurm's cgroup), and a run
    recorded as ended must not block the directory for ``STALE_AFTER`` intervals.
    """
    holder = read_owner(root)
    if holder is None or take_over or holder.run == run_id or not holder.holds():
        return
    if ended is not None and ended(holder.run):
        return
    raise _refusal(root, holder, flag)


def _create(root: Path, owner: Owner) -> bool:
    """Create the owner file atomically; False when one exists."""
    tmp = root / f".{OWNER_FILE}.{owner.token}.tmp"
    tmp.write_text(owner.to_json(), encoding="utf-8")
    try:
        os.link(tmp, _path(root))
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def take(
    root: Path, run_id: str, attempt: str, *, take_over: bool = False, flag: str = "--take-over"
) -> tuple[Owner, Owner | None]:
    """Hold ``root`` for this process; returns the new owner and the one it replaced (None: it was free).

    Refused (``DirectoryHeld``) when another run holds it, unless ``take_over``.
    """
    root.mkdir(parents=True, exist_ok=True)
    mine = Owner(
        run=run_id,
        attempt=attempt,
        host=socket.gethostname(),
        pid=os.getpid(),
        heartbeat=time.time(),
        interval=heartbeat_interval(),
        token=secrets.token_hex(8),
    )
    for _ in range(8):
        before = read_owner(root)
        if before is None:
            if _create(root, replace(mine, heartbeat=time.time())):
                _log_take(root, mine)
                return mine, None
            continue
        if before.run != run_id and before.holds() and not take_over:
            raise _refusal(root, before, flag)
        # Rename the old file away: of two takers, only one can; the other finds the name gone and reads again.
        aside = root / f".{OWNER_FILE}.{mine.token}.old"
        try:
            os.rename(_path(root), aside)
        except FileNotFoundError:
            continue
        moved = _read(aside)
        aside.unlink(missing_ok=True)
        if moved is not None and moved.token != before.token:
            # someone took it between our read and our rename: theirs is newer; read again
            _create(root, moved)
            continue
        if _create(root, replace(mine, heartbeat=time.time())):
            _log_take(root, mine)
            return mine, before
    raise DirectoryHeld(
        f"the checkpoint directory {str(root)!r} is being taken by another start at this moment"
    )


def _log_take(root: Path, mine: Owner) -> None:
    """Append this take to ``HOLDERS_FILE``: one short line in append mode, whole on a local or NFS file system."""
    line = json.dumps({"run": mine.run, "attempt": mine.attempt, "taken": mine.heartbeat}, sort_keys=True)
    with contextlib.suppress(OSError), open(root / HOLDERS_FILE, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def read_holders(root: Path) -> list[tuple[float, str]]:
    """``(taken, run)`` of every take of ``root``, by time; unreadable lines are skipped, no file gives []."""
    out = []
    for entry in read_json_lines(root / HOLDERS_FILE):
        try:
            out.append((float(entry["taken"]), str(entry["run"])))  # type: ignore[arg-type]
        except (ValueError, TypeError, KeyError):
            continue
    return sorted(out)


def holder_at(holders: list[tuple[float, str]], when: float) -> str | None:
    """The run that had taken the directory last at ``when`` (seconds since the epoch); None before any take.

    ``when`` may be a whole second (a TensorBoard event file names its creation so): a take within that second
    counts as before it, since a job's writer is opened after its bootstrap took the directory.
    """
    found = None
    for taken, run in holders:
        if int(taken) <= when:
            found = run
        else:
            break
    return found


def job_ended(root: Path, run_id: str, attempt: str | None = None, now: float | None = None) -> Owner | None:
    """The owner record saying that the job of ``run_id`` (and ``attempt``, when given) has ended: it names that
    job, and says ended (its heartbeat saw the job's bootstrap exit) or its heartbeat went stale (the job was killed
    with its heartbeat, e.g. by Slurm's cgroup). None while that job holds ``root``, and while it has not taken it
    yet: no file, or one of another run or attempt (a run before it, or this run's previous attempt), is a job
    still to start, not one that ended.

    This is the job's end marker for what runs beside it (``rladapt.evaluate``, a role's wrapper): it is in the
    checkpoint directory, which every role that reads the run's versions sees, on every launcher. A restart of the
    same attempt (a Slurm requeue, a pod retry) takes the file again with a new token: compare ``token`` after a
    while to tell an end from a gap between two starts.
    """
    owner = read_owner(root)
    if owner is None or owner.run != run_id or (attempt is not None and owner.attempt != attempt):
        return None
    return None if owner.holds(now) else owner


def ended_for_good(root: Path, seen: Owner, sleep: Callable[[float], None] = time.sleep) -> bool:
    """After ``job_ended`` gave ``seen``: wait ``SETTLE_AFTER`` of its heartbeat intervals, then say whether that
    end stands. False when the same attempt took the directory again meanwhile (a restart: new token, heartbeat
    going); True when the file is the same ended one, or now names another attempt or run (a resume, a take-over:
    this attempt will not come back)."""
    sleep(SETTLE_AFTER * seen.interval)
    again = read_owner(root)
    if again is None or (again.run, again.attempt) != (seen.run, seen.attempt):
        return True
    return again.token == seen.token and not again.holds()


def _rewrite(root: Path, mine: Owner) -> bool:
    """Write ``mine`` over the owner file when it is still ours (same token); False when it was taken over."""
    current = read_owner(root)
    if current is None or current.token != mine.token:
        return False
    tmp = root / f".{OWNER_FILE}.{mine.token}.tmp"
    tmp.write_text(mine.to_json(), encoding="utf-8")
    os.replace(tmp, _path(root))
    return True


def release(root: Path, mine: Owner) -> None:
    """Remove the owner file when it is still ``mine``: the start it was taken for did not happen."""
    current = read_owner(root)
    if current is not None and current.token == mine.token:
        with contextlib.suppress(OSError):
            _path(root).unlink()


def start_heartbeat(root: Path, mine: Owner) -> None:
    """A process that refreshes ``mine`` every interval while this process lives, then marks the file ended.

    A process of its own, not a thread: the bootstrap may ``exec`` the framework, which keeps this pid (the one the
    file names) but no thread. It watches its parent: once reparented, the job is gone.
    """
    import subprocess

    subprocess.Popen(
        [sys.executable, "-m", "rladapt.runs.owner", str(root), mine.to_json()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )


def _beat(root: Path, mine: Owner, parent: int) -> None:
    # A stop (SIGTERM/SIGINT to the process group) is for the job; this process outlives it to say it ended.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    step = min(mine.interval, 1.0)
    last = time.monotonic()
    while os.getppid() == parent:
        time.sleep(step)
        if time.monotonic() - last >= mine.interval:
            last = time.monotonic()
            try:
                if not _rewrite(root, replace(mine, heartbeat=time.time())):
                    return  # taken over: the new holder beats now
            except OSError:
                continue  # a filesystem hiccup: the next beat tries again, staleness allows a few misses
    with contextlib.suppress(OSError):
        _rewrite(root, replace(mine, heartbeat=time.time(), ended=time.time()))


def main(argv: Sequence[str]) -> None:
    """``python -m rladapt.runs.owner DIR OWNER_JSON``: the heartbeat of ``start_heartbeat``."""
    mine = _parse(argv[1])
    _beat(Path(argv[0]), mine, mine.pid)


if __name__ == "__main__":
    main(sys.argv[1:])
