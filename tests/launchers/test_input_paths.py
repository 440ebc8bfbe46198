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
