"""The one way rladapt writes a file: complete or absent, regular files only, errors in the user's words.

Every file rladapt leaves behind (run records, rendered artifacts, pin files, the matrix report, ``render -o``)
goes through ``write_text``: the text is encoded first (a lone surrogate fails before anything is created),
written to a temporary file beside the target, flushed to disk, then renamed over the target, so a reader in
another shell, a crash or a full disk never leaves half a file. Only regular files are replaced: a FIFO, a
device or a directory at the target is refused rather than silently turned into a regular file.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path

from rladapt.primitives.errors import OutputError, UsageError

__all__ = ["OutputError", "sync_dir", "write_text"]


def _umask() -> int:
    # There is no way to read the umask without setting it; this is the usual two-step, done once per write.
    current = os.umask(0)
    os.umask(current)
    return current


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)


def write_text(
    path: Path | str,
    text: str,
    *,
    what: str = "file",
    make_parents: bool = False,
    private: bool = False,
    durable: bool = True,
) -> Path:
    """Replace ``path`` with ``text`` atomically; returns the path written.

    ``what`` names the file in messages ("pin file", "run record"). ``make_parents`` creates missing parent
    directories (the run store does; a user's ``-o`` into a missing directory is a usage error instead).
    ``private`` gives the file mode 0600 (run records); otherwise an existing file keeps its mode and a new one
    gets 0666 minus the umask, as ``open`` would.

    Raises ``UsageError`` (exit 2) when the text cannot be encoded as UTF-8, the directory does not exist or the
    target is not a regular file, and ``OutputError`` (exit 1) for any I/O failure (a full disk, a read-only
    file system); no temporary file is left behind either way.

    ``durable=False`` is for a derived file that its reader checks and rebuilds (a cache: a run's metrics summary,
    the runs index): it is still replaced atomically, but not synced to disk, so that writing thousands of them
    (the first ``rladapt runs`` of a large store) costs no two disk flushes each; after a crash such a file may be
    empty or old, which its reader takes for missing.
    """
    target = Path(path)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"cannot write the {what} {str(target)!r}: the text holds {exc.object[exc.start : exc.end]!r}, "
            "which is not valid Unicode"
        ) from None
    folder = target.parent
    if make_parents:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the directory {str(folder)!r}: {_reason(exc)}") from None
    elif not folder.is_dir():
        raise UsageError(
            f"cannot write the {what} {str(target)!r}: the directory {str(folder)!r} does not exist"
        )
    mode = 0o600 if private else 0o666 & ~_umask()
    try:
        existing = target.stat()
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise OutputError(f"cannot write the {what} {str(target)!r}: {_reason(exc)}") from None
    if existing is not None:
        if not stat.S_ISREG(existing.st_mode):
            raise UsageError(
                f"cannot write the {what} {str(target)!r}: it exists and is not a regular file "
                "(a directory, FIFO or device); rladapt only replaces regular files"
            )
        if not private:
            mode = stat.S_IMODE(existing.st_mode)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
        if durable:
            sync_dir(folder)
    except OSError as exc:
        raise OutputError(f"cannot write the {what} {str(target)!r}: {_reason(exc)}") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return target


def read_json_lines(path: Path) -> list[dict[str, object]]:
    """The JSON objects of a JSON-lines file that its writers append to, in order; [] when there is no file.

    Lenient on purpose: the last line may be cut by a kill mid-write and a line may be damaged, and one bad line must
    not hide the rest (a resume decision or a run's holders read this while a job may be writing it).
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def sync_dir(folder: Path) -> None:
    """Make the rename itself durable; a file system that cannot open a directory for syncing is left alone."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
