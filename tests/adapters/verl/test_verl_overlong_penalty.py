"""verl: DAPO's overlong penalty runs verl's dapo reward manager with its overlong buffer, on every pinned version.

Each launch is composed with the real wheel's Hydra config; the keys are checked where the wheel reads them, the
dapo manager's scoring is compared with the naive one's (which scores the same job without the penalty) in the
wheel's own files, and the wheel's own penalty lines run on the composed config against the spec's definition.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from omegaconf import OmegaConf
from packaging.version import Version

from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .test_verl_honest_defaults import ARR, composed, render, select

PENALTY: dict[str, Any] = {"buffer_tokens": 256, "max_penalty": 0.5}
FUNCTION = {"path": "rewards/score.py"}


def _legacy(version: str) -> bool:
    return Version(version) < Version("0.7.1")


def _kwargs(version: str) -> str:
    return "reward_model.reward_kwargs" if _legacy(version) else "reward.reward_kwargs"


def _manager(version: str) -> str:
    return "reward_model.reward_manager" if _legacy(version) else "reward.reward_manager.name"


#: (naive, dapo) scoring files of each path a version's run takes, and what the dapo one leaves out of extra_info.
def _paths(version: str) -> list[tuple[str, str, tuple[str, ...]]]:
    if not _legacy(version):
        loop = "experimental/reward_loop/reward_manager"
        missing = (
            'extra_info["num_turns"] = num_turns',
            'extra_info["rollout_reward_scores"] = rollout_reward_scores',
            "extra_info.update(tool_extra_fields.items())",
        )
        return [(f"{loop}/naive.py", f"{loop}/dapo.py", missing)]
    paths: list[tuple[str, str, tuple[str, ...]]] = [
        (
            "workers/reward_manager/naive.py",
            "workers/reward_manager/dapo.py",
            ('extra_info["num_turns"] = num_turns',),
        )
    ]
    if version == "0.6.1":  # the async rollout's agent loop scores through experimental/reward
        loop = "experimental/reward/reward_loop"
        paths.append(
            (f"{loop}/naive.py", f"{loop}/dapo.py", ("extra_info.update(tool_extra_fields.items())",))
        )
    return paths


def _penalty_block(source: str) -> str:
    """The dapo manager's own lines that add the penalty (from its ``if ... enable:`` to the block's end)."""
    lines = source.splitlines()
    start = next(
        i for i, line in enumerate(lines) if "overlong_buffer_len = self.overlong_buffer_cfg.len" in line
    )
    head = start - 1
    assert lines[head].lstrip().startswith("if ") and "enable" in lines[head], lines[head]
    indent = len(lines[head]) - len(lines[head].lstrip())
    end = start
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    return textwrap.dedent("\n".join(lines[head:end]))


def _neutral(length: int, budget: int, buffer: int, max_penalty: float) -> float:
    """The spec's definition: 0 up to budget - buffer, then linear to -max_penalty at the budget."""
    return -max_penalty * max(0, length - (budget - buffer)) / buffer


def test_the_penalty_reaches_the_dapo_manager(pinned: tuple[str, Path], registry: Registry) -> None:
    version, package = pinned
    native = render(registry, version, reward={"function": FUNCTION, "overlong_penalty": PENALTY})
    cfg = composed(native, version)
    kw = _kwargs(version)
    assert select(cfg, _manager(version)) == "dapo"
    assert select(cfg, f"{kw}.max_resp_len") == 1024 == select(cfg, "data.max_response_length")
    assert select(cfg, f"{kw}.overlong_buffer_cfg") == {
        "enable": True,
        "len": 256,
        "penalty_factor": 0.5,
        "log": False,
    }
    assert native.origins[f"{kw}.overlong_buffer_cfg.len"] == "spec.reward.overlong_penalty.buffer_tokens"
    assert (
        native.origins[f"{kw}.overlong_buffer_cfg.penalty_factor"]
        == "spec.reward.overlong_penalty.max_penalty"
    )
    # where the wheel reads them
    if _legacy(version):
        assert (
            '**config.reward_model.get("reward_kwargs", {})' in (package / "trainer/main_ppo.py").read_text()
        )
        assert (
            'config.reward_model.get("reward_manager", "naive")'
            in (package / "trainer/ppo/reward.py").read_text()
        )
        assert (
            "max_resp_len=None,\n        overlong_buffer_cfg=None,"
            in (package / "workers/reward_manager/dapo.py").read_text()
        )
    else:
        assert (
            "get_reward_manager_cls(reward_manager_cfg.name)"
            in (package / "trainer/ppo/reward.py").read_text()
        )
    for _, dapo, _ in _paths(version):
        text = (package / dapo).read_text()
        assert '@register("dapo")' in text
        if "reward_loop" in dapo:
            tree = "reward_model" if _legacy(version) else "reward"
            assert f'config.{tree}.get("reward_kwargs", {{}}).get("overlong_buffer_cfg", None)' in text
            assert f'config.{tree}.get("reward_kwargs", {{}}).get("max_resp_len", None)' in text
    if version == "0.6.1":
        assert (
            "get_reward_loop_manager_cls(self.config.reward_model.reward_manager)"
            in (package / "experimental/reward/reward_manager.py").read_text()
        )


