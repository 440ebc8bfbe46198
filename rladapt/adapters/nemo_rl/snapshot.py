"""The NeMo-RL snapshot generator: the GRPO config tree of a tag, from a checkout of that tag (nothing imported).

NeMo-RL has no PyPI release to build from, so a maintainer passes a checkout (``git worktree add DIR v0.7.0``).
Keys come from two sources, because neither alone is what a launch may set: the typed ``MasterConfig`` of
``nemo_rl/algorithms/grpo.py`` (TypedDicts or pydantic models, every union member and every subclass of a
referenced class included; read with ``ast``) and the leaves of every GRPO-family config of the tag: each
``examples/configs/**/*.yaml`` whose name says GRPO or DAPO (the recipes included: a recipe sets keys that no typed
config declares, such as the free-form kwargs of a dataset or of Automodel, and a launch of it is a launch the tag
composes), and every config such a one extends by its ``defaults:``. A key's default is its value in
``grpo_math_1B.yaml`` (the base the other examples extend); its type is the annotation where the tree declares one,
else the type of that default. ``dict[str, Any]`` marks a free-form mapping. The scopes (the configs the adapter can
emit) are the ``grpo_math_*.yaml`` examples; a key only another config sets has no scope of its own.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rladapt.compat.schema._format import KeySpec, Snapshot
from rladapt.compat.schema._values import type_of

ROOT = ("nemo_rl/algorithms/grpo.py", "MasterConfig")
BASE_EXAMPLE = "grpo_math_1B.yaml"
#: Keys upstream code reads although no typed config declares them and no example sets them: key -> (file, the
#: text that reads it). A tag has the key when its file still holds that text.
READ_BY_CODE: dict[str, tuple[str, str]] = {
    "data.val_data_path": (
        "nemo_rl/data/datasets/response_datasets/__init__.py",
        'data_config["val_data_path"]',
    ),
}
_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "None": "null", "PathLike": "str"}
_LISTS = {"list", "List", "tuple", "Tuple", "Sequence"}
_DICTS = {"dict", "Dict", "Mapping"}


@dataclass
class _Class:
    name: str
    module: str
    bases: list[str]
    imports: dict[str, str]  # name -> the module (repository file) it is imported from
    fields: dict[str, tuple[ast.expr, bool]] = field(
        default_factory=dict
    )  # name -> (annotation, has default)


#: (module file, class name) -> class; several modules define a ``MasterConfig`` or a ``PolicyConfig``.
_Index = dict[tuple[str, str], _Class]


def generate(source: Path, version: str) -> Snapshot:
    """The snapshot of NeMo-RL ``version`` from ``source``, a checkout of its tag."""
    root_file = source / ROOT[0]
    if not root_file.is_file():
        raise ValueError(f"{source} is not a NeMo-RL checkout (no {ROOT[0]})")
    classes = _classes(source)
    keys: dict[str, KeySpec] = {}
    _expand(classes[ROOT], "", classes, keys, frozenset())
    configs = source / "examples" / "configs"
    examples = sorted(configs.glob("grpo_math_*.yaml"))
    base: dict[str, Any] = {}
    nulls: set[str] = set()
    for path in [*examples, *(p for p in _family(configs) if p not in examples)]:
        leaves = dict(_leaves(_load(path)))
        if path.name == BASE_EXAMPLE:
            base = leaves
        for key, value in leaves.items():
            if key not in keys and not _under_open(key, keys):
                keys[key] = KeySpec(type=_loose(type_of(value)), default=None)
            elif value is None and not isinstance(_load_node(path, key), dict):
                nulls.add(key)
    for key in sorted(nulls):
        # a config of the tag sets it to null although its annotation says otherwise (NotRequired[str] keys such
        # as vllm_cfg.reasoning_parser_plugin: recipes write null for "none"): the tag composes null there
        kind = keys[key].type if key in keys else "any"
        if kind != "any" and "null" not in kind.split("|"):
            keys[key] = KeySpec(**{**keys[key].__dict__, "type": f"{kind}|null"})
    for key, (module, text) in READ_BY_CODE.items():
        path = source / module
        if key not in keys and path.is_file() and text in path.read_text(encoding="utf-8"):
            keys[key] = KeySpec(type="any", declared=module)
    for key, value in base.items():
        if key in keys:
            keys[key] = KeySpec(**{**keys[key].__dict__, "default": value})
    scopes = (f"{ROOT[0]}:{ROOT[1]}", *(f"examples/configs/{p.name}" for p in examples))
    return Snapshot(
        framework="nemo-rl", version=version, source=f"NVIDIA-NeMo/RL v{version}", scopes=scopes, keys=keys
    )


#: The configs of the GRPO family by name (the ledger's field: scripts/import_ledger.py ``field_of``).
_FAMILY = re.compile(r"grpo|dapo", re.I)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _family(configs: Path) -> list[Path]:
    """Every GRPO-family config under ``configs`` and what each extends (``defaults:``, a path relative to the
    config's folder: load_config of nemo_rl/utils/config.py), in a stable order."""
    found: dict[Path, None] = {}
    todo = [p for p in sorted(configs.rglob("*.yaml")) if _FAMILY.search(p.name)]
    while todo:
        path = todo.pop(0).resolve()
        if path in found or not path.is_file():
            continue
        found[path] = None
        parents = _load(path).get("defaults")
        for parent in [parents] if isinstance(parents, str) else parents if isinstance(parents, list) else []:
            if isinstance(parent, str):
                todo.append(path.parent / parent)
    return sorted(found, key=lambda p: p.as_posix())


def _load_node(path: Path, key: str) -> Any:
    node: Any = _load(path)
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _loose(kind: str) -> str:
    # an example's value shows one value, not the declared type: null says nothing, a number may be a float
    return {"null": "any", "int": "int|float"}.get(kind, kind)


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        if (prefix == "" and key == "defaults") or key == "_override_":
            # the defaults chain and merge_with_override's marker (nemo_rl/utils/config.py, 0.6.0+) are directives
            # of the loader, no keys of the config
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.append((path, None))
            out.extend(_leaves(value, path + "."))
        else:
            out.append((path, value))
    return out


def _under_open(key: str, keys: dict[str, KeySpec]) -> bool:
    parts = key.split(".")
    return any(keys.get(".".join(parts[:i]), KeySpec()).open for i in range(1, len(parts)))


def _classes(source: Path) -> _Index:
    out: _Index = {}
    for path in sorted((source / "nemo_rl").rglob("*.py")):
        module = path.relative_to(source).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    imports[alias.asname or alias.name] = node.module.replace(".", "/") + ".py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or (module, node.name) in out:
                continue
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
            cls = _Class(node.name, module, bases, imports)
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    cls.fields[stmt.target.id] = (stmt.annotation, stmt.value is not None)
            out[(module, node.name)] = cls
    return out


def _resolve(name: str, where: _Class, classes: _Index) -> _Class | None:
    """The class ``name`` means inside ``where``'s module: defined there, imported, else the only one so named."""
    for module in (
        where.module,
        where.imports.get(name),
        where.imports.get(name, "").replace(".py", "/__init__.py"),
    ):
        if module and (module, name) in classes:
            found = classes[(module, name)]
            if module.endswith("__init__.py") and found is None:
                continue
            return found
    candidates = [c for (_, n), c in classes.items() if n == name]
    return candidates[0] if candidates else None


def _fields(
    cls: _Class, classes: _Index, seen: frozenset[str] = frozenset()
) -> dict[str, tuple[ast.expr, bool]]:
    merged: dict[str, tuple[ast.expr, bool]] = {}
    for base in cls.bases:
        if base in ("TypedDict", "BaseModel", "Generic", "object") or base in seen:
            continue
        parent = _resolve(base, cls, classes)
        if parent is not None and parent is not cls:
            merged.update(_fields(parent, classes, seen | {cls.name}))
    merged.update(cls.fields)
    return merged


def _variants(cls: _Class, classes: _Index) -> list[_Class]:
    """``cls`` and every class deriving from it (a backend subclass adds keys the base does not declare)."""
    subs = [c for c in classes.values() if cls.name in c.bases and _resolve(cls.name, c, classes) is cls]
    return [cls, *sorted(subs, key=lambda c: (c.module, c.name))]


def _expand(cls: _Class, prefix: str, classes: _Index, out: dict[str, KeySpec], seen: frozenset[str]) -> None:
    if (cls.module, cls.name) in {tuple(s.split(":")) for s in seen}:
        return
    here = seen | {f"{cls.module}:{cls.name}"}
    for variant in _variants(cls, classes):
        for key, (annotation, has_default) in _fields(variant, classes).items():
            path = f"{prefix}{key}"
            kind, choices, refs, required, is_open = _annotation(annotation, variant, classes)
            spec = KeySpec(
                type=kind,
                choices=choices,
                required=required and not has_default and variant is cls,
                open=is_open,
                declared=variant.name,
            )
            out[path] = spec if path not in out else _union(out[path], spec)
            for ref in refs:
                _expand(ref, path + ".", classes, out, here)


def _union(a: KeySpec, b: KeySpec) -> KeySpec:
    """A key two union members declare (``enabled: Literal[True]`` / ``Literal[False]``): either one's value."""
    order = ["bool", "int", "float", "str", "list", "dict", "null"]
    names = set(a.type.split("|")) | set(b.type.split("|"))
    kind = "any" if "any" in names else "|".join(sorted(names, key=order.index))
    choices = tuple(dict.fromkeys((*a.choices, *b.choices))) if a.choices and b.choices else ()
    return KeySpec(
        type=kind,
        choices=choices,
        required=a.required and b.required,
        open=a.open or b.open,
        declared=a.declared,
    )


def _annotation(
    node: ast.expr, where: _Class, classes: _Index
) -> tuple[str, tuple[Any, ...], list[_Class], bool, bool]:
    """(type names, Literal choices, referenced config classes, required, free-form mapping)."""
    names: list[str] = []
    choices: list[Any] = []
    refs: list[_Class] = []
    required = True
    is_open = False

    def visit(n: ast.expr) -> None:
        nonlocal required, is_open
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            try:
                visit(ast.parse(n.value, mode="eval").body)
            except SyntaxError:
                names.append("any")
        elif isinstance(n, ast.Constant) and n.value is None:
            names.append("null")
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
            visit(n.left)
            visit(n.right)
        elif isinstance(n, ast.Subscript):
            head = n.value.id if isinstance(n.value, ast.Name) else getattr(n.value, "attr", "")
            args = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
            if head in ("NotRequired", "Required", "Annotated"):
                required = required and head != "NotRequired"
                visit(args[0])
            elif head in ("Optional", "Union"):
                for a in args:
                    visit(a)
                if head == "Optional":
                    names.append("null")
            elif head == "Literal":
                values = [a.value for a in args if isinstance(a, ast.Constant)]
                choices.extend(values)
                names.extend(type_of(v) for v in values)
            elif head in _LISTS:
                names.append("list")
            elif head in _DICTS:
                names.append("dict")
                is_open = True
            else:
                names.append("any")
        elif isinstance(n, (ast.Name, ast.Attribute)):
            ident = n.id if isinstance(n, ast.Name) else n.attr
            ref = None if ident in _SCALARS else _resolve(ident, where, classes)
            if ref is not None:
                names.append("dict")
                refs.append(ref)
            elif ident in _DICTS:
                names.append("dict")
                is_open = True
            else:
                names.append(_SCALARS.get(ident, "any"))
        else:
            names.append("any")

    visit(node)
    order = ["bool", "int", "float", "str", "list", "dict", "null"]
    kind = "any" if "any" in names else "|".join(sorted(set(names), key=order.index))
    if kind == "null":
        kind = "any"
    return kind, tuple(choices), refs, required, is_open
