"""The verl snapshot generator: every key of each config the adapter can emit, composed with Hydra from a wheel.

The wheel is only unzipped, never imported (verl's ``__init__`` pulls torch and ray). Configs: ``ppo_trainer`` and
``ppo_megatron_trainer``, and the one-step-off and fully-async configs where the version ships them
(``rladapt.adapters.verl.translate.CONFIG_NAMES``), each also with every other ``model_engine`` choice the version
ships (scope ``"<config> model_engine=<engine>"``, see ``engine_scope``). A key's type is the dataclass field's annotation where verl
declares the node with ``_target_``, or where the parent's dataclass field names the node's dataclass (read with
``ast`` from the same wheel), else the type of its default.
"""

from __future__ import annotations

import ast
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from rladapt.compat.schema._format import KeySpec, Snapshot, merge_scopes
from rladapt.compat.schema._values import type_of

from .entrypoints import ENGINE_GROUP, engine_scope

#: The experimental configs extend ppo_trainer through ``hydra.searchpath: [file://verl/trainer/config]``, a path
#: relative to the working directory (verl 0.9.1 experimental/one_step_off_policy/config/one_step_off_ppo_trainer.yaml);
#: ``compose`` points this override at the unpacked package instead.
_TRAINER_SEARCHPATH = "hydra.searchpath=[pkg://verl.trainer.config]"


def generate(source: Path, version: str) -> Snapshot:
    """The snapshot of verl ``version`` from ``source``: a wheel, or a directory holding the ``verl`` package."""
    if source.is_file():
        with tempfile.TemporaryDirectory(prefix="rladapt-verl-") as tmp:
            with zipfile.ZipFile(source) as archive:
                archive.extractall(tmp, [n for n in archive.namelist() if n.startswith("verl/")])
            return _generate(Path(tmp) / "verl", version, source.name)
    package = source / "verl" if (source / "verl" / "trainer").is_dir() else source
    return _generate(package, version, f"verl {version} package")


def _generate(package: Path, version: str, origin: str) -> Snapshot:
    from omegaconf import OmegaConf

    from .translate import CONFIG_DIRS, CONFIG_NAMES
    from .validate import Invocation, compose, package_version

    found = package_version(package)
    if found is not None and found != version:
        raise ValueError(f"{origin} is verl {found}, not {version}")
    classes = _dataclasses(package)
    engines = engine_options(package)
    per_scope: list[tuple[str, dict[str, KeySpec]]] = []
    variants: list[tuple[str, dict[str, KeySpec]]] = []

    def composed(
        module: str, name: str, choice: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any], dict[str, KeySpec]]:
        searchpath = () if module.startswith("verl.trainer.") else (_TRAINER_SEARCHPATH,)
        cfg = compose(package, Invocation(module, name, (*searchpath, *choice)))
        tree = OmegaConf.to_container(cfg, resolve=False)
        assert isinstance(tree, dict)
        named = {str(k): v for k, v in tree.items()}
        keys: dict[str, KeySpec] = {}
        _walk(named, "", classes, keys)
        return named, keys

    for module, names in CONFIG_NAMES.items():
        for name in names:
            if not (package / CONFIG_DIRS[module] / f"{name}.yaml").is_file():
                continue
            tree, keys = composed(module, name)
            per_scope.append((name, keys))
            # the engine a config selects is a defaults-list choice the launch may override (``model_engine=X``,
            # verl 0.7.1+); each other choice composes a config of its own, after the named configs so that
            # their entries (and the scope indexes of existing keys) stay first
            own = tree.get(ENGINE_GROUP)
            for option in engines if isinstance(own, str) else ():
                if option != own:
                    choice = (f"{ENGINE_GROUP}={option}",)
                    variants.append((engine_scope(name, option), composed(module, name, choice)[1]))
    scopes, merged = merge_scopes([*per_scope, *variants], scoped_defaults=True)
    return Snapshot(framework="verl", version=version, source=origin, scopes=scopes, keys=merged)


def engine_options(package: Path) -> list[str]:
    """The ``model_engine`` choices a verl package ships (``trainer/config/model_engine/*.yaml``), sorted."""
    return sorted(p.stem for p in (package / "trainer" / "config" / ENGINE_GROUP).glob("*.yaml"))


#: Keys whose YAML default is a value but whose reader also takes null, as "not given". The snapshot types them
#: nullable so that a render may hand verl that null.
READ_AS_OPTIONAL: dict[str, str] = {
    # the fully-async rollouter counts prompts over the data's epochs and caps them with this key only when it is
    # not None (verl/experimental/fully_async_policy/fully_async_rollouter.py, 0.8.0 and 0.9.1): null = run the
    # epochs, where the YAML default 100 would stop at 100 prompts (0.7.1 declares the key but ships no reader)
    "rollout.total_rollout_steps": "fully_async_rollouter.py: `if self.config.rollout.total_rollout_steps is not None`",
}


