"""The kit's pytest plugin, loaded by pytest from the ``pytest11`` entry point of every rladapt install.

Fixtures:

- ``rladapt_registry``: a fresh registry of the installed plugins, loaded as ``rladapt`` loads them (entry points
  of group ``rladapt``, then the built-ins), so registration, patches and policy hooks all run.
- ``rladapt_registry_factory(*plugins, block=())``: the same with more plugins registered next to the installed
  ones (plugin objects, ``(name, plugin)`` pairs, or adapter/launcher/patch objects, wrapped in a plugin named
  ``<name>-under-test``), and plugins blocked as ``RLADAPT_BLOCK_PLUGINS`` blocks them.

Disable it with ``-p no:rladapt``; do not also list it in ``pytest_plugins`` (pytest refuses a plugin twice).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from .host import BLOCK_ENV, Registry, RegistryFactory, host_registry


@pytest.fixture
def rladapt_registry_factory(monkeypatch: pytest.MonkeyPatch) -> RegistryFactory:
    def make(*plugins: object, block: Iterable[str] = ()) -> Registry:
        blocked = list(block)
        if blocked:
            monkeypatch.setenv(BLOCK_ENV, ",".join(blocked))
        return host_registry(*plugins)

    return make


@pytest.fixture
def rladapt_registry(rladapt_registry_factory: RegistryFactory) -> Registry:
    return rladapt_registry_factory()
