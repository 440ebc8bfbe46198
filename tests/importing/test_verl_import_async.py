"""verl's one-step-off and fully-async trainers: a launch rladapt renders for them, and an upstream-style
fully-async script, import back to the rollout pool and the weight-sync fields, and the import renders the same
effective config (build's own check, and an independent one here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.adapters.verl import importer as fw
from rladapt.adapters.verl.entrypoints import FULLY_ASYNC_MODULE, MAIN_MODULE, ONE_STEP_OFF_MODULE
from rladapt.adapters.verl.translate import CONFIG_NAMES
from rladapt.importing.importer import Imported, build, differences
from rladapt.importing.script import read_launch
from rladapt.pipeline import render_native
from rladapt.plugins import Registry, load_registry
from rladapt.plugins.effective import same
from rladapt.primitives import RLJob, load_job_text
from tests.adapters.verl.conftest import verl_package

#: the pinned versions with the one-step-off and fully-async entry modules in the wheel (verl.toml, 0.8.0+)
VERSIONS = ["0.8.0", "0.9.1"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "async-grpo-separate.yaml"

#: weight_sync and rollout pool overrides of the example -> the entry module rladapt picks for them, and the
#: weight_sync fields the import gives where they are not the example's own
CASES: dict[str, tuple[list[str], str, dict[str, object]]] = {
    "one-step-off": ([], ONE_STEP_OFF_MODULE, {}),
    "fully-async": (
        [
            "spec.weight_sync.max_staleness=3",
            "spec.weight_sync.every_steps=2",
            "spec.weight_sync.partial_rollout=false",
            "spec.weight_sync.run_ahead_fraction=0.25",
            "spec.placement.pools[1].gpus_per_node=4",
        ],
        FULLY_ASYNC_MODULE,
        # with a run-ahead fraction, max_staleness reaches no verl key (the threshold is the fraction): the
        # import gives the least one that renders the same run (at least every_steps and 2)
        {"max_staleness": 2},
    ),
    "one-step-off-megatron": (["spec.training.backend=megatron"], ONE_STEP_OFF_MODULE, {}),
    "fully-async-default-threshold": (
        ["spec.weight_sync.max_staleness=2", "spec.weight_sync.every_steps=2", "spec.training.mini_batch=32"],
        FULLY_ASYNC_MODULE,
        {},
    ),
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)


def _job(overrides: list[str]) -> RLJob:
    # no native items: the example's clip_ratio_c is verl's own value anyway
    return load_job_text(EXAMPLE.read_text(), ["spec.native.verl=[]", *overrides], "async.yaml")


def _import(registry: Registry, version: str, argv: list[str]) -> Imported:
    return build(fw, version, argv, source="launch.sh", registry=registry)


def _same_run(registry: Registry, version: str, argv: list[str], imported: Imported) -> None:
    """Independently of build's own check: the written text renders to the launch's effective config."""
    again = render_native(load_job_text(imported.text, [], "job.yaml"), f"verl=={version}", registry).native
    assert differences(fw.effective(argv, version), fw.effective(list(again.argv), version)) == []


def _pools(job: RLJob) -> list[tuple[int, int, list[str]]]:
    return [(p.nodes, p.gpus_per_node, sorted(p.roles)) for p in job.placement.pools]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("version", VERSIONS)
def test_rendered_async_launch_imports_to_its_spec_fields(
    registry: Registry, version: str, case: str
) -> None:
    overrides, module, differs = CASES[case]
    job = _job(overrides)
    argv = list(render_native(job, f"verl=={version}", registry).native.argv)
    assert argv[2] == module
    imported = _import(registry, version, argv)
    _same_run(registry, version, argv, imported)
    got, want = imported.job, job
    assert render_native(got, f"verl=={version}", registry).native.argv[2] == module
    assert _pools(got) == _pools(want)
    # method: auto and nccl both render the nccl checkpoint engine
    expected = {**want.spec.weight_sync.model_dump(exclude={"method"}), **differs}
    assert got.spec.weight_sync.model_dump(exclude={"method"}) == expected
    tr, wtr = got.spec.training, want.spec.training
    assert (tr.global_batch, tr.mini_batch, tr.steps) == (wtr.global_batch, wtr.mini_batch, wtr.steps)
    assert tr.backend == wtr.backend
    # nothing of the rollout pool, the weight sync or the batch relation is left to native items
    native = " ".join(got.spec.native.get("verl", []))
    for key in ("rollout.nnodes", "rollout.n_gpus_per_node", "async_training.", "data.train_batch_size"):
        assert key not in native, native


@pytest.mark.parametrize("version", VERSIONS)
def test_fully_async_batch_is_require_batches_mini_batches(registry: Registry, version: str) -> None:
    argv = list(render_native(_job(CASES["fully-async"][0]), f"verl=={version}", registry).native.argv)
    assert "data.train_batch_size=0" in argv and "async_training.require_batches=4" in argv
    imported = _import(registry, version, argv)
    assert (imported.job.spec.training.global_batch, imported.job.spec.training.mini_batch) == (256, 64)


#: an upstream-style fully-async launch (the shape of verl's recipe/fully_async_policy shell scripts: shell
#: variables, train_batch_size 0, a rollout pool of its own, staleness 0 with a sync every 4 steps)
UPSTREAM = r"""#!/usr/bin/env bash
set -xeuo pipefail
train_prompt_bsz=0
n_resp_per_prompt=8
train_prompt_mini_bsz=32
require_batches=2
total_rollout_steps=$((512*100))
staleness_threshold=0
trigger_parameter_sync_step=4
partial_rollout=False
NNODES_TRAIN=1
NNODES_ROLLOUT=1
NGPUS_PER_NODE=8
python -m verl.experimental.fully_async_policy.fully_async_main \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/gsm8k/train.parquet \
    data.val_files=/data/gsm8k/test.parquet \
    data.train_batch_size=${train_prompt_bsz} \
    data.max_prompt_length=1024 \
    data.max_response_length=2048 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.hybrid_engine=False \
    actor_rollout_ref.actor.strategy=fsdp2 \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=${train_prompt_mini_bsz} \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.mode=async \
    actor_rollout_ref.rollout.n=${n_resp_per_prompt} \
    actor_rollout_ref.rollout.calculate_log_probs=True \
    trainer.logger='["console"]' \
    trainer.nnodes="${NNODES_TRAIN}" \
    trainer.n_gpus_per_node="${NGPUS_PER_NODE}" \
    trainer.total_epochs=10 \
    rollout.nnodes="${NNODES_ROLLOUT}" \
    rollout.n_gpus_per_node="${NGPUS_PER_NODE}" \
    rollout.total_rollout_steps="${total_rollout_steps}" \
    async_training.staleness_threshold="${staleness_threshold}" \
    async_training.trigger_parameter_sync_step="${trigger_parameter_sync_step}" \
    async_training.require_batches="${require_batches}" \
    async_training.partial_rollout="${partial_rollout}"
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_upstream_style_fully_async_script(registry: Registry, version: str) -> None:
    launch = read_launch(UPSTREAM, "fully_async.sh", fw.match)
    argv = list(launch.argv)
    imported = _import(registry, version, argv)
    _same_run(registry, version, argv, imported)
    spec = imported.job.spec
    assert _pools(imported.job) == [(1, 8, ["actor"]), (1, 8, ["rollout"])]
    ws = spec.weight_sync
    # a sync every 4 steps; staleness 0: the rollouter runs no further ahead than one sync period
    assert (ws.every_steps, ws.max_staleness, ws.run_ahead_fraction, ws.partial_rollout) == (4, 4, 0.0, False)
    assert (spec.training.global_batch, spec.training.mini_batch) == (64, 32)
    # the rollouter's prompt count is steps x global batch (800 x 64), as rladapt renders it, capped by the
    # launch's 10 passes over the data: whichever comes first, the spec's steps + epochs; the trainer reads no
    # total_training_steps, which stays as written
    assert (spec.training.steps, spec.training.epochs) == (800, 10)
    native = spec.native.get("verl", [])
    assert "trainer.total_training_steps=null" in native
    assert not any(item.startswith("trainer.total_epochs") for item in native)
    # nothing forces ppo_trainer's defaults over the fully-async config's own (its nccl checkpoint engine, the
    # bypass mode): the launch names neither, so neither may appear
    written = (
        "async_training.",
        "rollout.nnodes",
        "rollout.n_gpus",
        "data.train_batch_size",
        "rollout.total",
    )
    assert not any(item.startswith(written) for item in native), native
    assert not any("checkpoint_engine" in item or "bypass_mode" in item for item in native), native


