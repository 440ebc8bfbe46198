"""What TRL cannot express is refused before anything runs: exit code 2, the field, the version and, where a
pinned version can, the first one; a ``spec.native.trl`` key the version lacks is named with the versions that
have it. Renders only: no torch needed."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli import rladapt
from tests.conftest import REPO

EXAMPLE = str(REPO / "examples" / "grpo-tiny-trl.yaml")

REFUSED: list[tuple[str, list[str], list[str]]] = [
    (
        "1.16.0",
        [
            "spec.placement.pools=[{name: a, nodes: 2, gpus_per_node: 1, roles: [actor, rollout]}]",
            "spec.training.micro_batch_per_gpu=1",
        ],
        ["spec.placement.pools[0].nodes: trl 1.16.0 cannot express a job on several nodes"],
    ),
    (
        "1.16.0",
        [
            "spec.placement.pools=[{name: a, nodes: 1, gpus_per_node: 8, roles: [actor, rollout]}]",
            "spec.training.micro_batch_per_gpu=1",
        ],
        ["spec.placement.pools[0].gpus_per_node: trl 1.16.0 cannot express more than one GPU", "found 8"],
    ),
    (
        "1.16.0",
        ["spec.logging.val_generations=4"],
        ["spec.logging.val_generations: trl 1.16.0 cannot express a count of evaluation generations logged"],
    ),
    (
        "1.16.0",
        ["spec.training.critic_warmup_steps=2"],
        ["spec.training.critic_warmup_steps: algorithm grpo has no critic to warm up"],
    ),
    (
        "1.16.0",
        ["spec.rollout.engine=vllm"],
        ["spec.rollout.engine: trl 1.16.0 cannot express rollout.engine.vllm: TRL's vLLM generation"],
    ),
    (
        "1.16.0",
        [
            "spec.algorithm.name=ppo",
            "spec.placement.pools=[{name: a, gpus_per_node: 1, roles: [actor, rollout, critic]}]",
        ],
        ["spec.algorithm.name: trl 1.16.0 cannot express algorithm.ppo: TRL's PPOTrainer"],
    ),
    (
        "0.29.1",
        ["spec.algorithm.entropy_coef=0.01"],
        [
            "spec.algorithm.entropy_coef: trl 0.29.1 cannot express an entropy bonus",
            "first supported in trl 1.16.0",
        ],
    ),
    (
        "0.23.1",
        ["spec.reward.function=null", "spec.reward.builtin.name=math"],
        [
            "spec.reward.builtin.name: trl 0.23.1 cannot express reward.builtin.math",
            "first supported in trl 0.29.1",
        ],
    ),
    (
        "1.16.0",
        [
            "spec.algorithm.kl={coef: 0.1, in: reward}",
            "spec.placement.pools=[{name: a, gpus_per_node: 1, roles: [actor, rollout, ref]}]",
        ],
        ["spec.algorithm.kl.in: trl 1.16.0 cannot express KL in the reward with grpo"],
    ),
    (
        "1.16.0",
        ["spec.rollout.multi_turn={max_assistant_turns: 4, tool_config: tools.yaml}"],
        [
            "spec.rollout.multi_turn: trl 1.16.0 cannot express multi_turn: TRL's tool calling",
            "spec.rollout.multi_turn.tool_config: trl 1.16.0 cannot express multi_turn.tools",
            "no trl version supports it",
        ],
    ),
    (
        "0.29.1",
        ["spec.reward.function=null", "spec.rollout.agent.path=agents/env.py"],
        ["spec.rollout.agent.path: trl 0.29.1 cannot express rollout.agent: TRL's rollout_func"],
    ),
    (
        "0.23.1",
        ["spec.native.trl=[vllm_importance_sampling_mode=token]"],
        ["spec.native.trl[0]", "vllm_importance_sampling_mode", "1.16.0"],
    ),
    (
        "1.16.0",
        ["spec.native.trl=[num_generations=lots]"],
        ["spec.native.trl[0]", "num_generations"],
    ),
    (
        # a positive max_steps overrides num_train_epochs (transformers' Trainer): no whichever-comes-first
        "1.16.0",
        ["spec.training.epochs=2"],  # the example has steps: 30
        [
            "spec.training.epochs: trl 1.16.0 cannot express spec.training.steps and spec.training.epochs "
            "together (transformers' max_steps overrides num_train_epochs",
            "found 2",
        ],
    ),
]


@pytest.mark.parametrize(
    ("version", "overrides", "messages"), REFUSED, ids=[str(i) for i in range(len(REFUSED))]
)
def test_refused_with_the_field_and_the_version(
    version: str, overrides: list[str], messages: list[str]
) -> None:
    res = rladapt("render", "-f", f"trl=={version}", EXAMPLE, *overrides)
    assert res.returncode == 2, res.stdout + res.stderr
    text = " ".join(res.stderr.split())
    for message in messages:
        assert message in text, text
    assert "Traceback" not in res.stderr
    assert res.stdout == ""  # nothing half-rendered


def test_the_example_renders_on_every_pinned_version() -> None:
    for version in ("0.23.1", "0.29.1", "1.16.0"):
        res = rladapt("render", "-f", f"trl=={version}", EXAMPLE)
        assert res.returncode == 0, res.stderr
        assert "-m rladapt.adapters.trl.driver" in res.stdout


def test_the_deep_check_builds_the_installed_versions_config_class() -> None:
    """The snapshot accepts an int; TRL 1.16.0's own GRPOConfig.__post_init__ refuses one that does not divide."""
    pytest.importorskip("trl", reason="the trl extra (the dev extra installs it)")
    res = rladapt(
        "render", "--deep-check", "-f", "trl==1.16.0", EXAMPLE, "spec.native.trl=[generation_batch_size=12]"
    )
    assert res.returncode == 2, res.stderr
    assert "trl 1.16.0 refuses the config: generation_batch_size (12) must be divisible" in res.stderr


