"""A run's validation summary, kept beside its record and updated from where the last read stopped.

``rladapt runs`` shows every run's latest and best validation score. Reading each run's whole event files for it
costs a listing of 5,000 runs minutes; the summary (``<run dir>/metrics-summary.json``) keeps, per event file, the
offset after the last record read (``EventsReader.read_file``), the newest point of every tag, and every point of
the tag the run's framework version logs its validation score as. A later call reads only the bytes written since.

It is never trusted blindly: a summary that does not parse, is of another format or another metrics directory,
names a file that is gone, shrank, was replaced (another inode) or whose bytes before the recorded offset changed
(a fingerprint of them), is rebuilt from the files. A directory that tensorboard's purge logic applies to
(``NeedsReference``) is read whole every time. Writing it is best effort: a run directory this user cannot write is
read without a summary.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .events import EventsReader, NeedsReference, event_dirs, event_files, read_events
from .mapping import neutral_series
from .records import load_numpy
from .running import INTERVALS, TRACKED, GoesBack, RunState
from .series import RunMetrics

if TYPE_CHECKING:
    from rladapt.runs import Run

    from .mapping import MetricMap

SUMMARY_FILE = "metrics-summary.json"
FORMAT = 3
VAL = "val_score"
#: bytes before a file's recorded offset whose digest tells a rewritten file from a grown one
_PRINT = 64


@dataclass(frozen=True)
class Summary:
    """What the summary holds: the newest ``(step, wall, value)`` of each tag and the validation points."""

    latest: dict[str, tuple[int, float, float]]
    #: the native tag read as the validation score, and its ``{step: (wall, value)}``
    val_tag: str | None
    #: the validation points: steps ascending and their values (numpy arrays)
    val: tuple[Any, Any]
    #: whether it was read from the summary and the bytes appended since (False: rebuilt from the files)
    incremental: bool = False
    #: what progress and the health rules read (``rladapt.metrics.running``); None for a directory read whole
    #: every time (``NeedsReference``): the caller reads the run's metrics instead
    state: RunState | None = None
    #: the damaged records skipped (``rladapt.metrics.events.Damage.message``)
    damage: tuple[str, ...] = ()

    def metrics(self, run_id: str, framework: str, version: str | None) -> RunMetrics:
        """A ``RunMetrics`` with the validation series alone: what ``rladapt.metrics.validation`` reads."""
        steps, values = self.val
        series = {VAL: dict(zip(steps.tolist(), values.tolist(), strict=True))} if self.val_tag else {}
        native = {VAL: self.val_tag} if self.val_tag else {}
        return RunMetrics(run_id=run_id, framework=framework, version=version, series=series, native=native)


def _fingerprint(path: Path, end: int) -> str:
    with path.open("rb") as f:
        f.seek(max(0, end - _PRINT))
        return hashlib.sha256(f.read(min(end, _PRINT))).hexdigest()


def _pack(steps: Any, walls: Any, values: Any) -> dict[str, str]:
    """The validation points as base64 of their arrays: a 100,000-point series parses in milliseconds."""
    import base64

    np = load_numpy()

    def enc(a: Any, dtype: str) -> str:
        return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")

    return {"steps": enc(steps, "<i8"), "walls": enc(walls, "<f8"), "values": enc(values, "<f8")}


def _unpack(packed: Any) -> tuple[Any, Any, Any]:
    """``_pack``'s arrays (the standard library's ``array``: a summary read without new points imports no numpy);
    ValueError when they are not three arrays of one length."""
    import base64
    import binascii
    import sys
    from array import array

    steps, walls, values = array("q"), array("d"), array("d")
    if not packed:
        return steps, walls, values
    try:
        steps.frombytes(base64.b64decode(packed["steps"]))
        walls.frombytes(base64.b64decode(packed["walls"]))
        values.frombytes(base64.b64decode(packed["values"]))
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise ValueError(f"damaged validation points: {exc}") from None
    if sys.byteorder != "little":  # packed little-endian
        for a in (steps, walls, values):
            a.byteswap()
    if not len(steps) == len(walls) == len(values):
        raise ValueError("damaged validation points: arrays of different lengths")
    return steps, walls, values


def _val_merged(packed: Any, steps: Any, walls: Any, values: Any) -> dict[str, str]:
    """The kept points and the new ones, one per step: the newest wall time, the new point on a tie."""
    np = load_numpy()

    old = _unpack(packed)
    s = np.concatenate([np.asarray(old[0], dtype=np.int64), steps])
    w = np.concatenate([np.asarray(old[1], dtype=np.float64), walls])
    v = np.concatenate([np.asarray(old[2], dtype=np.float64), values])
    order = np.arange(len(s))
    sort = np.lexsort((order, w, s))
    s, w, v = s[sort], w[sort], v[sort]
    last = np.ones(len(s), dtype=bool)
    last[:-1] = s[1:] != s[:-1]
    return _pack(s[last], w[last], v[last])


def _val_tag(tags: list[str], names: MetricMap | None) -> str | None:
    _, chosen = neutral_series({t: {} for t in tags}, names)
    return chosen.get(VAL, VAL if VAL in tags else None)


def _chosen(tags: list[str], names: MetricMap | None) -> dict[str, str]:
    """The native tag read as each tracked neutral series (as ``neutral_series`` names them)."""
    _, chosen = neutral_series({t: {} for t in tags}, names)
    used = set(chosen.values())
    out = {n: t for n, t in chosen.items() if n in TRACKED}
    out.update({n: n for n in TRACKED if n not in out and n in tags and n not in used})
    return out


def _feed(state: RunState, chosen: dict[str, str], resolved: dict[str, tuple[Any, Any, Any]]) -> None:
    """Add what was just read to ``state``; ``GoesBack`` when it goes back to steps already taken."""
    np = load_numpy()

    for neutral, tag in chosen.items():
        if tag in resolved:
            steps, _, values = resolved[tag]
            state.extend(neutral, steps, values)
    pieces = [(steps, walls) for steps, walls, _ in resolved.values() if len(steps)]
    if not pieces:
        return
    steps = np.concatenate([p[0] for p in pieces])
    walls = np.concatenate([p[1] for p in pieces])
    state.add_step(int(steps.max()))
    sort = np.lexsort((walls, steps))
    steps, walls = steps[sort], walls[sort]
    newest = np.ones(len(steps), dtype=bool)
    newest[:-1] = steps[1:] != steps[:-1]
    pairs = list(zip(steps[newest].tolist(), walls[newest].tolist(), strict=True))
    taken = state.walls[-1][0] if state.walls else None
    older = [p for p in pairs if taken is not None and p[0] <= taken]
    newer = [p for p in pairs if taken is None or p[0] > taken][-(INTERVALS + 1) :]
    for step, wall in older + newer:
        state.add_wall(step, wall)


def _files(root: Path, dirs: list[Path] | None = None) -> list[tuple[str, Path]]:
    return [
        (str(p.relative_to(root)), p)
        for d in (event_dirs(root) if dirs is None else dirs)
        for p in event_files(d)
    ]


def _load(path: Path, root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != str(root):
        return None
    if not isinstance(data.get("files"), dict) or not isinstance(data.get("latest"), dict):
        return None
    try:
        _unpack(data.get("val"))
    except ValueError:
        return None
    return data


def _still_valid(data: dict[str, Any], files: list[tuple[str, Path]]) -> bool:
    """Whether every file the summary read is still there, the same file, at least as long, and unchanged up to
    where it was read."""
    now = dict(files)
    for rel, entry in data["files"].items():
        path = now.get(rel)
        try:
            if path is None or not isinstance(entry, dict):
                return False
            st = path.stat()
            if st.st_ino != entry["ino"] or st.st_size < entry["end"]:
                return False
            if _fingerprint(path, entry["end"]) != entry["print"]:
                return False
        except (OSError, KeyError, TypeError):
            return False
    return True


def _merge(
    data: dict[str, Any], reader: EventsReader, names: MetricMap | None
) -> tuple[dict[str, list[Any]], str | None, dict[str, Any]]:
    latest: dict[str, list[Any]] = dict(data.get("latest", {}))
    val: dict[str, Any] = data.get("val") or {}
    resolved = reader.resolved()
    for tag, (steps, walls, values) in resolved.items():
        if not len(steps):
            continue
        step, wall, value = int(steps[-1]), float(walls[-1]), float(values[-1])
        old = latest.get(tag)
        if old is None or step > old[0] or (step == old[0] and wall >= old[1]):
            latest[tag] = [step, wall, value]
    val_tag = _val_tag(sorted(latest), names)
    if val_tag != data.get("val_tag"):
        return latest, val_tag, {"rebuild": []}
    if val_tag in resolved:
        val = _val_merged(val, *resolved[val_tag])
    return latest, val_tag, val


def _build(root: Path, files: list[tuple[str, Path]], names: MetricMap | None, window: int) -> dict[str, Any]:
    """The summary read from the files whole."""
    data: dict[str, Any] = {
        "format": FORMAT,
        "root": str(root),
        "files": {},
        "latest": {},
        "val": {},
        "window": window,
    }
    reader = EventsReader()
    try:
        version_of: dict[Path, float | None] = {}
        for rel, path in files:
            st = path.stat()
            end, version_of[path.parent] = reader.read_file(path, 0, version_of.get(path.parent))
            data["files"][rel] = {"ino": st.st_ino, "end": end, "print": _fingerprint(path, end)}
    except NeedsReference:
        return {**data, "reference": True}
    latest, val_tag, val = _merge({"val_tag": None}, reader, names)
    if "rebuild" in val:  # the tag resolved now: read its points from what was just read
        val = {}
        if val_tag in (resolved := reader.resolved()):
            val = _pack(*resolved[val_tag])
    chosen = _chosen(sorted(latest), names)
    state = RunState(window=window)
    _feed(state, chosen, reader.resolved())  # from nothing: no step goes back
    data.update(
        latest=latest,
        val_tag=val_tag,
        val=val,
        damage=[d.message for d in reader.damage if d.resumed_at is not None],
        tail=[d.message for d in reader.damage if d.resumed_at is None],
        chosen=chosen,
        health=state.to_json(),
    )
    return data


def _update(
    data: dict[str, Any], files: list[tuple[str, Path]], names: MetricMap | None
) -> dict[str, Any] | None:
    """``data`` with what was appended since, or None when it must be rebuilt."""
    reader = EventsReader()
    new_files = dict(data["files"])
    changed = False
    try:
        for rel, path in files:
            entry = data["files"].get(rel)
            start = entry["end"] if entry else 0
            st = path.stat()
            if entry and st.st_size == start:
                continue
            end, _ = reader.read_file(path, start, 2.0 if entry else None)
            new_files[rel] = {"ino": st.st_ino, "end": end, "print": _fingerprint(path, end)}
            changed = True
    except (NeedsReference, OSError):
        return None
    if not changed:
        return data
    latest, val_tag, val = _merge(data, reader, names)
    if "rebuild" in val:
        return None
    chosen = _chosen(sorted(latest), names)
    if chosen != data.get("chosen"):  # another tag is now read as a tracked series: read it from the start
        return None
    try:
        state = RunState.from_json(data["health"])
        _feed(state, chosen, reader.resolved())
    except (GoesBack, KeyError, TypeError, ValueError):  # a resume re-logged steps, or a damaged state
        return None
    # damage inside a file stays; a damaged tail (a record still being written) is read again next time
    damage = list(data.get("damage", [])) + [d.message for d in reader.damage if d.resumed_at is not None]
    return {
        **data,
        "files": new_files,
        "latest": latest,
        "val_tag": val_tag,
        "val": val,
        "damage": damage,
        "tail": [d.message for d in reader.damage if d.resumed_at is None],
        "health": state.to_json(),
    }


def _summary(data: dict[str, Any], incremental: bool) -> Summary:
    state = None
    if "health" in data:
        state = RunState.from_json(data["health"])
    return Summary(
        state=state,
        damage=tuple(str(d) for d in [*data.get("damage", []), *data.get("tail", [])]),
        latest={t: (int(p[0]), float(p[1]), float(p[2])) for t, p in data["latest"].items()},
        val_tag=data.get("val_tag"),
        val=(lambda s, _, v: (s, v))(*_unpack(data.get("val"))),
        incremental=incremental,
    )


def read_summary(
    run_dir: Path,
    root: Path,
    framework: str,
    version: str | None,
    dirs: list[Path] | None = None,
    window: int | None = None,
    exclude: Collection[Path] = (),
) -> Summary:
    """The summary of the metrics under ``root`` kept in ``run_dir``: updated from where the last call stopped,
    rebuilt when it cannot be trusted, and written back (best effort). ``dirs``: ``event_dirs(root)`` when the
    caller has them already; ``window``: the ``spec.health.window_steps`` the health rules will judge by (another
    window rebuilds the summary); ``exclude``: event files that are not the run's (another run's, see
    ``rladapt.metrics.store.foreign_event_files``)."""
    from rladapt.primitives.spec import Health

    from .store import metric_names

    window = Health().window_steps if window is None else window
    names = metric_names(framework, version)
    files = [(rel, p) for rel, p in _files(root, dirs) if p not in exclude]
    path = run_dir / SUMMARY_FILE
    data = _load(path, root)
    incremental = False
    if (
        data is not None
        and not data.get("reference")
        and data.get("window") == window
        and _still_valid(data, files)
    ):
        updated = _update(data, files, names)
        if updated is not None:
            incremental, unchanged = True, updated is data
            data = updated
            if unchanged:
                return _summary(data, True)
    if not incremental:
        data = _build(root, files, names, window)
        if data.get("reference"):
            found = read_events(root)
            latest = {
                t: [max(p), found.wall.get(max(p), 0.0), p[max(p)]] for t, p in found.scalars.items() if p
            }
            val_tag = _val_tag(sorted(latest), names)
            points = found.scalars.get(val_tag or "", {})
            ordered = sorted(points.items())
            val = _pack([s for s, _ in ordered], [0.0] * len(ordered), [v for _, v in ordered])
            data.update(latest=latest, val_tag=val_tag, val=val)
            data.pop("health", None)
            return _summary(data, False)  # read whole every time: not written
    assert data is not None
    try:
        from rladapt.runs.store import write_atomic

        # derived: a damaged summary is rebuilt, so no disk flush (``runs`` writes one per run the first time)
        write_atomic(path, json.dumps(data, sort_keys=True), durable=False)
    except Exception:  # best effort: a run directory this user cannot write is read without a summary
        pass
    return _summary(data, incremental)


def run_summary(run: Run, dirs: list[Path] | None = None) -> Summary:
    """``read_summary`` of a recorded run's metrics directory, without the event files other runs wrote there,
    its health state kept for the window the run is judged by."""
    from .store import foreign_event_files, run_metrics_dir

    return read_summary(
        run.dir,
        run_metrics_dir(run),
        run.record.framework,
        run.record.version or None,
        dirs,
        window=run.record.thresholds().window_steps,
        exclude=set(foreign_event_files(run)),
    )
