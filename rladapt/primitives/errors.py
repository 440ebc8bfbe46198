"""Typed errors with a user-facing message; the CLI maps ``exit_code`` to the process exit status."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec, located by its dotted field path."""

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
        return text


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
        where = f"{source}: " if source else ""
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
