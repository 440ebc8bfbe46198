"""One namespace for plugin authors: every type a hook or a contract method takes or returns is importable from
``rladapt.plugins``, and the names that moved into the contract are the same objects under their old imports."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Literal

import pytest
from packaging.version import Version

import rladapt.plugins as plugins
from rladapt.plugins import hookspecs

#: Names from outside rladapt a contract annotation may use (the standard library's, packaging's).
FOREIGN: dict[str, object] = {
    "Any": Any,
    "Callable": Callable,
    "ClassVar": ClassVar,
    "Iterable": Iterable,
    "Iterator": Iterator,
    "Literal": Literal,
    "Mapping": Mapping,
    "ModuleType": ModuleType,
    "Path": Path,
    "re": re,
    "Sequence": Sequence,
    "Traversable": Traversable,
    "Version": Version,
}
HOOKS = sorted(name for name in vars(hookspecs) if name.startswith("rladapt_"))
#: What a plugin subclasses or builds, and what it hands back from a method.
CONTRACT = (
    plugins.FrameworkAdapter,
    plugins.Launcher,
    plugins.Patch,
    plugins.Signature,
    plugins.MetricMap,
    plugins.NativeLaunch,
    plugins.CheckpointScan,
)


def _hints(function: Callable[..., object]) -> dict[str, object]:
    """The function's annotations resolved against ``rladapt.plugins`` alone (plus foreign names): a name that
    is not exported from there is a NameError naming it."""
    exported = {name: getattr(plugins, name) for name in plugins.__all__}  # loaded on first use: resolve each
    return typing.get_type_hints(function, globalns={**FOREIGN, **exported})


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_type_is_exported(hook: str) -> None:
    assert _hints(getattr(hookspecs, hook))


@pytest.mark.parametrize("cls", CONTRACT, ids=lambda c: c.__name__)
def test_every_contract_method_type_is_exported(cls: type) -> None:
    methods = [
        member
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("__") and getattr(member, "__module__", "").startswith("rladapt.plugins")
    ]
    assert methods
    for method in methods:
        _hints(method)


def test_all_lists_every_export() -> None:
    for (
        name
    ) in plugins.__all__:  # each resolves (the names load on first use): the module's globals then hold it
        getattr(plugins, name)
    public = {
        name
        for name in vars(plugins)
        if not name.startswith("_") and not inspect.ismodule(vars(plugins)[name])
    }
    assert set(plugins.__all__) == public - {"annotations"}


def test_the_moved_names_are_the_same_objects_under_their_old_imports() -> None:
    from rladapt import metrics, triage
    from rladapt.metrics import mapping, names
    from rladapt.triage import signature

    assert triage.Signature is signature.Signature is plugins.Signature
    assert triage.Found is plugins.Found and triage.Detail is plugins.Detail
    for name in ("MetricMap", "Logged", "Absent"):
        assert getattr(mapping, name) is getattr(metrics, name) is getattr(plugins, name)
    for name in ("NAMES", "NEUTRAL", "BY_NAME", "Neutral"):
        assert getattr(names, name) is getattr(metrics, name) is getattr(plugins, name)


def test_the_registry_module_is_reached_through_the_public_face() -> None:
    from rladapt.plugins import registry

    for name in registry.__all__:
        assert getattr(plugins, name) is getattr(registry, name), name
