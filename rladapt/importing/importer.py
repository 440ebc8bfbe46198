"""``rladapt import``: a native launch -> an RLJob spec whose render is the same run.

One mechanism for every framework:

1. the launch's *effective* configuration (``effective``) is the target;
2. the framework's importer (``FrameworkAdapter.launch_importer``, e.g. ``rladapt/adapters/verl/importer.py``)
   maps it to spec fields (``fields``); a field whose value equals the rladapt default is
   left out, so the spec stays short, and every other one is written, including framework defaults that differ
   from rladapt's (the import changes nothing);
3. the spec is rendered; every launch item the render does not reproduce goes to ``spec.native.<framework>``
   verbatim and in order (nothing is dropped), then every key whose effective value still differs gets an
   explicit item (a derived key rladapt emits differently, a key rladapt adds);
4. the final text is loaded and rendered again and must give the target: an import that would change the run is
   an error, never a file.

A spec field the spec refuses (a value outside its type) is dropped and its key left to step 3.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from rladapt.plugins import BUILTIN_PLUGINS, Registry, get_registry
from rladapt.plugins.effective import Effective, same
from rladapt.plugins.effective import read_back_only as keys_read_back_only
from rladapt.primitives import Problem, RLJob, SpecError, UsageError, load_job_text, validate_data
from rladapt.primitives.errors import one_line, quote
from rladapt.primitives.spec import GROUP_ALGORITHMS

if TYPE_CHECKING:
    from rladapt.plugins.adapter import LaunchImporter
    from rladapt.plugins.native import NativeLaunch

    from .script import Launch

_MAX_ROUNDS = 8
_DNS = re.compile(r"[^a-z0-9-]+")
#: Required spec parts with a stand-in when the launch has none (the residual pass restores the native value).
_REQUIRED = ("spec.model.path", "spec.data.train")
_GROUP_SIZE = "spec.algorithm.group_size"
#: What scores a rollout (spec.reward needs one, or an agent function that returns the rewards).
_REWARD_SOURCES = {"builtin", "function", "model", "remote"}


@dataclass(frozen=True)
class Imported:
    """The spec text written, the job it loads as, and the effective config both sides share."""

    text: str
    job: RLJob
    target: Effective
    notes: tuple[str, ...]


def framework_importer(name: str, registry: Registry | None = None) -> LaunchImporter:
    """The launch importer of framework ``name`` (``FrameworkAdapter.launch_importer``); a framework whose adapter
    has none cannot be imported or diffed as a launch (a usage error, exit 2)."""
    found = (registry or get_registry()).framework(name).launch_importer()
    if found is None:
        raise UsageError(f"--framework {quote(name)}: framework {name!r} cannot import launches")
    return found


def importers(registry: Registry | None = None) -> dict[str, LaunchImporter]:
    """Every registered framework that can import launches, in registration order."""
    found_in = (registry or get_registry()).frameworks
    # the built-in ones first, in their order (a launch is tried on each in turn), then the plugins' by name
    order = list(BUILTIN_PLUGINS)
    out = {}
    for name in sorted(found_in, key=lambda n: (order.index(n) if n in order else len(order), n)):
        found = found_in[name].obj.launch_importer()
        if found is not None:
            out[name] = found
    return out


def read_back_only(framework: str, key: str, a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` of ``key`` differ only in where rladapt reads the metrics back from, by the
    adapter's ``READ_BACK_KEYS`` (``rladapt.plugins.effective.read_back_only``)."""
    found = get_registry().frameworks.get(framework)
    keys = found.obj.READ_BACK_KEYS if found is not None else ()
    return keys_read_back_only(keys, key, a, b)


def launch_effective(fw: LaunchImporter, native: NativeLaunch) -> Effective:
    """The effective config of a rendered launch; a framework whose launch reads the files rladapt generates
    (NeMo-RL's ``--config``) gets them too."""
    if getattr(fw, "READS_FILES", False):
        found: Effective = fw.effective(list(native.argv), native.version, files=native.files)  # type: ignore[call-arg]
        return found
    return fw.effective(list(native.argv), native.version)


