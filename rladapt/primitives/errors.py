"""Typed errors with a user-facing message; the CLI maps ``exit_code`` to the process exit status."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: How much of a user's value a message shows; the rest is elided (a value can be megabytes long).
QUOTE_LIMIT = 60

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """A user's value as a message shows it: Python's repr, shortened to ``limit`` characters.

    repr quotes strings and escapes every character that is not printable (newlines, terminal escapes, lone
    surrogates), so a value can neither end a message line early nor fail to encode when printed.
    """
    text = repr(value)
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


def one_line(text: str) -> str:
    """TEXT with every character that is not printable escaped as repr would: one line, always encodable."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def field_path(parts: Iterable[object]) -> str:
    """A dotted field path (``spec.data.train[3]``); a key that is not a plain word is quoted (``env['A.B']``)."""
    out = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, str) and _PLAIN_KEY.fullmatch(part):
            out += ("." if out else "") + part
        else:
            out += f"[{quote(part)}]"
    return out


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec, located by its dotted field path.

    ``found`` holds a user's value already quoted (``quote``); whatever the parts hold, ``str`` is one line, so a
    value cannot forge another problem line in a ``SpecError``.
    """

    path: str
    message: str
    expected: str | None = None
    found: str | None = None

    def __str__(self) -> str:
        text = f"{self.path or '<root>'}: {self.message}"
        if self.expected is not None:
            text += f"; expected {self.expected}"
        if self.found is not None:
            text += f", found {self.found}"
        return one_line(text)


class RladaptError(Exception):
    """Base of every error rladapt reports to a user without a traceback."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(RladaptError):
    """Wrong command-line usage: an unknown framework, a malformed override, a missing file."""

    exit_code = 2


class SpecError(RladaptError):
    """The spec is invalid; carries every problem found, not just the first."""

    exit_code = 2

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = f"{one_line(source)}: " if source else ""
        count = len(self.problems)
        header = f"{where}{count} problem{'s' if count != 1 else ''} in the spec"
        super().__init__("\n".join([header, *(f"  - {p}" for p in self.problems)]))


class UnsupportedError(SpecError):
    """The spec asks for something the chosen framework version cannot express."""


class PluginError(RladaptError):
    """A plugin is broken, missing or conflicts with another one."""


class OutputError(RladaptError):
    """A file could not be written (a full disk, a read-only file system); nothing partial was left behind."""


class LaunchError(RladaptError):
    """A launcher could not submit, watch or stop a run (engine unreachable, request refused)."""
