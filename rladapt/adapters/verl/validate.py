"""Check a verl NativeLaunch against verl's REAL Hydra config of the same version.

verl is never imported (its ``__init__`` pulls torch, ray, tensordict): the package is located with
``importlib.util.find_spec`` or ``RLADAPT_VERL_CONFIG_DIR`` and its YAML tree is composed with Hydra, an optional
dependency (extra ``verl``) imported lazily. Without a matching verl (or Hydra) there is nothing to check against
and the result is empty.
"""

from __future__ import annotations

import importlib.util
import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rladapt.primitives.errors import Problem, UsageError

from .effective import ONE_OR_LIST
from .entrypoints import ENGINE_GROUP, MAIN_MODULE, engine_scope
from .ownconfig import OwnConfig, config_file, read_own_config
from .translate import CONFIG_DIRS, CONFIG_NAMES
from .versions import keys

if TYPE_CHECKING:
    from rladapt.compat.schema import KeySpec, Snapshot
    from rladapt.plugins.native import NativeLaunch

#: A verl package directory (the one holding ``trainer/config`` and ``version/version``) to validate against.
CONFIG_DIR_ENV = "RLADAPT_VERL_CONFIG_DIR"
_PKG_SEARCHPATH = "pkg://verl.trainer.config"
_MAX_PROBLEMS = 20


#: The config-group choice of one role's engine -> the role's key prefix (trainer/config/ppo_trainer.yaml defaults:
#: ``actor@actor_rollout_ref.actor``, ``ref@actor_rollout_ref.ref``, ``critic@critic``, the last overridden as
#: ``critic=...``: Hydra refuses "Could not override 'critic@critic'"; 0.7.1 to 0.9.1).
ROLE_GROUPS: dict[str, str] = {
    "actor@actor_rollout_ref.actor": "actor_rollout_ref.actor",
    "ref@actor_rollout_ref.ref": "actor_rollout_ref.ref",
    "critic": "critic",
}


@dataclass(frozen=True)
class Invocation:
    """The Hydra view of a verl argv: entry module, config name and overrides (in order); ``config_path`` the
    config folder the launch names (``--config-path``/``-cp``) when it is not the entry module's own (None:
    the module's packaged folder, ``CONFIG_DIRS``)."""

    module: str
    config_name: str
    overrides: tuple[str, ...]
    config_path: str | None = None

    @property
    def config_subdir(self) -> str:
        return CONFIG_DIRS[self.module]

    @property
    def engine(self) -> str | None:
        """The ``model_engine`` choice the overrides make (Hydra: the last one wins); None when they make none."""
        found = None
        for item in self.overrides:
            lhs, sep, rhs = item.partition("=")
            if sep and lhs.strip() == ENGINE_GROUP:
                found = rhs.strip().strip("'\"")
        return found

    def scope(self, scopes: Sequence[str]) -> str:
        """The snapshot scope this launch composes: its config, with its ``model_engine`` choice where that is
        another than the config's own (``ppo_trainer model_engine=megatron``)."""
        engine = self.engine
        if engine is not None and engine_scope(self.config_name, engine) in scopes:
            return engine_scope(self.config_name, engine)
        return self.config_name

    def role_engines(self) -> dict[str, str]:
        """Role key prefix -> the engine one role's own group choice gives it (``critic=megatron_critic``,
        ``ref@actor_rollout_ref.ref=megatron_ref``: Hydra composes that role from the engine's file while the
        others keep theirs; 0.9.1 trainer/config/{actor,ref,critic}/<engine>_<role>.yaml)."""
        out: dict[str, str] = {}
        for item in self.overrides:
            lhs, sep, rhs = item.partition("=")
            prefix = ROLE_GROUPS.get(lhs.strip())
            option = rhs.strip().strip("'\"")
            role = prefix.rpartition(".")[2] if prefix else ""
            if sep and prefix and option.endswith(f"_{role}"):
                out[prefix] = option[: -len(role) - 1]
        return out

    def key_scope(self, key: str, scopes: Sequence[str], own: str) -> str:
        """The scope ``key`` is judged in: ``own`` (``scope``), or for a key of a role with a group choice of
        its own, the config that composes that role with that engine (verl before 0.8.0 has no megatron
        ``model_engine``: its ppo_megatron_trainer)."""
        for prefix, engine in self.role_engines().items():
            if key == prefix or key.startswith(prefix + "."):
                if engine_scope(self.config_name, engine) in scopes:
                    return engine_scope(self.config_name, engine)
                megatron = CONFIG_NAMES.get(self.module, ("", ""))[1]
                if engine == "megatron" and megatron in scopes and megatron != self.config_name:
                    return megatron
        return own


