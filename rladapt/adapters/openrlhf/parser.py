"""OpenRLHF's real ``train_ppo_ray`` argparse parser, built from its source without importing openrlhf.

The parser is built inside ``if __name__ == "__main__":`` of ``openrlhf/cli/train_ppo_ray.py``; importing the
module drags in ray, torch, vLLM, DeepSpeed and flash-attn (which has no CPU wheel). The statements of that block
up to the first ``parse_args`` call only need the standard library, so they are executed on their own, together
with the module's top-level standard-library imports. The result is the real ``ArgumentParser`` of that version:
types, choices, nargs and defaults are exact.

Where the source comes from, in order: ``RLADAPT_OPENRLHF_SOURCE`` (a ``train_ppo_ray.py``, an openrlhf wheel, or a
directory holding either), an installed ``openrlhf`` of the same version (found with ``importlib.util.find_spec``,
never imported), a cached wheel in ``RLADAPT_WHEEL_CACHE`` or ``.cache/wheels``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.metadata
import importlib.util
import os
import shlex
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NoReturn

from rladapt.primitives.errors import Problem

SOURCE_ENV = "RLADAPT_OPENRLHF_SOURCE"
WHEEL_CACHE_ENV = "RLADAPT_WHEEL_CACHE"
ENTRY_FILE = "openrlhf/cli/train_ppo_ray.py"


class ParserUnavailable(Exception):
    """The source of a version's parser cannot be found or does not have the expected shape."""


class _ParseFailure(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- finding the source --------------------------------------------------------------------------------------


def source_from_wheel(wheel: Path) -> str:
    """The text of ``train_ppo_ray.py`` inside an openrlhf wheel (``*.data/purelib/`` or top level)."""
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name == ENTRY_FILE or name.endswith("/purelib/" + ENTRY_FILE):
                return zf.read(name).decode("utf-8")
    raise ParserUnavailable(f"{wheel.name} holds no {ENTRY_FILE}")


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _from_path(path: Path, version: str) -> str | None:
    if path.is_file() and path.suffix == ".whl":
        return source_from_wheel(path) if _wheel_version(path) == version else None
    if path.is_file():
        return path.read_text(encoding="utf-8")
    if path.is_dir():
        direct = path / ENTRY_FILE
        if direct.is_file():
            return direct.read_text(encoding="utf-8")
        for wheel in sorted(path.glob(f"openrlhf-{version}-*.whl")):
            return source_from_wheel(wheel)
    return None


def _installed(version: str) -> str | None:
    try:
        spec = importlib.util.find_spec("openrlhf")  # a top-level name: the package itself is not executed
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        installed = importlib.metadata.version("openrlhf")
    except importlib.metadata.PackageNotFoundError:
        return None
    if installed != version:  # another version's parser would judge this argv by the wrong flag names
        return None
    for location in spec.submodule_search_locations:
        entry = Path(location) / "cli" / "train_ppo_ray.py"
        if entry.is_file():
            return entry.read_text(encoding="utf-8")
    return None


def find_source(version: str) -> str | None:
    """The text of ``train_ppo_ray.py`` of ``version``, or None when nothing on this machine has it."""
    explicit = os.environ.get(SOURCE_ENV)
    if explicit:
        found = _from_path(Path(explicit), version)
        if found is not None:
            return found
    found = _installed(version)
    if found is not None:
        return found
    caches = [Path(p) for p in os.environ.get(WHEEL_CACHE_ENV, "").split(os.pathsep) if p]
    caches.append(Path(".cache") / "wheels")
    for cache in caches:
        found = _from_path(cache, version) if cache.is_dir() else None
        if found is not None:
            return found
    return None


# --- building the parser -------------------------------------------------------------------------------------


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    left = node.test.left
    return isinstance(left, ast.Name) and left.id == "__name__"


def _stdlib_imports(tree: ast.Module) -> list[ast.stmt]:
    """Top-level imports of standard-library modules: the names the parser-building code may use."""
    keep: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            if all(alias.name.split(".")[0] in sys.stdlib_module_names for alias in node.names):
                keep.append(node)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] in sys.stdlib_module_names
        ):
            keep.append(node)
    return keep


