"""The optional adapter contract methods, as rladapt itself uses them: the plugin found through its entry point.

``rladapt render --explain`` (the real command, in its own process) shows echo-rl's own defaults from the plugin's
snapshot, every render is checked against that snapshot, and ``rladapt matrix snapshot`` generates one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.pipeline import render_native
from rladapt.plugins.testing import Registry
from rladapt.primitives import SpecError, load_job, load_job_text

SPEC = Path(__file__).parent / "specs" / "echo-grpo.yaml"


def rladapt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_render_explain_shows_the_frameworks_own_defaults() -> None:
    done = rladapt("render", "-f", "echo-rl==1.1.0", "--explain", "--format", "json", str(SPEC))
    assert done.returncode == 0, done.stderr
    keys = {k["key"]: k for k in json.loads(done.stdout)["keys"]}
    # a key the spec set: its value, where it came from, and echo-rl 1.1.0's own default beside it
    assert keys["samples_per_prompt"]["value"] == 4
    assert keys["samples_per_prompt"]["origin"] == "spec.algorithm.group_size"
    assert keys["samples_per_prompt"]["framework_default"] == 8
    # a key the spec leaves to echo-rl (framework_default_keys), with its default in that version's snapshot
    assert keys["warmup_steps"]["source"] == "framework" and keys["warmup_steps"]["value"] == 20


def test_explain_reads_each_versions_own_snapshot() -> None:
    done = rladapt("render", "-f", "echo-rl==1.0.0", "--explain", "--format", "json", str(SPEC))
    assert done.returncode == 0, done.stderr
    keys = {k["key"]: k for k in json.loads(done.stdout)["keys"]}
    assert keys["warmup_steps"]["value"] == 10


def test_its_snapshot_is_found_through_the_registry(rladapt_registry: Registry) -> None:
    adapter = rladapt_registry.framework("echo-rl")
    assert adapter.snapshot_versions() == ["1.0.0", "1.1.0"]
    snap = adapter.find_snapshot("1.1.0")
    assert snap is not None and snap.default("warmup_steps") == 20
    assert adapter.versions_having("async_rollout", "1.0.0") == ["1.1.0"]


def test_every_render_is_checked_against_the_snapshot(rladapt_registry: Registry) -> None:
    text = SPEC.read_text() + "  native:\n    echo-rl: [warmup_step=5, batch_size=many]\n"
    with pytest.raises(SpecError) as caught:
        render_native(load_job_text(text, []), "echo-rl==1.1.0", rladapt_registry)
    messages = " | ".join(p.message for p in caught.value.problems)
    assert "warmup_step" in messages and "batch_size" in messages, messages
    ok = SPEC.read_text() + "  native:\n    echo-rl: [warmup_steps=5]\n"
    native = render_native(load_job_text(ok, []), "echo-rl==1.1.0", rladapt_registry).native
    assert json.loads(native.files["echo-rl.json"])["warmup_steps"] == 5


def test_a_key_of_a_later_version_names_it(rladapt_registry: Registry) -> None:
    text = SPEC.read_text() + "  native:\n    echo-rl: [async_rollout=true]\n"
    with pytest.raises(SpecError, match="1.1.0"):
        render_native(load_job_text(text, []), "echo-rl==1.0.0", rladapt_registry)


def test_matrix_snapshot_generates_one_from_a_release(tmp_path: Path) -> None:
    defaults = tmp_path / "defaults.json"
    defaults.write_text(json.dumps({"model": None, "lr": 1e-06, "warmup_steps": 30}))
    done = rladapt(
        "matrix", "snapshot", "-f", "echo-rl==1.2.0", "--source", str(defaults), "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "echo-rl" / "1.2.0.json").read_text())
    assert written["keys"]["warmup_steps"] == {"default": 30, "type": "int"}


def test_what_echo_rl_cannot_do_is_said_so(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python3 -m echo_rl.train --config echo-rl.json\n")
    done = rladapt("import", "-f", "echo-rl", str(script))
    assert done.returncode == 2 and "framework 'echo-rl' cannot import launches" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_rendered_config_loads(rladapt_registry: Registry) -> None:
    native = render_native(load_job(SPEC), "echo-rl==1.1.0", rladapt_registry).native
    assert json.loads(native.files["echo-rl.json"])["samples_per_prompt"] == 4