#: Hydra's flags that name the primary config (hydra/_internal/utils.py get_args_parser, 1.3): name and folder.
_NAME_FLAGS = ("--config-name", "-cn")
_PATH_FLAGS = ("--config-path", "-cp")


def parse_argv(argv: Sequence[str]) -> Invocation:
    rest = list(argv)
    module = rest[rest.index("-m") + 1] if "-m" in rest else ""
    rest = rest[rest.index(module) + 1 :] if module in rest else rest[1:]
    name = CONFIG_NAMES.get(module, ("ppo_trainer", ""))[0]
    path: str | None = None
    overrides: list[str] = []
    i = 0
    while i < len(rest):
        item = rest[i]
        flag, sep, value = item.partition("=")
        if flag in (*_NAME_FLAGS, *_PATH_FLAGS):
            if not sep:  # the value is the next word (argparse's ``--config-name NAME``)
                if i + 1 >= len(rest):
                    overrides.append(item)
                    break
                value, i = rest[i + 1], i + 1
            if flag in _NAME_FLAGS:
                # Hydra adds ``.yaml`` to a name without it, so ``NAME.yaml`` is the same config
                # (hydra/plugins/config_source.py ConfigSource._normalize_file_name, 1.3)
                name = value.removesuffix(".yaml")
            else:
                path = value
        else:
            overrides.append(item)
        i += 1
    return Invocation(module, name, tuple(overrides), own_config_path(module, path))


def own_config_path(module: str, path: str | None) -> str | None:
    """``path`` (a ``--config-path``), or None where it names the entry module's own packaged folder: Hydra
    resolves a relative config path against the folder of the file that declares ``@hydra.main`` (the entry
    module's: ``python -m`` runs it as ``__main__``, so hydra/_internal/utils.py
    detect_calling_file_or_module_from_task_function gives its file and compute_search_path_dir joins the path
    to that file's folder, Hydra 1.3), so ``config`` or ``./config`` beside ``verl/trainer/main_ppo.py`` is
    ``verl/trainer/config``, the folder verl's ``@hydra.main(config_path="config")`` names itself."""
    if path is None or module not in CONFIG_DIRS or os.path.isabs(path) or path.startswith("pkg://"):
        return path
    here = posixpath.dirname(module.replace(".", "/"))
    found = posixpath.normpath(posixpath.join(here, path.replace(os.sep, "/")))
    return None if found == posixpath.normpath("verl/" + CONFIG_DIRS[module]) else path


def on_packaged(invocation: Invocation) -> Invocation | None:
    """``invocation`` with a launch's own config file (``--config-path``) replaced by the packaged config it builds
    on (``ownconfig``), to judge keys against; None when that file cannot be read here (nothing to judge by)."""
    found = own_config_of(invocation)
    if found is None:
        return invocation if invocation.config_path is None else None
    return Invocation(invocation.module, found.base, invocation.overrides)


def own_config_of(invocation: Invocation) -> OwnConfig | None:
    """The launch's own config file as composed (``ownconfig``); None without one or where it cannot be read."""
    if invocation.config_path is None or not invocation.config_path.startswith("/"):
        return None
    try:
        return read_own_config(
            config_file(invocation.config_path, invocation.config_name),
            CONFIG_NAMES.get(invocation.module, ()),
        )
    except UsageError:
        return None


def engine_form(invocation: Invocation, version: str) -> Invocation:
    """``invocation`` as ppo_trainer with ``model_engine=megatron`` where it names the deprecated
    ppo_megatron_trainer of verl 0.8.0+, which is exactly that: ``defaults: [ppo_trainer, override model_engine:
    megatron, _self_]`` and nothing else (0.8.0 and 0.9.1 trainer/config/ppo_megatron_trainer.yaml). A later
    ``model_engine=X`` of the launch still wins, as it does over the file's override. Else ``invocation`` itself.
    """
    default, megatron = CONFIG_NAMES[MAIN_MODULE]
    if invocation.module != MAIN_MODULE or invocation.config_name != megatron:
        return invocation
    if not keys(version).megatron_by_engine_choice:
        return invocation
    return Invocation(
        invocation.module,
        default,
        (f"{ENGINE_GROUP}=megatron", *invocation.overrides),
        invocation.config_path,
    )


