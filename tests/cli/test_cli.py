"""The CLI as users run it: a real subprocess, real exit codes, messages on stderr, never a traceback."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from rladapt.primitives.loading import parse_yaml
from tests.conftest import EXAMPLES, REPO

GSM8K = str(REPO / "examples" / "grpo-gsm8k.yaml")


def rladapt(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def example_plugin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """examples/plugin installed for real (pip, entry points and all) into its own directory."""
    target = tmp_path_factory.mktemp("plugin-site")
    # pip builds in the source tree: a private copy keeps parallel workers from racing on its build/ folder
    source = tmp_path_factory.mktemp("plugin-src") / "plugin"
    shutil.copytree(
        REPO / "examples" / "plugin", source, ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        timeout=300,
    )
    return {"PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}


def test_version_and_help_on_every_verb() -> None:
    out = rladapt("--version")
    assert out.returncode == 0 and "rladapt, version" in out.stdout
    for verb in (
        "validate",
        "render",
        "launch",
        "schema",
        "plugins",
        "status",
        "logs",
        "stop",
        "runs",
        "matrix",
        "pin",
        "check",
    ):
        res = rladapt(verb, "--help")
        assert res.returncode == 0 and "Usage:" in res.stdout, (verb, res.stderr)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_validate_examples(path: Path) -> None:
    # The tiny example's files are in the repository; the others name data and rewards on a cluster.
    check = [] if path.name == "grpo-tiny-trl.yaml" else ["--no-path-check"]
    res = rladapt("validate", str(path), *check)
    assert res.returncode == 0, res.stderr
    assert "valid RLJob" in res.stdout


def test_schema_accepts_every_example_and_rejects_unknown_keys() -> None:
    res = rladapt("schema")
    assert res.returncode == 0
    schema = json.loads(res.stdout)
    validator = jsonschema.Draft202012Validator(schema)
    for path in EXAMPLES:  # parsed as YAML 1.2, like editors do (PyYAML's 1.1 reads 1e-6 as a string)
        errors = list(validator.iter_errors(parse_yaml(path.read_text(), path.name)))
        assert not errors, (path.name, [e.message for e in errors])
    bad = yaml.safe_load(EXAMPLES[0].read_text())
    bad["spec"]["trainig"] = {}
    assert list(validator.iter_errors(bad))


@pytest.mark.parametrize(
    ("content", "overrides", "message"),
    [
        ("spec: {model: [\n", [], "malformed YAML at line 2"),
        (None, ["spec.trainig.steps=3"], "spec.trainig: unknown key 'trainig' (did you mean 'training'?)"),
        (
            None,
            ["spec.training.global_batch=lots"],
            "spec.training.global_batch: wrong value; expected a valid integer",
        ),
        (
            None,
            ["spec.rollout.tensor_parallel=16"],
            "spec.rollout.tensor_parallel: larger than a node of pool",
        ),
        (None, ["spec.training"], "expected KEY=VALUE"),
    ],
    ids=["malformed", "unknown-key", "wrong-type", "impossible-placement", "bad-override"],
)
def test_bad_input_exit_2_with_message(
    tmp_path: Path, content: str | None, overrides: list[str], message: str
) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(content if content is not None else EXAMPLES[0].read_text())
    for verb in (
        ["validate"],
        ["render", "--framework", "verl"],
        ["launch", "--framework", "verl", "--dry-run"],
    ):
        res = rladapt(*verb, str(spec), *overrides)
        assert res.returncode == 2, (verb, res.stdout, res.stderr)
        assert message in res.stderr, (verb, res.stderr)
        assert "Traceback" not in res.stderr
        assert res.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.yaml"]  # nothing half-written


def test_missing_spec_and_unknown_framework_are_usage_errors(tmp_path: Path) -> None:
    res = rladapt("validate", str(tmp_path / "nope.yaml"))
    assert res.returncode == 2 and "does not exist" in res.stderr
    res = rladapt("render", "--framework", "verll", str(EXAMPLES[0]))
    assert res.returncode == 2 and "unknown framework 'verll' (did you mean 'verl'?)" in res.stderr
    res = rladapt("render", str(EXAMPLES[0]))
    assert res.returncode == 2 and "Missing option '--framework'" in res.stderr


def test_debug_shows_traceback_for_errors() -> None:
    res = rladapt("--debug", "render", "--framework", "nope", str(EXAMPLES[0]))
    assert res.returncode == 2 and "Traceback" in res.stderr


def test_debug_and_trace_env_print_every_hook_call(example_plugin: dict[str, str]) -> None:
    res = rladapt("--debug", "render", "-f", "verl", GSM8K)
    assert res.returncode == 0, res.stderr
    assert "rladapt: hook rladapt_register_frameworks [verl] -> ok" in res.stderr.splitlines()
    res = rladapt("render", "-f", "echo-rl", GSM8K, env={**example_plugin, "RLADAPT_TRACE_PLUGINS": "1"})
    assert res.returncode == 0, res.stderr
    trace = res.stderr.splitlines()
    assert "rladapt: hook rladapt_modify_native [example] -> ok" in trace
    assert "rladapt: hook rladapt_add_checks [example] -> ok" in trace
    res = rladapt("render", "-f", "verl", GSM8K)
    assert "rladapt: hook" not in res.stderr


def test_third_party_plugin_discovered_by_entry_point(example_plugin: dict[str, str], tmp_path: Path) -> None:
    res = rladapt("plugins", "--format", "json", env=example_plugin)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["frameworks"]["echo-rl"]["plugin"] == "example"
    assert [v["version"] for v in report["frameworks"]["echo-rl"]["versions"]] == ["1.0.0", "1.1.0"]
    # read from the plugin's own matrix.toml (package data), capabilities from its capabilities()
    assert report["frameworks"]["echo-rl"]["versions"][1]["tested_with"] == {"vllm": "0.8.5"}
    assert "rollout.async" not in report["frameworks"]["echo-rl"]["versions"][0]["capabilities"]

    res = rladapt("render", "--framework", "echo-rl", "--format", "json", GSM8K, env=example_plugin)
    assert res.returncode == 0, res.stderr
    native = json.loads(res.stdout)
    assert native["format"] == 2
    assert native["argv"] == ["python3", "-m", "echo_rl.train", "--config", "echo-rl.json"]
    assert json.loads(native["files"]["echo-rl.json"])["samples_per_prompt"] == 5
    assert native["env"]["NCCL_DEBUG"] == "WARN"  # the plugin's rladapt_modify_native policy ran

    # its preflight policy: a job without a team label is refused, with the field path
    unlabelled = tmp_path / "unlabelled.yaml"
    unlabelled.write_text(Path(GSM8K).read_text().replace("labels: {team: reasoning}", "labels: {}"))
    res = rladapt("render", "--framework", "echo-rl", str(unlabelled), env=example_plugin)
    assert res.returncode == 2 and "metadata.labels.team: org policy: every job names its team" in res.stderr

    # a capability the old version lacks names the version that has it
    res = rladapt("render", "--framework", "echo-rl==1.0.0", GSM8K, env=example_plugin)
    assert res.returncode == 2
    assert (
        "spec.rollout.mode: echo-rl 1.0.0 cannot express rollout.async (first supported in echo-rl 1.1.0)"
        in res.stderr
    )


def test_blocking_the_third_party_plugin(example_plugin: dict[str, str]) -> None:
    res = rladapt("plugins", "--format", "json", env={**example_plugin, "RLADAPT_BLOCK_PLUGINS": "example"})
    report = json.loads(res.stdout)
    assert "echo-rl" not in report["frameworks"] and report["blocked"] == ["example"]
    res = rladapt(
        "render", "--framework", "echo-rl", GSM8K, env={**example_plugin, "RLADAPT_BLOCK_PLUGINS": "example"}
    )
    assert res.returncode == 2 and "unknown framework 'echo-rl'" in res.stderr


def test_broken_third_party_plugin_does_not_break_others(tmp_path: Path) -> None:
    dist = tmp_path / "rladapt_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rladapt-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[rladapt]\nbroken = rladapt_broken_mod\n")
    (tmp_path / "rladapt_broken_mod.py").write_text("raise ImportError('needs a GPU driver')\n")
    env = {"PYTHONPATH": str(tmp_path)}
    res = rladapt("plugins", "--format", "json", env=env)
    assert res.returncode == 0
    report = json.loads(res.stdout)
    assert {"name": "broken", "error": "ImportError: needs a GPU driver"} in report["broken"]
    assert "verl" in report["frameworks"]
    res = rladapt("plugins", env=env)
    assert "broken plugin broken: ImportError: needs a GPU driver" in res.stdout


def test_render_errors_name_the_spec_file_and_launcher_sections_are_checked() -> None:
    res = rladapt("render", "-f", "verl", GSM8K, "spec.launcher.slrum.partition=gpu")
    assert res.returncode == 2
    assert f"error: {GSM8K}: 1 problem in the spec" in res.stderr
    assert "spec.launcher.slrum: no such launcher (did you mean 'slurm'?)" in res.stderr
    res = rladapt("render", "-f", "verl", GSM8K, "-o", "partition=gpu")
    assert res.returncode == 2 and "--launcher-opt needs --launcher" in res.stderr
    res = rladapt("render", "-f", "verl", GSM8K, "-l", "ray", "-o", "run_id=../../etc")
    assert res.returncode == 2 and "run_id is set by rladapt launch, not by hand" in res.stderr


def test_text_render_keeps_spec_values_inside_comments() -> None:
    res = rladapt("render", "-f", "verl", GSM8K, r'spec.checkpoint.dir="ck\ntouch pwned\n#"')
    assert res.returncode == 0, res.stderr
    assert "# checkpoints: ck\\ntouch pwned\\n# (resume: auto)" in res.stdout
    # in the command itself the value stays one shell-quoted word
    command = res.stdout[res.stdout.index("python3 -m verl") :]
    words = shlex.split(command.replace(" \\\n    ", " "))
    assert "trainer.default_local_dir='ck\ntouch pwned\n#'" in words


def test_validate_against_several_frameworks_reports_each_failure() -> None:
    spec = str(REPO / "examples" / "async-grpo-separate.yaml")
    res = rladapt("validate", spec, "--no-path-check", "-f", "verl", "-f", "openrlhf")
    assert res.returncode == 0, res.stderr
    assert f"{spec}: translates for verl 0.9.1" in res.stdout
    assert f"{spec}: translates for openrlhf 0.11.2" in res.stdout
    res = rladapt(
        "validate", spec, "--no-path-check", "-f", "verl==0.7.1", "-f", "openrlhf==0.7.5", "-f", "openrlhf"
    )
    assert res.returncode == 2
    assert "translates for openrlhf 0.11.2" in res.stdout  # a failure does not hide the others
    assert "verl 0.7.1 cannot express placement.separate (first supported in verl 0.8.0)" in res.stderr
    assert (
        "openrlhf 0.7.5 cannot express weight_sync.off_policy (first supported in openrlhf 0.8.11)"
        in res.stderr
    )
