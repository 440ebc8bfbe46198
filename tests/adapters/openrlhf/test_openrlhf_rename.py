"""The 0.10.2 break: the same spec rendered for 0.10.1.post2 and 0.10.2 shows every flag renamed (per the research
notes' independent map), both parse to the same values, and neither side's flags are accepted by the other."""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.adapters.openrlhf.parser import parse
from rladapt.plugins import Registry
from rladapt.primitives import SpecError

from .conftest import job, parse_ok, real_parser, rename_map, render

pytestmark = pytest.mark.conformance

OLD, NEW = "0.10.1.post2", "0.10.2"
SPEC: dict[str, Any] = {
    "algorithm": {"name": "ppo", "group_size": 2, "kl": {"coef": 0.01, "in": "reward", "estimator": "k2"}},
    "model": {"path": "m/p", "lora": {"rank": 8, "alpha": 16}},
    "reward": {"remote": {"url": "http://rm:1234/score"}},
    "placement": {
        "pools": [
            {"name": "train", "nodes": 1, "gpus_per_node": 8, "roles": ["actor", "ref"]},
            {"name": "value", "nodes": 1, "gpus_per_node": 4, "roles": ["critic"]},
            {"name": "gen", "nodes": 1, "gpus_per_node": 8, "roles": ["rollout"]},
        ]
    },
    "logging": {"backends": ["console", "wandb", "tensorboard"]},
}


def _options(argv: tuple[str, ...]) -> list[str]:
    return [a for a in argv[3:] if a.startswith("--")]


def test_same_spec_renders_with_each_sides_flag_names(registry: Registry) -> None:
    spec = job(**SPEC)
    old = _options(render(spec, OLD, registry).native.argv)
    new = _options(render(spec, NEW, registry).native.argv)
    mapping = rename_map()["map"]
    assert all("." not in flag for flag in old) and all("." in flag for flag in new)
    for flag in old:
        renamed = mapping[flag]
        targets = renamed if isinstance(renamed, list) else [renamed]
        assert targets[0] in new, f"{flag} should appear as {targets[0]} in the {NEW} argv"
    assert len(new) >= len(old)  # split optimizer flags (critic weight decay, warmup) only add


def test_both_sides_read_the_same_values(registry: Registry) -> None:
    spec = job(**SPEC)
    old_ns = vars(parse_ok(OLD, render(spec, OLD, registry).native.argv[3:]))
    new_ns = vars(parse_ok(NEW, render(spec, NEW, registry).native.argv[3:]))
    mapping = rename_map()["map"]
    compared = 0
    for dest, value in old_ns.items():
        renamed = mapping.get(f"--{dest}")
        if renamed is None:
            continue
        target = (renamed[0] if isinstance(renamed, list) else renamed)[2:]
        if target in new_ns and dest not in ("use_wandb",):
            assert new_ns[target] == value or (
                isinstance(value, (tuple, list)) and list(new_ns[target]) == list(value)
            ), f"--{dest}={value!r} became --{target}={new_ns[target]!r}"
            compared += 1
    assert compared > 100


@pytest.mark.parametrize(("rendered_for", "parsed_by"), [(OLD, NEW), (NEW, OLD)])
def test_one_sides_flags_are_rejected_by_the_other(
    rendered_for: str, parsed_by: str, registry: Registry
) -> None:
    argv = render(job(**SPEC), rendered_for, registry).native.argv[3:]
    result = parse(real_parser(parsed_by), list(argv))
    unknown_flags = [a for a in result.unknown if a.startswith("--")]
    assert result.error is None
    assert set(unknown_flags) == set(_options(("", "", "", *argv))), "no flag may survive the rename"


def test_validate_native_names_the_wrong_sides_flag(registry: Registry, real_source: Any) -> None:
    native = render(job(**SPEC), OLD, registry).native
    real_source(NEW)
    problems = registry.framework("openrlhf").validate_native(native.model_copy(update={"version": NEW}))
    assert problems is not None  # None would mean the real parser was not found
    found = {p.found for p in problems}
    assert "--actor_num_nodes" in found and "--pretrain" in found
    assert any("did you mean --actor.num_nodes" in p.message for p in problems)


def test_native_flag_of_the_old_side_is_refused_on_the_new_one(registry: Registry, real_source: Any) -> None:
    real_source(NEW)
    with pytest.raises(SpecError) as caught:
        render(job(**SPEC, native={"openrlhf": ["--packing_samples"]}), NEW, registry)
    (problem,) = caught.value.problems
    assert problem.path == "spec.native.openrlhf"
    assert "no flag --packing_samples" in problem.message