def test_builtin_math_is_trls_accuracy_reward_from_0_29_1() -> None:
    res = rladapt(
        "render",
        "-f",
        "trl==0.29.1",
        "--format",
        "json",
        EXAMPLE,
        "spec.reward.function=null",
        "spec.reward.builtin.name=math",
    )
    assert res.returncode == 0, res.stderr
    native = json.loads(res.stdout)
    (path,) = native["files"]
    assert path.startswith(".rladapt/trl/tiny-grpo-trl-") and path.endswith(".json")
    config = json.loads(native["files"][path])
    assert config["reward"] == {"builtin": "math"}
    assert any("trl.rewards.accuracy_reward" in note for note in native["notes"])


def test_two_runs_of_one_job_from_one_directory_read_their_own_driver_config() -> None:
    """The job writes its driver config when it starts and the driver reads it after importing torch: a second
    run of the same job (another checkpoint dir) started meanwhile must not replace it (seen as one run training
    into the other's checkpoint dir). Same spec, same file: the render stays deterministic."""
    from .conftest import job, render

    a = render(job("spec.checkpoint.dir=ck/a"), "1.16.0")
    b = render(job("spec.checkpoint.dir=ck/b"), "1.16.0")
    again = render(job("spec.checkpoint.dir=ck/a"), "1.16.0")
    assert set(a.files).isdisjoint(b.files)
    assert a.files == again.files and a.argv == again.argv
    (path,) = a.files
    assert a.argv[a.argv.index("--config") + 1] == path


@pytest.mark.parametrize("version", ["0.23.1", "0.29.1", "1.16.0"])
def test_trls_tools_are_python_callables_passed_to_the_trainer(version: str) -> None:
    """Why multi_turn is refused: 0.23.1's GRPOTrainer takes no tools; later ones take Python callables (and an
    environment factory), never a file, as constructor arguments the driver does not pass."""
    from .conftest import trl_root

    source = (trl_root(version) / "trl" / "trainer" / "grpo_trainer.py").read_text(encoding="utf-8")
    if version == "0.23.1":
        assert "tools:" not in source and "environment_factory" not in source
    else:
        assert "tools: list[Callable] | None = None" in source and "environment_factory" in source
    driver = (REPO / "rladapt" / "adapters" / "trl" / "driver.py").read_text(encoding="utf-8")
    assert "tools=" not in driver and "environment_factory" not in driver
