"""A small real service role for the launcher tests: ``python service_heartbeat.py DIR NAME``.

Each start appends a line to ``DIR/NAME.starts`` (``pid pgid``) and writes ``DIR/NAME.env.json`` (the variables a
test checks arrived). With ``HEARTBEAT_FAIL_FIRST=1`` the first start exits 3 (so a test sees the restart); then it
writes ``DIR/NAME.beat`` every 0.1 s until ``DIR/NAME.done`` exists (exit 0) or it is stopped.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> int:
    where, name = Path(sys.argv[1]), sys.argv[2]
    where.mkdir(parents=True, exist_ok=True)
    starts = where / f"{name}.starts"
    with starts.open("a") as out:
        out.write(f"{os.getpid()} {os.getpgid(0)}\n")
    count = len(starts.read_text().splitlines())
    keys = ("HOSTILE", "SERVICE_ROLE_VAR", "STUB_SLEEP")
    (where / f"{name}.env.json").write_text(json.dumps({k: os.environ.get(k) for k in keys}))
    print(f"service {name} start {count}", flush=True)
    if os.environ.get("HEARTBEAT_FAIL_FIRST") == "1" and count == 1:
        return 3
    beats = 0
    while not (where / f"{name}.done").exists():
        beats += 1
        (where / f"{name}.beat").write_text(f"{count} {beats}\n")
        time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