def package_version(package_dir: Path) -> str | None:
    try:
        return (package_dir / "version" / "version").read_text(encoding="utf-8").strip()
    except OSError:
        return None


def find_package_dir() -> Path | None:
    """The verl package directory to validate against: ``RLADAPT_VERL_CONFIG_DIR``, else an installed verl."""
    configured = os.environ.get(CONFIG_DIR_ENV)
    if configured:
        path = Path(configured)
        if (path / "ppo_trainer.yaml").is_file():  # pointed at verl/trainer/config itself
            path = path.parent.parent
        return path if (path / "trainer" / "config").is_dir() else None
    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)))
    return path if (path / "trainer" / "config").is_dir() else None


def compose(package_dir: Path, invocation: Invocation, overrides: Sequence[str] | None = None) -> Any:
    """Compose verl's config for ``invocation`` from ``package_dir`` (raises Hydra's exceptions)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    items = list(invocation.overrides if overrides is None else overrides)
    # The experimental configs reach ppo_trainer through a search path; point it at this package's tree
    # (``pkg://verl...`` would import verl, and a CWD-relative ``file://`` depends on where we run).
    trainer_dir = f"file://{(package_dir / 'trainer' / 'config').resolve()}"
    items = [
        f"hydra.searchpath=[{trainer_dir}]"
        if item.startswith("hydra.searchpath=") and _PKG_SEARCHPATH in item
        else item
        for item in items
    ]
    folder = package_dir / invocation.config_subdir
    if invocation.config_path is not None:
        # a launch's own config folder: its file names verl's configs by a CWD-relative search path
        # (file://verl/trainer/config, a checkout's root); this package's tree is the same version's
        folder = Path(invocation.config_path)
        if not any(item.startswith("hydra.searchpath=") for item in items):
            items.append(f"hydra.searchpath=[{trainer_dir}]")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(folder.resolve()), version_base=None):
        return hydra_compose(config_name=invocation.config_name, overrides=items)


def allowed_missing(cfg: Any) -> set[str]:
    """MISSING keys verl itself leaves unset in a valid config (the reward-model engine when no RM is used)."""
    from omegaconf import OmegaConf

    allowed: set[str] = set()
    rm = OmegaConf.select(cfg, "reward.reward_model.enable", default=None)
    if not rm:
        allowed.add("reward.reward_model.rollout.name")
    return allowed


def _offending(exc: BaseException) -> str | None:
    for text in (str(exc), str(exc.__cause__ or "")):
        match = re.search(r"override '([^']+)'", text) or re.search(r"Error parsing override '([^']+)'", text)
        if match:
            return match.group(1)
    return None


def _where(native: NativeLaunch, key: str | None) -> tuple[str, str | None]:
    """The argv position of the rejected override (native.verl items are the last ones) and its text."""
    if key is None:
        return "verl", None
    for i, item in enumerate(native.argv):
        if item.split("=", 1)[0].lstrip("+~") == key.lstrip("+~"):
            if item in native.passthrough:  # the user's own escape-hatch override: blame the spec field
                return f"spec.native.verl[{native.passthrough.index(item)}]", item
            return f"verl argv[{i}]", item
    return f"verl: {key}", None


def validate(native: NativeLaunch, package_dir: Path) -> list[Problem]:
    """Every problem Hydra and the MISSING check find, removing rejected overrides one at a time."""
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    invocation = parse_argv(native.argv)
    if invocation.module not in CONFIG_DIRS:
        return [
            Problem(
                "verl argv", f"unknown verl entrypoint {invocation.module!r}", ", ".join(sorted(CONFIG_DIRS))
            )
        ]
    folder = Path(invocation.config_path or package_dir / invocation.config_subdir)
    if not (folder / f"{invocation.config_name}.yaml").is_file():
        return [
            Problem(
                "verl argv",
                f"verl {native.version} has no config {invocation.config_name!r} for {invocation.module}",
            )
        ]
    overrides = list(invocation.overrides)
    problems: list[Problem] = []
    cfg = None
    while len(problems) < _MAX_PROBLEMS:
        try:
            cfg = compose(package_dir, invocation, overrides)
            break
        except (HydraException, OmegaConfBaseException) as exc:
            key = _offending(exc)
            cause = str(exc.__cause__ or exc).splitlines()[0]
            where, item = _where(native, key)
            problems.append(
                Problem(where, f"verl {native.version} rejects {key or 'the config'}: {cause}", found=item)
            )
            dropped = [o for o in overrides if key is not None and o.split("=", 1)[0] == key.split("=", 1)[0]]
            if not dropped:
                break
            overrides = [o for o in overrides if o not in dropped]
    if cfg is None:
        return problems
    missing = set(OmegaConf.missing_keys(cfg)) - allowed_missing(cfg)
    problems.extend(
        Problem(f"verl: {key}", f"verl {native.version} needs a value for {key} (left ???)")
        for key in sorted(missing)
    )
    try:
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    except OmegaConfBaseException as exc:
        problems.append(
            Problem("verl", f"verl {native.version} cannot resolve the config: {str(exc).splitlines()[0]}")
        )
    return problems


def validate_native(native: NativeLaunch) -> list[Problem] | None:
    """Problems verl's own config finds; None when that verl version (or Hydra) is not available here."""
    package_dir = find_package_dir()
    if package_dir is None or package_version(package_dir) != native.version:
        return None
    if importlib.util.find_spec("hydra") is None:
        return None
    return validate(native, package_dir)


