"""The local and Slurm launchers refuse, before anything starts, a job whose files are missing where it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.launchers.local import LocalLauncher
from rladapt.launchers.slurm import SlurmLauncher
from rladapt.pipeline import render_native
from rladapt.plugins import Launcher, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import SpecError, load_job
from tests.cli.test_cli import rladapt
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"


def test_local_launch_of_a_misspelt_model_is_exit_2_and_starts_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    res = rladapt(
        "launch", "-f", "trl", str(EXAMPLE), "spec.model.path=examples/tiny/modell", "spec.runtime.python=/bin/sh",
        env={"RLADAPT_HOME": str(home)}, cwd=REPO,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "spec.model.path: no such file or directory" in res.stderr
    assert "found 'examples/tiny/modell'" in res.stderr
    assert not list(home.glob("runs/*/job.pid"))  # the wrapper never ran


@pytest.mark.parametrize("launcher", [LocalLauncher(), SlurmLauncher()], ids=lambda x: x.PLUGIN_NAME)
def test_submit_refuses_a_missing_reward_file_before_writing_or_starting_anything(
    launcher: Launcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    job = load_job(
        EXAMPLE, ["spec.reward.function.path=examples/tiny/rewards.py", "spec.runtime.python=/bin/sh"]
    )
    native = render_native(job, "trl", load_registry()).native
    artifacts = render_artifacts(launcher, native, {})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(SpecError) as refused:
        launcher.submit(artifacts, run_dir)
    assert refused.value.exit_code == 2
    assert [p.path for p in refused.value.problems] == ["spec.reward.function.path"]
    assert list(run_dir.iterdir()) == []


SUITE = (
    "spec.eval.continuous={follow: checkpoints, suites: [{name: s, data: [examples/tiny/vall.jsonl], "
    "scorer: {function: {path: examples/tiny/reward.py, name: share_of_a}}}]}"
)


@pytest.mark.parametrize("launcher", [LocalLauncher(), SlurmLauncher()], ids=lambda x: x.PLUGIN_NAME)
@pytest.mark.parametrize(
    ("override", "field"),
    [(SUITE, "spec.eval.continuous.suites[0].data[0]"), ("spec.eval.datasets=[examples/tiny/vall.jsonl]",
                                                          "spec.eval.datasets[0]")],
    ids=["suite-data", "eval-datasets"],
)  # fmt: skip
def test_submit_refuses_a_missing_evaluation_file(
    launcher: Launcher, override: str, field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluator's suite files and the framework's extra eval files are job inputs like the training data."""
    monkeypatch.chdir(REPO)
    job = load_job(EXAMPLE, [override, "spec.runtime.python=/bin/sh"])
    native = render_native(job, "trl", load_registry()).native
    artifacts = render_artifacts(launcher, native, {})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(SpecError) as refused:
        launcher.submit(artifacts, run_dir)
    assert [p.path for p in refused.value.problems] == [field]
    assert list(run_dir.iterdir()) == []


def test_validate_names_a_missing_eval_dataset() -> None:
    res = rladapt(
        "validate", "-f", "trl", str(EXAMPLE), "spec.eval.datasets=[examples/tiny/vall.jsonl]", cwd=REPO
    )
    assert res.returncode == 2, res.stderr
    assert "spec.eval.datasets[0]: no such file or directory" in res.stderr


def test_validate_names_a_missing_config_file_of_the_launch(tmp_path: Path) -> None:
    """``spec.runtime.config`` (verl's own config file, composed where the job runs) is read by the job."""
    config = tmp_path / "conf" / "my_grpo.yaml"
    res = rladapt(
        "validate", str(REPO / "examples" / "grpo-gsm8k.yaml"), f"spec.runtime.config={config}", cwd=REPO
    )
    assert res.returncode == 2, res.stderr
    assert "spec.runtime.config: no such file or directory" in res.stderr and str(config) in res.stderr
