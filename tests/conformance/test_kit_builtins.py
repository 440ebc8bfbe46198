"""The conformance kit plugin authors use, run here against every built-in adapter on every example."""

from __future__ import annotations

import pytest

from rladapt.plugins._manager import BUILTIN_PLUGINS, load_registry
from rladapt.plugins.testing import check_adapter
from tests.conftest import EXAMPLES

REGISTRY = load_registry(use_entry_points=False)
FRAMEWORKS = sorted(n for n, r in REGISTRY.frameworks.items() if r.plugin in BUILTIN_PLUGINS)


def test_every_builtin_plugin_loads() -> None:
    assert REGISTRY.broken == []
    assert {"verl", "openrlhf", "nemo-rl"} <= set(FRAMEWORKS)
    assert {"local", "ray", "slurm", "kubernetes"} <= set(REGISTRY.launchers)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_builtin_adapter_is_conformant(framework: str) -> None:
    failures = check_adapter(REGISTRY.framework(framework), EXAMPLES)
    assert not failures, "\n".join(failures)
