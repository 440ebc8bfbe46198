"""``rladapt import`` and ``rladapt diff`` through the real CLI entry point (a subprocess per call)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """MODEL=${MODEL_PATH:-Qwen/Qwen2.5-0.5B-Instruct}
python3 -m verl.trainer.main_ppo \\
    data.train_files=$DATA/train.parquet \\
    actor_rollout_ref.model.path=$MODEL \\
    actor_rollout_ref.rollout.n=4 \\
    trainer.experiment_name=demo
"""


def rladapt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_import_writes_a_spec_that_diff_finds_equal(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    done = rladapt(
        "import", "-f", "verl==0.7.1", "run.sh", "--set", "DATA=/d", "-o", "job.yaml", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "job.yaml").read_text()
    assert text.startswith("# Imported by rladapt import from run.sh (line 2), verl 0.7.1.")
    assert "group_size: 4" in text
    same = rladapt(
        "diff", "job.yaml", "run.sh", "-f", "verl==0.7.1", "--set", "DATA=/d", "--exit-code", cwd=tmp_path
    )
    assert same.returncode == 0, same.stderr
    assert "same effective configuration" in same.stdout


def test_diff_lists_each_key_with_its_sources_and_exit_code(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text(SCRIPT)
    (tmp_path / "b.sh").write_text(SCRIPT.replace("rollout.n=4", "rollout.n=8"))
    common = ("-f", "verl==0.7.1", "--set", "DATA=/d")
    plain = rladapt("diff", "a.sh", "b.sh", *common, cwd=tmp_path)
    assert plain.returncode == 0  # without --exit-code a difference is not a failure
    assert "actor_rollout_ref.rollout.n\n  A: 4  (a.sh:2)\n  B: 8  (b.sh:2)" in plain.stdout
    failing = rladapt("diff", "a.sh", "b.sh", *common, "--exit-code", "--format", "json", cwd=tmp_path)
    assert failing.returncode == 1
    report = json.loads(failing.stdout)
    assert report["equal"] is False
    n = next(d for d in report["differences"] if d["key"] == "actor_rollout_ref.rollout.n")
    assert (n["a"]["value"], n["b"]["value"], n["a"]["source"]) == (4, 8, "a.sh:2")
    derived = next(d for d in report["differences"] if d["key"] == "actor_rollout_ref.actor.rollout_n")
    assert derived["a"]["source"].startswith("verl 0.7.1 default ${")


def test_an_unresolvable_variable_is_a_usage_error_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    done = rladapt("import", "-f", "verl==0.7.1", "run.sh", "-o", "job.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "run.sh:2: variable DATA cannot be resolved" in done.stderr
    assert "--set DATA=VALUE" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "job.yaml").exists()


def test_user_mistakes_exit_2_with_a_message(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    (tmp_path / "job.yaml").write_text(
        "apiVersion: rladapt/v1alpha1\nkind: RLJob\nmetadata: {name: j}\n"
        "spec: {model: {path: m}, data: {train: [t]}, reward: {function: {path: r.py}}, algorithm: {group_size: 2}}\n"
    )
    cases = [
        (("import", "-f", "verl", "missing.sh"), "'missing.sh': no such file"),
        (("import", "-f", "verl", "job.yaml"), "no verl launch"),
        (("import", "-f", "verl", "run.sh", "--set", "1X=2"), "--set '1X=2'"),
        (("import", "-f", "openrlhf", "run.sh"), "no openrlhf launch (python3 -m openrlhf.cli.train_ppo_ray"),
        (("diff", "job.yaml", "run.sh", "--set", "DATA=/d"), "-f NAME[==VERSION]"),
    ]
    for args, message in cases:
        done = rladapt(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