def build_parser(source: str, filename: str = ENTRY_FILE) -> argparse.ArgumentParser:
    """The real ArgumentParser that ``source`` (a ``train_ppo_ray.py``) builds before ``parse_args``."""
    tree = ast.parse(source, filename=filename)
    guards = [node for node in tree.body if isinstance(node, ast.If) and _is_main_guard(node)]
    if not guards:
        raise ParserUnavailable(f"{filename}: no `if __name__ == '__main__':` block")
    body: list[ast.stmt] = []
    for stmt in guards[-1].body:
        if "parse_args" in ast.unparse(stmt):
            break
        body.append(stmt)
    module = ast.Module(body=[*_stdlib_imports(tree), *body], type_ignores=[])
    namespace: dict[str, object] = {"__name__": "__rladapt_openrlhf_parser__"}
    try:
        exec(compile(module, filename, "exec"), namespace)
    except Exception as exc:  # an unexpected shape of upstream code is a missing schema, not a crash
        raise ParserUnavailable(
            f"{filename}: building the parser failed: {type(exc).__name__}: {exc}"
        ) from exc
    parser = namespace.get("parser")
    if not isinstance(parser, argparse.ArgumentParser):
        raise ParserUnavailable(f"{filename}: the __main__ block defines no `parser`")
    # A real run accepts prefixes of flags; rladapt never relies on that, and a prefix that happens to match
    # today's flag set would silently change meaning when a later version adds a flag.
    parser.allow_abbrev = False
    return parser


@lru_cache(maxsize=32)
def build_parser_cached(source: str, origin: str) -> argparse.ArgumentParser:
    """``build_parser`` once per distinct source text (``origin`` only names it in messages)."""
    return build_parser(source, f"{origin}/{ENTRY_FILE}")


# --- parsing -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParseResult:
    namespace: argparse.Namespace
    unknown: tuple[str, ...]
    error: str | None


def parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> ParseResult:
    """Parse ``args`` without ever exiting: unknown flags and bad values come back as data."""

    def fail(message: str) -> NoReturn:
        raise _ParseFailure(message)

    # argparse calls self.error (which exits) on bad values; an instance attribute shadows the method.
    original = parser.__dict__.get("error")
    parser.error = fail  # type: ignore[method-assign]
    try:
        namespace, unknown = parser.parse_known_args(list(args))
    except _ParseFailure as exc:
        return ParseResult(argparse.Namespace(), (), exc.message)
    except argparse.ArgumentError as exc:
        return ParseResult(argparse.Namespace(), (), str(exc))
    finally:
        if original is None:
            del parser.error
        else:
            parser.error = original  # type: ignore[method-assign]
    return ParseResult(namespace, tuple(unknown), None)


def flags_of(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(opt for action in parser._actions for opt in action.option_strings)


def problems(
    parser: argparse.ArgumentParser, args: Sequence[str], origin: dict[int, str], version: str
) -> list[Problem]:
    """Problems the parser finds in ``args``; ``origin`` maps an argument index to the spec field it came from."""
    result = parse(parser, args)
    if result.error is not None:
        return [Problem("native.argv", f"openrlhf {version} rejects the arguments: {result.error}")]
    out: list[Problem] = []
    known = flags_of(parser)
    positions = {token: i for i, token in reversed(list(enumerate(args)))}
    unknown = set(result.unknown)
    for token in result.unknown:
        at = positions.get(token, -1)
        if not token.startswith("-") and at > 0 and args[at - 1] in unknown and args[at - 1].startswith("-"):
            continue  # the value of an unknown flag: the flag itself is the problem
        if not token.startswith("-"):
            out.append(
                Problem(
                    origin.get(positions.get(token, -1), "native.argv"),
                    f"openrlhf {version} does not expect the value {token!r} here",
                )
            )
            continue
        flag = token.split("=", 1)[0]
        hint = difflib.get_close_matches(flag, sorted(known), n=1)
        out.append(
            Problem(
                origin.get(positions.get(token, -1), "native.argv"),
                f"openrlhf {version} has no flag {flag}" + (f" (did you mean {hint[0]}?)" if hint else ""),
                found=flag,
            )
        )
    return out


def split_native(entries: Sequence[str]) -> list[str]:
    """``native.openrlhf`` entries (``--flag``, ``--flag value``, ``--flag=value``) as argv tokens."""
    tokens: list[str] = []
    for entry in entries:
        tokens.extend(shlex.split(entry))
    return tokens
