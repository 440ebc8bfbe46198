"""A launch's own TensorBoard location is kept, recorded, and read back from there (issue 22).

Adding the TensorBoard sink rladapt reads back is no change of the run; moving a location the launch chose is
(dashboards and log shippers point there). Each render below keeps the location the spec names, records it on the
``NativeLaunch`` and, through the launch, in the run record; ``rladapt metrics`` then finds the events written there
(real event files, by torch's SummaryWriter, laid out as each framework lays them out).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rladapt.launch import metrics_location
from rladapt.metrics import read_run_metrics, run_metrics_dir
from rladapt.pipeline import render_native
from rladapt.plugins import METRICS_DIR, Artifacts, NativeLaunch, get_registry
from rladapt.primitives import SpecError, load_job
from rladapt.runs import CheckpointFacts, RunStore, read_record, spec_hash
from rladapt.runs.owner import take
from tests.conftest import REPO

from .conftest import TrlRun

ARTIFACTS = Artifacts(launcher="local", files={"command.sh": "true\n"})


def _render(example: str, framework: str, *overrides: str) -> NativeLaunch:
    job = load_job(REPO / "examples" / example, list(overrides))
    return render_native(job, framework, get_registry()).native


def _events(directory: Path, tag: str, values: dict[int, float]) -> None:
    """Event files as the frameworks write them: torch's own SummaryWriter (verl, OpenRLHF and NeMo-RL use it)."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(directory))
    for step, value in values.items():
        writer.add_scalar(tag, value, step)
    writer.close()


def _recorded(tmp_path: Path, native: NativeLaunch, run_id: str, framework: str, version: str) -> RunStore:
    """The run as ``Runner.launch`` records it from ``native``, launched from ``tmp_path``."""
    store = RunStore(tmp_path / "home")
    ckpt = (tmp_path / native.working_dir / (native.checkpoint_dir or "")).resolve()
    store.create(
        run_id=run_id, launcher="local", framework=framework, version=version, job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=ARTIFACTS,
        checkpoint=CheckpointFacts(dir=str(ckpt), model="m", world_size=1),
        metrics_dir=metrics_location(native),
    )  # fmt: skip
    return store


def test_verl_keeps_the_tensorboard_dir_the_spec_names_and_metrics_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    default = _render("grpo-gsm8k.yaml", "verl==0.6.1", "spec.checkpoint.dir=ck/run")
    assert default.env["TENSORBOARD_DIR"] == f"ck/run/{METRICS_DIR}" and default.metrics_dir is None
    assert metrics_location(default) is None

    native = _render(
        "grpo-gsm8k.yaml", "verl==0.6.1", "spec.checkpoint.dir=ck/run", "spec.env.TENSORBOARD_DIR=tb/mine"
    )
    # before: replaced by ck/run/rladapt-metrics, with a note
    assert native.env["TENSORBOARD_DIR"] == "tb/mine"
    # the job's output, like its checkpoints: never uploaded with the working directory to Ray
    assert "/tb/mine/" in native.runtime_env["excludes"]
    assert native.metrics_dir == native.events_dir() == "tb/mine"
    assert not [n for n in native.notes if "TENSORBOARD_DIR" in n]
    store = _recorded(tmp_path, native, "grpo-aaaa1111", "verl", "0.6.1")
    run = store.get("grpo-aaaa1111")
    assert run.record.metrics_dir == str(tmp_path / "tb" / "mine")
    assert run_metrics_dir(run) == tmp_path / "tb" / "mine"
    # verl's _TensorboardAdapter: SummaryWriter($TENSORBOARD_DIR), the directory itself
    _events(tmp_path / "tb" / "mine", "critic/score/mean", {1: 0.25, 2: 0.5})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.25, 2: 0.5})


