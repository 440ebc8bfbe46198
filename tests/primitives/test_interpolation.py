"""Interpolation reads fields of the spec and nothing else, whatever the spelling (issue 9).

Each case sets ``ADV`` in the environment to a sentinel and checks that the sentinel reaches neither the loaded
job nor its JSON dump nor the error, and that the error names the field that asked for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.primitives import RLJob, SpecError, load_job, load_job_text
from tests.primitives.test_loading import MINIMAL

SENTINEL = "adv-sentinel-7f3a"

ASSEMBLED = MINIMAL + """  env: {DOLLAR: "$", REF: "'${spec.env.DOLLAR}{oc.env:ADV}'"}\n"""


@pytest.fixture(autouse=True)
def _adv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADV", SENTINEL)


def refused(text: str, overrides: list[str] | None = None) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_job_text(text, overrides or [])
    assert SENTINEL not in str(info.value)
    return info.value


def loaded(text: str, overrides: list[str] | None = None) -> RLJob:
    job = load_job_text(text, overrides or [])
    assert SENTINEL not in job.model_dump_json()
    return job


def paths(exc: SpecError) -> list[str]:
    return [p.path for p in exc.problems]


@pytest.mark.parametrize(
    "override",
    [
        r'spec.model.path="\x24{oc.env:ADV}"',  # a YAML escape: the raw text has no "${"
        r'spec.model.path="\u0024{oc.env:ADV}"',
        r'spec.model.path="$\x7Boc.env:ADV}"',
        "spec.model.path=${oc.env:ADV}",
        "spec.model.path='${ oc.env : ADV }'",
        "spec.model.path=prefix-${oc.env:ADV,default}-suffix",
    ],
)
def test_environment_by_any_spelling_in_an_override(override: str) -> None:
    exc = refused(MINIMAL, [override])
    assert paths(exc) == ["spec.model.path"]
    assert "resolver 'oc.env' called in interpolation" in str(exc.problems[0])


def test_environment_by_a_yaml_escape_in_the_file(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(MINIMAL.replace("path: Qwen/Qwen2.5-0.5B-Instruct", r'path: "\x24{oc.env:ADV}"'))
    with pytest.raises(SpecError) as info:
        load_job(spec)
    assert [p.path for p in info.value.problems] == ["spec.model.path"]
    assert SENTINEL not in str(info.value)


def test_text_assembled_from_fields_stays_literal() -> None:
    # "${" + "{oc.env:ADV}" built by a reference is a value, never parsed again
    job = loaded(ASSEMBLED, ["spec.model.path=${spec.env.REF}"])
    assert job.spec.env["REF"] == "'${oc.env:ADV}'"
    assert job.spec.model.path == "'${oc.env:ADV}'"


@pytest.mark.parametrize("where", ["override", "file"])
def test_decoding_assembled_text_is_refused(where: str) -> None:
    decode = "${oc.decode:${spec.env.REF}}"
    if where == "override":
        exc = refused(ASSEMBLED, [f"spec.model.path={decode}"])
    else:
        exc = refused(ASSEMBLED.replace("path: Qwen/Qwen2.5-0.5B-Instruct", f"path: '{decode}'"))
    assert paths(exc) == ["spec.model.path"]
    assert "resolver 'oc.decode' called in interpolation" in str(exc.problems[0])


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("${oc.create:{a: 1}}", "oc.create"),
        ("${oc.select:spec.model.path,x}", "oc.select"),
        ("${oc.dict.keys:spec}", "oc.dict.keys"),
        ("${oc.dict.values:spec.env}", "oc.dict.values"),
        ("${oc.deprecated:spec.model.path}", "oc.deprecated"),
        ("${my_resolver:}", "my_resolver"),
        ("${now:%Y}", "now"),
        ("${hydra:runtime.cwd}", "hydra"),
        ("x-${eval:1+1}", "eval"),
        ("${oc.env:${oc.env:ADV}}", "oc.env"),
    ],
)
def test_every_resolver_call_is_refused(value: str, name: str) -> None:
    for text, overrides in (
        (MINIMAL + f"  env: {{K: '{value}'}}\n", []),
        (MINIMAL, [f"spec.env.K='{value}'"]),
    ):
        exc = refused(text, overrides)
        assert paths(exc) == ["spec.env.K"], (value, overrides)
        assert f"resolver {name!r} called in interpolation" in str(exc.problems[0])


def test_every_field_with_a_resolver_is_reported() -> None:
    exc = refused(
        MINIMAL, ["spec.env.A=${oc.env:ADV}", "spec.env.B=${oc.decode:x}", "metadata.labels.c=${x:y}"]
    )
    assert sorted(paths(exc)) == ["metadata.labels.c", "spec.env.A", "spec.env.B"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${a.${b}}", "nested interpolation is not allowed"),
        ("${spec.env", "unclosed ${ in interpolation"),
        ("${}", "empty interpolation"),
        ("${spec env}", "malformed interpolation"),
        ("${spec['env']}", "malformed interpolation"),
    ],
)
def test_malformed_interpolation_names_the_field(value: str, message: str) -> None:
    exc = refused(MINIMAL, [f"spec.env.K={value}"])
    assert paths(exc) == ["spec.env.K"]
    assert message in exc.problems[0].message


def test_plain_references_keep_their_type_and_work_everywhere() -> None:
    text = MINIMAL.replace("model: {", "model: {gradient_checkpointing: false, ") + (
        "  logging: {project: '${metadata.name}', experiment: '${.project}-${spec.algorithm.name}'}\n"
        "  env: {BATCH: 'b${spec.training.mini_batch}', GC: 'gc=${spec.model.gradient_checkpointing}'}\n"
    )
    job = loaded(
        text,
        [
            "spec.training.global_batch=128",
            "spec.training.mini_batch=${.global_batch}",
            "metadata.labels=${spec.env}",
            "spec.env.FIRST=${spec.data.train[0]}",
            "spec.env.ALSO_FIRST=${spec.data.train.0}",
        ],
    )
    assert job.spec.logging.project == "tiny"
    assert job.spec.logging.experiment == "tiny-grpo"
    assert job.spec.training.mini_batch == 128  # an int, not a string
    assert job.spec.env["BATCH"] == "b128"  # through a chain, after the overrides
    assert job.spec.env["GC"] == "gc=false"  # as YAML writes it
    assert job.spec.env["FIRST"] == job.spec.env["ALSO_FIRST"] == "train.parquet"
    assert job.metadata.labels["BATCH"] == "b128"  # a mapping is copied with its references resolved


def test_an_escaped_reference_is_literal_and_stays_literal() -> None:
    job = loaded(MINIMAL, [r"spec.env.A=\${oc.env:ADV}", "spec.env.B=${spec.env.A}"])
    assert job.spec.env == {"A": "${oc.env:ADV}", "B": "${oc.env:ADV}"}


def test_cycles_are_reported_with_their_path() -> None:
    exc = refused(MINIMAL, ["spec.env.A=${spec.env.B}", "spec.env.B=x${spec.env.A}"])
    assert [str(p) for p in exc.problems] == [
        "spec.env.A: interpolation cycle: spec.env.A -> spec.env.B -> spec.env.A; "
        "expected references that end at a value"
    ]
    exc = refused(MINIMAL, ["spec.env.A=${spec.env}"])
    assert exc.problems[0].message == "interpolation cycle: spec.env.A -> spec.env.A"
    exc = refused(MINIMAL, ["spec.env.A=${spec.env.A}"])
    assert exc.problems[0].path == "spec.env.A"


def test_long_reference_chains_are_refused() -> None:
    chain = [f"spec.env.V{i}=${{spec.env.V{i + 1}}}" for i in range(200)] + ["spec.env.V200=end"]
    exc = refused(MINIMAL, chain)
    assert "chained more than 32 deep" in str(exc)
    short = [f"spec.env.V{i}=${{spec.env.V{i + 1}}}" for i in range(20)] + ["spec.env.V20=end"]
    assert loaded(MINIMAL, short).spec.env["V0"] == "end"


def test_missing_and_unembeddable_references() -> None:
    exc = refused(MINIMAL, ["spec.env.A=x${spec.nope}"])
    assert str(exc.problems[0]).startswith(
        "spec.env.A: cannot resolve interpolation ${spec.nope}: there is no field spec.nope"
    )
    exc = refused(MINIMAL, ["spec.env.A=x${spec.data.train}"])
    assert "${spec.data.train} inside text refers to a list value" in str(exc.problems[0])
    exc = refused(MINIMAL, ["spec.env.A=${....x}"])
    assert "it goes above the top of the spec" in str(exc.problems[0])
    # a field that references a broken one: the broken one is reported, once
    exc = refused(MINIMAL, ["spec.env.A=${spec.env.B}", "spec.env.B=${spec.nope}"])
    assert paths(exc) == ["spec.env.B"]
