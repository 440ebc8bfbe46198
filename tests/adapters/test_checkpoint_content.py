"""A step is complete only when every rank's files, every trained role's commit and every file's content are there.

Directories are laid out as each pinned version writes them (``checkpoint_builders``: real ``torch.save`` and
safetensors files), for world sizes 1, 2 and 4 and with the actor/critic split where the framework has one; each
fault is done to a real file (cut in half, random bytes of the same size, one rank's shard removed, a shard
emptied, the critic's commit behind the actor's). Every case checks the reason names the file and what is wrong,
and that the scan's resume step falls back to the step before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rladapt.adapters.nemo_rl import NemoRLAdapter
from rladapt.adapters.openrlhf import OpenRLHFAdapter
from rladapt.adapters.trl import TrlAdapter
from rladapt.adapters.verl import VerlAdapter
from rladapt.plugins import FrameworkAdapter
from rladapt.plugins.checkpoints import CheckpointScan
from rladapt.resume import Settings, decide

from .checkpoint_builders import (
    cut_in_half,
    deepspeed_tag,
    empty,
    nemo_step,
    overwrite_random,
    trl_step,
    verl_megatron_step,
    verl_step,
)

WORLDS = [1, 2, 4]


def _scan(adapter: FrameworkAdapter, root: Path, version: str) -> CheckpointScan:
    found = adapter.scan_checkpoints(root, version)
    assert found is not None
    return found


def _falls_back(scan: CheckpointScan, bad: int, good: int, *reason: str) -> None:
    step = scan.step(bad)
    assert step is not None and not step.complete, scan
    for part in reason:
        assert part in (step.reason or ""), step.reason
    assert scan.resume_from is not None and scan.resume_from.step == good


# --- TRL / transformers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_trl_complete_steps_of_every_world_size(tmp_path: Path, world: int) -> None:
    trl_step(tmp_path, 2, world)
    trl_step(tmp_path, 4, world)
    scan = _scan(TrlAdapter(), tmp_path, "0.29.1")
    assert [(c.step, c.complete, c.reason) for c in scan.checkpoints] == [(2, True, None), (4, True, None)]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize(
    ("damage", "name", "reason"),
    [
        (cut_in_half, "optimizer.pt", "optimizer.pt: zip central directory missing (file cut?)"),
        (cut_in_half, "model.safetensors", "model.safetensors: tensor 'w' ends at byte"),
        (cut_in_half, "scheduler.pt", "scheduler.pt: zip central directory missing (file cut?)"),
        (overwrite_random, "RNG", ": neither a torch zip file nor a pickle (overwritten or damaged?)"),
        (overwrite_random, "model.safetensors", "model.safetensors: "),
        (cut_in_half, "trainer_state.json", "trainer_state.json: not JSON"),
    ],
)
def test_trl_a_damaged_file_makes_the_step_partial(
    tmp_path: Path, world: int, damage: Callable[[Path], None], name: str, reason: str
) -> None:
    trl_step(tmp_path, 2, world)
    step = trl_step(tmp_path, 4, world)
    if name == "RNG":
        name = "rng_state.pth" if world == 1 else f"rng_state_{world - 1}.pth"
        reason = name + reason
    damage(step / name)
    _falls_back(_scan(TrlAdapter(), tmp_path, "1.16.0"), 4, 2, reason)


@pytest.mark.parametrize("world", [2, 4])
def test_trl_a_missing_process_rng_state(tmp_path: Path, world: int) -> None:
    trl_step(tmp_path, 2, world)
    step = trl_step(tmp_path, 4, world)
    (step / "rng_state_0.pth").unlink()
    _falls_back(_scan(TrlAdapter(), tmp_path, "0.23.1"), 4, 2, f"rank 0 of {world}: rng_state_0.pth missing")


@pytest.mark.parametrize("world", [2, 4])
def test_trl_the_last_process_rng_state_missing_is_partial_for_the_run_s_world_size(
    tmp_path: Path, world: int
) -> None:
    """The files alone cannot show the last rank's rng_state_R.pth missing; the run's recorded world size can."""
    trl_step(tmp_path, 2, world)
    step = trl_step(tmp_path, 4, world)
    (step / f"rng_state_{world - 1}.pth").unlink()
    assert _scan(TrlAdapter(), tmp_path, "0.29.1").resume_from.step == 4  # type: ignore[union-attr]  # from the files
    judged = _scan(TrlAdapter(), tmp_path, "0.29.1").judged(world)
    _falls_back(
        judged, 4, 2, f"rank {world - 1} of {world} missing (the step holds the files of {world - 1} process"
    )
    # the job decides with the world size its settings carry (recorded at launch from the trained pool)
    settings = Settings("trl", "0.29.1", str(tmp_path), world_size=world)
    decision = decide(TrlAdapter(), settings, ["python", "driver.py"])
    assert decision is not None and decision.chosen is not None and decision.chosen.step == 2
    assert step in decision.plan.move_aside
    # where nothing is recorded the files decide, as before
    unrecorded = decide(TrlAdapter(), Settings("trl", "0.29.1", str(tmp_path)), ["python", "driver.py"])
    assert unrecorded is not None and unrecorded.chosen is not None and unrecorded.chosen.step == 4


def test_trl_a_step_of_the_run_s_own_world_size_stays_complete(tmp_path: Path) -> None:
    for world in WORLDS:
        trl_step(tmp_path / str(world), 2, world)
        judged = _scan(TrlAdapter(), tmp_path / str(world), "0.29.1").judged(world)
        assert [(c.step, c.complete) for c in judged.checkpoints] == [(2, True)]


def test_verl_shards_of_another_world_size_are_another_run_s(tmp_path: Path) -> None:
    verl_step(tmp_path, 2, 4)
    verl_step(tmp_path, 4, 2)  # verl opens *_world_size_4_rank_R.pt on 4 ranks: these do not load
    _falls_back(
        _scan(VerlAdapter(), tmp_path, "0.9.1").judged(4),
        4,
        2,
        "the step holds the files of 2 processes, the run has 4",
    )


def test_trl_resume_skips_a_cut_optimizer(tmp_path: Path) -> None:
    trl_step(tmp_path, 2)
    step = trl_step(tmp_path, 4)
    cut_in_half(step / "optimizer.pt")
    decision = decide(TrlAdapter(), Settings("trl", "0.29.1", str(tmp_path)), ["python", "driver.py"])
    assert decision is not None and decision.chosen is not None and decision.chosen.step == 2
    assert step in decision.plan.move_aside


# --- verl -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("critic", [False, True])
def test_verl_complete_steps_of_every_world_size_and_role(tmp_path: Path, world: int, critic: bool) -> None:
    verl_step(tmp_path, 2, world, critic=critic)
    verl_step(tmp_path, 4, world, critic=critic)
    scan = _scan(VerlAdapter(), tmp_path, "0.9.1")
    assert [(c.step, c.complete, c.reason) for c in scan.checkpoints] == [(2, True, None), (4, True, None)]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
@pytest.mark.parametrize(
    ("damage", "kind", "reason"),
    [
        (cut_in_half, "optim", ": zip central directory missing (file cut?)"),
        (
            overwrite_random,
            "extra_state",
            ": neither a torch zip file nor a pickle (overwritten or damaged?)",
        ),
        (Path.unlink, "model", " missing"),
    ],
)
def test_verl_a_damaged_or_missing_shard_of_the_last_rank(
    tmp_path: Path, world: int, version: str, damage: Callable[[Path], None], kind: str, reason: str
) -> None:
    verl_step(tmp_path, 2, world, critic=True)
    step = verl_step(tmp_path, 4, world, critic=True)
    name = f"critic/{kind}_world_size_{world}_rank_{world - 1}.pt"
    damage(step / name)
    prefix = f"rank {world - 1} of {world}: " if damage is Path.unlink else ""
    _falls_back(_scan(VerlAdapter(), tmp_path, version), 4, 2, prefix + name + reason)


def test_verl_a_cut_data_pt(tmp_path: Path) -> None:
    verl_step(tmp_path, 2)
    step = verl_step(tmp_path, 4)
    cut_in_half(step / "data.pt")
    _falls_back(_scan(VerlAdapter(), tmp_path, "0.9.1"), 4, 2, "data.pt: zip central directory missing")


def test_verl_a_step_without_the_critic_the_job_trains(tmp_path: Path) -> None:
    verl_step(tmp_path, 2, critic=True)
    verl_step(tmp_path, 4, critic=False)
    _falls_back(
        _scan(VerlAdapter(), tmp_path, "0.9.1"),
        4,
        2,
        "critic/ (other steps of this directory saved a critic)",
    )


def test_verl_fsdp_config_records_more_ranks_than_the_names(tmp_path: Path) -> None:
    verl_step(tmp_path, 2, 4)
    step = verl_step(tmp_path, 4, 4)
    for kind in ("model", "optim", "extra_state"):
        (step / "actor" / f"{kind}_world_size_4_rank_3.pt").rename(
            step / "actor" / f"{kind}_world_size_3_rank_2.x"
        )
    for rank in range(3):  # shards renamed as if the run were 3 wide: fsdp_config.json still says 4
        for kind in ("model", "optim", "extra_state"):
            (step / "actor" / f"{kind}_world_size_4_rank_{rank}.pt").rename(
                step / "actor" / f"{kind}_world_size_3_rank_{rank}.pt"
            )
    _falls_back(
        _scan(VerlAdapter(), tmp_path, "0.9.1"),
        4,
        2,
        "actor/fsdp_config.json: world_size 4, shards of world size 3",
    )


@pytest.mark.parametrize("world", WORLDS)
def test_verl_megatron_dist_ckpt_missing_a_ranks_file(tmp_path: Path, world: int) -> None:
    verl_megatron_step(tmp_path, 2, world)
    step = verl_megatron_step(tmp_path, 4, world)
    assert _scan(VerlAdapter(), tmp_path, "0.9.1").resume_from is not None
    shard = step / "actor" / "dist_ckpt" / f"__{world - 1}_0.distcp"
    if world == 1:
        cut_in_half(shard)
        reason = "actor/dist_ckpt/__0_0.distcp: "
    else:
        shard.unlink()
        reason = f"actor/dist_ckpt/__{world - 1}_0.distcp missing (named by .metadata)"
    _falls_back(_scan(VerlAdapter(), tmp_path, "0.9.1"), 4, 2, reason)


# --- OpenRLHF / DeepSpeed ---------------------------------------------------------------------------------------


def _ppo(root: Path, step: int, dp: int, zero3: bool, *, critic_latest: bool = True) -> Path:
    tag = deepspeed_tag(root, step, dp, zero3=zero3)
    deepspeed_tag(root, step, dp, role="_critic", zero3=zero3, latest=critic_latest)
    return tag


@pytest.mark.parametrize("dp", WORLDS)
@pytest.mark.parametrize("zero3", [False, True])
@pytest.mark.parametrize("version", ["0.5.9.post1", "0.8.11", "0.11.2"])
def test_openrlhf_complete_ppo_steps(tmp_path: Path, dp: int, zero3: bool, version: str) -> None:
    _ppo(tmp_path, 5, dp, zero3)
    _ppo(tmp_path, 10, dp, zero3)
    scan = _scan(OpenRLHFAdapter(), tmp_path, version)
    assert [(c.step, c.complete, c.reason) for c in scan.checkpoints] == [(5, True, None), (10, True, None)]


@pytest.mark.parametrize("dp", [2, 4])
def test_openrlhf_zero3_step_missing_the_last_ranks_model_states(tmp_path: Path, dp: int) -> None:
    _ppo(tmp_path, 5, dp, True)
    tag = _ppo(tmp_path, 10, dp, True)
    name = f"zero_pp_rank_{dp - 1}_mp_rank_00_model_states.pt"
    (tag / name).unlink()
    # dp_world_size, read from rank 0's model states, says a rank is missing even when it is the last one
    _falls_back(
        _scan(OpenRLHFAdapter(), tmp_path, "0.8.11"),
        10,
        5,
        f"rank {dp - 1} of {dp}: _actor/global_step10/{name} missing",
    )


@pytest.mark.parametrize("dp", [2, 4])
def test_openrlhf_the_last_ranks_optimizer_shard_missing(tmp_path: Path, dp: int) -> None:
    _ppo(tmp_path, 5, dp, False)
    tag = _ppo(tmp_path, 10, dp, False)
    name = f"bf16_zero_pp_rank_{dp - 1}_mp_rank_00_optim_states.pt"
    (tag / name).unlink()
    _falls_back(
        _scan(OpenRLHFAdapter(), tmp_path, "0.11.2"),
        10,
        5,
        f"rank {dp - 1} of {dp}: _actor/global_step10/{name} missing",
    )


@pytest.mark.parametrize("role", ["_actor", "_critic"])
@pytest.mark.parametrize("version", ["0.5.9.post1", "0.8.11", "0.11.2"])
def test_openrlhf_the_issue_s_own_cases_a_middle_rank_s_model_states_missing_or_its_optimizer_shard_empty(
    tmp_path: Path, role: str, version: str
) -> None:
    """The faults as the issue measured them, on a rank that is neither the first nor the last, for each role of a
    4-rank PPO run: ``zero_pp_rank_2_mp_rank_00_model_states.pt`` missing, ``bf16_zero_pp_rank_1_...`` empty."""
    _ppo(tmp_path, 5, 4, True)
    _ppo(tmp_path, 10, 4, True)
    tag = tmp_path / role / "global_step10"
    (tag / "zero_pp_rank_2_mp_rank_00_model_states.pt").unlink()
    _falls_back(
        _scan(OpenRLHFAdapter(), tmp_path, version),
        10,
        5,
        f"rank 2 of 4: {role}/global_step10/zero_pp_rank_2_mp_rank_00_model_states.pt missing",
    )
    _ppo(tmp_path, 15, 4, True)
    empty(tmp_path / role / "global_step15" / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt")
    _falls_back(
        _scan(OpenRLHFAdapter(), tmp_path, version),
        15,
        5,
        f"{role}/global_step15/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt: empty",
    )


@pytest.mark.parametrize("dp", WORLDS)
def test_openrlhf_an_empty_or_cut_optimizer_shard(tmp_path: Path, dp: int) -> None:
    _ppo(tmp_path, 5, dp, True)
    tag = _ppo(tmp_path, 10, dp, True)
    empty(tag / "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt")
    critic = tmp_path / "_critic" / "global_step10" / f"zero_pp_rank_{dp - 1}_mp_rank_00_model_states.pt"
    cut_in_half(critic)
    _falls_back(
        _scan(OpenRLHFAdapter(), tmp_path, "0.8.11"),
        10,
        5,
        "_actor/global_step10/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt: empty",
        f"_critic/global_step10/zero_pp_rank_{dp - 1}_mp_rank_00_model_states.pt: zip central directory missing",
    )


@pytest.mark.parametrize("dp", WORLDS)
def test_openrlhf_critic_commit_behind_the_actor(tmp_path: Path, dp: int) -> None:
    _ppo(tmp_path, 10, dp, True)
    _ppo(tmp_path, 12, dp, True, critic_latest=False)  # the critic's save of 12 was cut before its `latest`
    scan = _scan(OpenRLHFAdapter(), tmp_path, "0.8.11")
    _falls_back(scan, 12, 10, "_critic/latest names global_step10, actor at global_step12")
    decision = decide(
        OpenRLHFAdapter(), Settings("openrlhf", "0.8.11", str(tmp_path)), ["t", "--load_checkpoint"]
    )
    assert decision is not None and decision.chosen is not None and decision.chosen.step == 10
    # DeepSpeed loads each role's `latest`: the actor's is pointed back at the step both committed
    assert decision.plan.rewrite == {tmp_path / "_actor" / "latest": "global_step10"}


# --- NeMo-RL ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("version", ["0.2.1", "0.4.0", "0.7.0"])
def test_nemo_rl_complete_steps_of_every_world_size(tmp_path: Path, world: int, version: str) -> None:
    nemo_step(tmp_path, 10, world=world)
    nemo_step(tmp_path, 20, world=world)
    scan = _scan(NemoRLAdapter(), tmp_path, version)
    assert [(c.step, c.complete, c.reason) for c in scan.checkpoints] == [(10, True, None), (20, True, None)]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("part", ["weights", "optimizer"])
def test_nemo_rl_a_ranks_shard_missing_or_cut(tmp_path: Path, world: int, part: str) -> None:
    nemo_step(tmp_path, 10, world=world)
    step = nemo_step(tmp_path, 20, world=world)
    shard = step / "policy" / part / f"__{world - 1}_0.distcp"
    if world == 1:
        cut_in_half(shard)
        reason = f"policy/{part}/__0_0.distcp: "
    else:
        shard.unlink()
        reason = f"policy/{part}/__{world - 1}_0.distcp missing (named by .metadata)"
    _falls_back(_scan(NemoRLAdapter(), tmp_path, "0.7.0"), 20, 10, reason)


@pytest.mark.parametrize(
    ("damage", "name", "reason"),
    [
        (cut_in_half, "train_dataloader.pt", "train_dataloader.pt: zip central directory missing"),
        (
            overwrite_random,
            "train_dataloader.pt",
            "train_dataloader.pt: neither a torch zip file nor a pickle",
        ),
        (Path.unlink, "policy/weights/.metadata", "policy/weights/.metadata missing"),
    ],
)
def test_nemo_rl_damaged_dataloader_or_metadata(
    tmp_path: Path, damage: Callable[[Path], None], name: str, reason: str
) -> None:
    nemo_step(tmp_path, 10, world=2)
    step = nemo_step(tmp_path, 20, world=2)
    damage(step / name)
    _falls_back(_scan(NemoRLAdapter(), tmp_path, "0.4.0"), 20, 10, reason)
