"""NeMo-RL's effective configuration of a launch: the config after its ``defaults:`` chain, with the overrides
applied."""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rladapt.plugins.effective import CONFIG_FILE, INTERPOLATED, Effective, same
from rladapt.plugins.snapshots import snapshot
from rladapt.primitives.errors import UsageError, one_line, quote

#: The config NeMo-RL's GRPO scripts load without ``--config`` (``os.path.dirname(__file__)/configs/...``, in
#: examples/run_grpo*.py of every pinned tag); run_grpo_rm.py (0.4.0, 0.5.0) loads its own.
NEMO_DEFAULT_CONFIG = {"run_grpo_rm.py": "configs/grpo_rm_1B.yaml"}
_NEMO_BASE_NAME = "configs/grpo_math_1B.yaml"


def nemo_rl_effective(
    version: str,
    config: str,
    overrides: Sequence[str],
    sources: Sequence[str] | None = None,
    files: Mapping[str, str] | None = None,
) -> Effective:
    """NeMo-RL's config: ``config`` with its ``defaults:`` chain, then ``overrides`` (Hydra, in struct mode), then
    interpolations resolved: what examples/run_grpo*.py hands to ``setup()`` (``load_config``,
    ``parse_hydra_overrides``, ``OmegaConf.to_container(config, resolve=True)``; nemo_rl/utils/config.py and
    examples/run_grpo*.py at every pinned tag).

    A file is read from ``files`` (a render's generated config) or from the directory rladapt runs in, which must
    be a NeMo-RL checkout (paths in a launch are relative to it). A key's source is ``default`` when its value
    comes from the tag's ``examples/configs/grpo_math_1B.yaml``, else the config file or the override that set it.
    """
    from omegaconf import DictConfig, OmegaConf

    loaded = _NemoLoader(version, dict(files or {}))
    cfg = loaded.load(_norm(config), None, None)
    origin = dict(loaded.origin)
    try:
        OmegaConf.set_struct(cfg, True)
    except Exception as exc:  # pragma: no cover - a loaded mapping always takes struct mode
        raise UsageError(f"{config}: {one_line(str(exc))}") from None
    for i, item in enumerate(overrides):
        where = sources[i] if sources is not None else f"override {item}"
        deleted = _leaf_keys(cfg, item[1:].partition("=")[0].strip()) if item.startswith("~") else []
        key = _apply_override(cfg, item, where, version)
        below = key + "."
        for k in [k for k in origin if k == key or k.startswith(below)]:
            del origin[k]
        origin[key] = where
        origin.update(dict.fromkeys(deleted, where))  # a deleted section: each of its keys names the item
    raw = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(raw, dict) and isinstance(cfg, DictConfig)
    values: dict[str, Any] = {}
    out_origin: dict[str, str] = {}
    with _nemo_resolvers(version):
        resolved = {k: _resolve_leaf(cfg, k, v) for k, v in _nemo_leaves({str(k): v for k, v in raw.items()})}
    for key, value in _nemo_leaves({str(k): v for k, v in raw.items()}):
        values[key] = resolved[key]
        found = _nearest(origin, key)
        if found is not None:
            out_origin[key] = found
        elif _interpolated(value):
            out_origin[key] = INTERPOLATED + str(value)
    for key, where in origin.items():
        if key not in values and not any(k.startswith(key + ".") for k in values):
            out_origin[key] = where  # a deleted key: the item that deleted it
    return Effective("nemo-rl", version, values, out_origin)