def test_verl_with_the_tensorboard_backend_and_no_dir_keeps_verls_own_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launch chose tensorboard and named no TENSORBOARD_DIR: verl writes to tensorboard_log/<project>/
    <experiment> (utils/tracking.py); that is the run's metrics directory, never redirected to rladapt's."""
    monkeypatch.chdir(tmp_path)
    native = _render(
        "grpo-gsm8k.yaml",
        "verl==0.6.1",
        "spec.checkpoint.dir=ck/run",
        "spec.logging.backends=[console,tensorboard]",
        "spec.logging.project=proj",
    )
    experiment = next(a for a in native.argv if a.startswith("trainer.experiment_name=")).split("=", 1)[1]
    assert "TENSORBOARD_DIR" not in native.env
    assert native.metrics_dir == native.events_dir() == f"tensorboard_log/proj/{experiment}"
    assert f"/tensorboard_log/proj/{experiment}/" in native.runtime_env["excludes"]
    store = _recorded(tmp_path, native, "grpo-bbbb2222", "verl", "0.6.1")
    run = store.get("grpo-bbbb2222")
    _events(tmp_path / "tensorboard_log" / "proj" / experiment, "critic/score/mean", {1: 0.75})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.75})
    # without the backend in the launch rladapt adds its own sink in its own folder, as before
    plain = _render("grpo-gsm8k.yaml", "verl==0.6.1", "spec.checkpoint.dir=ck/run")
    assert plain.metrics_dir is None and plain.env["TENSORBOARD_DIR"] == f"ck/run/{METRICS_DIR}"


def test_an_imported_verl_script_keeps_its_tensorboard_dir(tmp_path: Path) -> None:
    """A script that exports TENSORBOARD_DIR: the imported spec keeps it as spec.logging.dir (not in spec.env) and
    the render passes it on, where before every render replaced it by rladapt's directory."""
    from rladapt.adapters.verl import importer as fw
    from rladapt.importing.importer import build
    from rladapt.importing.script import read_launch

    script = (
        "export TENSORBOARD_DIR=/logs/tb/grpo\n"
        "python3 -m verl.trainer.main_ppo data.train_files=t.parquet data.val_files=v.parquet "
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct trainer.logger=[console,tensorboard] "
        "trainer.default_local_dir=ck/run\n"
    )
    launch = read_launch(script, "run.sh", fw.match)
    imported = build(fw, "0.6.1", list(launch.argv), source="run.sh", registry=get_registry(), env=launch.env)
    assert imported.job.spec.logging.dir == "/logs/tb/grpo"
    assert "TENSORBOARD_DIR" not in imported.job.spec.env and "TENSORBOARD_DIR" not in imported.text
    native = render_native(imported.job, "verl==0.6.1", get_registry()).native
    assert native.env["TENSORBOARD_DIR"] == native.metrics_dir == "/logs/tb/grpo"
    assert metrics_location(native) == "/logs/tb/grpo"


def test_nemo_rl_keeps_the_log_dir_the_spec_names_and_metrics_reads_its_experiment_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    default = _render("grpo-math-nemo-rl.yaml", "nemo-rl==0.7.0", "spec.checkpoint.dir=ck/run")
    config = yaml.safe_load(default.files[default.argv[default.argv.index("--config") + 1]])
    assert config["logger"]["log_dir"] == f"ck/run/{METRICS_DIR}" and default.metrics_dir is None

    native = _render(
        "grpo-math-nemo-rl.yaml",
        "nemo-rl==0.7.0",
        "spec.checkpoint.dir=ck/run",
        "spec.native.nemo-rl=[logger.log_dir=logs]",
    )
    config = yaml.safe_load(native.files[native.argv[native.argv.index("--config") + 1]])
    # the generated config leaves log_dir to the launch's own override (no "derived value lost" note either)
    assert "log_dir" not in config["logger"] and config["logger"]["tensorboard_enabled"] is True
    assert native.argv[-1] == "logger.log_dir=logs"
    assert native.metrics_dir == "logs" and "/logs/" in native.runtime_env["excludes"]
    assert not [n for n in native.notes if "log_dir" in n]
    store = _recorded(tmp_path, native, "grpo-bbbb2222", "nemo-rl", "0.7.0")
    run = store.get("grpo-bbbb2222")
    # the run scripts log under get_next_experiment_dir(log_dir)/tensorboard (nemo_rl/utils/logger.py)
    _events(tmp_path / "logs" / "exp_001" / "tensorboard", "train/reward", {1: 1.0, 2: 2.0})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 1.0, 2: 2.0})


