"""A resume that cannot honour the spec says so, and the launches a framework resumes wrongly are refused first.

Spec changes the checkpoint overrides (``FrameworkAdapter.resume_restores``, each citing the framework's load code):
``rladapt resume`` of a run whose spec file was edited since its launch is refused with the reason (exit 2,
nothing submitted) unless ``--force``. The runs are records in the run store with the values their launch kept
(``rladapt.resume.save_spec_values``, as ``Runner.schedule`` writes them) and a checkpoint directory laid out as
each pinned version writes it (``tests/adapters/checkpoint_builders.py``), so that without the check the resume
would go ahead and submit.

Known wrong resumes (``FrameworkAdapter.resume_hazards``): verl 0.7.1+ with ``actor.checkpoint.async_save`` on a
non-Megatron strategy (the resume tracker is never written, verl issue 7952) and NeMo-RL's asynchronous GRPO (the
dataloader position runs past the prompts in flight, NeMo-RL pull request 3599) are refused at render.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from rladapt.pipeline import render_spec
from rladapt.plugins import Artifacts, RunStatus, get_registry
from rladapt.primitives.errors import SpecError
from rladapt.resume import SPEC_VALUES_FILE, save_spec_values, unhonoured_changes
from rladapt.runs import CheckpointFacts, RunStore, spec_hash
from tests.adapters.checkpoint_builders import deepspeed_tag, nemo_step, trl_step, verl_step
from tests.cli.test_checkpoints_cli import cli

REPO = Path(__file__).resolve().parents[1]

#: framework, pinned version, example spec, a checkpoint of that version's layout, its world size
CASES: list[tuple[str, str, str, Callable[[Path], object], int]] = [
    ("trl", "1.16.0", "grpo-tiny-trl.yaml", lambda ck: trl_step(ck, 2), 1),
    ("verl", "0.9.1", "grpo-gsm8k.yaml", lambda ck: verl_step(ck, 2, world=8), 8),
    ("openrlhf", "0.9.10", "ppo-critic-rm.yaml", lambda ck: deepspeed_tag(ck, 2, dp=8), 8),
    ("nemo-rl", "0.7.0", "grpo-math-nemo-rl.yaml", lambda ck: nemo_step(ck, 2, world=8), 8),
]


def _ended_run(
    tmp_path: Path, framework: str, version: str, example: str, world: int, extra: Sequence[str] = ()
) -> tuple[str, Path, Path]:
    """A FAILED run of a copy of ``example`` (in ``tmp_path``), with the spec values its launch kept."""
    spec = tmp_path / example
    shutil.copy(REPO / "examples" / example, spec)
    ck = tmp_path / "ck"
    overrides = [f"spec.checkpoint.dir={ck}", *extra]
    rendered = render_spec(spec, overrides, f"{framework}=={version}", get_registry())
    run = RunStore().create(
        run_id=f"job-{framework}-0001", launcher="local", framework=framework, version=version, job_name="job",
        spec_hash=spec_hash("x"), artifacts=Artifacts(launcher="local"), spec_path=str(spec),
        overrides=overrides,
        checkpoint=CheckpointFacts(dir=str(ck.resolve()), model=rendered.job.spec.model.path, world_size=world),
    )  # fmt: skip
    save_spec_values(run.dir, rendered.job.spec)
    run.save_status(RunStatus("FAILED", 137, "killed"))
    return run.id, spec, ck


def _edit(spec: Path, old: str, new: str) -> None:
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(("framework", "version", "example", "layout", "world"), CASES)
def test_resume_refuses_a_new_learning_rate_and_batch_the_checkpoint_overrides(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    framework: str,
    version: str,
    example: str,
    layout: Callable[[Path], object],
    world: int,
) -> None:
    monkeypatch.chdir(REPO)
    run_id, spec, ck = _ended_run(tmp_path, framework, version, example, world)
    layout(ck)
    text = spec.read_text()
    lr = text.split("optimizer: {lr: ", 1)[1].split(",", 1)[0].split("}", 1)[0]
    _edit(spec, f"optimizer: {{lr: {lr}", "optimizer: {lr: 0.5")
    batch = text.split("global_batch: ", 1)[1].split("\n", 1)[0]
    _edit(spec, f"global_batch: {batch}", f"global_batch: {int(batch) * 2}")
    code, out, err = cli("resume", run_id, capsys=capsys)
    assert code == 2 and "Traceback" not in err and out == ""
    assert f"run {run_id} cannot resume from its checkpoints" in err
    assert f"spec.training.optimizer.lr was {float(lr)} and is now 0.5, but " in err
    assert f"spec.training.global_batch was {batch} and is now {int(batch) * 2}, but " in err
    assert "(--force to try anyway)" in err
    assert len(RunStore().get(run_id).record.attempts) <= 1  # nothing submitted


def test_a_change_the_resume_applies_is_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRL builds the warmup schedule's function again on a resume (only its state is loaded): not refused."""
    monkeypatch.chdir(REPO)
    _, spec, _ = _ended_run(tmp_path, "trl", "1.16.0", "grpo-tiny-trl.yaml", 1)
    run = RunStore().list()[-1]
    adapter = get_registry().framework("trl")
    now = render_spec(
        spec,
        ["spec.training.optimizer.warmup_steps=3", "spec.training.steps=60"],
        "trl==1.16.0",
        get_registry(),
    )
    assert unhonoured_changes(adapter, "1.16.0", run.dir, now.job.spec) == []
    now = render_spec(spec, ["spec.training.optimizer.weight_decay=0.5"], "trl==1.16.0", get_registry())
    [change] = unhonoured_changes(adapter, "1.16.0", run.dir, now.job.spec)
    assert change.startswith(
        "spec.training.optimizer.weight_decay was null and is now 0.5, but the optimizer"
    )
    assert "Trainer._load_optimizer_and_scheduler" in change
    # a run launched before rladapt kept its values: nothing to compare with, nothing refused
    (run.dir / SPEC_VALUES_FILE).unlink()
    assert unhonoured_changes(adapter, "1.16.0", run.dir, now.job.spec) == []


