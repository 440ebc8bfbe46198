"""Which run script upstream launches a NeMo-RL config with: the script is part of the run.

The examples/run_*grpo*.py scripts of a tag read the same config keys but build different runs from them
(run_grpo_sliding_puzzle.py the sliding-puzzle environment, run_vlm_grpo.py a vision-language policy and its
environments, run_grpo_math.py of 0.4.0 and 0.5.0 the math environment whatever the data config names), so an
imported config keeps the script its own checkout runs it with. In order, as upstream itself says it:

1. the script that loads the config by default (``os.path.join(os.path.dirname(__file__), "configs", NAME)`` in
   examples/run_grpo_sliding_puzzle.py, run_vlm_grpo.py, run_grpo_rm.py of the pinned tags);
2. the script the tag's test suite runs it with (``tests/test_suites/**/<config stem>.sh``, where the recipes of
   examples/configs/recipes are run: ``uv run examples/run_grpo_math.py --config $CONFIG_PATH`` in 0.4.0 and
   0.5.0, ``examples/run_grpo.py`` in 0.6.0 and 0.7.0, ``examples/run_vlm_grpo.py`` for the VLM recipes);
3. the script of the nearest config it extends (``defaults:``), by 1. and 2.;
4. the tag's GRPO script (``versions.Keys.script``).

A config read outside a checkout of the tag has no scripts or test suite beside it: 1. falls back to
``OWN_CONFIG`` (the same facts, by file name) and 2. is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import yaml

#: config file name -> the run script whose default config it is, and the tags that script exists in (the
#: ``"configs", NAME`` of each script, v0.4.0 to v0.7.0; run_grpo_rm.py is gone in 0.6.0).
OWN_CONFIG: dict[str, tuple[str, tuple[str, ...]]] = {
    "grpo_sliding_puzzle.yaml": ("examples/run_grpo_sliding_puzzle.py", ("0.4.0", "0.5.0", "0.6.0", "0.7.0")),
    "vlm_grpo_3B.yaml": ("examples/run_vlm_grpo.py", ("0.4.0", "0.5.0", "0.6.0", "0.7.0")),
    "grpo_rm_1B.yaml": ("examples/run_grpo_rm.py", ("0.4.0", "0.5.0")),
}
#: The run scripts of a tag that run GRPO (the spec's algorithms): run_grpo*.py and run_vlm_grpo.py.
GRPO_SCRIPT = re.compile(r"^run_(vlm_)?grpo\w*\.py$")
_RUN = re.compile(r"examples/(run_\w+\.py)")


def is_grpo_script(path: str) -> bool:
    return bool(GRPO_SCRIPT.match(PurePosixPath(path).name))


def run_script(config: str, version: str, default: str) -> tuple[str | None, str]:
    """(the script upstream runs ``config`` with, why), or (None, why) when nothing names one and ``default``
    (the tag's GRPO script) is to be used. ``config`` is a path as the launch gives it."""
    path = Path(config)
    root = _checkout(path)
    seen: set[Path] = set()
    todo = [path]
    while todo:
        here = todo.pop(0)
        if here in seen or not here.is_file():
            continue
        seen.add(here)
        found = _named(here, root, version)
        if found is not None:
            script, why = found
            return script, why if here == path else f"{why}, which {path.name} extends"
        todo.extend(here.parent / parent for parent in _parents(here))
    return None, f"no script names {path.name}: the tag's GRPO script {default}"


def _checkout(path: Path) -> Path | None:
    """The checkout ``path`` sits in (the folder holding ``examples/configs``), if any."""
    for parent in path.resolve().parents:
        if parent.name == "configs" and parent.parent.name == "examples":
            root = parent.parent.parent
            return root if any((root / "examples").glob("run_*.py")) else None
    return None


def _named(config: Path, root: Path | None, version: str) -> tuple[str, str] | None:
    name = config.name
    if root is not None:
        default = re.compile(r"[\"']configs[\"']\s*,\s*[\"']" + re.escape(name) + r"[\"']")
        for script in sorted((root / "examples").glob("run_*.py")):
            if is_grpo_script(script.name) and default.search(script.read_text(errors="replace")):
                return f"examples/{script.name}", f"{name} is the default config of examples/{script.name}"
        for suite in sorted((root / "tests" / "test_suites").glob(f"**/{config.stem}.sh")):
            found = _RUN.search(suite.read_text(errors="replace"))
            if found and is_grpo_script(found.group(1)):
                where = suite.relative_to(root).as_posix()
                return f"examples/{found.group(1)}", f"{where} runs {name} with it"
        return None
    own = OWN_CONFIG.get(name)
    if own is not None and version in own[1]:
        return own[0], f"{name} is the default config of {own[0]}"
    return None


def _parents(config: Path) -> list[str]:
    try:
        data = yaml.safe_load(config.read_text(errors="replace"))
    except (OSError, yaml.YAMLError):
        return []
    parents = data.get("defaults") if isinstance(data, dict) else None
    if isinstance(parents, str):
        return [parents]
    return [p for p in parents if isinstance(p, str)] if isinstance(parents, list) else []