# --- the offline check against the bundled schema snapshot ---------------------------------------------------


def check_native(native: NativeLaunch) -> list[Problem] | None:
    """Every override of ``native`` against verl ``native.version``'s schema snapshot; None without a snapshot.

    Nothing of verl (or Hydra) is imported. Hydra's ``+key`` / ``++key`` may add a key the config lacks, so only
    their values are judged; ``~key`` must name an existing key. Overrides of Hydra itself (``hydra.*``) and of
    config groups (``group/option``) are not config keys and are left to the deep check.
    """
    from rladapt.compat.schema import NativeItem, Op, check
    from rladapt.compat.schema._values import UNKNOWN, hydra_value
    from rladapt.plugins.snapshots import find_snapshot, versions_having

    snap = find_snapshot("verl", native.version)
    if snap is None:
        return None
    given = parse_argv(native.argv)
    found = on_packaged(given)
    if found is None:
        return None
    invocation = found
    own = own_config_of(given)
    # keys the launch's own config file declares (beyond verl's packaged ones) are keys of the composed config
    declared = tuple(own.values) if own is not None else ()
    if invocation.module not in CONFIG_DIRS:
        return [
            Problem(
                "verl argv", f"unknown verl entrypoint {invocation.module!r}", ", ".join(sorted(CONFIG_DIRS))
            )
        ]
    if invocation.config_name not in snap.scopes:
        return [
            Problem(
                "verl argv",
                f"verl {native.version} has no config {invocation.config_name!r} for {invocation.module}",
                "one of " + ", ".join(snap.scopes),
            )
        ]
    problem = _engine_problem(snap, invocation, native)
    if problem is not None:
        return [problem]
    scope = invocation.scope(snap.scopes)
    items = []
    for item in invocation.overrides:
        lhs, sep, rhs = item.partition("=")
        key = lhs.lstrip("+~")
        if not key or key.startswith("hydra.") or "/" in key or "@" in key or lhs.strip() in ROLE_GROUPS:
            continue  # Hydra's own keys and config-group choices are not config keys
        if any(key == d or key.startswith(d + ".") or d.startswith(key + ".") for d in declared):
            continue  # declared by the launch's own config file: its value is that file's business
        op: Op = "delete" if lhs.startswith("~") else "add" if lhs.startswith("+") else "set"
        if item in native.passthrough:  # the user's own override: blame the spec entry
            where = f"spec.native.verl[{native.passthrough.index(item)}]"
        else:
            where = native.origins.get(key, f"verl argv: {key}")
        value = hydra_value(rhs) if sep else UNKNOWN
        if key in ONE_OR_LIST and isinstance(value, str):
            value = [value]  # verl reads one string as the list of it (effective.ONE_OR_LIST cites where)
        if item in native.passthrough:
            found_key = snap.lookup(key, invocation.key_scope(key, snap.scopes, scope))
            if found_key is not None and loader_takes(key, found_key[1], value):
                value = UNKNOWN  # what verl's own loading takes is not judged stricter than verl
        items.append(
            NativeItem(
                key=key,
                value=value,
                where=where,
                found=item,
                op=op,
                scope=invocation.key_scope(key, snap.scopes, scope),
            )
        )
    return check(snap, items, other_versions=lambda key: versions_having("verl", key, native.version))