# --- launches a framework is known to resume wrongly: refused when the job restarts itself, and by `resume` --------

ASYNC_SAVE = "spec.native.verl=[actor_rollout_ref.actor.checkpoint.async_save=true]"
GSM8K = str(REPO / "examples" / "grpo-gsm8k.yaml")
RESTARTS = "spec.lifecycle.max_restarts=2"


@pytest.mark.parametrize("version", ["0.7.1", "0.8.0", "0.9.1"])
def test_verl_async_save_on_fsdp_with_restarts_is_refused(version: str) -> None:
    with pytest.raises(SpecError) as info:
        render_spec(GSM8K, [ASYNC_SAVE, RESTARTS], f"verl=={version}", get_registry())
    [problem] = info.value.problems
    assert problem.path == "spec.native.verl[0]"
    assert "never writes latest_checkpointed_iteration.txt" in problem.message and "7952" in problem.message
    assert f"verl {version} resumes this job wrongly on a restart" in str(info.value)


@pytest.mark.parametrize(
    ("version", "extra"),
    [
        ("0.6.1", [RESTARTS]),  # its trainer writes the tracker whatever async_save says
        ("0.9.1", [RESTARTS, "spec.training.backend=megatron"]),  # Megatron's manager writes it
        ("0.9.1", []),  # never restarted by itself (`rladapt resume` asks again)
    ],
)
def test_verl_async_save_that_resumes_right_or_does_not_restart_renders(
    version: str, extra: list[str]
) -> None:
    rendered = render_spec(GSM8K, [ASYNC_SAVE, *extra], f"verl=={version}", get_registry())
    assert "actor_rollout_ref.actor.checkpoint.async_save=true" in rendered.native.argv


ASYNC_NEMO = [
    "spec.placement.pools=[{name: t, nodes: 1, gpus_per_node: 8, roles: [actor, ref]}, "
    "{name: g, nodes: 1, gpus_per_node: 8, roles: [rollout]}]",
    "spec.weight_sync.max_staleness=1",
]
NEMO = str(REPO / "examples" / "grpo-math-nemo-rl.yaml")


@pytest.mark.parametrize("version", ["0.4.0", "0.7.0"])
def test_nemo_rl_async_grpo_with_restarts_is_refused(version: str) -> None:
    with pytest.raises(SpecError) as info:
        render_spec(NEMO, [*ASYNC_NEMO, RESTARTS], f"nemo-rl=={version}", get_registry())
    [problem] = info.value.problems
    assert "asynchronous GRPO saves the dataloader position past the prompts" in problem.message
    assert "3599" in problem.message and problem.found == "grpo.async_grpo.enabled=True"


def test_nemo_rl_async_grpo_without_restarts_or_checkpoints_and_sync_grpo_with_restarts_render(
    tmp_path: Path,
) -> None:
    registry = get_registry()
    render_spec(NEMO, [RESTARTS], "nemo-rl==0.7.0", registry)
    render_spec(NEMO, ASYNC_NEMO, "nemo-rl==0.7.0", registry)
    spec = tmp_path / "no-checkpoints.yaml"
    text = Path(NEMO).read_text()
    line = next(x for x in text.splitlines() if x.startswith("  checkpoint: "))
    spec.write_text(text.replace(line, "  checkpoint: {enabled: false}"))
    render_spec(spec, [*ASYNC_NEMO, RESTARTS], "nemo-rl==0.7.0", registry)


@pytest.mark.parametrize(
    ("framework", "version", "example", "layout", "world", "extra", "message"),
    [
        (*CASES[1], [ASYNC_SAVE], "never writes latest_checkpointed_iteration.txt"),
        (*CASES[3], ASYNC_NEMO, "asynchronous GRPO saves the dataloader position past the prompts"),
    ],
)
def test_resume_of_a_run_its_framework_resumes_wrongly_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    framework: str,
    version: str,
    example: str,
    layout: Callable[[Path], object],
    world: int,
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(REPO)
    run_id, _, ck = _ended_run(tmp_path, framework, version, example, world, extra)
    layout(ck)
    code, out, err = cli("resume", run_id, capsys=capsys)
    assert code == 2 and "Traceback" not in err and out == ""
    assert f"resumes run {run_id} wrongly (--force to resume anyway)" in err and message in err
