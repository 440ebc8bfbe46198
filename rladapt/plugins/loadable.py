"""Cheap "would this file load?" checks for checkpoint files, without loading a tensor.

A save cut off by SIGKILL, a full disk or a copy stopped half-way leaves files that exist and are not empty but
cannot be loaded; a step holding one is resumed from, fails, and is resumed from again. Each check here reads only
the part of a file its format puts its structure in, so a scan of a checkpoint directory of hundreds of GB reads a
few KB per file:

- ``torch.save`` (new format, torch >= 1.6: ``torch/serialization.py`` ``_save`` through
  ``caffe2/serialize/inline_container.cc`` ``PyTorchStreamWriter``) is a zip of stored entries: the end-of-central-
  directory record is written last (``writeEndOfFile``), so a cut file has none; every entry's data must end before
  the central directory, and ``<archive>/data.pkl`` (the object graph) must end with the pickle STOP opcode.
- the legacy ``torch.save`` format (``_legacy_save``) is five pickles (magic number, protocol, system info, the
  object, the storage keys) followed by each storage as an int64 element count and its bytes: the pickles must
  parse up to STOP and the storages must add up to the file's size exactly.
- a plain pickle ends with STOP (``.``) at the last byte.
- safetensors (``safetensors`` format spec): an 8-byte little-endian header length, a JSON header, and every
  tensor's ``data_offsets`` inside the data buffer, which they must cover exactly (as the loader checks), each of
  ``dtype size x shape`` bytes.
- JSON files parse.

``problem(path)`` picks the check by file name and returns a short reason ("zip central directory missing (file
cut?)") or None. ``read_torch_object`` unpickles a torch file's object graph with every class replaced by an
inert stand-in and every tensor storage by None: the metadata a framework writes beside its tensors (DeepSpeed's
``dp_world_size``, a distributed checkpoint's file list) without executing or importing anything.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = [
    "Stub",
    "json_problem",
    "pickle_problem",
    "problem",
    "read_pickle_object",
    "read_torch_object",
    "safetensors_problem",
    "torch_problem",
]

_STOP = b"."
#: torch/serialization.py MAGIC_NUMBER: the first pickle of a legacy torch.save file
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
#: safetensors' dtypes and their sizes in bytes (safetensors/src/tensor.rs ``Dtype::bitsize``, 0.8.0)
_SAFETENSORS_BITS = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
#: legacy torch storage classes and their element sizes (torch/storage.py, torch 2.13)
_STORAGE_BYTES = {
    "DoubleStorage": 8,
    "FloatStorage": 4,
    "HalfStorage": 2,
    "LongStorage": 8,
    "IntStorage": 4,
    "ShortStorage": 2,
    "CharStorage": 1,
    "ByteStorage": 1,
    "BoolStorage": 1,
    "BFloat16Storage": 2,
    "ComplexDoubleStorage": 16,
    "ComplexFloatStorage": 8,
    "UntypedStorage": 1,
}
#: the suffixes torch.save files carry in the frameworks' layouts (``optimizer.pt``, ``rng_state_0.pth``,
#: ``pytorch_model.bin``, ``training_args.bin``)
TORCH_SUFFIXES = (".pt", ".pth", ".bin")


class Stub:
    """What every class of an unpickled checkpoint becomes: it keeps its name, arguments and state, and runs
    nothing. Dicts and lists (an ``OrderedDict`` state dict) keep their items."""

    args: tuple[Any, ...]
    items: dict[Any, Any]
    values: list[Any]
    state: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> Stub:
        # set here, not in __init__: pickle's NEWOBJ makes objects with __new__ alone
        self = super().__new__(cls)
        self.args, self.items, self.values, self.state = args, {}, [], None
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items[key] = value

    def __getitem__(self, key: Any) -> Any:
        return self.items[key]

    def append(self, value: Any) -> None:
        self.values.append(value)

    def extend(self, values: Any) -> None:
        self.values.extend(values)

    def get(self, name: str, default: Any = None) -> Any:
        """An attribute of the pickled object (its state dict entry), or ``default``."""
        if isinstance(self.state, dict):
            return self.state.get(name, default)
        if isinstance(self.state, tuple) and self.state and isinstance(self.state[-1], dict):
            return self.state[-1].get(name, default)
        return self.items.get(name, default)


def _stub_class(module: str, name: str) -> type[Stub]:
    return type(name, (Stub,), {"module": module, "qualname": name})


class _Inert(pickle.Unpickler):
    """An unpickler that imports nothing: every global is a ``Stub`` subclass, every persistent id is recorded."""

    def __init__(self, handle: Any) -> None:
        super().__init__(handle)
        self.persistent: list[tuple[Any, ...]] = []
        self._classes: dict[tuple[str, str], type[Stub]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return dict
        if module == "builtins" and name in {"set", "frozenset", "slice", "complex", "bytearray", "range"}:
            return getattr(__import__("builtins"), name)
        return self._classes.setdefault((module, name), _stub_class(module, name))

    def persistent_load(self, pid: Any) -> Any:
        self.persistent.append(tuple(pid) if isinstance(pid, (tuple, list)) else (pid,))
        return None


def read_pickle_object(data: bytes | IO[bytes]) -> tuple[Any, list[tuple[Any, ...]]]:
    """The object a pickle holds (classes as ``Stub``s) and the persistent ids (torch storages) it names."""
    handle = io.BytesIO(data) if isinstance(data, bytes) else data
    inert = _Inert(handle)
    obj = inert.load()
    return obj, inert.persistent


def _data_pkl(archive: zipfile.ZipFile) -> zipfile.ZipInfo | None:
    return next(
        (i for i in archive.infolist() if i.filename.endswith("/data.pkl") or i.filename == "data.pkl"), None
    )


def read_torch_object(path: Path) -> Any:
    """The object a ``torch.save`` file (zip format) holds, with stand-ins for classes and None for tensors' data.

    Raises ``ValueError`` when the file is not a loadable torch zip file (``torch_problem`` says why).
    """
    reason = torch_problem(path)
    if reason is not None:
        raise ValueError(reason)
    if not zipfile.is_zipfile(path):  # the legacy format: the object is its fourth pickle
        with path.open("rb") as handle:
            for _ in range(3):
                read_pickle_object(handle)
            return read_pickle_object(handle)[0]
    with zipfile.ZipFile(path) as archive:
        info = _data_pkl(archive)
        assert info is not None  # torch_problem checked it
        with archive.open(info) as handle:
            return read_pickle_object(handle.read())[0]


def _zip_problem(path: Path, size: int) -> str | None:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return "zip central directory missing (file cut?)"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    with archive:
        infos = archive.infolist()
        if not infos:
            return "zip holds no entries (file cut?)"
        # the central directory starts after the last entry's data: every entry must fit before it
        ends = sorted(
            (i.header_offset, i.header_offset + 30 + len(i.filename) + i.compress_size) for i in infos
        )
        central = ends[-1][1]
        if any(end > size for _, end in ends) or central > size:
            return "zip entries run past the end of the file (file cut?)"
        info = _data_pkl(archive)
        if info is None:
            return "zip holds no data.pkl: not a torch.save file"
        try:
            with archive.open(info) as handle:
                if info.file_size == 0:
                    return f"{info.filename} is empty"
                handle.seek(info.file_size - 1)
                last = handle.read(1)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            return f"{info.filename} unreadable ({exc})"
        if last != _STOP:
            return f"{info.filename} does not end with the pickle STOP opcode (file damaged)"
    return None


def _legacy_problem(path: Path, size: int) -> str | None:
    try:
        with path.open("rb") as handle:
            magic, _ = read_pickle_object(handle)
            if magic != _LEGACY_MAGIC:
                return None  # a plain pickle: the caller checks its end
            read_pickle_object(handle)  # protocol version
            read_pickle_object(handle)  # sys info
            _, pids = read_pickle_object(handle)
            keys, _ = read_pickle_object(handle)
            elem = {}
            for pid in pids:
                if len(pid) >= 3 and pid[0] == "storage":
                    elem[pid[2]] = _STORAGE_BYTES.get(getattr(pid[1], "qualname", ""), 0)
            offset = handle.tell()
            for key in keys if isinstance(keys, list) else []:
                handle.seek(offset)
                head = handle.read(8)
                if len(head) < 8:
                    return f"storage {key} missing (file cut at byte {offset} of the legacy format)"
                count = struct.unpack("<q", head)[0]
                width = elem.get(key, 0)
                if not width:
                    return None  # a storage class this check does not know: the pickles parsed
                offset += 8 + count * width
            if offset != size:
                return f"legacy torch file holds {size} bytes, its storages add up to {offset} (file cut?)"
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
    ) as exc:
        return f"legacy torch pickle does not parse ({type(exc).__name__}: file cut or damaged?)"
    return None


def pickle_problem(path: Path) -> str | None:
    """A plain pickle must end with the STOP opcode at its last byte."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) != _STOP:
            return "does not end with the pickle STOP opcode (file cut?)"
    return None


