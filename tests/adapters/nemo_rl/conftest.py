"""Fixtures of the NeMo-RL conformance suite: per pinned tag, the key tree of its typed ``MasterConfig`` and its
example GRPO config, read from ``<repo>/../shared/fixtures/nemo-rl/v<tag>/`` (see SOURCES.md there).

NeMo-RL has no real PyPI release and needs Python >= 3.12, so these upstream files are the framework's ground truth
here. CI always has them: a missing directory fails the suite instead of skipping it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt import compat
from rladapt.plugins import Registry, load_registry
from tests.support.wheels import REPO

FIXTURES = REPO / ".." / "shared" / "fixtures" / "nemo-rl"
PINNED: list[str] = [entry.version for entry in compat.pinned("nemo-rl")]
#: The two built-ins whose native blocks the examples use (``native.verl``); nemo-rl must ignore the other's.
BUILTINS = {"verl": "rladapt.adapters.verl", "nemo-rl": "rladapt.adapters.nemo_rl"}
#: Keys upstream reads although its TypedDicts never declare them: key -> (versions, where it is read).
UNDECLARED: dict[str, tuple[set[str], str]] = {
    "data.val_data_path": ({"0.4.0", "0.5.0"}, "nemo_rl/data/datasets/response_datasets/__init__.py"),
}
_OPEN_TYPES = ("dict[", "Dict[", "Any")


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@dataclass(frozen=True)
class Tag:
    version: str
    root: Path
    tree: dict[str, dict[str, Any]]
    example_keys: frozenset[str]

    @property
    def base_config(self) -> Path:
        return self.root / "examples" / "configs" / "grpo_math_1B.yaml"

    def base(self) -> dict[str, Any]:
        data = yaml.safe_load(self.base_config.read_text())
        data.pop("defaults", None)
        return dict(data)

    def allows(self, key: str) -> bool:
        """A key of this tag: in the typed tree, in the example config, under a free-form mapping, or read
        by upstream code without a declaration (``UNDECLARED``)."""
        if key in self.tree or key in self.example_keys:
            return True
        if self.version in UNDECLARED.get(key, (set(), ""))[0]:
            return True
        parts = key.split(".")
        for i in range(1, len(parts)):
            entry = self.tree.get(".".join(parts[:i]))
            if entry is not None and str(entry.get("type", "")).startswith(_OPEN_TYPES):
                return True
        return False


@cache
def tag(version: str) -> Tag:
    root = FIXTURES / f"v{version}"
    if not root.is_dir():
        pytest.fail(
            f"NeMo-RL fixtures for v{version} missing: {root} (CI provides ../shared/fixtures/nemo-rl)"
        )
    tree = json.loads((root / "grpo_MasterConfig.keytree.json").read_text())["keys"]
    base = yaml.safe_load((root / "examples" / "configs" / "grpo_math_1B.yaml").read_text())
    base.pop("defaults", None)
    keys: set[str] = set()
    for dotted in flatten(base):
        parts = dotted.split(".")
        keys.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return Tag(version=version, root=root, tree=tree, example_keys=frozenset(keys))


@pytest.fixture(scope="session", params=PINNED)
def pinned(request: pytest.FixtureRequest) -> Tag:
    return tag(str(request.param))


@pytest.fixture(scope="session")
def registry() -> Registry:
    reg = load_registry(builtins=BUILTINS, use_entry_points=False)
    assert not reg.broken, reg.broken
    return reg
