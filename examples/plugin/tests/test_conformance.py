"""The example plugin's own tests: rladapt's conformance kit, through the pytest plugin that rladapt installs.

Run from this directory after installing the plugin (``pip install -e . pytest``): ``python -m pytest``. The
fixtures ``rladapt_registry`` and ``rladapt_registry_factory`` need no import; they load this plugin through its
entry point, exactly as ``rladapt`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Patch
from rladapt.plugins.testing import (
    AdapterConformance,
    LauncherConformance,
    PatchConformance,
    Registry,
    RegistryFactory,
)
from rladapt.primitives import SpecError, load_job, load_job_text

SPEC = Path(__file__).parent / "specs" / "echo-grpo.yaml"


def _quiet_logs(native: NativeLaunch, job: object) -> NativeLaunch:
    return native.with_env({"ECHO_RL_LOG_LEVEL": "warning"})


#: A patch as the plugin would register it (rladapt_register_patches), tested before it ships.
QUIET_LOGS = Patch(
    id="echo-rl-quiet-logs",
    framework="echo-rl",
    versions=">=1.1",
    issue="https://example.com/echo-rl/issues/12",
    summary="1.1 logs every sample at INFO; keep it to warnings",
    kind="env",
    apply=_quiet_logs,
)


class TestEchoRL(AdapterConformance):
    framework = "echo-rl"
    specs = [SPEC]


class TestLocalRunsEchoRL(LauncherConformance):
    """Every launch of echo-rl goes through the launchers too: the local one must render it purely."""

    launcher = "local"
    framework = "echo-rl"
    specs = [SPEC]


class TestEchoRLPatches(PatchConformance):
    patches = [QUIET_LOGS]


def test_loaded_from_its_entry_point(rladapt_registry: Registry) -> None:
    assert rladapt_registry.frameworks["echo-rl"].plugin == "example"
    assert not [b for b in rladapt_registry.broken if b.name == "example"]


def test_every_launch_gets_the_org_nccl_settings(rladapt_registry: Registry) -> None:
    native = render_native(load_job(SPEC), "echo-rl", rladapt_registry).native
    assert native.env["NCCL_DEBUG"] == "WARN" and native.env["NCCL_IB_HCA"] == "mlx5"


def test_a_job_without_a_team_is_refused(rladapt_registry: Registry) -> None:
    job = load_job_text(SPEC.read_text().replace("labels: {team: platform}", "labels: {}"), [])
    with pytest.raises(SpecError, match="metadata.labels.team"):
        render_native(job, "echo-rl", rladapt_registry)


def test_blocked_plugin_registers_nothing(rladapt_registry_factory: RegistryFactory) -> None:
    registry = rladapt_registry_factory(block=["example"])
    assert "echo-rl" not in registry.frameworks and "example" in registry.blocked


def test_a_patch_applies_from_its_version_on(rladapt_registry_factory: RegistryFactory) -> None:
    registry = rladapt_registry_factory(QUIET_LOGS)
    new = render_native(load_job(SPEC), "echo-rl==1.1.0", registry).native
    old = render_native(load_job(SPEC), "echo-rl==1.0.0", registry).native
    assert new.patches == ("echo-rl-quiet-logs",) and new.env["ECHO_RL_LOG_LEVEL"] == "warning"
    assert old.patches == () and "ECHO_RL_LOG_LEVEL" not in old.env