def torch_problem(path: Path) -> str | None:
    """Why a ``torch.save`` file (zip or legacy) would not load, or None."""
    try:
        size = path.stat().st_size
        if size == 0:
            return "empty"
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if head.startswith(b"PK"):
        return _zip_problem(path, size)
    if head[:1] == b"\x80":  # pickle PROTO opcode: the legacy format or a plain pickle
        legacy = _legacy_problem(path, size)
        return legacy if legacy is not None else _legacy_or_plain_end(path, size)
    return "neither a torch zip file nor a pickle (overwritten or damaged?)"


def _legacy_or_plain_end(path: Path, size: int) -> str | None:
    with path.open("rb") as handle:
        try:
            magic, _ = read_pickle_object(handle)
        except (
            pickle.UnpicklingError,
            EOFError,
            ValueError,
            TypeError,
            AttributeError,
            IndexError,
            KeyError,
        ):
            return "pickle does not parse (file cut or damaged?)"
    if magic == _LEGACY_MAGIC:
        return None  # _legacy_problem walked it
    return pickle_problem(path)


def safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file would not load: its header, and its tensors' offsets against the file's size."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                return "shorter than the 8-byte safetensors header length (file cut?)"
            length = struct.unpack("<Q", head)[0]
            if length > size - 8:
                return f"header length {length} runs past the end of the file ({size} bytes; file cut?)"
            header = json.loads(handle.read(length).decode("utf-8"))
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    except (ValueError, UnicodeDecodeError):
        return "safetensors header is not JSON (damaged)"
    if not isinstance(header, dict):
        return "safetensors header is not a JSON object (damaged)"
    buffer = size - 8 - length
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, stop = (int(x) for x in info["data_offsets"])
            count = 1
            for dim in info["shape"]:
                count *= int(dim)
            bits = _SAFETENSORS_BITS.get(str(info["dtype"]))
        except (KeyError, TypeError, ValueError):
            return f"tensor {name!r}: malformed header entry (damaged)"
        if not 0 <= begin <= stop:
            return f"tensor {name!r}: data_offsets {begin}..{stop} invalid (damaged)"
        if bits is not None and stop - begin != (count * bits + 7) // 8:
            return f"tensor {name!r}: {stop - begin} bytes for {info['dtype']} {info['shape']} (damaged)"
        if stop > buffer:
            return f"tensor {name!r} ends at byte {stop} of a {buffer}-byte data buffer (file cut?)"
        end = max(end, stop)
    if end != buffer:
        return f"data buffer holds {buffer} bytes, the tensors {end} (file cut or appended to?)"
    return None


