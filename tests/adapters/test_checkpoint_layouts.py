"""Checkpoint scans of every framework on directories built with the file names its save code writes.

Each builder names its source (the framework's save code, at the version cited in the adapter's
``checkpoints.py``); the cases are the ones the issue lists: complete, being written, cut off (a file missing
or empty, a marker naming a missing step), files that do not match the layout. Nothing here imports a framework:
a scan reads file names and sizes only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rladapt.adapters.nemo_rl import NemoRLAdapter
from rladapt.adapters.openrlhf import OpenRLHFAdapter
from rladapt.adapters.verl import VerlAdapter
from rladapt.plugins import FrameworkAdapter
from rladapt.plugins.checkpoints import ASIDE_DIR, CheckpointScan
from rladapt.resume import ResumeRefused, Settings, carry_out, decide

from .checkpoint_builders import deepspeed_tag, nemo_step, verl_step


def _scan(adapter: FrameworkAdapter, root: Path, version: str) -> CheckpointScan:
    """The adapter's scan, through the contract (``FrameworkAdapter.scan_checkpoints``)."""
    found = adapter.scan_checkpoints(root, version)
    assert found is not None
    return found


def _file(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --- verl: ray_trainer._save_checkpoint, fsdp_checkpoint_manager.save_checkpoint (0.5.0, 0.9.1) ---------------


def scan_verl(root: Path, version: str = "0.9.1") -> CheckpointScan:
    return _scan(VerlAdapter(), root, version)


@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
def test_verl_complete_steps_and_the_newest_is_picked(tmp_path: Path, version: str) -> None:
    verl_step(tmp_path, 2, critic=True)
    verl_step(tmp_path, 4, critic=True)
    scan = scan_verl(tmp_path, version)
    assert [(c.step, c.complete) for c in scan.checkpoints] == [(2, True), (4, True)]
    assert scan.resume_from is not None and scan.resume_from.step == 4


def test_verl_a_step_newer_than_the_marker_is_still_being_written(tmp_path: Path) -> None:
    verl_step(tmp_path, 2)
    verl_step(tmp_path, 4, marker=False)  # data.pt written, marker not yet
    scan = scan_verl(tmp_path)
    step4 = scan.step(4)
    assert step4 is not None and not step4.complete
    assert step4.reason == "not committed: latest_checkpointed_iteration.txt names step 2"
    assert scan.resume_from is not None and scan.resume_from.step == 2


@pytest.mark.parametrize(
    ("cut", "expected"),
    [
        ("actor/optim_world_size_2_rank_1.pt", "rank 1 of 2: actor/optim_world_size_2_rank_1.pt missing"),
        ("data.pt", "data.pt"),
        ("actor/huggingface/config.json", "actor/huggingface/ (empty)"),
    ],
)
def test_verl_a_cut_off_step_names_what_is_missing(tmp_path: Path, cut: str, expected: str) -> None:
    verl_step(tmp_path, 2)
    step = verl_step(tmp_path, 3)
    (step / cut).unlink()
    scan = scan_verl(tmp_path)
    partial = scan.step(3)
    assert partial is not None and not partial.complete and partial.reason is not None
    assert expected in partial.reason
    assert scan.resume_from is not None and scan.resume_from.step == 2


def test_verl_an_empty_shard_is_cut_off(tmp_path: Path) -> None:
    step = verl_step(tmp_path, 3)
    (step / "actor" / "model_world_size_2_rank_0.pt").write_text("")
    assert scan_verl(tmp_path).resume_from is None


def test_verl_a_marker_naming_a_missing_step_is_listed_and_never_picked(tmp_path: Path) -> None:
    verl_step(tmp_path, 2)
    _file(tmp_path / "latest_checkpointed_iteration.txt", "6")
    scan = scan_verl(tmp_path)
    ghost = scan.step(6)
    assert ghost is not None and not ghost.complete
    assert ghost.reason == "latest_checkpointed_iteration.txt names step 6, but global_step_6/ does not exist"
    # the marker is newer than step 2, so step 2 stays committed
    assert scan.resume_from is not None and scan.resume_from.step == 2


def test_verl_files_of_two_world_sizes_do_not_match_the_layout(tmp_path: Path) -> None:
    step = verl_step(tmp_path, 2)
    _file(step / "actor" / "model_world_size_4_rank_3.pt")
    partial = scan_verl(tmp_path).step(2)
    assert partial is not None and not partial.complete
    assert partial.reason == "missing actor/ shards of one world size (found [2, 4])"


def test_verl_resume_names_the_checked_step_explicitly(tmp_path: Path) -> None:
    verl_step(tmp_path, 2)
    step4 = verl_step(tmp_path, 4)
    (step4 / "data.pt").unlink()
    settings = Settings("verl", "0.9.1", str(tmp_path))
    decision = decide(
        VerlAdapter(), settings, ["python3", "-m", "verl.trainer.main_ppo", "trainer.resume_mode=auto"]
    )
    assert decision is not None
    assert decision.plan.argv[-2:] == (
        "trainer.resume_mode=resume_path",
        f"trainer.resume_from_path={tmp_path / 'global_step_2'}",
    )
    assert "trainer.resume_mode=auto" not in decision.plan.argv
    said: list[str] = []
    carry_out(decision, said.append)
    assert not step4.exists() and len(list((tmp_path / ASIDE_DIR).iterdir())) == 1
    assert said and said[0].startswith(f"moved {step4} aside to {tmp_path / ASIDE_DIR}")


def test_resume_never_refuses_a_directory_that_holds_steps(tmp_path: Path) -> None:
    verl_step(tmp_path, 2)
    with pytest.raises(ResumeRefused, match=r"spec.checkpoint.resume is never, but .* already holds steps 2"):
        decide(VerlAdapter(), Settings("verl", "0.9.1", str(tmp_path), resume="never"), ["x"])
    empty = tmp_path / "fresh"
    decision = decide(VerlAdapter(), Settings("verl", "0.9.1", str(empty), resume="never"), ["x"])
    assert decision is not None and decision.plan.argv == ("x",)


def test_resume_path_must_name_a_complete_step(tmp_path: Path) -> None:
    step = verl_step(tmp_path, 2)
    (step / "data.pt").unlink()
    settings = Settings("verl", "0.9.1", str(tmp_path), resume="path", path=str(step))
    with pytest.raises(ResumeRefused, match="is a partial checkpoint: missing data.pt"):
        decide(VerlAdapter(), settings, ["x"])


# --- OpenRLHF: strategy.save_ckpt -> DeepSpeed engine.save_checkpoint (OpenRLHF 0.5.9.post1 .. 0.11.2) ----------


@pytest.mark.parametrize("version", ["0.5.9.post1", "0.8.11", "0.11.2"])
def test_openrlhf_tags_committed_by_latest(tmp_path: Path, version: str) -> None:
    deepspeed_tag(tmp_path, 5)
    deepspeed_tag(tmp_path, 10, latest=False)  # written, `latest` not yet moved
    scan = _scan(OpenRLHFAdapter(), tmp_path, version)
    assert [(c.step, c.complete) for c in scan.checkpoints] == [(5, True), (10, False)]
    assert scan.step(10).reason == "not committed: _actor/latest names global_step5"  # type: ignore[union-attr]
    assert scan.resume_from is not None and scan.resume_from.step == 5


def test_openrlhf_a_missing_optimizer_shard_and_a_latest_naming_a_missing_tag(tmp_path: Path) -> None:
    tag = deepspeed_tag(tmp_path, 5)
    (tag / "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt").unlink()
    _file(tmp_path / "_actor" / "latest", "global_step15")
    scan = _scan(OpenRLHFAdapter(), tmp_path, "0.11.2")
    assert "rank 0 of 2: _actor/global_step5/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt missing" in (
        scan.step(5).reason or ""  # type: ignore[union-attr]
    )
    assert scan.step(15).reason == "_actor/latest names global_step15, which does not exist"  # type: ignore[union-attr]
    assert scan.resume_from is None


def test_openrlhf_resume_from_an_older_tag_rewrites_latest_and_keeps_the_old_one(tmp_path: Path) -> None:
    deepspeed_tag(tmp_path, 5)
    deepspeed_tag(tmp_path, 5, role="_critic")
    tag10 = deepspeed_tag(tmp_path, 10)
    (tag10 / "mp_rank_00_model_states.pt").write_text("")  # the model file of tag 10 was never written
    deepspeed_tag(tmp_path, 10, role="_critic")
    settings = Settings("openrlhf", "0.8.11", str(tmp_path))
    argv = ["python3", "-m", "openrlhf.cli.train_ppo_ray", "--load_checkpoint"]
    decision = decide(OpenRLHFAdapter(), settings, argv)
    assert decision is not None and decision.chosen is not None and decision.chosen.step == 5
    assert decision.plan.argv.count("--load_checkpoint") == 1
    carry_out(decision, lambda _: None)
    assert (tmp_path / "_actor" / "latest").read_text() == "global_step5"
    assert (tmp_path / "_critic" / "latest").read_text() == "global_step5"
    aside = sorted(p.name.split(".")[0] for p in (tmp_path / ASIDE_DIR).iterdir())
    assert aside == [
        "global_step10",
        "latest",
        "latest",
    ]  # nothing deleted; outside _actor, which OpenRLHF prunes


def test_openrlhf_without_a_complete_tag_does_not_ask_deepspeed_to_load(tmp_path: Path) -> None:
    tag = deepspeed_tag(tmp_path, 5)
    (tag / "mp_rank_00_model_states.pt").unlink()
    decision = decide(
        OpenRLHFAdapter(), Settings("openrlhf", "0.11.2", str(tmp_path)), ["t", "--ckpt.load_enable"]
    )
    assert decision is not None and "--ckpt.load_enable" not in decision.plan.argv


# --- NeMo-RL: CheckpointManager.init_tmp_checkpoint / finalize_checkpoint, grpo_train (v0.2.1 .. v0.7.0) ---------


@pytest.mark.parametrize("version", ["0.2.1", "0.4.0", "0.7.0"])
def test_nemo_rl_tmp_step_is_being_written_and_a_half_copied_step_is_partial(
    tmp_path: Path, version: str
) -> None:
    nemo_step(tmp_path, 10)
    nemo_step(tmp_path, 20, tmp=True)
    half = nemo_step(tmp_path, 15)
    (half / "train_dataloader.pt").unlink()
    scan = _scan(NemoRLAdapter(), tmp_path, version)
    assert [(c.step, c.complete) for c in scan.checkpoints] == [(10, True), (15, False), (20, False)]
    assert scan.step(20).reason.startswith("being written")  # type: ignore[union-attr]
    assert scan.step(15).reason == "missing train_dataloader.pt"  # type: ignore[union-attr]
    # NeMo-RL itself would load step_15 (the highest step_N): that is what is moved aside
    assert scan.native_pick is not None and scan.native_pick.step == 15
    assert scan.resume_from is not None and scan.resume_from.step == 10


def test_nemo_rl_moves_aside_every_step_its_auto_resume_would_prefer(tmp_path: Path) -> None:
    nemo_step(tmp_path, 10)
    half = nemo_step(tmp_path, 15)
    (half / "training_info.json").write_text("{")  # cut off mid-write
    nemo_step(tmp_path, 20, tmp=True)
    decision = decide(NemoRLAdapter(), Settings("nemo-rl", "0.7.0", str(tmp_path)), ["uv", "run"])
    assert decision is not None and decision.plan.argv == ("uv", "run")
    carry_out(decision, lambda _: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [ASIDE_DIR, "step_10"]


def test_scans_of_a_missing_directory_are_empty(tmp_path: Path) -> None:
    scans: list[Callable[[Path, str], CheckpointScan]] = [
        lambda r, v: _scan(VerlAdapter(), r, v),
        lambda r, v: _scan(OpenRLHFAdapter(), r, v),
        lambda r, v: _scan(NemoRLAdapter(), r, v),
    ]
    for scan in scans:
        result = scan(tmp_path / "absent", "0.5.0")
        assert result.checkpoints == () and result.resume_from is None