def test_openrlhf_reads_the_events_of_the_run_name_folder_under_the_launchs_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    native = _render(
        "grpo-gsm8k.yaml",
        "openrlhf==0.10.2",
        "spec.checkpoint.dir=ck/run",
        "spec.native.openrlhf=['--logger.tensorboard_dir runs/tb']",
    )
    argv = list(native.argv)
    assert argv.count("--logger.tensorboard_dir") == 1
    assert argv[argv.index("--logger.tensorboard_dir") + 1] == "runs/tb"
    assert native.metrics_dir == "runs/tb" and "runs/tb" in native.runtime_env["excludes"]
    run = _recorded(tmp_path, native, "grpo-cccc3333", "openrlhf", "0.10.2").get("grpo-cccc3333")
    # TensorboardLogger: SummaryWriter(<tensorboard_dir>/<wandb run name>), the name from the clock unless given
    _events(tmp_path / "runs" / "tb" / "1205T10:11", "train/reward", {1: 0.5})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.5})


def test_trl_keeps_the_logging_dir_the_spec_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRL's TensorBoardCallback writes into TrainingArguments.logging_dir: one the spec's native items name is
    the run's, not moved (before: rendered, then overridden by the item with a "derived value lost" note)."""
    monkeypatch.chdir(tmp_path)
    native = _render(
        "grpo-tiny-trl.yaml", "trl==1.16.0", "spec.checkpoint.dir=ck/run", "spec.native.trl=[logging_dir=tb]"
    )
    config = json.loads(native.files[native.argv[native.argv.index("--config") + 1]])
    assert config["config"]["logging_dir"] == "tb" and native.metrics_dir == "tb"
    assert "/tb/" in native.runtime_env["excludes"]
    assert not [n for n in native.notes if "logging_dir" in n]
    run = _recorded(tmp_path, native, "grpo-abab1212", "trl", "1.16.0").get("grpo-abab1212")
    _events(tmp_path / "tb", "train/reward", {1: 0.75})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.75})


def test_a_shared_location_holds_only_the_run_s_own_files(tmp_path: Path) -> None:
    """NeMo-RL's `logs` is shared by every run of a working directory (exp_001, exp_002, ...): a run reads only the
    files opened since it took its checkpoint directory, and not those opened while another run held it."""
    logs, ckpt = tmp_path / "logs", tmp_path / "ck"
    store = RunStore(tmp_path / "home")
    for run_id in ("grpo-dddd4444", "grpo-eeee5555"):
        store.create(
            run_id=run_id, launcher="local", framework="nemo-rl", version="0.7.0", job_name="grpo",
            spec_hash=spec_hash("spec"), artifacts=ARTIFACTS,
            checkpoint=CheckpointFacts(dir=str(ckpt), model="m", world_size=1), metrics_dir=str(logs),
        )  # fmt: skip
    # a run of another checkpoint directory logged into `logs` ten minutes before: exp_001 (its file renamed to
    # the second it would name then: the test cannot wait ten minutes)
    _events(logs / "exp_001" / "tensorboard", "train/reward", {1: 9.0, 2: 9.0})
    (old,) = (logs / "exp_001" / "tensorboard").glob("events.out.tfevents.*")
    parts = old.name.split(".")
    parts[3] = str(int(parts[3]) - 600)
    old.rename(old.with_name(".".join(parts)))
    # D takes the checkpoint directory, logs exp_002
    take(ckpt, "grpo-dddd4444", "grpo-dddd4444")
    _events(logs / "exp_002" / "tensorboard", "train/reward", {1: 0.1, 2: 0.2})
    time.sleep(1.1)
    # E takes it over, logs exp_003
    take(ckpt, "grpo-eeee5555", "grpo-eeee5555", take_over=True)
    _events(logs / "exp_003" / "tensorboard", "train/reward", {3: 3.0})
    assert read_run_metrics(store.get("grpo-dddd4444")).series["reward_mean"] == pytest.approx(
        {1: 0.1, 2: 0.2}
    )
    assert read_run_metrics(store.get("grpo-eeee5555")).series["reward_mean"] == pytest.approx({3: 3.0})


def test_a_record_from_before_the_field_reads_the_checkpoint_directory_s_metrics(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "home")
    ckpt = tmp_path / "ck"
    run = store.create(
        run_id="grpo-ffff6666", launcher="local", framework="trl", version="1.16.0", job_name="grpo",
        spec_hash=spec_hash("spec"), artifacts=ARTIFACTS,
        checkpoint=CheckpointFacts(dir=str(ckpt), model="m", world_size=1),
    )  # fmt: skip
    written = json.loads((run.dir / "run.json").read_text())
    assert "metrics_dir" not in written  # the default location: the file reads as before the field
    assert run_metrics_dir(store.get(run.id)) == ckpt / METRICS_DIR
    written["metrics_dir"] = str(tmp_path / "tb")
    (run.dir / "run.json").write_text(json.dumps(written))
    assert read_record(run.dir).metrics_root() == tmp_path / "tb"


