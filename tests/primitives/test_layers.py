"""The layers contract (pyproject.toml ``[tool.importlinter]``, checked by ``lint-imports`` in CI) places every
module: its ``exhaustive`` option checks the top-level ones, and this test the modules of the packages it lists
module by module (a layer cannot contain another, so those packages are ``exhaustive_ignores``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's own dependency on 3.10
    import tomli as tomllib

PACKAGE = REPO / "rladapt"


def _contract() -> dict[str, Any]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return dict(contract)


def _layers(contract: dict[str, Any]) -> list[set[str]]:
    """Each layer's module names (relative to the container), optional ones without their parentheses."""
    return [
        {name.strip("()") for name in re.split(r"[\s:|]+", layer) if name} for layer in contract["layers"]
    ]


def _modules(package: Path) -> list[str]:
    """Every module under ``package``, dotted, relative to ``rladapt`` (a package by its own name)."""
    out = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def test_every_module_of_a_split_package_has_its_layer() -> None:
    contract = _contract()
    listed = set().union(*_layers(contract))
    unplaced = []
    for split in contract["exhaustive_ignores"]:
        assert any(name.startswith(f"{split}.") for name in listed), (
            f"{split} is ignored but none of it is listed"
        )
        for module in _modules(PACKAGE / split):
            if module == split:  # the package itself: its __init__ re-exports from the modules listed
                continue
            if not any(module == name or module.startswith(f"{name}.") for name in listed):
                unplaced.append(f"rladapt.{module}")
    assert unplaced == [], f"not placed in a layer of pyproject.toml [tool.importlinter]: {unplaced}"


def test_the_contract_keeps_its_promises() -> None:
    """No exception list for wrong-way arrows, and every top-level module placed (the exhaustive option)."""
    contract = _contract()
    assert contract["containers"] == ["rladapt"] and contract["exhaustive"] is True
    assert "ignore_imports" not in contract
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert not config.get("exclude_type_checking_imports", False)
    layers = _layers(contract)
    top = {module.split(".")[0] for module in _modules(PACKAGE) if module}
    placed = {name.split(".")[0] for layer in layers for name in layer} | set(contract["exhaustive_ignores"])
    assert top - placed == set()


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative: the graph has hundreds of nodes)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_cycle_finder_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    """The layers contract lets siblings of one layer (``:``) import each other; they must still never import each
    other in a loop. The graph is grimp's, the one ``lint-imports`` checks, with imports inside functions and under
    ``TYPE_CHECKING`` counted."""
    import grimp

    graph = grimp.build_graph("rladapt", include_external_packages=False)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(imports) == [], "modules that import each other in a loop"