def test_the_wheels_own_penalty_lines_give_the_spec_definition(
    pinned: tuple[str, Path], registry: Registry
) -> None:
    """The dapo manager's penalty lines, run on the buffer config Hydra composed from the render."""
    version, package = pinned
    native = render(
        registry,
        version,
        rollout={"max_tokens": 768},
        reward={"function": FUNCTION, "overlong_penalty": PENALTY},
    )
    cfg = composed(native, version)
    kw = OmegaConf.select(cfg, _kwargs(version))
    assert select(cfg, f"{ARR}.rollout.response_length") == 768 == kw.max_resp_len  # rollout.max_tokens wins
    budget, buffer, max_penalty = 768, PENALTY["buffer_tokens"], PENALTY["max_penalty"]
    for _, dapo, _ in _paths(version):
        block = _penalty_block((package / dapo).read_text())
        for length in (1, budget - buffer, budget - buffer + 1, budget - buffer // 2, budget):
            scope: dict[str, Any] = {
                "self": SimpleNamespace(
                    overlong_buffer_cfg=kw.overlong_buffer_cfg, max_resp_len=kw.max_resp_len
                ),
                "valid_response_length": length,
                "reward": 1.0,
                "reward_extra_info": defaultdict(list),
            }
            exec(block, {"min": min}, scope)  # the wheel's own lines, on the composed config
            assert scope["reward"] == pytest.approx(1.0 + _neutral(length, budget, buffer, max_penalty)), (
                length
            )
            assert not scope["reward_extra_info"]  # log: false adds nothing to the reward's extra info


def test_dapo_scores_as_the_naive_manager_apart_from_the_penalty(pinned: tuple[str, Path]) -> None:
    """The same compute_score call, dict handling and placement; extra_info loses only what the render notes."""
    version, package = pinned
    call = re.compile(
        r"self\.compute_score\(\s*data_source=data_source,\s*solution_str=response_str,\s*"
        r"ground_truth=ground_truth,\s*extra_info=extra_info,"
    )
    for naive_file, dapo_file, missing in _paths(version):
        naive, dapo = (package / naive_file).read_text(), (package / dapo_file).read_text()
        assert call.search(naive) and call.search(dapo)
        for text in (naive, dapo):
            assert re.search(r'score = (score|result)\["score"\]', text) or re.search(
                r'reward = score\["score"\]', text
            )
        if "reward_loop" not in dapo_file:
            assert "reward_tensor[i, valid_response_length - 1] = reward" in naive
            assert "reward_tensor[i, valid_response_length - 1] = reward" in dapo
            assert '"rm_scores" in data.batch.keys()' in naive and '"rm_scores" in data.batch.keys()' in dapo
        else:  # the loop's caller places the score; both return it the same way
            assert 'return {"reward_score": reward, "reward_extra_info": reward_extra_info}' in naive
            assert 'return {"reward_score": reward, "reward_extra_info": reward_extra_info}' in dapo

        def mutations(text: str) -> set[str]:
            return {
                line.strip()
                for line in text.splitlines()
                if re.match(r"\s*extra_info(\[.+\] = |\.update\()", line)
            }

        for line in missing:
            assert line in mutations(naive) and line not in mutations(dapo), (dapo_file, line)
        assert mutations(naive) - mutations(dapo) == set(missing), dapo_file
    if version == "0.5.0":  # the render's note: extra_info=None for data without the column
        assert (
            'non_tensor_batch.get("extra_info", None)'
            in (package / "workers/reward_manager/dapo.py").read_text()
        )


def test_the_render_notes_what_the_reward_function_sees(registry: Registry) -> None:
    native = render(registry, "0.9.1", reward={"function": FUNCTION, "overlong_penalty": PENALTY})
    notes = " ".join(native.notes)
    assert "rewards/score.py:compute_score" in notes and "rollout_reward_scores" in notes
    assert "scores validation" in notes
    old = render(registry, "0.5.0", reward={"function": FUNCTION, "overlong_penalty": PENALTY})
    assert "extra_info=None" in " ".join(old.notes)
    # 0.6.1's async rollout scores in the agent loop's reward loop, whose dapo manager drops the tool fields
    loop = render(
        registry,
        "0.6.1",
        rollout={"mode": "async"},
        reward={"function": FUNCTION, "overlong_penalty": PENALTY},
    )
    assert "tool_extra_fields" in " ".join(loop.notes) and "num_turns" not in " ".join(loop.notes)
    # verl's own scorers read no extra_info (utils/reward_score/): no note about it
    builtin = render(
        registry, "0.9.1", reward={"builtin": {"name": "by_data_source"}, "overlong_penalty": PENALTY}
    )
    assert not any("extra_info" in note for note in builtin.notes)
    assert select(composed(builtin, "0.9.1"), "reward.reward_manager.name") == "dapo"


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1", "0.9.1"])
def test_a_reward_model_alone_is_refused_with_the_reason(registry: Registry, version: str) -> None:
    with pytest.raises(SpecError) as err:
        render(registry, version, reward={"model": {"path": "rm"}, "overlong_penalty": PENALTY})
    text = str(err.value)
    assert "spec.reward.overlong_penalty" in text and "returns the model's scores without adding it" in text


def test_a_reward_model_scored_by_a_function_takes_the_penalty_from_0_7_1(registry: Registry) -> None:
    reward = {"function": FUNCTION, "model": {"path": "rm"}, "overlong_penalty": PENALTY}
    cfg = composed(render(registry, "0.9.1", reward=reward), "0.9.1")
    assert select(cfg, "reward.reward_manager.name") == "dapo"
    with pytest.raises(SpecError, match="returns the model's scores"):
        render(registry, "0.6.1", reward=reward)


@pytest.mark.parametrize("version", ["0.6.1", "0.9.1"])
def test_multi_turn_is_refused_with_the_reason(registry: Registry, version: str) -> None:
    with pytest.raises(SpecError) as err:
        render(
            registry,
            version,
            rollout={"mode": "async", "multi_turn": {"max_assistant_turns": 2}},
            reward={"function": FUNCTION, "overlong_penalty": PENALTY},
        )
    text = str(err.value)
    assert "spec.reward.overlong_penalty" in text and "multi-turn" in text
    assert ("rollout_reward_scores" if version == "0.9.1" else "tool_extra_fields") in text


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1", "0.9.1"])
def test_import_maps_the_overlong_buffer_back(registry: Registry, version: str) -> None:
    from rladapt.adapters.verl import importer as fw
    from rladapt.importing.importer import build
    from rladapt.importing.script import read_launch

    native = render(registry, version, reward={"function": FUNCTION, "overlong_penalty": PENALTY})
    text = " ".join(native.argv)
    imported = build(
        fw, version, list(read_launch(text, "cmd", fw.match).argv), source="cmd", registry=registry
    )
    penalty = imported.job.spec.reward.overlong_penalty
    assert penalty is not None and (penalty.buffer_tokens, penalty.max_penalty) == (256, 0.5)
    native_items = imported.job.spec.native.get("verl", [])
    assert not any("reward_kwargs" in item or "reward_manager" in item for item in native_items)
    # a max_resp_len other than the response budget is not the spec's penalty: it stays native
    other = text.replace("max_resp_len=1024", "max_resp_len=900")
    kept = build(fw, version, list(read_launch(other, "cmd", fw.match).argv), source="cmd", registry=registry)
    assert kept.job.spec.reward.overlong_penalty is None
    assert any("max_resp_len=900" in item for item in kept.job.spec.native.get("verl", []))


@pytest.mark.conformance
def test_verl_s_own_dapo_manager_scores_the_render(registry: Registry, tmp_path: Path) -> None:
    """The newest pinned verl, in its semantic venv: load_reward_manager builds the dapo manager from the
    composed render and its run_single gives the spec's penalty (the score 1.0 of a reward function plus it)."""
    import json
    import os
    import subprocess

    from rladapt.adapters.verl import validate as verl_validate

    from .test_verl_semantic import VENV_PYTHON, VERSION

    if not VENV_PYTHON.is_file():
        if os.environ.get("RLADAPT_REQUIRE_SEMANTIC"):
            pytest.fail(
                f"RLADAPT_REQUIRE_SEMANTIC is set but {VENV_PYTHON} is missing: run .ci/verl-semantic.sh"
            )
        pytest.skip(f"verl {VERSION} semantic venv not built ({VENV_PYTHON}); run .ci/verl-semantic.sh")
    score = tmp_path / "score.py"
    score.write_text(
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw):\n    return 1.0\n"
    )
    budget, buffer, max_penalty = 16, 8, 0.5
    native = render(
        registry,
        VERSION,
        data={"train": ["data/train.parquet"], "max_prompt_length": 4, "max_response_length": budget},
        reward={
            "function": {"path": str(score)},
            "overlong_penalty": {"buffer_tokens": buffer, "max_penalty": 0.5},
        },
    )
    inv = verl_validate.parse_argv(native.argv)
    lengths = list(range(1, budget + 1))
    request = {
        "subdir": inv.config_subdir,
        "config_name": inv.config_name,
        "overrides": list(inv.overrides),
        "model_dir": str(tmp_path / "tiny-model"),
        "prompt_length": 4,
        "response_length": budget,
        "lengths": lengths,
    }
    result = subprocess.run(
        [str(VENV_PYTHON), str(Path(__file__).with_name("dapo_penalty_check.py"))],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["manager"] == "DAPORewardManager"
    expected = [1.0 + _neutral(length, budget, buffer, max_penalty) for length in lengths]
    assert out["rewards"] == pytest.approx(expected)
    assert out["rewards"][budget - buffer - 1] == 1.0 and out["rewards"][-1] == pytest.approx(0.5)
