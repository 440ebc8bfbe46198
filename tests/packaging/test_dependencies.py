"""Every third-party module rladapt imports is a base dependency, or its import is guarded so that a plain
``pip install rladapt`` gets a message naming the extra to install instead of ``internal error:
ModuleNotFoundError`` (issue 22: NeMo-RL's import and diff needed hydra, which only two extras installed).

Read from the source (AST), so it is fast and sees imports inside functions too; the installed metadata only maps
an import name to its distribution (``yaml`` is PyYAML)."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's own dependency on 3.10
    import tomli as tomllib

PACKAGE = REPO / "rladapt"

#: Code that never runs on a verb's path, with where it runs instead.
RUNS_ELSEWHERE = {
    "rladapt/adapters/trl/driver.py": "the TRL driver runs inside the job, in the environment the trl extra "
    "installs (its own DriverErrors name what is missing)",
    "rladapt/plugins/testing/": "the conformance kit: pytest loads it (the pytest11 entry point), in a plugin "
    "author's test run",
}
#: Imports that run only after a guard elsewhere has named the extra (in the caller, or a call before them).
GUARDED_BEFORE = {
    (
        "rladapt/launchers/kubernetes/cluster.py",
        "urllib3",
    ): "the kubernetes client's own dependency, imported "
    "after kubernetes_module(), which names the kubernetes extra",
    (
        "rladapt/launchers/ray.py",
        "ray",
    ): "_timed_client_class() runs inside _client()'s guard, which names the ray extra",
    (
        "rladapt/launchers/ray.py",
        "requests",
    ): "Ray's job client's own dependency: _client() imports it inside its "
    "guard, _request() wraps calls of the client _client() made",
}
#: A module that is part of a base dependency, with that dependency.
SHIPPED_WITH = {"pydantic_core": "pydantic"}  # pydantic pins its compiled core to one exact version
_EXTRA = re.compile(r"rladapt\[([A-Za-z0-9_.-]+)\]")


def _project() -> dict[str, Any]:
    return dict(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"])


def _base() -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in _project()["dependencies"]}


def _extras() -> set[str]:
    return set(_project()["optional-dependencies"])


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    module: str  # top-level import name
    guard: str  # "" (none), "type-checking", "fallback", "extra:<name>", "message without an extra"


def _strings(node: ast.AST) -> str:
    return " ".join(
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} if handler.type else {"*"}
    return bool(names & {"ImportError", "ModuleNotFoundError", "*"})


def _guard_of(handler: ast.ExceptHandler) -> str:
    raises = [n for n in ast.walk(handler) if isinstance(n, ast.Raise)]
    if not raises:
        return "fallback"  # the caller gets an answer without the module (None, a default)
    found = _EXTRA.search(" ".join(_strings(r) for r in raises))
    return f"extra:{found.group(1)}" if found else "message without an extra"


class _Imports(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.guards: list[str] = []
        self.uses: list[Use] = []
        # per function: the guard a module was first imported under (a later import of it there is behind it)
        self.scopes: list[dict[str, str]] = [{}]

    def _add(self, node: ast.stmt, names: list[str]) -> None:
        for name in names:
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top in {"rladapt", "__future__"}:
                continue
            guard = self.guards[-1] if self.guards else self.scopes[-1].get(top, "")
            self.scopes[-1].setdefault(top, guard)
            self.uses.append(Use(self.path, node.lineno, top, guard))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scopes.append({})
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        self._add(node, [a.name for a in node.names])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node, [node.module])

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            self.guards.append("type-checking")
            for child in node.body:
                self.visit(child)
            self.guards.pop()
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        handlers = [h for h in node.handlers if _catches_import_error(h)]
        if handlers:
            self.guards.append(_guard_of(handlers[0]))
            for child in node.body:
                self.visit(child)
            self.guards.pop()
            after: list[ast.AST] = [*node.handlers, *node.orelse, *node.finalbody]
            for later in after:
                self.visit(later)
        else:
            self.generic_visit(node)


def third_party_imports() -> list[Use]:
    """Every import of a module that is neither the standard library nor rladapt, with its guard."""
    out: list[Use] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        visitor = _Imports(rel)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), rel))
        out.extend(visitor.uses)
    return out


@functools.cache
def _installed() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


@functools.cache
def _distributions(module: str) -> set[str]:
    found = _installed().get(module, [module])
    return {canonicalize_name(d) for d in found}


def unmet(uses: list[Use], base: set[str], extras: set[str]) -> list[str]:
    """What a plain install would meet as ``ModuleNotFoundError`` on a verb's path."""
    problems = []
    for use in uses:
        if _distributions(use.module) & base or SHIPPED_WITH.get(use.module) in base:
            continue
        if (
            any(use.path.startswith(where) for where in RUNS_ELSEWHERE)
            or (use.path, use.module) in GUARDED_BEFORE
        ):
            continue
        if use.guard in {"type-checking", "fallback"}:
            continue
        where = f"{use.path}:{use.line} imports {use.module}"
        if use.guard.startswith("extra:"):
            extra = use.guard.removeprefix("extra:")
            if extra not in extras:
                problems.append(f"{where}: its message names rladapt[{extra}], which is no extra")
            continue
        if use.guard:
            problems.append(
                f"{where}: a missing module's message names no extra (pip install 'rladapt[...]')"
            )
        else:
            problems.append(f"{where}: not a base dependency and not guarded with the extra to install")
    return problems