def _walk(
    node: dict[str, Any],
    prefix: str,
    classes: dict[str, dict[str, tuple[str, tuple[Any, ...]]]],
    out: dict[str, KeySpec],
    implied: str | None = None,
) -> None:
    """Every node below ``node`` (mappings too: an override may replace a whole one). ``implied``: the dataclass
    the parent's field names for this node, used where the node has no ``_target_``."""
    target = node.get("_target_")
    name = target.rsplit(".", 1)[-1] if isinstance(target, str) else implied
    fields = classes.get(name, {}) if name else {}
    for key, value in node.items():
        path = f"{prefix}{key}"
        declared = fields.get(str(key))
        if isinstance(value, dict):
            out[path] = KeySpec(type="dict|null" if declared and "null" in declared[0] else "dict")
            _walk(value, path + ".", classes, out, NESTED.get((name, str(key))) if name else None)
            continue
        kind, choices = declared if declared is not None else (_inferred(value), ())
        nullable = value is None or path in READ_AS_OPTIONAL
        if kind not in ("any", "null") and nullable and "null" not in kind.split("|"):
            kind += "|null"  # verl leaves it unset by default: null is what it reads as "not given"
        if kind == "null":
            kind = "any"  # a null default with no declared type says nothing about the type
        out[path] = KeySpec(
            type=kind, default=value, choices=choices, declared="dataclass" if declared else None
        )


def _inferred(value: Any) -> str:
    """The type of a key verl declares only in YAML, from its default: OmegaConf does not enforce it, and verl's
    code takes a float where the default is an int (verl 0.5.0 trainer/config/rollout/rollout.yaml ``top_p: 1``)
    and a list where it is a path (verl 0.9.1 trainer/config/data/legacy_data.yaml ``train_files``), so only the
    kind of value is kept."""
    kind = type_of(value)
    return {"int": "int|float", "float": "int|float", "str": "str|list"}.get(kind, kind)


# --- dataclass field types, read with ast ---------------------------------------------------------------------


def _dataclasses(package: Path) -> dict[str, dict[str, tuple[str, tuple[Any, ...]]]]:
    """Class name -> field -> (type name, Literal choices) for every dataclass in the package, bases included."""
    raw: dict[str, tuple[list[str], dict[str, ast.expr]]] = {}
    for path in sorted(package.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "dataclass" not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name not in raw:
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                anns = {
                    s.target.id: s.annotation
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                raw[node.name] = (bases, anns)

    def fields_of(name: str, seen: frozenset[str] = frozenset()) -> dict[str, ast.expr]:
        if name not in raw or name in seen:
            return {}
        bases, anns = raw[name]
        merged: dict[str, ast.expr] = {}
        for base in bases:
            merged.update(fields_of(base, seen | {name}))
        merged.update(anns)
        return merged

    out: dict[str, dict[str, tuple[str, tuple[Any, ...]]]] = {}
    for name in raw:
        fields = {k: _annotation(v) for k, v in fields_of(name).items() if not k.startswith("_")}
        if fields:
            out[name] = fields
    for name in raw:
        for key, annotation in fields_of(name).items():
            inner = [n for n in _names_in(annotation) if n in out]
            if len(inner) == 1:
                NESTED[(name, key)] = inner[0]
    return out


#: (class, field) -> the dataclass a field's annotation names, for nodes the YAML gives no ``_target_`` of their
#: own (verl 0.8.0 AlgoConfig.rollout_correction: Optional[RolloutCorrectionConfig], whose rollout_is_threshold
#: takes ``str | float``). Filled by ``_dataclasses``.
NESTED: dict[tuple[str, str], str] = {}


def _names_in(node: ast.expr) -> list[str]:
    """Every class name an annotation mentions (string annotations parsed)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _names_in(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return []
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


_NAMES = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "list": "list",
    "List": "list",
    "tuple": "list",
    "Tuple": "list",
    "Sequence": "list",
    "ListConfig": "list",
    "dict": "dict",
    "Dict": "dict",
    "Mapping": "dict",
    "DictConfig": "dict",
    "None": "null",
}


def _annotation(node: ast.expr) -> tuple[str, tuple[Any, ...]]:
    names: list[str] = []
    choices: list[Any] = []

    def visit(n: ast.expr) -> None:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            try:
                visit(ast.parse(n.value, mode="eval").body)  # a string annotation
            except SyntaxError:
                names.append("any")
        elif isinstance(n, ast.Constant) and n.value is None:
            names.append("null")
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
            visit(n.left)
            visit(n.right)
        elif isinstance(n, ast.Subscript):
            head = n.value.id if isinstance(n.value, ast.Name) else getattr(n.value, "attr", "")
            args = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if head in ("Optional", "Union"):
                for a in args:
                    visit(a)
                if head == "Optional":
                    names.append("null")
            elif head == "Literal":
                values = [a.value for a in args if isinstance(a, ast.Constant)]
                choices.extend(values)
                names.extend(type_of(v) for v in values)
            else:
                names.append(_NAMES.get(head, "any"))
        elif isinstance(n, (ast.Name, ast.Attribute)):
            ident = n.id if isinstance(n, ast.Name) else n.attr
            names.append(_NAMES.get(ident, "dict" if ident.endswith("Config") else "any"))
        else:
            names.append("any")

    visit(node)
    if "any" in names:
        return "any", ()
    unique = sorted(set(names), key=["bool", "int", "float", "str", "list", "dict", "null"].index)
    return "|".join(unique), tuple(choices)
