"""What a framework release ships besides its configuration surface: entrypoints and the engine pins of its metadata.

Read from the release itself, never imported: a wheel (a zip file) or an unpacked package / checkout directory.
Entrypoints are what the adapters launch or name (``FrameworkAdapter.RELEASE_ENTRYPOINTS``): verl's config files
under ``verl/trainer/config`` (Hydra config names and group options), OpenRLHF's ``openrlhf/cli`` modules, NeMo-RL's
``examples/run_*.py`` scripts. Pins come
from the wheel's ``METADATA`` ``Requires-Dist`` lines (core metadata, PEP 566/508), or a checkout's
``pyproject.toml`` ``[project]`` dependencies (PEP 621).
"""

from __future__ import annotations

import re
import sys
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from rladapt.plugins import get_registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["PINNED_ENGINES", "Release", "matrix_entry", "read_release"]

#: The engines a matrix entry's ``tested_with`` names, in its order.
PINNED_ENGINES = ("torch", "vllm", "ray", "transformers", "deepspeed")

#: The extra whose pins a matrix entry takes first: rladapt's launches generate with vLLM.
_PREFERRED_EXTRA = "vllm"


@dataclass(frozen=True)
class Release:
    framework: str
    version: str
    entrypoints: tuple[str, ...] = ()
    requires_python: str | None = None
    #: engine -> its pin (an exact version, or the specifier when the release gives a range); unpinned left out
    pins: dict[str, str] = field(default_factory=dict)
    #: where the pins were read, or None when the release has no metadata to read them from
    metadata: str | None = None


def read_release(framework: str, version: str, source: Path) -> Release:
    """The entrypoints and engine pins of ``framework`` ``version`` from ``source`` (wheel or directory)."""
    found = get_registry().frameworks.get(framework)
    text = found.obj.RELEASE_ENTRYPOINTS if found is not None else None
    if text is None:
        raise ValueError(f"no release reader for {framework!r}")
    pattern = re.compile(text)
    names, metadata, origin = _files(source)
    entrypoints = sorted({m.group(1) for n in names if (m := pattern.search(n))})
    if metadata is not None:
        message = Parser().parsestr(metadata)
        requires = message.get_all("Requires-Dist") or []
        python = message.get("Requires-Python")
        return Release(framework, version, tuple(entrypoints), python, _pins(requires), origin)
    pyproject = source / "pyproject.toml" if source.is_dir() else None
    if pyproject is not None and pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        requires = list(project.get("dependencies", []))
        for extra, deps in project.get("optional-dependencies", {}).items():
            requires += [f"{d}; extra == {extra!r}" if ";" not in d else d for d in deps]
        return Release(
            framework,
            version,
            tuple(entrypoints),
            project.get("requires-python"),
            _pins(requires),
            "pyproject.toml",
        )
    return Release(framework, version, tuple(entrypoints))


def _files(source: Path) -> tuple[list[str], str | None, str | None]:
    """The file names of ``source`` (relative, ``/``-separated) and the text of its core METADATA, if any."""
    if source.is_file():
        with zipfile.ZipFile(source) as archive:
            names = archive.namelist()
            meta = next((n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            text = archive.read(meta).decode("utf-8") if meta else None
        return names, text, meta
    names = [p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()]
    meta = next((n for n in sorted(names) if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
    text = (source / meta).read_text(encoding="utf-8") if meta else None
    return names, text, meta


def _pins(requires: list[str]) -> dict[str, str]:
    """Engine -> pin: an exact ``==`` pin beats a range; the vLLM extra beats the base dependencies beats any
    other extra (verl 0.7.1 pins torch only in its sglang extra, 0.9.1 in its vllm extra)."""
    found: dict[str, list[tuple[int, str]]] = {}
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = str(canonicalize_name(req.name))
        if name not in PINNED_ENGINES or not str(req.specifier):
            continue
        extras = re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", str(req.marker)) if req.marker else []
        rank = 1 if not extras else 0 if canonicalize_name(extras[0]) == _PREFERRED_EXTRA else 2
        found.setdefault(name, []).append((rank, str(req.specifier)))
    out: dict[str, str] = {}
    for engine in PINNED_ENGINES:
        options = sorted(found.get(engine, []))
        if not options:
            continue
        exact = [s for _, s in options if re.fullmatch(r"==[^,*]+", s)]
        out[engine] = exact[0][2:] if exact else options[0][1]
    return out


def matrix_entry(release: Release, notes: str = "") -> str:
    """A ``[[versions]]`` entry for ``compat-matrix/<framework>.toml``, ready to review and paste."""
    lines = [
        "[[versions]]",
        f'version = "{release.version}"',
        'status = "supported"',
        f'python = "{release.requires_python or ">=3.10"}"',
        f"notes = {_toml_string(notes)}",
        "[versions.tested_with]",
    ]
    lines += [f"{name} = {_toml_string(pin)}" for name, pin in release.pins.items()]
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
