"""Import every training launch of each pinned release, render it, and judge the render with upstream's own loader.

    python scripts/import_ledger.py --repo volcengine/verl=GITDIR --repo OpenRLHF/OpenRLHF=GITDIR \\
        --repo NVIDIA-NeMo/RL=GITDIR [--framework verl] [--tag v0.6.1] [-o DIR] [--check]

GITDIR is a (bare) clone of the repository; without ``--repo`` the repository is cloned from GitHub into
``.cache/import-ledger/`` (the whole-field ledger needs the network; the pytest sample does not). For each pinned
version of the compat matrix the tag ``v<version>`` is read (``git archive``) into a temporary tree and every
training launch of it is judged (``judge``):

- verl: every ``*.sh`` that launches ``verl.trainer.main_ppo`` or an experimental trainer;
- OpenRLHF: every ``examples/scripts/train_*.sh`` that runs ``openrlhf.cli.train_ppo_ray`` (the PPO family);
- NeMo-RL: every GRPO/DAPO config under ``examples/configs`` (recipes included), run as upstream runs it.

A launch is read as ``rladapt import`` reads it, imported (``build``), its spec loaded and rendered, and then both
the launch and the render are handed to the tag's OWN loader: verl's Hydra composition of the tag's config tree
(``@hydra.main`` of the entry module, ``--config-path``/``--config-name``), OpenRLHF's argparse parser of the tag's
``openrlhf/cli/train_ppo_ray.py``, NeMo-RL's ``nemo_rl/utils/config.py`` (``load_config`` with its ``defaults:``
chain, ``parse_hydra_overrides``). The entry point (verl, OpenRLHF module; NeMo-RL run script) is compared too.
Each row is **exact**, **refused** (one reason of ``REASONS``: a capability rladapt cannot express, or a launch
upstream itself rejects), **wrong** (the first difference) or **error** (the message): the last two are bugs.

A ledger holds paths, outcomes and counts only (derived data; nothing of the checkouts is copied). ``--check``
compares with the committed ledgers (tests/importing/fixtures/import_ledger_*.tsv) and fails (exit 1) on a launch
whose outcome got worse (exact > refused > wrong, error) or that is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "importing" / "fixtures"

#: The repository of each framework (the ledger rows name it with the tag).
REPOS = {"verl": "volcengine/verl", "openrlhf": "OpenRLHF/OpenRLHF", "nemo-rl": "NVIDIA-NeMo/RL"}
#: Which files are training launches: the file pattern, and the text a launch file must contain.
FIELD: dict[str, tuple[str, re.Pattern[str]]] = {
    "verl": (
        "**/*.sh",
        re.compile(r"-m\s+verl\.(trainer\.main_ppo|experimental\.[A-Za-z0-9_.]*main[A-Za-z0-9_]*)\b"),
    ),
    "openrlhf": ("examples/scripts/train_*.sh", re.compile(r"-m\s+openrlhf\.cli\.train_ppo_ray\b")),
    "nemo-rl": ("examples/configs/**/*.yaml", re.compile(r"^(grpo|policy|loss_fn|defaults)\s*:", re.M)),
}
#: What a caller sets that every upstream script reads: as the script-reader ledger, HOME only.
CALLER = {"HOME": "/home/user"}
#: A variable the caller of a script may set, which the ledger then gives as a caller who sets nothing would.
_ASKED = re.compile(r"(?:variable (\w+)|argument \$(\d+)) cannot be resolved")
_MAX_ASKED = 24
#: Launches per framework in the pytest sample.
SAMPLE_SIZE = 10

#: The documented refusals: code -> (why rladapt cannot express it, patterns of the messages that say so). A
#: refusal whose message matches none is an **error** (a bug), never a refusal.
REASONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "upstream-rejects": (
        "the tag's own loader rejects the launch itself (a key or flag that version does not have): there is no "
        "run to reproduce",
        (r"^upstream: ",),
    ),
    "not-a-trainer-rladapt-maps": (
        "the launch runs an entry point rladapt has no adapter mapping for (an experimental or recipe trainer "
        "whose keys are not the main trainer's)",
        (r"not a module rladapt import reads", r"found in it$"),
    ),
    "empty-number": (
        "the launch leaves a key verl reads as a number empty (a variable of the caller's environment without a "
        "default, as trainer.n_gpus_per_node=$ARNOLD_WORKER_GPU): verl composes '' and fails on it, so there is "
        "no run to reproduce until the caller gives the value",
        (r"empty \(a variable its caller did not set\?\)",),
    ),
    "runtime-only-value": (
        "the launch's values are decided only when the script runs (a command's output, the machine's GPU "
        "count, a file the script reads): a spec holds values, not commands",
        (r"cannot be resolved without running the script",),
    ),
}


@dataclass
class Row:
    """One launch of the field and what became of it."""

    path: str
    outcome: str  # exact | refused | wrong | error
    detail: str = ""
    settings: int = 0  # settings the launch sets (keys of its effective config it gives, not defaults)
    native: int = 0  # of them, items in spec.native.<framework>
    given: tuple[str, ...] = ()  # what the ledger gave the script as its caller (--set / --unset)

    def line(self) -> str:
        return "\t".join(
            [self.path, self.outcome, self.detail, str(self.settings), str(self.native), " ".join(self.given)]
        )


RANK = {"exact": 3, "refused": 2, "wrong": 1, "error": 1}


# --- upstream loaders ------------------------------------------------------------------------------------------


class Rejected(Exception):
    """Upstream's own loader rejects a launch."""


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(node, dict) and node:
        for key, value in node.items():
            out.update(_flat(value, f"{prefix}{key}."))
    else:
        out[prefix[:-1]] = node
    return out


