"""``--set`` / ``--unset`` of ``rladapt import`` and ``rladapt diff`` through the real CLI entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# a device switch whose untaken branch exports an NPU-only variable, and an array the caller may give empty
SCRIPT = """DEVICE=${DEVICE:-gpu}
if [ "$DEVICE" = "npu" ]; then
    export HCCL_CONNECT_TIMEOUT=1800
    N=8
else
    N=4
fi
EXTRA=(${EXTRA_ARGS:-trainer.val_before_train=False})
python3 -m verl.trainer.main_ppo \\
    data.train_files=/d/train.parquet \\
    actor_rollout_ref.model.path=${MODEL_PATH:-Qwen/Qwen2.5-0.5B-Instruct} \\
    actor_rollout_ref.rollout.n=$N \\
    "${EXTRA[@]}" \\
    trainer.experiment_name=demo
"""


def rladapt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt", *args], cwd=cwd, capture_output=True, text=True, timeout=180
    )


def test_import_and_diff_take_set_and_unset(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    given = ["--unset", "EXTRA_ARGS", "--unset", "MODEL_PATH"]
    done = rladapt("import", "-f", "verl==0.7.1", "run.sh", *given, "-o", "job.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "job.yaml").read_text()
    assert "group_size: 4" in text
    assert "HCCL_CONNECT_TIMEOUT" not in text  # the export of a branch that does not run
    assert "before_training: false" in text  # trainer.val_before_train=False, from the array's default
    same = rladapt("diff", "job.yaml", "run.sh", "-f", "verl==0.7.1", *given, "--exit-code", cwd=tmp_path)
    assert same.returncode == 0, same.stderr + same.stdout
    # the array given empty: the launch loses that override and nothing else
    other = rladapt(
        "diff", "job.yaml", "run.sh", "-f", "verl==0.7.1", "--set", "DEVICE=npu", "--set", "EXTRA=()",
        "--unset", "MODEL_PATH", "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert "actor_rollout_ref.rollout.n" in other.stdout and "val_before_train" in other.stdout
    assert "data.train_files" not in other.stdout and "experiment_name" not in other.stdout


def test_unset_is_a_usage_error_when_malformed(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    done = rladapt("import", "-f", "verl==0.7.1", "run.sh", "--unset", "1X", cwd=tmp_path)
    assert done.returncode == 2
    assert "--unset '1X'" in done.stderr and "Traceback" not in done.stderr