def _text(version: str, path: str) -> str:
    return (verl_package(version) / path).read_text()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_keys_imported_are_the_ones_verls_async_trainers_read(version: str) -> None:
    """The keys the importer turns into fields are read by the wheel's code (not only declared)."""
    for main in (
        "experimental/one_step_off_policy/main_ppo.py",
        "experimental/fully_async_policy/fully_async_main.py",
    ):
        text = _text(version, main)
        assert "config.actor_rollout_ref.rollout.nnodes = config.rollout.nnodes" in text
        assert "config.actor_rollout_ref.rollout.n_gpus_per_node = config.rollout.n_gpus_per_node" in text
    rollouter = _text(version, "experimental/fully_async_policy/fully_async_rollouter.py")
    trainer = _text(version, "experimental/fully_async_policy/fully_async_trainer.py")
    assert 'assert self.config.data.train_batch_size == 0, "train_batch_size must be zero"' in rollouter
    for text in (rollouter, trainer):
        assert "config.async_training.require_batches" in text
        assert "config.actor_rollout_ref.actor.ppo_mini_batch_size * self.require_batches" in text
    assert "config.async_training.trigger_parameter_sync_step" in trainer
    assert 'config.async_training.get("staleness_threshold", 1)' in rollouter
    assert "* (self.staleness_threshold + 1)" in rollouter


