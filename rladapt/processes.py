"""Which process is which: a pid with its start time, so that a recycled pid is never taken for the one recorded.

Linux ``/proc/<pid>/stat`` gives the state, the process group and the start time (in clock ticks since boot, field
22, see proc(5)); elsewhere only ``kill(pid, 0)`` is available and the start time is unknown (None), so a pid is
then taken for alive whenever it exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

__all__ = ["alive", "end_group", "group_alive", "proc_stat", "signal_group", "start_time", "this_process"]

_PROC = Path("/proc")


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, pgid, start time in clock ticks) of ``pid`` from /proc, or None when it does not exist."""
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    try:
        fields = raw[raw.rindex(")") + 2 :].split()
        return fields[0], int(fields[2]), int(fields[19])
    except (ValueError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    stat = proc_stat(pid)
    return stat[2] if stat else None


def alive(pid: int, started: int | None) -> bool:
    """True when ``pid`` runs (not a zombie) and, when ``started`` is known, is the process that started then."""
    if pid <= 0:
        return False
    if _PROC.is_dir():
        stat = proc_stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            return False
        return started is None or stat[2] == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``pgid``; a group gone already, or not ours, is left alone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def end_group(pgid: int, grace: float) -> None:
    """SIGTERM to the group ``pgid``, SIGKILL after ``grace`` seconds if any of it is still alive."""
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process of the group is left (zombies of an unreaped leader do not count)."""
    if _PROC.is_dir():
        for entry in _PROC.iterdir():
            if not entry.name.isdigit():
                continue
            stat = proc_stat(int(entry.name))
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def this_process() -> dict[str, Any]:
    """``{pid, host, start_time}`` of the running process: who is submitting a run, for ``status`` elsewhere."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "start_time": start_time(pid)}