def _leaves(cfg: Any) -> dict[str, Any]:
    """The leaves of an OmegaConf config, each interpolation resolved where it resolves offline (a custom
    resolver registered only when the framework runs leaves it as written, on both sides alike)."""
    from omegaconf import OmegaConf

    raw = _flat(OmegaConf.to_container(cfg, resolve=False))
    out = {}
    for key, value in raw.items():
        # a list holding an interpolation (``seed: ${grpo.seed}`` in a block of NeMo-RL's data.train list) is
        # resolved as a whole: what the framework reads is the resolved list
        if (isinstance(value, str) and "${" in value) or (isinstance(value, list) and "${" in repr(value)):
            with contextlib.suppress(Exception):
                found = OmegaConf.select(cfg, key, throw_on_resolution_failure=True)
                value = OmegaConf.to_container(found, resolve=True) if OmegaConf.is_config(found) else found
        out[key] = value
    return out


def _module_of(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The ``-m MODULE`` of a launch and the arguments after it."""
    for i, word in enumerate(argv[:-1]):
        if word == "-m":
            return argv[i + 1], list(argv[i + 2 :])
    raise Rejected(f"no `-m MODULE` in {shlex.join(argv)[:120]}")


def verl_upstream(
    tree: Path, argv: Sequence[str], version: str, files: Mapping[str, str] | None = None
) -> tuple[str, dict[str, Any]]:
    """verl's composed config of a launch: Hydra's ``compose`` of the config folder and name the entry module's
    ``@hydra.main`` names (or the launch's ``--config-path``/``--config-name``), with the launch's overrides.
    ``tree`` holds the module's file (a checkout, or an unpacked wheel). ``hydra.*`` overrides are Hydra's own
    output settings (not part of the composed config) and left out."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    module, args = _module_of(argv)
    source = tree / (module.replace(".", "/") + ".py")
    if not source.is_file():
        raise Rejected(f"{module}: no such module in the tree")
    main = re.search(r"@hydra\.main\(([^)]*)\)", source.read_text())
    if main is None:
        raise Rejected(f"{module}: no @hydra.main")
    declared = dict(re.findall(r"(config_path|config_name)\s*=\s*[\"']([^\"']*)[\"']", main.group(1)))
    path, name = declared.get("config_path", "config"), declared.get("config_name", "ppo_trainer")
    overrides: list[str] = []
    words = iter(args)
    for word in words:
        flag, eq, value = word.partition("=")
        if flag in ("--config-path", "-cp", "--config-name", "-cn"):
            value = value if eq else next(words, "")
            if flag in ("--config-path", "-cp"):
                path = value
            else:
                name = value
        elif not re.match(r"^[+~]*hydra[./]", word):
            overrides.append(word)
    # Hydra resolves a relative config path against the entry module's folder; scripts run from the checkout's
    # root also give one relative to it
    found = [p for p in (source.parent / path, tree / path, Path(path)) if p.is_dir()]
    if not found:
        raise Rejected(f"--config-path {path}: no such folder beside {module} or in the tree")
    GlobalHydra.instance().clear()
    here = os.getcwd()
    # a script's own config folder names verl's with ``hydra.searchpath: [file://verl/trainer/config]``, a path
    # relative to where the launch runs: the checkout's root
    os.chdir(tree)
    try:
        with initialize_config_dir(config_dir=str(found[0].resolve()), version_base=None):
            cfg = compose(config_name=name, overrides=overrides)
    except Exception as exc:
        raise Rejected(_one_line(exc)) from None
    finally:
        GlobalHydra.instance().clear()
        os.chdir(here)
    return module, _leaves(cfg)


@cache
def _openrlhf_parser(source: str) -> Any:
    from rladapt.adapters.openrlhf.parser import build_parser

    return build_parser(source, "openrlhf/cli/train_ppo_ray.py")


_CLOCK = re.compile(r"_\d{4}T\d\d:\d\d$")


def openrlhf_upstream(
    tree: Path, argv: Sequence[str], version: str, files: Mapping[str, str] | None = None
) -> tuple[str, dict[str, Any]]:
    """OpenRLHF's namespace of a launch: the tag's own ``train_ppo_ray.py`` parser (built from its source, as the
    conformance suite does), every unknown argument a rejection as in ``parse_args``."""
    from rladapt.adapters.openrlhf.adjust import adjust
    from rladapt.adapters.openrlhf.parser import parse

    module, args = _module_of(argv)
    parser = _openrlhf_parser((tree / "openrlhf/cli/train_ppo_ray.py").read_text())
    result = parse(parser, args)
    if result.error is not None:
        raise Rejected(result.error)
    if result.unknown:
        raise Rejected(f"unrecognized arguments: {' '.join(result.unknown)}")
    namespace = vars(result.namespace)
    values: dict[str, Any] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if action.dest not in namespace or not longs:
            continue
        if action.dest in {k.lstrip("-").replace("-", "_") for k in values} or "no_" in longs[0]:
            continue  # --x and --no_x share one attribute: keyed once, by the positive flag
        value = namespace[action.dest]
        # the run name OpenRLHF takes from the clock when none is given (``%m%dT%H:%M``) is no value before the
        # run: rladapt's `same` lets such a computed default equal any name, and so does the ledger
        values[longs[0]] = (
            "<computed: the clock>" if isinstance(value, str) and _CLOCK.search(value) else value
        )
    # the rewrites of train_ppo_ray's __main__ block after parse_args (rladapt's reading of them, per version)
    adjust(values, version)
    return module, values


def _nemo_loader(tree: Path) -> Any:
    """The tag's ``nemo_rl/utils/config.py`` (it imports only omegaconf and hydra), loaded on its own."""
    path = tree / "nemo_rl" / "utils" / "config.py"
    spec = importlib.util.spec_from_file_location(f"_nemo_config_{abs(hash(str(tree)))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nemo_rl_upstream(
    tree: Path, argv: Sequence[str], version: str, files: Mapping[str, str] | None = None
) -> tuple[str, dict[str, Any]]:
    """NeMo-RL's config of a launch as its run script builds it: ``load_config(--config)``, then
    ``parse_hydra_overrides`` (examples/run_grpo*.py and nemo_rl/utils/config.py at the tag); run from ``tree``.
    ``files`` are the configs a render generates, written into the tree for the loader to read."""
    script = next((w for w in argv if re.search(r"run_\w+\.py$", w)), None)
    if script is None:
        raise Rejected(f"no run script in {shlex.join(argv)[:120]}")
    args = list(argv[list(argv).index(script) + 1 :])
    config = os.path.join(os.path.dirname(script), "configs", "grpo_math_1B.yaml")
    if args[:1] == ["--config"]:
        config, args = args[1], args[2:]
    elif args and args[0].startswith("--config="):
        config, args = args[0].split("=", 1)[1], args[1:]
    written = []
    here = os.getcwd()
    os.chdir(tree)
    try:
        for rel, text in (files or {}).items():
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            written.append(target)
        if not (tree / "nemo_rl" / "utils" / "config.py").is_file():
            # a tree of configs only (the offline sample: NeMo-RL has no release on PyPI): rladapt's own reading
            # of the defaults chain and overrides stands in for the tag's loader
            from rladapt.adapters.nemo_rl.effective import nemo_rl_effective
            from rladapt.primitives import UsageError

            try:
                return os.path.normpath(script), nemo_rl_effective(version, config, args, files=files).values
            except UsageError as exc:
                raise Rejected(_one_line(exc)) from None
        loader = _nemo_loader(tree)
        try:
            cfg = loader.load_config(config)
            if args:
                cfg = loader.parse_hydra_overrides(cfg, args)
        except Exception as exc:
            raise Rejected(_one_line(exc)) from None
        with _nemo_resolvers(loader):
            return os.path.normpath(script), _leaves(cfg)
    finally:
        for target in written:
            target.unlink()
        os.chdir(here)


@contextlib.contextmanager
def _nemo_resolvers(loader: Any) -> Iterator[None]:
    """The resolvers the run script registers before it resolves the config: ``register_omegaconf_resolvers``
    of the tag's config.py (0.6.0 on: ``mul``, ``div``, ``max``), else the ``mul`` each run_grpo*.py registers
    itself (0.2.1 to 0.5.0); removed after, so that no verl config resolves with them."""
    from omegaconf import OmegaConf

    before = {name for name in ("mul", "div", "max") if OmegaConf.has_resolver(name)}
    register = getattr(loader, "register_omegaconf_resolvers", None)
    if register is not None:
        register()
    elif not OmegaConf.has_resolver("mul"):
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)
    try:
        yield
    finally:
        for name in ("mul", "div", "max"):
            if name not in before and OmegaConf.has_resolver(name):
                OmegaConf.clear_resolver(name)


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its type, then its message with the lines joined (a SpecError's problems)."""
    text = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}"[:400]


def nemo_rl_run_script(tree: Path, config: str) -> str:
    """The script upstream runs a config with: the example script that loads it by default
    (``run_grpo_sliding_puzzle.py``), else the one its test-suite script runs (recipes), else the one of the
    nearest config it extends (``defaults:``: a ``vlm_grpo_3B.yaml`` variant is run_vlm_grpo.py's), else
    ``run_grpo.py`` (``run_grpo_math.py`` before it existed)."""
    import yaml

    todo, seen = [tree / config], set()
    while todo:
        path = todo.pop(0).resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        for script in sorted((tree / "examples").glob("run_*.py")):
            if re.search(r"[\"']configs[\"']\s*,\s*[\"']" + re.escape(path.name), script.read_text()):
                return f"examples/{script.name}"
        for suite in (tree / "tests" / "test_suites").glob(f"**/{path.stem}.sh"):
            found = re.search(r"examples/(run_\w+\.py)", suite.read_text())
            if found:
                return f"examples/{found.group(1)}"
        parents = (yaml.safe_load(path.read_text()) or {}).get("defaults")
        todo += [path.parent / p for p in ([parents] if isinstance(parents, str) else parents or [])]
    return (
        "examples/run_grpo.py"
        if (tree / "examples" / "run_grpo.py").is_file()
        else "examples/run_grpo_math.py"
    )


UPSTREAM: dict[
    str, Callable[[Path, Sequence[str], str, Mapping[str, str] | None], tuple[str, dict[str, Any]]]
] = {
    "verl": verl_upstream,
    "openrlhf": openrlhf_upstream,
    "nemo-rl": nemo_rl_upstream,
}


# --- judging one launch ----------------------------------------------------------------------------------------


@dataclass
class Launch:
    """A launch as read: its argv and exported environment, or why it could not be read."""

    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    given: tuple[str, ...] = ()
    problem: str | None = None
    #: NeMo-RL: the script upstream runs the config with (default: found in the tree, ``nemo_rl_run_script``)
    script: str | None = None


def read(framework: str, version: str, tree: Path, path: str, given: Sequence[str] = ()) -> Launch:
    """The launch in ``path`` as ``rladapt import`` reads it from ``tree``'s root, a caller giving what the reader
    asks for: ``--unset VAR`` for a variable of the caller's environment (the script's defaults decide), else
    ``--set VAR=`` a stand-in (recorded in the row, as a user would give it)."""
    here = os.getcwd()
    os.chdir(tree)  # a NeMo-RL config's defaults: chain is read from the checkout's root, as NeMo-RL reads it
    try:
        return _read(framework, version, tree, path, given)
    finally:
        os.chdir(here)


def _read(framework: str, version: str, tree: Path, path: str, first: Sequence[str] = ()) -> Launch:
    from rladapt.importing.importer import framework_importer, read_native
    from rladapt.importing.script import parse_sets, read_launch
    from rladapt.primitives import UsageError

    fw = framework_importer(framework)
    text = (tree / path).read_text(errors="replace")
    given: list[str] = list(first)
    for _ in range(_MAX_ASKED):
        sets = [f"{k}={v}" for k, v in CALLER.items()] + [g[6:] for g in given if g.startswith("--set ")]
        unsets = [g[8:] for g in given if g.startswith("--unset ")]
        try:
            if framework == "nemo-rl":
                launch = read_native(fw, text, path, parse_sets(sets, unsets), version)
            else:  # as the script-reader ledger: run from the checkout's root, $(pwd) is "." (no machine path),
                # except for verl, whose scripts name their own config folder as "$(pwd)/examples/.../config":
                # Hydra joins a relative --config-path to the entry module's folder, so it must be the real,
                # absolute root (the rows and the sample name paths inside the checkout only: ``_inside``)
                here = str(tree) if framework == "verl" else "."
                launch = read_launch(text, path, fw.match, parse_sets(sets, unsets), fw.EXAMPLE, cwd=here)
        except UsageError as exc:
            message = str(exc).splitlines()[0]
            asked = _ASKED.search(message)
            if asked is None:
                if message.endswith("found in it"):
                    modules = sorted(set(re.findall(r"-m\s+([A-Za-z0-9_.]+)", text)))
                    message += f" (it runs {', '.join(modules)}: not a module rladapt import reads)"
                return Launch(given=tuple(given), problem=message)
            name = asked.group(1) or asked.group(2)
            item = (
                f"--unset {name}" if f"--unset {name}" in message else f"--set {name}=caller-{name.lower()}"
            )
            if item in given or any(g.startswith(f"--set {name}=") for g in given):
                return Launch(given=tuple(given), problem=message)
            given.append(item)
            continue
        except Exception as exc:
            return Launch(given=tuple(given), problem=f"internal error: {_one_line(exc)}")
        return Launch(tuple(launch.argv), dict(launch.env or {}), tuple(given))
    return Launch(given=tuple(given), problem=f"the script asks for more than {_MAX_ASKED} variables")


#: A stand-in the framework refuses for its type names the variable it came from: ``found trainer.nnodes=
#: caller-nnodes`` where a number is expected. A user told so gives a number; the ledger gives this one.
_TYPED_STANDIN = re.compile(r"takes an integer[^|]*found [\w.+]+=caller-([\w-]+)")


def numeric_standin(row: Row) -> str | None:
    """The ``--set VAR=N`` that replaces a refused text stand-in of ``row`` (a count: 8 GPUs per node, else
    1), or None."""
    found = _TYPED_STANDIN.search(row.detail)
    if found is None:
        return None
    for item in row.given:
        name, _, value = item.removeprefix("--set ").partition("=")
        if item.startswith("--set ") and value == f"caller-{found.group(1)}":
            return f"--set {name}={8 if 'GPU' in name.upper() else 1}"
    return None


def classify(message: str) -> tuple[str, str]:
    """``refused`` with a documented reason, else ``error``: a message no reason covers is a bug."""
    for code, (_, patterns) in REASONS.items():
        if any(re.search(p, message) for p in patterns):
            return "refused", f"{code}: {message}"
    return "error", message


def _shown(values: Mapping[str, Any], key: str) -> str:
    return repr(values[key]) if key in values else "absent"


def first_difference(framework: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """The first key whose value differs between upstream's reading of the launch (``a``) and of its render
    (``b``). Where rladapt reads the metrics back from, adding a sink is no change (a TensorBoard backend next to
    the launch's own, a log directory the launch leaves unset); moving one the launch chose is."""
    from rladapt.plugins import get_registry
    from rladapt.plugins.effective import same

    read_back = get_registry().framework(framework).READ_BACK_KEYS
    one_or_list: tuple[str, ...] = ()
    if framework == "verl":
        # keys verl's own code reads as a one-item list when given one string (adapters/verl/effective.py cites
        # where): the render writing the list form of the launch's string is the same run
        from rladapt.adapters.verl.effective import ONE_OR_LIST as one_or_list
    for key in dict.fromkeys([*a, *b]):
        if key in a and key in b and same(a[key], b[key]):
            continue
        if key in one_or_list and key in a and key in b and same(_as_list(a[key]), _as_list(b[key])):
            continue
        was, now = a.get(key), b.get(key)
        if key in read_back or key.lstrip("-") in {k.lstrip("-") for k in read_back}:
            if (
                isinstance(was, list)
                and isinstance(now, list)
                and {*was} - {"tensorboard"} == {*now} - {"tensorboard"}
            ):
                continue
            if was in (None, False, "") or (
                isinstance(was, str) and "tensorboard" in str(now) and "," not in was
            ):
                continue
        return f"{key} ({_shown(a, key)} -> {_shown(b, key)})"
    return None


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else list(value) if isinstance(value, tuple) else value


def judge(framework: str, version: str, tree: Path, path: str, launch: Launch | None = None) -> Row:
    """One launch of ``tree`` (a checkout, or any tree holding what its loader needs) imported, rendered, and
    compared by the tag's own loader."""
    from rladapt.importing.importer import build, framework_importer
    from rladapt.pipeline import render_native
    from rladapt.plugins import get_registry
    from rladapt.plugins.effective import derived
    from rladapt.primitives import SpecError, UsageError, load_job_text

    registry = get_registry()
    fw = framework_importer(framework)
    if launch is None:
        launch = read(framework, version, tree, path)
    row = Row(path, "error", given=launch.given)
    if launch.problem is not None:
        row.outcome, row.detail = classify(launch.problem)
        return row
    argv = list(launch.argv)
    here = os.getcwd()
    try:
        if framework == "nemo-rl":
            config = argv[argv.index("--config") + 1]
            script = launch.script or nemo_rl_run_script(tree, config)
            argv[: argv.index("--config")] = ["uv", "run", "python", script]
        try:
            entry, want = UPSTREAM[framework](tree, argv, version, None)
        except Rejected as exc:
            row.outcome, row.detail = classify(f"upstream: {exc}")
            return row
        os.chdir(tree)  # paths in a launch are relative to the checkout, as upstream's READMEs run them
        try:
            imported = build(fw, version, list(launch.argv), source=path, registry=registry, env=launch.env)
            job = load_job_text(imported.text, [], path)
            native = render_native(job, f"{framework}=={version}", registry).native
        except UsageError as exc:
            row.outcome, row.detail = classify(_one_line(exc).removeprefix("UsageError: "))
            return row
        except SpecError as exc:  # the importer wrote a spec its own validation (or the render) refuses
            row.outcome, row.detail = "error", "invalid spec: " + _one_line(exc).removeprefix("SpecError: ")
            return row
        finally:
            os.chdir(here)
        row.settings = sum(1 for source in imported.target.sources.values() if not derived(source))
        row.native = len(job.spec.native.get(framework, ()))
        try:
            got_entry, got = UPSTREAM[framework](tree, list(native.argv), version, native.files)
        except Rejected as exc:
            row.outcome, row.detail = "wrong", f"upstream rejects the render: {exc}"
            return row
        if got_entry != entry:
            row.outcome, row.detail = "wrong", f"entry point ({entry} -> {got_entry})"
            return row
        difference = first_difference(framework, want, got)
        if difference is not None:
            row.outcome, row.detail = "wrong", difference
            return row
        row.outcome = "exact"
        return row
    except Exception as exc:  # the ledger's point is to find these: record, never stop
        os.chdir(here)
        row.outcome, row.detail = "error", f"internal error: {_one_line(exc)}"
        return row


# --- the field -------------------------------------------------------------------------------------------------


def field_of(framework: str, tree: Path) -> list[str]:
    pattern, marker = FIELD[framework]
    found = []
    for p in sorted(tree.glob(pattern)):
        rel = str(p.relative_to(tree))
        if not p.is_file():
            continue
        if framework == "nemo-rl" and not re.search(r"(grpo|dapo)", p.name, re.I):
            continue  # GRPO and DAPO configs only (SFT, DPO, distillation, RM configs train no policy by RL)
        if marker.search(p.read_text(errors="replace")):
            found.append(rel)
    return found


@contextlib.contextmanager
def checkout(gitdir: Path, tag: str) -> Iterator[Path]:
    """The tree of ``tag`` (``git archive``) in a temporary folder."""
    data = subprocess.run(
        ["git", "--git-dir", str(gitdir), "archive", "--format=tar", tag], check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory(prefix="rladapt-ledger-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp)


def has_tag(gitdir: Path, tag: str) -> bool:
    found = subprocess.run(
        ["git", "--git-dir", str(gitdir), "rev-parse", "--verify", "-q", f"refs/tags/{tag}^{{commit}}"],
        capture_output=True,
    )
    return found.returncode == 0


def ledger_text(framework: str, repo: str, tag: str, version: str, rows: list[Row]) -> str:
    counts = Counter(r.outcome for r in rows)
    reasons = Counter(r.detail.split(":", 1)[0] for r in rows if r.outcome == "refused")
    settings = sum(r.settings for r in rows if r.outcome == "exact")
    native = sum(r.native for r in rows if r.outcome == "exact")
    share = f"{100 * native / settings:.1f}%" if settings else "n/a"
    lines = [
        f"# Import ledger: {framework} {version} launches of {repo}@{tag}",
        "# (derived data: path, outcome, detail, settings the launch sets, of them in spec.native, what the caller "
        "gave; regenerate with scripts/import_ledger.py)",
        f"# exact {counts['exact']} refused {counts['refused']} wrong {counts['wrong']} error {counts['error']} "
        f"of {len(rows)}",
        "# refused by reason: " + (", ".join(f"{k} {n}" for k, n in sorted(reasons.items())) or "none"),
        f"# in spec.native (exact launches): {native} of {settings} settings ({share})",
        *(r.line() for r in rows),
    ]
    return "\n".join(lines) + "\n"


def parse_ledger(text: str) -> dict[str, tuple[str, str]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split("\t")
        out[parts[0]] = (parts[1], parts[2])
    return out


def restate(ledger: str) -> str:
    """``ledger`` with its refusals and errors classified again by the current ``REASONS`` (no re-run: the
    messages are in the rows), and its figures recounted."""
    lines = ledger.splitlines()
    head = re.match(r"# Import ledger: (\S+) (\S+) launches of (\S+)@(\S+)$", lines[0])
    assert head is not None, f"not an import ledger: {lines[0]!r}"
    rows = []
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        path, outcome, detail, settings, native, given = line.split("\t")
        if outcome == "refused":
            detail = detail.split(": ", 1)[1]
        if outcome in ("refused", "error"):
            outcome, detail = classify(detail)
        rows.append(
            Row(path, outcome, detail, int(settings), int(native), tuple(given.split(" --")) if given else ())
        )
    for row in rows:  # the given items were joined with spaces: "--set A=1 --unset B"
        row.given = tuple(g if g.startswith("--") else "--" + g for g in row.given)
    framework, version, repo, tag = head.groups()
    return ledger_text(framework, repo, tag, version, rows)


def regressions(ledger: str, rows: Sequence[Row]) -> list[str]:
    """The launches whose outcome got worse against ``ledger`` (exact > refused > wrong, error), or are gone."""
    now = {r.path: r for r in rows}
    worse = []
    for path, (outcome, _) in parse_ledger(ledger).items():
        got = now.get(path)
        if got is None:
            worse.append(f"{path}: {outcome} before, not in the field now")
        elif RANK[got.outcome] < RANK[outcome]:
            worse.append(f"{path}: {outcome} before, now {got.outcome}: {got.detail}")
    return worse


def ledger_path(framework: str, tag: str) -> Path:
    return FIXTURES / f"import_ledger_{framework}_{tag}.tsv"


def gitdir_of(repo: str, given: Mapping[str, str]) -> Path:
    if repo in given:
        return Path(given[repo])
    cache_dir = ROOT / ".cache" / "import-ledger" / repo.replace("/", "+")
    if not cache_dir.exists():
        try:
            subprocess.run(
                ["git", "clone", "--bare", "-q", f"https://github.com/{repo}", str(cache_dir)],
                check=True,
                timeout=1800,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise SystemExit(f"{repo}: cannot clone from GitHub ({exc}); give --repo {repo}=GITDIR") from None
    return cache_dir


def main(argv: list[str] | None = None) -> int:
    from rladapt import compat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", action="append", choices=sorted(REPOS), help="default: all three")
    parser.add_argument("--tag", action="append", help="only these tags (v<pinned version>)")
    parser.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=GITDIR")
    parser.add_argument("--output", "-o", type=Path, help="write the ledgers into this folder")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a launch got worse than in the committed ledger"
    )
    parser.add_argument("--sample", type=Path, help="write the pytest sample (JSON) of the launches judged")
    parser.add_argument(
        "--restate",
        nargs="+",
        type=Path,
        metavar="LEDGER",
        help="classify the refusals and errors of these ledgers again by the current reasons (no re-run)",
    )
    opts = parser.parse_args(argv)
    if opts.restate:
        for path in opts.restate:
            path.write_text(restate(path.read_text()))
        return 0
    given = dict(item.split("=", 1) for item in opts.repo)
    worse: list[str] = []
    sampled: list[dict[str, Any]] = []
    for framework in opts.framework or list(REPOS):
        repo = REPOS[framework]
        gitdir = gitdir_of(repo, given)
        for entry in compat.pinned(framework):
            tag = f"v{entry.version}"
            if opts.tag and tag not in opts.tag:
                continue
            if not has_tag(gitdir, tag):
                print(f"{framework} {tag}: not in {repo}'s clone ({gitdir}); skipped", file=sys.stderr)
                continue
            with checkout(gitdir, tag) as tree:
                rows = []
                for path in field_of(framework, tree):
                    launch = read(framework, entry.version, tree, path)
                    if framework == "nemo-rl" and launch.problem is None:
                        launch.script = nemo_rl_run_script(tree, path)
                    row = judge(framework, entry.version, tree, path, launch)
                    for _ in range(_MAX_ASKED):
                        number = numeric_standin(row)
                        if number is None:
                            break
                        kept = [g for g in row.given if not g.startswith(number.split("=")[0] + "=")]
                        launch = read(framework, entry.version, tree, path, [*kept, number])
                        row = judge(framework, entry.version, tree, path, launch)
                    # a message may name the temporary checkout: the ledger names paths inside it only
                    row.detail = row.detail.replace(f"{tree}/", "").replace(str(tree), ".")
                    rows.append(row)
                    print(
                        f"{framework} {tag} {path}: {rows[-1].outcome} {rows[-1].detail[:160]}",
                        file=sys.stderr,
                    )
                    if offline(framework, launch):
                        sampled.append(
                            {
                                "framework": framework,
                                "version": entry.version,
                                "source": f"{repo}@{tag}",
                                "path": path,
                                "argv": [_inside(a, tree) for a in launch.argv],
                                "env": {k: _inside(v, tree) for k, v in launch.env.items()},
                                "script": launch.script,
                                "outcome": rows[-1].outcome,
                            }
                        )
            text = ledger_text(framework, repo, tag, entry.version, rows)
            print(text.splitlines()[2], file=sys.stderr)
            if opts.output:
                opts.output.mkdir(parents=True, exist_ok=True)
                (opts.output / ledger_path(framework, tag).name).write_text(text)
            if opts.check:
                committed = ledger_path(framework, tag)
                if committed.is_file():
                    worse += [f"{framework} {tag} {w}" for w in regressions(committed.read_text(), rows)]
    if opts.sample:
        write_sample(opts.sample, sampled, opts.framework or list(REPOS))
    for line in worse:
        print(line, file=sys.stderr)
    return 1 if worse else 0


def _inside(text: str, tree: Path) -> str:
    """``text`` with the temporary checkout's path written as the checkout's root, ``.``."""
    return text.replace(f"{tree}/", "./").replace(str(tree), ".")


#: NeMo-RL configs the offline sample can judge: the tag folders of the shared fixtures hold these only.
_NEMO_OFFLINE = {
    f"examples/configs/grpo_math_{size}{kind}.yaml" for size in ("1B", "8B") for kind in ("", "_megatron")
}


def offline(framework: str, launch: Launch) -> bool:
    """Whether a launch can be judged without the checkout: by the real wheel's config tree or parser (verl's
    main_ppo on the wheel's own config folder, OpenRLHF), or NeMo-RL's example configs kept as test fixtures."""
    if launch.problem is not None:
        return False
    if framework == "nemo-rl":
        return (
            launch.argv[launch.argv.index("--config") + 1] in _NEMO_OFFLINE
            if "--config" in launch.argv
            else False
        )
    words = " ".join(launch.argv)
    if framework == "verl":
        return (
            "-m verl.trainer.main_ppo" in words and "--config-path" not in words and "-cp" not in launch.argv
        )
    return True


def write_sample(path: Path, sampled: list[dict[str, Any]], frameworks: Sequence[str]) -> None:
    """The fixed sample of the pytest run: per framework, SAMPLE_SIZE launches spread evenly over the field (the
    launch as the reader read it: derived data, with its source), kept beside the other frameworks' ones."""
    import json

    old = json.loads(path.read_text())["cases"] if path.is_file() else []
    cases = [c for c in old if c["framework"] not in frameworks]
    for framework in frameworks:
        mine = [c for c in sampled if c["framework"] == framework]
        step = max(1, len(mine) / SAMPLE_SIZE)
        cases += [mine[int(i * step)] for i in range(min(SAMPLE_SIZE, len(mine)))]
    data = {
        "about": "launches of upstream releases as rladapt's script reader reads them (derived data; source: "
        "the repository at the tag) and the outcome scripts/import_ledger.py gave each; tests/importing/"
        "test_import_ledger.py judges them offline against the real wheels",
        "cases": cases,
    }
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