#: Config nodes verl converts with OmegaConf's structured merge (``omega_conf_to_dataclass(..., dataclass_type=X)``),
#: which enforces the dataclass's field types: the model (HFModelConfig) and the profilers (ProfilerConfig),
#: verl 0.6.1 workers/fsdp_workers.py and megatron_workers.py. Every other node with a ``_target_`` is built by
#: ``hydra.utils.instantiate(config, _convert_="partial")`` (verl/utils/config.py, 0.5.0 and 0.6.1), which hands
#: the values to the dataclass unconverted, and a node without one stays an untyped OmegaConf node.
_TYPE_ENFORCED = ("actor_rollout_ref.model.",)
_TYPE_ENFORCED_PART = ".profiler."


def loader_takes(key: str, spec: KeySpec, value: Any) -> bool:
    """Whether verl loads and runs ``value`` for ``key`` although the snapshot's type is another: the check of a
    user's own ``spec.native.verl`` item is never stricter than verl itself.

    - ``''`` (Hydra's empty value, ``key=``: the composed config holds ``''``) on a bool: verl reads its flags by
      truthiness (verl 0.6.1 utils/dataset/rl_dataset.py ``if self.return_raw_chat:``, workers/actor/dp_actor.py
      ``if self.config.use_kl_loss:``), so it runs as false;
    - a bool on a number: Python's bool is an int (verl 0.6.1 trainer/ppo/ray_trainer.py
      ``self.config.trainer.test_freq > 0`` reads ``test_freq=False`` as 0), on a node that is not type-enforced;
    - null on a key verl declares only in YAML (an untyped OmegaConf node takes it): verl's own CI passes
      ``optim.lr_warmup_steps=null``, ``megatron.expert_tensor_parallel_size=null`` and
      ``custom_reward_function.name=null`` (verl 0.5.0 tests/special_e2e/run_ppo_trainer_megatron.sh and
      ppo_trainer/run_function_reward.sh).

    An empty value on a number is not taken: verl computes with it (0.6.1 trainer/main_ppo.py
    ``[config.trainer.n_gpus_per_node] * config.trainer.nnodes``), and the importer refuses it (``importer``).
    """
    from rladapt.compat.schema._values import UNKNOWN

    if value is UNKNOWN:
        return False
    names = set(spec.type.split("|"))
    enforced = key.startswith(_TYPE_ENFORCED) or _TYPE_ENFORCED_PART in f".{key}."
    if enforced:
        return False
    if value == "" and "bool" in names:
        return True
    if isinstance(value, bool) and names & {"int", "float"}:
        return True
    return value is None and spec.declared is None


def engine_choices(snap: Snapshot) -> list[str]:
    """The ``model_engine`` choices of a verl version's snapshot: the default one (``model_engine`` of
    ppo_trainer, the first scope) and every one a scope composes; empty before verl 0.7.1 (no such group)."""
    if ENGINE_GROUP not in snap.keys:
        return []
    found = {str(snap.default(ENGINE_GROUP))}
    for scope in snap.scopes:
        _, sep, choice = scope.partition(f" {ENGINE_GROUP}=")
        if sep:
            found.add(choice)
    return sorted(found)


def _engine_problem(snap: Snapshot, invocation: Invocation, native: NativeLaunch) -> Problem | None:
    """A ``model_engine`` choice the version does not ship (Hydra: "Could not find 'model_engine/X'")."""
    engine, choices = invocation.engine, engine_choices(snap)
    if engine is None or not choices or engine in choices:
        return None  # before 0.7.1 the key check names the versions that have model_engine
    item = next(o for o in reversed(invocation.overrides) if o.partition("=")[0].strip() == ENGINE_GROUP)
    where = (
        f"spec.native.verl[{native.passthrough.index(item)}]" if item in native.passthrough else "verl argv"
    )
    hint = " (Megatron before 0.8.0: --config-name ppo_megatron_trainer)" if engine == "megatron" else ""
    return Problem(
        where,
        f"verl {native.version} has no {ENGINE_GROUP} {engine!r}{hint}",
        expected="one of " + ", ".join(choices),
        found=item,
    )
