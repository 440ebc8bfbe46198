"""verl's OWN semantic validation (``verl.utils.config.validate_config``) on CPU, newest pinned version.

It needs torch, ray, tensordict and transformers at verl's pins: the venv built by ``.ci/verl-semantic.sh``
(cached under ``.cache/``). Skipped only when that venv is absent and ``RLADAPT_REQUIRE_SEMANTIC`` is unset.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from rladapt.adapters.verl import validate as verl_validate
from rladapt.adapters.verl.translate import translate
from rladapt.pipeline import render_native
from rladapt.plugins import NativeLaunch, Registry
from rladapt.primitives import load_job
from tests.conftest import GPU_EXAMPLES
from tests.support.wheels import REPO, file_lock

from .conftest import PINNED

pytestmark = pytest.mark.conformance

VERSION = PINNED[-1]
VENV_PYTHON = Path(
    os.environ.get(
        "RLADAPT_VERL_SEMANTIC_PYTHON",
        REPO / ".cache" / "verl-semantic" / f"venv-{VERSION}" / "bin" / "python",
    )
)
SCRIPT = Path(__file__).with_name("semantic_check.py")


def _case(name: str, native: NativeLaunch) -> dict[str, object]:
    inv = verl_validate.parse_argv(native.argv)
    return {
        "name": name,
        "subdir": inv.config_subdir,
        "config_name": inv.config_name,
        "overrides": list(inv.overrides),
    }


@pytest.fixture(scope="module")
def verdicts(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if not VENV_PYTHON.is_file():
        if os.environ.get("RLADAPT_REQUIRE_SEMANTIC"):
            pytest.fail(
                f"RLADAPT_REQUIRE_SEMANTIC is set but {VENV_PYTHON} is missing: run .ci/verl-semantic.sh"
            )
        pytest.skip(f"verl {VERSION} semantic venv not built ({VENV_PYTHON}); run .ci/verl-semantic.sh")
    model = tmp_path_factory.mktemp("tiny-model")
    paths = [f"spec.model.path={model}"]
    cases = []
    for example in GPU_EXAMPLES:
        job = load_job(example, paths)
        if job.spec.model.critic_path:
            job = load_job(example, [*paths, f"spec.model.critic_path={model}"])
        cases.append(_case(example.name, render_native(job, f"verl=={VERSION}", registry).native))
    grpo = REPO / "examples" / "grpo-gsm8k.yaml"
    # Hydra accepts both micro-batch forms; only verl's validation knows they exclude each other.
    both = load_job(grpo, [*paths, "spec.native.verl=[actor_rollout_ref.actor.ppo_micro_batch_size=8]"])
    cases.append(_case("both-micro-batch-forms", render_native(both, f"verl=={VERSION}", registry).native))
    # Megatron the 0.8.0+ way: ppo_trainer with model_engine=megatron (ppo_megatron_trainer.yaml is deprecated)
    megatron = load_job(grpo, [*paths, "spec.training.backend=megatron", "spec.training.parallel.tp=2"])
    cases.append(
        _case("megatron-engine-choice", render_native(megatron, f"verl=={VERSION}", registry).native)
    )
    separate = load_job(REPO / "examples" / "async-grpo-separate.yaml", paths)
    unpatched = translate(separate, registry.framework("verl").resolve_version(VERSION))
    cases.append(_case("separate-unpatched", unpatched))
    request = json.dumps({"cases": cases, "model_dir": str(model)}, sort_keys=True)
    # One verl import (~10 s of torch/ray/transformers) per session: xdist workers share the verdicts through
    # the session's common temp root, keyed by the exact request.
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # same for every worker of one session, never reused
    root = tmp_path_factory.getbasetemp()
    shared = (root.parent / f"verl-semantic-{run_id}") if run_id else (root / "verl-semantic")
    key = hashlib.sha256(request.replace(str(model), "<model>").encode()).hexdigest()[:16]
    with file_lock(shared / f"{key}.lock"):
        cached = shared / f"{key}.json"
        if cached.is_file():
            return dict(json.loads(cached.read_text()))
        out = _run(request)
        cached.write_text(json.dumps(out))
    return out


def _run(request: str) -> dict[str, str]:
    result = subprocess.run(
        [str(VENV_PYTHON), str(SCRIPT)],
        input=request,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out: dict[str, str] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("example", [p.name for p in GPU_EXAMPLES])
def test_examples_pass_verl_validation(example: str, verdicts: dict[str, str]) -> None:
    assert verdicts[example] == "VALID"


def test_verl_validation_catches_what_hydra_cannot(verdicts: dict[str, str]) -> None:
    assert "You have set both" in verdicts["both-micro-batch-forms"]


def test_searchpath_patch_is_needed_with_installed_verl(verdicts: dict[str, str]) -> None:
    # The example's own verdict (patched) is VALID above; without the patch the installed verl cannot compose.
    assert "ppo_trainer" in verdicts["separate-unpatched"], verdicts["separate-unpatched"]


def test_megatron_engine_choice_passes_verl_validation(verdicts: dict[str, str]) -> None:
    assert verdicts["megatron-engine-choice"] == "VALID"