def read_native(
    fw: LaunchImporter,
    text: str,
    source: str,
    sets: Mapping[str, str],
    version: str,
    overrides: tuple[str, ...] = (),
) -> Launch:
    """The launch in ``text``: a script or command line, or, for a framework that reads config files (NeMo-RL),
    the config file ``source`` itself with ``overrides`` after it. Overrides go with a config file only."""
    from .script import Launch, read_launch

    # optional: a framework whose config file is itself a launch (NeMo-RL)
    as_config = getattr(fw, "config_launch", None)
    is_config = getattr(fw, "is_config", None)
    if as_config is not None and is_config is not None and is_config(text):
        argv = as_config(source, version, list(overrides))
        return Launch(source=source, line=1, argv=tuple(argv), start=fw.match(argv) or len(argv))
    if overrides:
        raise UsageError(
            f"{quote(source)} is a launch script: overrides after it are for a {fw.FRAMEWORK} config file; "
            "write them into the launch line"
        )
    return read_launch(text, source, fw.match, sets, f"{fw.FRAMEWORK} launch ({fw.EXAMPLE})")


def at_line(exc: UsageError, launch: Launch) -> UsageError:
    """``exc`` placed at the launch line when it names no file (a refused override, from the framework's loader)."""
    text = str(exc)
    if text.startswith(launch.source):
        return exc
    return UsageError(f"{launch.source}:{launch.line}: {text}")


def rladapt_defaults() -> dict[str, Any]:
    """Every spec field at its rladapt default, flattened to ``spec.a.b`` paths (aliases as the YAML spells them)."""
    # the model alone (no cross-field checks): the defaults are what matters, not whether they make a job
    job = RLJob.model_validate(
        {
            "apiVersion": "rladapt/v1alpha1",
            "kind": "RLJob",
            "metadata": {"name": "x"},
            "spec": {"model": {"path": "x"}, "data": {"train": ["x"]}, "reward": {"function": {"path": "x"}}},
        }
    )
    return _flatten(job.model_dump(by_alias=True)["spec"], "spec")


def _flatten(node: Any, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(node, dict) and node:
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}.{key}"))
    else:
        out[prefix] = node
    return out