def test_every_third_party_import_is_a_base_dependency_or_names_its_extra() -> None:
    uses = third_party_imports()
    assert {u.module for u in uses} >= {"hydra", "omegaconf", "yaml", "tensorboard"}  # the scan sees them
    assert unmet(uses, _base(), _extras()) == []


def test_the_verb_paths_of_import_and_diff_need_no_extra() -> None:
    """Hydra (NeMo-RL's override grammar, verl's config) is what ``rladapt import``/``diff`` ran into: it is a base
    dependency, so a plain install imports and diffs every framework."""
    assert "hydra-core" in _base()
    assert {"hydra", "omegaconf"} <= {
        u.module for u in third_party_imports() if u.path.endswith("effective.py")
    }


def test_the_check_finds_an_unguarded_import_and_a_guard_without_an_extra(tmp_path: Path) -> None:
    source = (
        "import yaml\n"
        "def f():\n    import hydra\n"
        "def g():\n    try:\n        import tensorboard\n    except ImportError:\n"
        "        raise RuntimeError('needs tensorboard') from None\n"
        "def h():\n    try:\n        import matplotlib\n    except ImportError:\n"
        "        raise RuntimeError(\"pip install 'rladapt[plot]'\") from None\n"
        "def i():\n    try:\n        import ray\n    except ImportError:\n        return None\n"
        "def j():\n    try:\n        import kubernetes\n    except ImportError:\n"
        "        raise RuntimeError(\"pip install 'rladapt[k8s]'\") from None\n"
        "def k():\n    try:\n        import trl\n    except ImportError:\n        return None\n"
        "    from trl import GRPOConfig\n"
        "def m():\n    from trl import RLOOConfig\n"
    )
    visitor = _Imports("rladapt/x.py")
    visitor.visit(ast.parse(source))
    problems = unmet(visitor.uses, {"pyyaml"}, {"plot", "kubernetes"})
    assert problems == [
        "rladapt/x.py:3 imports hydra: not a base dependency and not guarded with the extra to install",
        "rladapt/x.py:6 imports tensorboard: a missing module's message names no extra (pip install "
        "'rladapt[...]')",
        "rladapt/x.py:21 imports kubernetes: its message names rladapt[k8s], which is no extra",
        "rladapt/x.py:31 imports trl: not a base dependency and not guarded with the extra to install",
    ]