def test_a_real_trl_run_logs_where_it_always_did(trl_run: TrlRun) -> None:
    """TRL: no location of the launch's own; rladapt's directory, as before, and the record says nothing new."""
    assert trl_run.run.record.metrics_dir is None
    assert "metrics_dir" not in json.loads((trl_run.run.dir / "run.json").read_text())
    assert run_metrics_dir(trl_run.run) == trl_run.checkpoint_dir / METRICS_DIR
    assert read_run_metrics(trl_run.run).series["reward_mean"]


# --- spec.logging.dir: the launch's own folder as a spec field (issue 22) -------------------------------------


def _config(native: NativeLaunch) -> dict[str, Any]:
    """The config file a NeMo-RL or TRL render generates and passes with --config."""
    text = native.files[native.argv[native.argv.index("--config") + 1]]
    found = yaml.safe_load(text) if native.framework == "nemo-rl" else json.loads(text)["config"]
    assert isinstance(found, dict)
    return found


def test_verl_renders_spec_logging_dir_as_tensorboard_dir_and_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    native = _render(
        "grpo-gsm8k.yaml", "verl==0.6.1", "spec.checkpoint.dir=ck/run", "spec.logging.dir=tb/field"
    )
    assert native.env["TENSORBOARD_DIR"] == native.metrics_dir == native.events_dir() == "tb/field"
    assert "/tb/field/" in native.runtime_env["excludes"]
    logger = next(a for a in native.argv if a.startswith("trainer.logger="))
    assert "tensorboard" in logger  # the sink, beside the example's console
    run = _recorded(tmp_path, native, "grpo-abcd1234", "verl", "0.6.1").get("grpo-abcd1234")
    assert run.record.metrics_dir == str(tmp_path / "tb" / "field")
    _events(tmp_path / "tb" / "field", "critic/score/mean", {1: 0.125, 2: 0.25})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.125, 2: 0.25})
    # the same folder in spec.env too is one setting; another is two places for one variable: refused by name
    same = _render(
        "grpo-gsm8k.yaml", "verl==0.6.1", "spec.logging.dir=tb/field", "spec.env.TENSORBOARD_DIR=tb/field"
    )
    assert same.env["TENSORBOARD_DIR"] == same.metrics_dir == "tb/field"
    with pytest.raises(SpecError) as err:
        _render(
            "grpo-gsm8k.yaml", "verl==0.6.1", "spec.logging.dir=tb/field", "spec.env.TENSORBOARD_DIR=tb/env"
        )
    (problem,) = err.value.problems
    assert problem.path == "spec.logging.dir"
    assert "'tb/field' and spec.env.TENSORBOARD_DIR='tb/env'" in str(problem)


@pytest.mark.parametrize("version", ["0.4.0", "0.7.0"])
def test_nemo_rl_renders_spec_logging_dir_as_log_dir_and_reads_its_experiment_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    monkeypatch.chdir(tmp_path)
    native = _render(
        "grpo-math-nemo-rl.yaml",
        f"nemo-rl=={version}",
        "spec.checkpoint.dir=ck/run",
        "spec.logging.dir=logs/mine",
    )
    config = _config(native)
    assert config["logger"]["log_dir"] == "logs/mine" and config["logger"]["tensorboard_enabled"] is True
    assert native.origins["logger.log_dir"] == "spec.logging.dir"
    assert not any(a.startswith("logger.log_dir") for a in native.argv)
    assert native.metrics_dir == "logs/mine" and "/logs/mine/" in native.runtime_env["excludes"]
    run = _recorded(tmp_path, native, "grpo-bcde2345", "nemo-rl", version).get("grpo-bcde2345")
    _events(tmp_path / "logs" / "mine" / "exp_001" / "tensorboard", "train/reward", {1: 0.5, 2: 1.5})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.5, 2: 1.5})


