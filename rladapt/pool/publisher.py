"""The job's own publisher: each checkpoint step that completes becomes a pool version, while training goes on.

It runs inside the job (a process beside the training, started by the bootstrap like the resume decision), so it
holds on every launcher and needs nothing from the machine that launched the run. It reads the checkpoint
directory with the framework adapter's own scan, so only a *complete* step is published, and the adapter's
``weight_files`` says which files are the model. A step that cannot be published (no weights in it) is reported
once on stderr and skipped; the publisher never fails the training it watches.

``python -m rladapt.pool.publisher --settings JSON --parent PID`` follows until the process PID exits, then makes
one last pass (the final checkpoint is written just before the training exits).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rladapt.plugins import get_registry
from rladapt.plugins.job import PUBLISH_ENV
from rladapt.plugins.weights import NoWeights
from rladapt.primitives.errors import RladaptError

from .manifest import Manifest, Source
from .objects import open_store
from .switch import move_alias

__all__ = ["PUBLISH_ENV", "PublishSettings", "follow", "publish_new"]


@dataclass(frozen=True)
class PublishSettings:
    store: str
    framework: str
    version: str
    dir: str
    run_id: str | None = None
    spec_hash: str | None = None
    #: publish only steps that are a multiple of this (None: every complete step)
    every_steps: int | None = None
    #: move this alias to each new version (through the serving group that follows it, if any)
    alias: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> PublishSettings:
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), str) for k in ("store", "framework", "dir")
        ):
            raise ValueError("expected an object with store, framework, version and dir")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def publish_new(settings: PublishSettings, *, reported: set[int] | None = None) -> list[Manifest]:
    """Publish every complete step not yet in the pool; returns the versions made now."""
    reported = set() if reported is None else reported
    adapter = get_registry().framework(settings.framework)
    root = Path(settings.dir)
    scan = adapter.scan_checkpoints(root, settings.version)
    if scan is None:
        return []
    store = open_store(settings.store)
    made = []
    for step in scan.checkpoints:
        if not step.complete or step.step in reported:
            continue
        if settings.every_steps and step.step % settings.every_steps:
            continue
        try:
            files = adapter.weight_files(root, step, settings.version)
            if files is None:
                raise NoWeights(f"the {settings.framework} adapter cannot export weights")
            source = Source(run_id=settings.run_id, step=step.step, framework=settings.framework,
                            framework_version=settings.version, spec_hash=settings.spec_hash,
                            checkpoint=str(step.path))  # fmt: skip
            manifest, new = store.publish(files, source=source)
        except (RladaptError, OSError) as exc:
            # a checkpoint rotated away between the scan and the copy is gone, not broken: look again next pass
            if isinstance(exc, OSError) or not step.path.exists():
                continue
            reported.add(step.step)
            _say(f"cannot publish step {step.step}: {exc.message}")
            continue
        reported.add(step.step)
        if new:
            made.append(manifest)
            _say(f"published step {step.step} as {manifest.version}")
            if settings.alias:
                try:
                    move_alias(store, settings.alias, manifest.version)
                except RladaptError as exc:
                    _say(f"{manifest.version}: alias {settings.alias} not moved: {exc.message}")
    return made


def follow(settings: PublishSettings, parent: int, *, interval: float = 10.0) -> None:
    """Publish as steps complete while ``parent`` lives; one last pass after it exits."""
    reported: set[int] = set()
    while _alive(parent):
        _pass(settings, reported)
        _sleep_while(parent, interval)
    _pass(settings, reported)


def _pass(settings: PublishSettings, reported: set[int]) -> None:
    try:
        publish_new(settings, reported=reported)
    except (RladaptError, OSError) as exc:  # a scan that failed now may work on the next pass
        _say(f"cannot read the checkpoints: {exc.message if isinstance(exc, RladaptError) else exc}")


def _sleep_while(parent: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _alive(parent):
        time.sleep(min(0.5, seconds))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by a parent that is busy exiting) has ended
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (OSError, IndexError):
        return True


def _say(message: str) -> None:
    print(f"rladapt.pool: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rladapt.pool.publisher")
    parser.add_argument("--settings", required=True, help="PublishSettings as JSON")
    parser.add_argument("--parent", type=int, required=True, help="follow until this process exits")
    parser.add_argument("--interval", type=float, default=10.0)
    args = parser.parse_args(argv)
    try:
        settings = PublishSettings.from_json(json.loads(args.settings))
    except (ValueError, TypeError) as exc:
        _say(f"malformed settings: {exc}")
        return 2
    follow(settings, args.parent, interval=args.interval)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