def json_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    except (ValueError, UnicodeDecodeError):
        return "not JSON (cut off while written?)"
    return None


def _check_for(name: str) -> Callable[[Path], str | None] | None:
    if name.endswith(".safetensors"):
        return safetensors_problem
    if name.endswith(".json"):
        return json_problem
    if name.endswith(TORCH_SUFFIXES):
        return torch_problem
    if name.endswith(".pkl"):
        return pickle_problem
    return None


def problem(path: Path) -> str | None:
    """Why the file at ``path`` would not load (its format chosen by its name), or None.

    Missing and empty files are reasons too; a file of a format this module does not know (a tokenizer's
    ``.model``, a ``.distcp`` shard, checked through its ``.metadata``) only has to be non-empty.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if size == 0:
        return "empty"
    check = _check_for(path.name)
    return None if check is None else check(path)


def tree_problems(folder: Path, prefix: str = "") -> list[str]:
    """``"<relative path>: <reason>"`` for every file under ``folder`` that would not load (sorted)."""
    out = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if path.is_file():
            reason = problem(path)
            if reason is not None:
                out.append(f"{prefix}{path.relative_to(folder)}: {reason}")
    return out


def dcp_problems(folder: Path, prefix: str = "") -> list[str]:
    """What a torch distributed checkpoint (``torch.distributed.checkpoint``) in ``folder`` lacks to load.

    ``FileSystemWriter`` (``torch/distributed/checkpoint/filesystem.py``, torch 2.x) writes one
    ``__<rank>_<n>.distcp`` per rank and, last and on the coordinator only, ``.metadata``: a pickle whose
    ``storage_data`` names each item's file, offset and length. So every rank's file is checked against what
    the metadata says it holds; a folder without ``.metadata`` was cut off before the commit.
    """
    meta = folder / ".metadata"
    if not meta.is_file() or meta.stat().st_size == 0:
        return [f"{prefix}.metadata missing (the distributed checkpoint was not committed)"]
    try:
        obj, _ = read_pickle_object(meta.read_bytes())
        storage = obj.get("storage_data") if isinstance(obj, Stub) else None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError):
        return [f"{prefix}.metadata does not parse (file cut?)"]
    if not isinstance(storage, dict):
        return [f"{prefix}.metadata names no storage (damaged?)"]
    need: dict[str, int] = {}
    for info in storage.values():
        state = info.get("relative_path"), info.get("offset"), info.get("length")
        if not isinstance(state[0], str) or not isinstance(state[1], int) or not isinstance(state[2], int):
            return [f"{prefix}.metadata: a storage entry without file, offset and length (damaged?)"]
        need[state[0]] = max(need.get(state[0], 0), state[1] + state[2])
    out = []
    for name, end in sorted(need.items()):
        path = folder / name
        size = path.stat().st_size if path.is_file() else None
        if size is None:
            out.append(f"{prefix}{name} missing (named by .metadata)")
        elif size < end:
            out.append(f"{prefix}{name}: {size} bytes, .metadata places data up to byte {end} (file cut?)")
    return out
