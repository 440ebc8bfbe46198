"""``rladapt metrics`` through the CLI on real TRL runs: the table, JSON and CSV, ``--metric``, the errors (exit 2),
and ``--follow`` on a run that is still training."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.metrics import read_run_metrics
from tests.cli.test_cli import rladapt
from tests.conftest import REPO

from .conftest import KL_WHEN, SPEC, STEPS, TrlRun, overrides


def cli(trl_run: TrlRun, *args: str) -> subprocess.CompletedProcess[str]:
    return rladapt("metrics", trl_run.run.id[:-2], *args, env={"RLADAPT_HOME": str(trl_run.home)})


def test_the_table_shows_every_step_in_neutral_names(trl_run: TrlRun) -> None:
    res = cli(trl_run)
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    columns = header.split()
    assert columns[:3] == ["step", "policy_loss", "reward_mean"] and columns[-1] == "val_score"
    assert "generation_time_s" not in columns and "kl" not in columns  # absent / never logged (beta 0)
    assert [int(r.split()[0]) for r in rows] == list(range(1, STEPS + 1))
    val = columns.index("val_score")
    assert [r.split()[val] for r in rows][::2] == ["-", "-"]  # evaluated at steps 2 and 4 only
    assert all(r.split()[val] != "-" for r in rows[1::2])


def test_json_and_csv_hold_the_values_read_back(trl_run: TrlRun) -> None:
    m = read_run_metrics(trl_run.run)
    doc = json.loads(cli(trl_run, "--format", "json").stdout)
    assert doc["run"] == trl_run.run.id and doc["framework"] == "trl" and doc["version"] == "1.16.0"
    assert doc["native"]["reward_mean"] == "train/reward" and doc["native"]["val_score"] == "eval/reward"
    assert "generation_time_s" in doc["absent"] and "throughput_tokens_per_s_per_gpu" in doc["absent"]
    assert [s["step"] for s in doc["steps"]] == list(range(1, STEPS + 1))
    assert {s["step"]: s["reward_mean"] for s in doc["steps"]} == m.series["reward_mean"]

    res = cli(trl_run, "--format", "csv", "--metric", "reward_mean", "-m", "train/reward_std")
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(res.stdout.splitlines()))
    assert list(rows[0]) == ["step", "reward_mean", "train/reward_std"]
    assert {int(r["step"]): float(r["reward_mean"]) for r in rows} == m.series["reward_mean"]
    assert {int(r["step"]): float(r["train/reward_std"]) for r in rows} == m.series["train/reward_std"]


def test_unknown_and_absent_metrics_are_refused(trl_run: TrlRun) -> None:
    res = cli(trl_run, "--metric", "reward")
    assert res.returncode == 2
    assert "--metric reward: no such metric; expected a neutral name (policy_loss, " in res.stderr
    assert "train/reward_std" in res.stderr and "Traceback" not in res.stderr
    res = cli(trl_run, "--metric", "generation_time_s")
    assert res.returncode == 2
    assert "--metric generation_time_s: trl 1.16.0 does not log it (TRL times no generation" in res.stderr


def test_a_metric_the_run_logged_none_of_is_refused_with_the_reason(trl_run: TrlRun) -> None:
    """Issue 24: ``-m kl`` on a run with beta 0 printed a row of '-' per step, exit 0."""
    res = cli(trl_run, "--metric", "reward_mean", "-m", "kl")
    assert res.returncode == 2, res.stdout
    assert res.stdout == ""
    assert (
        f"--metric kl: run {trl_run.run.id} (SUCCEEDED, {STEPS} steps logged) logged none of it: {KL_WHEN}"
        in res.stderr
    )
    assert "reward_mean" not in res.stderr and "Traceback" not in res.stderr


def test_a_run_that_logged_nothing(trl_run: TrlRun, tmp_path: Path) -> None:
    # the driver stops before training: no reward function of that name
    env = {"RLADAPT_HOME": str(tmp_path / "home")}
    args = [*overrides(tmp_path / "ck"), "spec.reward.function.name=nowhere"]
    res = rladapt("launch", "-f", "trl", "--follow", SPEC, *args, env=env, cwd=REPO)
    assert res.returncode != 0
    run_id = res.stdout.split()[0]
    res = rladapt("metrics", run_id, env=env)
    assert res.returncode == 2
    assert (
        f"run {run_id} (FAILED) logged no metrics: no TensorBoard events in {tmp_path / 'ck'}" in res.stderr
    )


def test_follow_prints_each_step_once_until_the_run_ends(trl_run: TrlRun, tmp_path: Path) -> None:
    # a finished run: every step at once, then back
    res = cli(trl_run, "--follow", "--format", "csv", "-m", "reward_mean")
    assert res.returncode == 0, res.stderr
    assert [line.split(",")[0] for line in res.stdout.splitlines()] == ["step", "1", "2", "3", "4"]

    env = {**os.environ, "RLADAPT_HOME": str(tmp_path / "home")}
    launched = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "launch", "-f", "trl", SPEC, *overrides(tmp_path / "ck")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    run_id = launched.stdout.strip()
    follow = subprocess.run(
        [
            sys.executable,
            "-m",
            "rladapt.cli",
            "metrics",
            run_id,
            "--follow",
            "--interval",
            "0.3",
            "-m",
            "reward_mean",
            "-m",
            "val_score",
            "--format",
            "json",
            "--timeout",
            "600",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=660,
    )
    assert follow.returncode == 0, follow.stderr
    rows = [json.loads(line) for line in follow.stdout.splitlines()]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    # each step was printed complete: the evaluations of steps 2 and 4 are in their rows
    assert [r["val_score"] is not None for r in rows] == [False, True, False, True]
    status = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "status", run_id], capture_output=True, text=True, env=env
    )
    assert "SUCCEEDED" in status.stdout


@pytest.mark.parametrize("bad", ["--format=yaml", "--interval=0"])
def test_bad_options_exit_2(trl_run: TrlRun, bad: str) -> None:
    assert cli(trl_run, bad).returncode == 2
