"""What the neutral verbs ask of an adapter goes through FrameworkAdapter methods: the built-in adapters implement
them explicitly, an adapter without one is said to be unable, and the old sibling-module convention
(``<package>.checkpoints`` / ``<package>.metrics``) still serves a third-party adapter, with a DeprecationWarning."""

from __future__ import annotations

import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from rladapt.compat.generate import generate, generators
from rladapt.importing.importer import framework_importer, importers
from rladapt.plugins import (
    BUILTIN_PLUGINS,
    FrameworkAdapter,
    FrameworkVersion,
    NativeLaunch,
    Registry,
    RLJob,
    get_registry,
    load_registry,
)
from rladapt.plugins.snapshots import find_snapshot, snapshot_versions
from rladapt.primitives import UnsupportedError, UsageError

BUILT_IN = ("verl", "openrlhf", "nemo-rl", "trl")


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins=BUILTIN_PLUGINS, use_entry_points=False)


@pytest.mark.parametrize("name", BUILT_IN)
def test_built_in_adapters_answer_through_their_own_methods(registry: Registry, name: str) -> None:
    adapter = registry.framework(name)
    version = adapter.resolve_version(None).version
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error", DeprecationWarning
        )  # no sibling-module fallback for a built-in adapter
        assert isinstance(adapter.can_reshard, bool)
        assert adapter.metric_names(version) is not None
        assert adapter.snapshot_versions() and adapter.find_snapshot(version) is not None
    assert adapter.SNAPSHOT_SOURCE and adapter.SNAPSHOTS is not None


def test_the_import_readers_are_the_adapters(registry: Registry) -> None:
    assert list(importers(registry)) == ["verl", "openrlhf", "nemo-rl"]
    assert framework_importer("verl", registry).FRAMEWORK == "verl"
    with pytest.raises(UsageError, match="framework 'trl' cannot import launches"):
        framework_importer("trl", registry)


def test_snapshot_generators_are_the_adapters(registry: Registry) -> None:
    assert list(generators(registry)) == list(BUILT_IN)


class _Bare(FrameworkAdapter):
    """An adapter that implements only what it must."""

    PLUGIN_NAME = "bare"

    def versions(self) -> list[FrameworkVersion]:
        return [FrameworkVersion("1.0", frozenset())]

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        raise NotImplementedError


def test_an_adapter_without_the_optional_methods_cannot(tmp_path: Path) -> None:
    bare = _Bare()
    assert bare.snapshot_versions() == [] and bare.find_snapshot("1.0") is None
    assert bare.generate_snapshot("1.0", tmp_path) is None
    assert bare.launch_importer() is None and bare.explain_entries(None) is None  # type: ignore[arg-type]
    assert bare.scan_checkpoints(tmp_path, "1.0") is None and not bare.can_reshard
    with pytest.raises(UnsupportedError, match="bare declares no way to resume"):
        bare.plan_resume([], "1.0", None, None)  # type: ignore[arg-type]
    registry = load_registry(builtins={}, extra=[("bare", _plugin(bare))], use_entry_points=False)
    with pytest.raises(UsageError, match="framework 'bare' cannot generate schema snapshots"):
        generate("bare", "1.0", tmp_path, registry)
    with pytest.raises(UsageError, match="framework 'bare' cannot import launches"):
        framework_importer("bare", registry)


def test_lookups_by_name_of_no_adapter_find_nothing() -> None:
    get_registry()
    assert find_snapshot("no-such-framework", "1.0") is None and snapshot_versions("no-such-framework") == []


@pytest.fixture
def legacy_package(tmp_path: Path) -> Iterator[str]:
    """A third-party adapter package written against 0.2: checkpoints and metrics as sibling modules."""
    package = tmp_path / "legacy_adapter"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from rladapt.plugins import FrameworkAdapter, FrameworkVersion

            class LegacyAdapter(FrameworkAdapter):
                PLUGIN_NAME = "legacy"

                def versions(self):
                    return [FrameworkVersion("1.0", frozenset())]

                def translate(self, job, version):
                    raise NotImplementedError
            """
        )
    )
    (package / "checkpoints.py").write_text(
        "CAN_RESHARD = True\n\ndef scan(root, version):\n    return 'scanned'\n"
    )
    (package / "metrics.py").write_text("def names(version):\n    return 'mapped'\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield "legacy_adapter"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] == "legacy_adapter"]:
            del sys.modules[name]


def test_sibling_modules_still_serve_a_third_party_adapter_with_a_warning(
    legacy_package: str, tmp_path: Path
) -> None:
    module = __import__(legacy_package)
    adapter = module.LegacyAdapter()
    with pytest.warns(DeprecationWarning, match="legacy_adapter.checkpoints is deprecated"):
        assert adapter.can_reshard is True
    with pytest.warns(DeprecationWarning, match="legacy_adapter.checkpoints is deprecated"):
        assert adapter.scan_checkpoints(tmp_path, "1.0") == "scanned"
    with pytest.warns(DeprecationWarning, match="legacy_adapter.metrics is deprecated"):
        assert adapter.metric_names("1.0") == "mapped"


def _plugin(adapter: FrameworkAdapter) -> object:
    from rladapt.plugins import hookimpl

    class Plugin:
        @hookimpl
        def rladapt_register_frameworks(self) -> list[FrameworkAdapter]:
            return [adapter]

    return Plugin()