def _put(tree: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _drop(tree: dict[str, Any], path: str) -> bool:
    parts = [p for p in re.split(r"\.|\[\d+\]", path) if p]
    node: Any = tree
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    if isinstance(node, dict) and parts and parts[-1] in node:
        del node[parts[-1]]
        return True
    return False


def job_name(text: str) -> str:
    """A DNS label from an experiment name or a file stem."""
    name = _DNS.sub("-", text.lower()).strip("-")[:63].strip("-")
    return name or "imported"


def spec_data(fields: Mapping[str, Any], name: str, roles: list[str] | None = None) -> dict[str, Any]:
    """The spec mapping of ``fields`` (``spec.x.y`` -> value), with rladapt defaults left out."""
    defaults = rladapt_defaults()
    spec: dict[str, Any] = {}
    for path, value in fields.items():
        if path.startswith("("):
            continue
        if path in defaults and same(defaults[path], value) and path not in _REQUIRED:
            # a group algorithm's group size is written even at the default 1: the spec refuses it left out
            # (a forgotten setting) and takes it given (a group of one the framework runs, verl's rollout.n=1)
            algorithm = fields.get("spec.algorithm.name", defaults.get("spec.algorithm.name"))
            if not (path == _GROUP_SIZE and algorithm in GROUP_ALGORITHMS):
                continue
        _put(spec, path.removeprefix("spec."), value)
    return {"apiVersion": "rladapt/v1alpha1", "kind": "RLJob", "metadata": {"name": name}, "spec": spec}


def _placement(data: dict[str, Any], fields: Mapping[str, Any]) -> None:
    """spec.placement from ``(placement)`` (nodes, GPUs per node of the whole job), ``(placement.apart)``
    (role -> nodes of its own pool, e.g. NeMo-RL's non-colocated generation): the other roles share the rest,
    and ``(placement.separate)`` (role -> nodes, GPUs per node of a pool besides the ``(placement)`` one, e.g.
    verl's rollout pool of its one-step-off and fully-async trainers)."""
    nodes_gpus = fields.get("(placement)")
    apart: dict[str, int] = dict(fields.get("(placement.apart)") or {})
    separate: dict[str, tuple[int, int]] = dict(fields.get("(placement.separate)") or {})
    if not nodes_gpus or (tuple(nodes_gpus) == (1, 8) and not apart and not separate):
        return
    # the roles a job needs do not depend on how weights sync, which itself needs the placement built here; the
    # model alone (no cross-field checks): the batch checks of the default placement are not the launch's
    try:
        probe = RLJob.model_validate(
            {**data, "spec": {k: v for k, v in data["spec"].items() if k != "weight_sync"}}
        )
    except ValidationError:
        probe = validate_data({**data, "spec": {k: v for k, v in data["spec"].items() if k != "weight_sync"}})
    nodes, gpus = nodes_gpus
    shared = [r for r in probe.spec.required_roles if r not in apart and r not in separate]
    pools = [
        {"name": "default", "nodes": nodes - sum(apart.values()), "gpus_per_node": gpus, "roles": shared}
    ]
    pools += [{"name": role, "nodes": n, "gpus_per_node": gpus, "roles": [role]} for role, n in apart.items()]
    pools += [
        {"name": role, "nodes": n, "gpus_per_node": g, "roles": [role]} for role, (n, g) in separate.items()
    ]
    data["spec"]["placement"] = {"pools": pools}


def build(
    fw: LaunchImporter,
    version: str,
    argv: list[str],
    *,
    source: str,
    registry: Any,
    env: Mapping[str, str] | None = None,
    header: str = "",
    name: str | None = None,
) -> Imported:
    """The spec that renders to the same effective config as ``argv`` (the whole launch command)."""
    from rladapt.pipeline import render_native

    target = fw.effective(argv, version)
    fields = dict(launch_fields(fw, target, version))
    experiment = fields.get("spec.logging.experiment")
    data = spec_data(fields, name or job_name(str(experiment or source.rsplit("/", 1)[-1].split(".")[0])))
    reward = data["spec"].setdefault("reward", {})
    if not set(reward) & _REWARD_SOURCES:
        # a reward without a source of its own (DAPO's overlong shaping alone: recipe/dapo's scripts) is shaping
        # on top of the framework's own scorer, which the stand-in names
        reward.update(fw.reward_standin(target.values))
    env = dict(env or {})
    for variable, path in getattr(fw, "ENV_FIELDS", {}).items():
        if env.get(variable):
            # a variable the framework reads that a spec field expresses (verl's TENSORBOARD_DIR:
            # spec.logging.dir): the field, which the render sets the variable from
            _put(data, path, env.pop(variable))
    if env:
        data["spec"]["env"] = env
    launched, notes = launch_prefix(fw, argv)
    for path, value in launched.items():
        old = data["spec"].get("env") if path == "spec.env" else None
        _put(data, path, {**old, **value} if old else value)
    framework = f"{fw.FRAMEWORK}=={version}"

    # spec fields the spec refuses (out of range, not expressible on this version): dropped, left to native items
    for _ in range(_MAX_ROUNDS):
        try:
            trial = copy.deepcopy(data)
            if "placement" not in data["spec"]:
                _placement(trial, fields)
            job = validate_data(trial, source)
            rendered = render_native(job, framework, registry)
            data = trial
            break
        except SpecError as exc:
            # a field, or the block it is part of (spec.model.lora); never a whole section such as spec.training
            dropped = [
                p.path
                for p in exc.problems
                if _drop(data, p.path) or (_parent(p.path).count(".") >= 2 and _drop(data, _parent(p.path)))
            ]
            if not dropped:
                raise
            notes.extend(f"{p} (left to spec.native.{fw.FRAMEWORK})" for p in exc.problems)
    else:  # pragma: no cover - every round drops a field; the spec has finitely many
        raise UsageError(f"{source}: could not build a spec that renders on {framework}")

    first = launch_effective(fw, rendered.native)
    target = adopt_read_back(fw, target, first, notes)
    native = fw.unconsumed(argv, target, first)
    for _ in range(_MAX_ROUNDS):
        if native:
            data["spec"]["native"] = {fw.FRAMEWORK: native}
        job = validate_data(data, source)
        rendered = render_native(job, framework, registry)
        got = launch_effective(fw, rendered.native)
        fixes = fw.fixups(target, got)
        if not fixes:
            break
        native = [*native, *fixes]
    text = to_yaml(data, header)
    job = load_job_text(text, [], source)
    final = launch_effective(fw, render_native(job, framework, registry).native)
    left = differences(target, final)
    if left:
        raise UsageError(
            f"{source}: no RLJob spec renders the same {fw.FRAMEWORK} {version} run; it would change "
            + ", ".join(f"{k} ({_shown(target.values, k)} -> {_shown(final.values, k)})" for k in left[:5])
        )
    return Imported(text=text, job=job, target=target, notes=tuple(notes))


def _shown(values: Mapping[str, Any], key: str) -> str:
    return quote(values[key]) if key in values else "absent"


def launch_fields(fw: LaunchImporter, target: Effective, version: str) -> Mapping[str, Any]:
    """The spec fields of ``target``; an importer that tells what the launch itself sets from the framework's
    defaults (``FIELDS_TAKE_SOURCES``: verl writes ``offload: false`` for a launch's explicit
    ``param_offload=False`` rather than leave the item to spec.native) gets the sources too."""
    if getattr(fw, "FIELDS_TAKE_SOURCES", False):
        found: Mapping[str, Any] = fw.fields(target.values, version, sources=target.sources)  # type: ignore[call-arg]
        return found
    return fw.fields(target.values, version)


def launch_prefix(fw: LaunchImporter, argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Spec fields (and notes) from the words before the framework's arguments: the module's optional
    ``prefix(argv)`` (OpenRLHF: ``ray job submit``'s runtime env), else the interpreter when it is not python3."""
    prefix = getattr(fw, "prefix", None)
    if prefix is not None:
        found: tuple[dict[str, Any], list[str]] = prefix(argv)
        return found
    # the interpreter the launch names, unless the framework picks it itself (NeMo-RL: ``uv run``)
    interpreter = getattr(fw, "INTERPRETER", "python3")
    return (
        {"spec.runtime.python": argv[0]} if interpreter is not None and argv[0] != interpreter else {}
    ), []


def _parent(path: str) -> str:
    # never the whole spec: a problem there is the spec's, not a field's to leave to native items
    return path.rsplit(".", 1)[0] if path.count(".") > 1 else path


def adopt_read_back(
    fw: LaunchImporter, target: Effective, rendered: Effective, notes: list[str]
) -> Effective:
    """``target`` with the keys rladapt sets so that it can read the run's metrics back (``FrameworkAdapter.READ_BACK_KEYS``:
    the TensorBoard backend and its directory) taken from ``rendered``: they change where a run logs, not what it
    trains, and the imported spec renders them like any other launch of rladapt (DESIGN.md)."""
    values = dict(target.values)
    for key, now in rendered.values.items():
        was = values.get(key)
        if (key in values and same(was, now)) or not read_back_only(target.framework, key, was, now):
            continue
        values[key] = now
        notes.append(
            f"{key}: {_shown_value(now)} instead of {_shown_value(was)}, so that `rladapt metrics` reads the "
            "run's TensorBoard events back"
        )
    return Effective(target.framework, target.version, values, dict(target.sources))


def _shown_value(value: Any) -> str:
    return "unset" if value is None else repr(value)


def differences(a: Effective, b: Effective) -> list[str]:
    """The keys whose values differ, except where rladapt reads the metrics back from (``read_back_only``)."""
    keys = list(dict.fromkeys([*a.values, *b.values]))
    return [
        k
        for k in keys
        if ((k in a.values) != (k in b.values) or not same(a.values.get(k), b.values.get(k)))
        and not read_back_only(a.framework, k, a.values.get(k), b.values.get(k))
    ]


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value written twice (a stand-in train and val list) is written out, never as &id001


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    # rladapt's spec loader reads ${a.b} as a reference to a spec field; a native value's ${...} is the
    # framework's own interpolation, kept literal with the loader's escape (rladapt.primitives._interpolation)
    return dumper.represent_str(value.replace("${", "\\${"))


_Dumper.add_representer(str, _str)


def to_yaml(data: dict[str, Any], header: str) -> str:
    head = "".join(f"# {one_line(line)}\n" for line in header.splitlines())
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    return head + body


def problems_text(problems: list[Problem]) -> str:
    return "; ".join(str(p) for p in problems)