@functools.lru_cache(maxsize=64)
def _parsed(path: str, text: str) -> Any:
    """``OmegaConf.load``'s reading of a config text (NeMo-RL loads with OmegaConf: its YAML, ``1e-6`` a float)."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.create(text) if text.strip() else OmegaConf.create({})
    except Exception as exc:
        raise UsageError(f"{path}: not a YAML config ({one_line(str(exc))})") from None


def _leaf_keys(cfg: Any, key: str) -> list[str]:
    """The leaf keys at and below ``key`` of the loaded config (none when it has no such key)."""
    from omegaconf import OmegaConf

    try:
        node = OmegaConf.select(cfg, key, throw_on_missing=False)
    except Exception:  # a key the grammar reader would refuse: the override itself reports it
        return []
    if not OmegaConf.is_config(node):
        return [key] if node is not None else []
    tree = OmegaConf.to_container(node, resolve=False)
    if isinstance(tree, dict) and tree:
        return [f"{key}.{k}" for k, _ in _nemo_leaves({str(k): v for k, v in tree.items()})]
    return [key]


def _norm(path: str) -> str:
    import posixpath

    return path if path.startswith("/") else posixpath.normpath(path)


def _nearest(origin: Mapping[str, str], key: str) -> str | None:
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        found = origin.get(".".join(parts[:i]))
        if found is not None:
            return found
    return None


def _interpolated(value: Any) -> bool:
    return "${" in repr(value)


def _nemo_leaves(tree: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.extend(_nemo_leaves(value, path + "."))
        else:
            out.append((path, value))
    return out


#: The OmegaConf resolvers NeMo-RL's GRPO scripts have when they resolve the config: ``mul``, registered at import
#: by examples/run_grpo*.py (0.4.0, 0.5.0), then ``mul``, ``div`` and ``max`` by
#: nemo_rl/utils/config.py register_omegaconf_resolvers (0.6.0, 0.7.0). 0.2.1's example config uses none.
_NEMO_RESOLVERS: dict[str, Any] = {
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: max(a, b),
}


@contextlib.contextmanager
def _nemo_resolvers(version: str) -> Iterator[None]:
    """NeMo-RL's resolvers of ``version`` while its config resolves; removed after, so no other framework's
    config (verl's) resolves with them."""
    from omegaconf import OmegaConf
    from packaging.version import Version

    names = ["mul", "div", "max"] if Version(version) >= Version("0.6.0") else ["mul"]
    added = [n for n in names if not OmegaConf.has_resolver(n)]
    register = _register_resolver()
    for name in added:
        register(name, _NEMO_RESOLVERS[name])
    try:
        yield
    finally:
        for name in added:
            OmegaConf.clear_resolver(name)


def _register_resolver() -> Any:
    """The installed OmegaConf's current way to register a resolver whose arguments are typed values.

    OmegaConf 2.1 to 2.3 spell it ``register_new_resolver`` (their ``register_resolver`` is the legacy one, whose
    arguments are strings, and warns); 2.4 renames it ``register_resolver`` and deprecates
    ``register_new_resolver`` with a UserWarning printed on every import. Picking by version keeps stderr clean on
    both without hiding any warning."""
    import omegaconf
    from omegaconf import OmegaConf
    from packaging.version import Version

    if Version(omegaconf.__version__) >= Version("2.4.0.dev0"):
        return OmegaConf.register_resolver
    return OmegaConf.register_new_resolver


def _resolve_leaf(cfg: Any, key: str, value: Any) -> Any:
    """The value with its interpolations resolved; as written where it does not resolve offline (a resolver the
    tag does not have: NeMo-RL itself would fail on it)."""
    if not _interpolated(value):
        return value
    from omegaconf import OmegaConf

    try:
        node = OmegaConf.select(cfg, key, throw_on_resolution_failure=True)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    except Exception:
        return value


def _apply_override(cfg: Any, item: str, where: str, version: str) -> str:
    """Apply one Hydra override as NeMo-RL's ``parse_hydra_overrides`` does (``OverridesParser`` then
    ``ConfigLoaderImpl._apply_overrides_to_config`` on the struct-mode config); returns the key it names.

    Hydra itself does it, one item at a time so a refusal names its item (the loop applies them in order
    anyway). ``_apply_overrides_to_config`` is the same in hydra-core 1.3.2, the newest NeMo-RL 0.6.0 and 0.7.0
    allow (``hydra-core>1.3,<=1.3.2`` in their pyproject.toml), and in the 1.3.8 rladapt installs."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides=[item])
        ConfigLoaderImpl._apply_overrides_to_config(overrides=parsed, cfg=cfg)
    except Exception as exc:
        message = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        raise UsageError(
            f"{where}: NeMo-RL {version}'s loader refuses {quote(item)} (parse_hydra_overrides): {message}"
        ) from None
    return str(parsed[0].key_or_group)


@dataclass
class _NemoLoader:
    """``load_config_with_inheritance`` of one tag: parents first, then the file; ``_override_`` (0.6.0+)."""

    version: str
    files: dict[str, str]
    origin: dict[str, str] = field(default_factory=dict)

    def load(self, path: str, base_dir: str | None, named_by: str | None) -> Any:
        import posixpath

        from omegaconf import DictConfig, ListConfig, OmegaConf
        from packaging.version import Version

        text = self._read(path, named_by)
        config = copy.deepcopy(
            _parsed(path, text)
        )  # merging and popping change it: the cache keeps the parse
        if not isinstance(config, DictConfig):
            raise UsageError(f"{path}: a NeMo-RL config must be a mapping, found {type(config).__name__}")
        own = base_dir if base_dir is not None else posixpath.dirname(path)
        # 0.6.0 resolves a parent's own defaults against the parent's directory; before, against the first file's
        # (nemo_rl/utils/config.py load_config_with_inheritance at v0.5.0 vs v0.6.0)
        nested_from_parent = Version(self.version) >= Version("0.6.0")
        mine = self._own_leaves(config, path)
        if "defaults" in config:
            defaults = config.pop("defaults")
            names = [str(d) for d in defaults] if isinstance(defaults, ListConfig) else [str(defaults)]
            base = OmegaConf.create({})
            for name in names:
                parent = name if name.startswith("/") else _norm(posixpath.join(own, name))
                parent_cfg = self.load(parent, None if nested_from_parent else own, path)
                base = self._merge(base, parent_cfg, path)
            config = self._merge(base, config, path)
        for key, source in mine.items():
            for k in [k for k in self.origin if k.startswith(key + ".")]:
                del self.origin[k]
            if source is not None:
                self.origin[key] = source
            else:
                self.origin.pop(key, None)
        return config

    def _merge(self, base: Any, child: Any, path: str) -> Any:
        from omegaconf import DictConfig, OmegaConf
        from omegaconf.errors import OmegaConfBaseException
        from packaging.version import Version

        if Version(self.version) >= Version("0.6.0"):
            # merge_with_override (nemo_rl/utils/config.py, 0.6.0+): a section marked _override_ replaces
            for key in list(child.keys()):
                node = child[key]
                if isinstance(node, DictConfig) and node.get("_override_", False):
                    node.pop("_override_")
                    if key in base:
                        base.pop(key)
                    for k in [k for k in self.origin if k == key or k.startswith(f"{key}.")]:
                        del self.origin[k]
        try:
            return OmegaConf.merge(base, child)
        except OmegaConfBaseException as exc:
            # upstream's load_config merges the same way and fails alike (a list where the parent has a mapping
            # needs the section's ``_override_: true`` from 0.6.0 on)
            raise UsageError(
                f"{path}: NeMo-RL {self.version} cannot merge it onto its defaults: {one_line(str(exc))}"
            ) from None

    def _own_leaves(self, config: Any, path: str) -> dict[str, str | None]:
        """Key -> the source of the values this file sets (None: the tag's own defaults file)."""
        from omegaconf import OmegaConf

        tree = OmegaConf.to_container(config, resolve=False)
        assert isinstance(tree, dict)
        tree.pop("defaults", None)
        source = None if self._is_base(path) else CONFIG_FILE + path
        leaves = _nemo_leaves({str(k): v for k, v in tree.items()})
        return {key: source for key, _ in leaves if not key.endswith("._override_")}

    def _is_base(self, path: str) -> bool:
        return path == "examples/" + _NEMO_BASE_NAME or path.endswith("/examples/" + _NEMO_BASE_NAME)

    def _read(self, path: str, named_by: str | None) -> str:
        from pathlib import Path

        if path in self.files:
            return self.files[path]
        where = f" (named by {named_by})" if named_by else ""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(
                f"{path}: no such NeMo-RL config{where}; NeMo-RL reads its configs from the checkout it runs in: "
                f"run rladapt from a NeMo-RL checkout of v{self.version}"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot be read{where} ({exc})") from None
        if self._is_base(path):
            self._check_tag(path, text)
        return text

    def _check_tag(self, path: str, text: str) -> None:
        _check_tag(self.version, path, text)


@functools.lru_cache(maxsize=16)
def _check_tag(version: str, path: str, text: str) -> None:
    """The checkout's grpo_math_1B.yaml must be the tag's (its snapshot's defaults): a checkout of another tag
    would give another run than -f nemo-rl==VERSION says."""
    import yaml

    snap = snapshot("nemo-rl", version)
    try:
        tree = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not YAML ({one_line(str(exc))})") from None
    if not isinstance(tree, dict):
        return  # the loader refuses it with its own message
    tree.pop("defaults", None)
    for key, value in _nemo_leaves(tree):
        spec = snap.get(key)
        if spec is not None and not spec.type.startswith("dict") and not same(spec.default, value):
            raise UsageError(
                f"{path} is not NeMo-RL {version}'s: {key} is {quote(value)} here and {quote(spec.default)} "
                f"at tag v{version}; run rladapt from a checkout of that tag"
            )
