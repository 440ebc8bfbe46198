"""``rladapt triage`` on real failures caused here: TRL on the CPU through ``rladapt launch -f trl`` (the tiny model
of ``examples/tiny``), each run made to fail one way, then triaged by its run id as a user would.

A missing data column fails before training, the killed run is killed as soon as its process runs, and the full
disk trains one step first (each a few seconds on 2 idle cores, most of it importing torch and TRL).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import rladapt
from tests.conftest import REPO

pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"
TINY = REPO / "examples" / "tiny"


def spec_args(tmp_path: Path, ckpt: Path, *overrides: str) -> list[str]:
    return [
        "-f",
        "trl",
        str(EXAMPLE),
        f"spec.model.path={TINY / 'model'}",
        f"spec.data.train=[{TINY / 'prompts.jsonl'}]",
        f"spec.reward.function.path={TINY / 'reward.py'}",
        f"spec.checkpoint.dir={ckpt}",
        f"spec.runtime.python={sys.executable}",
        f"spec.runtime.working_dir={tmp_path}",
        *overrides,
    ]


def triage_json(run_id: str) -> tuple[int, dict[str, Any]]:
    res = rladapt("triage", run_id, "--format", "json")
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, json.loads(res.stdout)


def test_a_missing_data_column(tmp_path: Path) -> None:
    res = rladapt(
        "launch", "--follow", *spec_args(tmp_path, tmp_path / "ck", "spec.data.prompt_key=question")
    )
    assert res.returncode != 0
    run_id = res.stdout.splitlines()[0]
    code, doc = triage_json(run_id)
    assert code == 0
    assert [m["signature"] for m in doc["matches"]] == ["dataset-column-missing"]
    match = doc["matches"][0]
    assert set(match) == {"signature", "cause", "fix", "evidence"}
    assert "'question'" in match["cause"] and "prompt" in match["cause"]
    assert "spec.data.prompt_key" in match["fix"]
    assert any("no column 'question'" in line for line in match["evidence"])


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def test_a_killed_process(tmp_path: Path) -> None:
    res = rladapt("launch", *spec_args(tmp_path, tmp_path / "ck", "spec.training.steps=500"))
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip()
    run_dir = Path(os.environ["RLADAPT_HOME"]) / "runs" / run_id
    # the job's own process (the TRL driver under rladapt's bootstrap), as the kernel's OOM killer would pick it;
    # killed as soon as it runs: what it was doing makes no difference to what the kill leaves behind
    deadline = time.monotonic() + 60
    trainers: list[int] = []
    while not trainers:
        assert time.monotonic() < deadline, "the job never started"
        if (run_dir / "job.pid").exists():
            trainers = _children(int((run_dir / "job.pid").read_text().split()[0]))
        time.sleep(0.2)
    for pid in trainers:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not (run_dir / "exit_code").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    code, doc = triage_json(run_id)
    assert code == 0
    assert [m["signature"] for m in doc["matches"]] == ["process-killed"]
    assert doc["matches"][0]["evidence"] == [
        f"[rladapt] run {run_id}: FAILED (exit code 137): exited with code 137 (killed by SIGKILL)"
    ]


def _can_mount_in_a_namespace() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(
    not _can_mount_in_a_namespace(),
    reason="a full disk needs a tiny tmpfs, mounted in a user and mount namespace (unshare -rm), not allowed here",
)
def test_a_full_disk(tmp_path: Path) -> None:
    # a 64 KiB tmpfs for the checkpoints, in a mount namespace of the launch (and of the job it starts): the first
    # save of the 84 KiB tiny model fails in the kernel with ENOSPC, as a full volume does
    full = tmp_path / "full"
    full.mkdir()
    mount = 'mount -t tmpfs -o size=64k tmpfs "$0" && exec "$@"'
    args = spec_args(tmp_path, full / "ck", "spec.training.steps=2", "spec.checkpoint.every_steps=1")
    command = ["unshare", "-rm", "sh", "-c", mount, str(full), sys.executable, "-m", "rladapt.cli", "launch"]
    proc = subprocess.run(
        [*command, "--follow", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode != 0, proc.stdout[-2000:]
    run_id = proc.stdout.splitlines()[0]
    code, doc = triage_json(run_id)
    assert code == 0
    assert [m["signature"] for m in doc["matches"]] == ["disk-full"]
    assert any("No space left on device" in line for line in doc["matches"][0]["evidence"])
    assert "spec.checkpoint.dir" in doc["matches"][0]["fix"]
