"""The GRPO config keys each NeMo-RL version knows: the adapter's own schema knowledge.

NeMo-RL cannot be installed next to rladapt (no real PyPI release; Python >= 3.12 from 0.3.0), so the key set is
carried here. It was derived per tag from the typed ``MasterConfig`` (``nemo_rl/algorithms/grpo.py`` and the
TypedDicts / pydantic models it references, every union variant included) together with the keys of
``examples/configs/grpo_math_1B.yaml``: the TypedDicts are open and upstream code reads keys they never declare
(0.2.1's are informal throughout), so neither source alone is the set a launch accepts.

The table is package data, ``grpo_keys.txt`` next to this module. A line is ``<dotted key>[.*] <first>[..<last>]``:
the first and last pinned version that has the key (no upper bound: still present in the newest). ``.*`` marks a
free-form mapping (``dict[str, Any]``): any key below it is accepted.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from packaging.version import Version

#: The table, one key per line (``#`` starts a comment line), shipped as package data.
TABLE = "grpo_keys.txt"


@dataclass(frozen=True)
class _Entry:
    key: str
    first: Version
    last: Version | None
    open: bool

    def covers(self, version: Version) -> bool:
        return self.first <= version and (self.last is None or version <= self.last)


@cache
def _entries() -> tuple[_Entry, ...]:
    out = []
    text = resources.files("rladapt.adapters.nemo_rl").joinpath(TABLE).read_text(encoding="utf-8")
    for line in text.split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        key, span = line.split()
        first, _, last = span.partition("..")
        is_open = key.endswith(".*")
        out.append(
            _Entry(
                key=key.removesuffix(".*"),
                first=Version(first),
                last=Version(last) if last else None,
                open=is_open,
            )
        )
    return tuple(out)


@cache
def _index(version: str) -> tuple[frozenset[str], frozenset[str]]:
    """(every key, the free-form keys) of ``version``."""
    v = Version(version)
    present = [e for e in _entries() if e.covers(v)]
    return frozenset(e.key for e in present), frozenset(e.key for e in present if e.open)


def keys_of(version: str) -> frozenset[str]:
    return _index(version)[0]


def is_known(key: str, version: str) -> bool:
    """Whether ``version`` has ``key`` (itself, or below a free-form mapping it has)."""
    known, free = _index(version)
    if key in known:
        return True
    parts = key.split(".")
    return any(".".join(parts[:i]) in free for i in range(1, len(parts)))


def suggest(key: str, version: str) -> str | None:
    hint = difflib.get_close_matches(key, sorted(keys_of(version)), n=1, cutoff=0.8)
    return hint[0] if hint else None
