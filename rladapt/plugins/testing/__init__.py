"""The conformance kit for plugin authors: pytest classes to subclass, and every check as a plain function.

    from rladapt.plugins.testing import AdapterConformance, LauncherConformance, PatchConformance

    class TestMyAdapter(AdapterConformance):
        framework = "my-framework"               # as registered by the installed plugin (entry points)
        specs = ["tests/specs/my-job.yaml"]      # relative to pytest's rootdir, or RLJob objects

    class TestMyLauncher(LauncherConformance):
        launcher = "my-launcher"
        framework = "verl"                       # turns the specs into native launches
        specs = ["tests/specs/my-job.yaml"]
        options = {"queue": "gpu"}               # options the launcher needs to render

    class TestMyPatches(PatchConformance):
        plugin = "my-plugin"                     # every patch the plugin registers (or `patches = [ids]`)

Installing rladapt also installs the kit's pytest plugin (entry point ``pytest11``), whose fixtures
``rladapt_registry`` and ``rladapt_registry_factory`` load plugins the way ``rladapt`` does. The plain functions
(``check_adapter``, ``check_launcher``, ``check_patch``, ``check_signature``...) return a list of failures, for other test runners;
importing this package does not import pytest.
"""

from __future__ import annotations

from .checks import (
    check_adapter,
    check_declaration,
    check_launcher,
    check_launcher_declaration,
    check_native,
    check_patch,
    check_patches,
    check_runtime_patches,
    check_signature,
    check_translate,
    check_unknown_option,
    declared_options,
    load_specs,
    render_case,
    translate_case,
)
from .conformance import AdapterConformance, LauncherConformance, PatchConformance
from .fields import PROBES, FieldProbe, check_fields_reach
from .host import Registry, RegistryFactory, host_registry

__all__ = [
    "PROBES",
    "AdapterConformance",
    "FieldProbe",
    "LauncherConformance",
    "PatchConformance",
    "Registry",
    "RegistryFactory",
    "check_adapter",
    "check_declaration",
    "check_fields_reach",
    "check_launcher",
    "check_launcher_declaration",
    "check_native",
    "check_patch",
    "check_patches",
    "check_runtime_patches",
    "check_signature",
    "check_translate",
    "check_unknown_option",
    "declared_options",
    "host_registry",
    "load_specs",
    "render_case",
    "translate_case",
]