def _flat(node: object, prefix: str, out: dict[str, object]) -> dict[str, object]:
    if isinstance(node, dict) and node:
        for key, value in node.items():
            _flat(value, f"{prefix}{key}.", out)
    else:
        out[prefix[:-1]] = node
    return out


def _misread(version: str, module: str, config: list[str]) -> dict[str, tuple[object, object]]:
    """Keys whose offline effective value of a launch that sets nothing is not what verl's own Hydra composes
    from the wheel."""
    from omegaconf import OmegaConf

    from rladapt.adapters.verl.effective import ONE_OR_LIST
    from rladapt.adapters.verl.validate import compose, parse_argv

    argv = ["python3", "-m", module, *config]
    searchpath = ["hydra.searchpath=[pkg://verl.trainer.config]"] if module != MAIN_MODULE else []
    composed = compose(verl_package(version), parse_argv([*argv, *searchpath]))
    real = _flat(OmegaConf.to_container(composed, resolve=True), "", {})
    # a string where verl reads a list is the list of that one item (rladapt.adapters.verl.effective.ONE_OR_LIST)
    real.update({k: [real[k]] for k in ONE_OR_LIST if isinstance(real.get(k), str)})
    offline = fw.effective(argv, version).values
    return {
        key: (real[key], offline[key])
        for key in real
        # an interpolation to a null the offline reader leaves as written is not a value of its own
        if key in offline and not same(real[key], offline[key]) and "${" not in str(offline[key])
    }


@pytest.mark.parametrize("module", [ONE_STEP_OFF_MODULE, FULLY_ASYNC_MODULE])
@pytest.mark.parametrize("version", VERSIONS)
def test_a_bare_launch_has_the_experimental_configs_own_defaults(version: str, module: str) -> None:
    """The offline effective config of a launch that sets nothing is what verl composes from the wheel's
    experimental config: its values for ppo_trainer's keys (checkpoint engine, bypass mode, ...) too, so that an
    import never writes ppo_trainer's default back over them. The Megatron variants are read no worse than
    ppo_megatron_trainer itself (whose snapshot reading keeps the FSDP defaults of some keys)."""
    assert _misread(version, module, []) == {}
    megatron = CONFIG_NAMES[module][1]
    base = _misread(version, MAIN_MODULE, ["--config-name", "ppo_megatron_trainer"])
    assert set(_misread(version, module, ["--config-name", megatron])) <= set(base)


def test_cli_imports_the_upstream_style_script_and_diff_finds_it_equal(tmp_path: Path) -> None:
    from tests.importing.test_migrate_cli import rladapt

    (tmp_path / "fully_async.sh").write_text(UPSTREAM)
    done = rladapt("import", "-f", "verl==0.9.1", "fully_async.sh", "-o", "job.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    same = rladapt("diff", "job.yaml", "fully_async.sh", "-f", "verl==0.9.1", "--exit-code", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    # verl 0.7.1's wheel has no fully-async trainer: an error naming the keys and the versions that have them
    old = rladapt("import", "-f", "verl==0.7.1", "fully_async.sh", cwd=tmp_path)
    assert old.returncode == 2 and "Traceback" not in old.stderr
    assert "'async_training.trigger_parameter_sync_step'; it exists in verl 0.8.0, 0.9.1" in old.stderr