def test_nemo_rl_an_old_specs_native_log_dir_wins_over_the_field_as_on_the_command_line() -> None:
    """A spec imported before the field keeps logger.log_dir as a native item: it comes last on the command line,
    so NeMo-RL writes there, and that is where the metrics are read; the generated config leaves the key to it."""
    native = _render(
        "grpo-math-nemo-rl.yaml",
        "nemo-rl==0.7.0",
        "spec.logging.dir=logs/field",
        "spec.native.nemo-rl=[logger.log_dir=logs/item]",
    )
    assert "log_dir" not in _config(native)["logger"] and native.argv[-1] == "logger.log_dir=logs/item"
    assert native.metrics_dir == "logs/item"


@pytest.mark.parametrize(
    ("version", "flag"), [("0.9.10", "--use_tensorboard"), ("0.10.2", "--logger.tensorboard_dir")]
)
def test_openrlhf_renders_spec_logging_dir_as_its_tensorboard_flag_and_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, flag: str
) -> None:
    monkeypatch.chdir(tmp_path)
    native = _render(
        "grpo-gsm8k.yaml", f"openrlhf=={version}", "spec.checkpoint.dir=ck/run", "spec.logging.dir=runs/tb"
    )
    argv = list(native.argv)
    assert argv.count(flag) == 1 and argv[argv.index(flag) + 1] == "runs/tb"
    assert native.origins[flag] == "spec.logging.dir"
    assert native.metrics_dir == "runs/tb" and "runs/tb" in native.runtime_env["excludes"]
    run = _recorded(tmp_path, native, "grpo-cdef3456", "openrlhf", version).get("grpo-cdef3456")
    _events(tmp_path / "runs" / "tb" / "1205T10:11", "train/reward", {1: 0.25})
    assert read_run_metrics(run).series["reward_mean"] == pytest.approx({1: 0.25})


def test_trl_renders_spec_logging_dir_as_logging_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    native = _render("grpo-tiny-trl.yaml", "trl==1.16.0", "spec.checkpoint.dir=ck/run", "spec.logging.dir=tb")
    config = _config(native)
    assert config["logging_dir"] == "tb" and "tensorboard" in config["report_to"]
    assert native.origins["logging_dir"] == "spec.logging.dir"
    assert native.metrics_dir == "tb" and "/tb/" in native.runtime_env["excludes"]
    # without the field: rladapt's own folder, as before
    plain = _render("grpo-tiny-trl.yaml", "trl==1.16.0", "spec.checkpoint.dir=ck/run")
    assert _config(plain)["logging_dir"] == f"ck/run/{METRICS_DIR}" and plain.metrics_dir is None


def test_rladapt_metrics_reads_a_real_trl_run_from_spec_logging_dir(tmp_path: Path) -> None:
    """A real TRL run (CPU, one step) with spec.logging.dir: the events are in that folder, none in rladapt's, and
    `rladapt metrics` prints the step from there."""
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    from tests.cli.test_cli import rladapt

    from .conftest import SPEC, overrides

    ck, tb = tmp_path / "ck", tmp_path / "tb"
    env = {"RLADAPT_HOME": str(tmp_path / "home")}
    args = [*overrides(ck, f"spec.logging.dir={tb}", steps=1), "spec.eval.every_steps=0"]
    res = rladapt("launch", "-f", "trl", "--follow", SPEC, *args, env=env, cwd=REPO, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    run_id = res.stdout.split()[0]
    assert list(tb.rglob("events.out.tfevents.*")) and not (ck / METRICS_DIR).exists()
    res = rladapt("metrics", run_id, "--format", "csv", "-m", "reward_mean", env=env)
    assert res.returncode == 0, res.stderr
    assert [line.split(",")[0] for line in res.stdout.splitlines()] == ["step", "1"]


@pytest.mark.parametrize(
    ("example", "framework", "item"),
    [
        (
            "grpo-gsm8k.yaml",
            "openrlhf==0.10.2",
            "spec.native.openrlhf=['--logger.tensorboard_dir runs/item']",
        ),
        ("grpo-tiny-trl.yaml", "trl==1.16.0", "spec.native.trl=[logging_dir=runs/item]"),
    ],
)
def test_an_old_specs_native_location_wins_over_the_field_as_the_framework_applies_it(
    example: str, framework: str, item: str
) -> None:
    """The native item replaces the generated setting (argparse keeps the last flag; TRL's items override the
    generated keys), so the events go there and are read from there; the field's value is not passed as well."""
    native = _render(example, framework, "spec.logging.dir=runs/field", item)
    assert native.metrics_dir == "runs/item"
    assert "runs/field" not in native.to_json()
