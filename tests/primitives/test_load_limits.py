"""Input the loader cannot represent or should not try to: recursive aliases, deep nesting, huge specs, lone
surrogates. Each is a SpecError or UsageError (exit 2) naming the field or the override (issue 9).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.primitives import SpecError, UsageError, load_job, load_job_text
from rladapt.primitives.loading import MAX_DEPTH, MAX_ENTRIES, MAX_NODES, MAX_SPEC_BYTES
from tests.conftest import REPO
from tests.primitives.test_loading import MINIMAL

DEEP = "[" * 20_000 + "]" * 20_000


def spec_error(text: str, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_job_text(text, overrides or [])
    return [str(p) for p in info.value.problems]


def usage_error(text: str, overrides: list[str]) -> str:
    with pytest.raises(UsageError) as info:
        load_job_text(text, overrides)
    return info.value.message


# --- aliases and nesting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("spec.training.global_batch=&a [*a]", "spec.training.global_batch[0]"),
        ("spec.env=&a {A: *a}", "spec.env.A"),
        ("spec.env=&a {A: [1, {B: *a}]}", "spec.env.A[1].B"),
    ],
)
def test_recursive_alias_in_an_override(override: str, field: str) -> None:
    message = usage_error(MINIMAL, [override])
    assert message.startswith(f"override {override!r}: the value is refused: {field}: the alias *a is inside")


@pytest.mark.parametrize(
    ("snippet", "field"),
    [("  env: &a {A: *a}\n", "spec.env.A"), ("  data: &d {train: [x, *d]}\n", "spec.data.train[1]")],
)
def test_recursive_alias_in_the_file(snippet: str, field: str) -> None:
    text = MINIMAL.replace("  data: {train: [train.parquet]}\n", "") + snippet
    out = spec_error(text)
    assert len(out) == 1 and out[0].startswith(f"{field}: the alias *")


def test_aliases_defined_before_use_still_work() -> None:
    text = MINIMAL + "  env: &e {A: x}\n  launcher: {local: *e}\n"
    job = load_job_text(text, ["spec.env.A=y"])
    # an override changes the field it names, not every place the anchor was used
    assert (job.spec.env["A"], job.spec.launcher["local"]["A"]) == ("y", "x")


def test_deep_nesting_in_an_override() -> None:
    message = usage_error(MINIMAL, [f"spec.data.train={DEEP}"])
    assert message.startswith("override 'spec.data.train=[[[[")
    assert ": the value is refused: spec.data.train[0][0]" in message
    assert message.endswith(
        f"[0]: nested more than {MAX_DEPTH} levels deep (the limit on a spec); "
        f"expected at most {MAX_DEPTH} levels of lists and mappings"
    )
    # each value within the limit, the spec as overridden over it
    out = spec_error(MINIMAL, ["spec.data.train=" + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)])
    assert len(out) == 1 and out[0].startswith("spec.data.train[0]")
    assert f"nested more than {MAX_DEPTH} levels deep" in out[0]


def test_deep_nesting_in_the_file(tmp_path: Path) -> None:
    spec = tmp_path / "deep.yaml"
    spec.write_text(MINIMAL.replace("train: [train.parquet]", f"train: {DEEP}"))
    with pytest.raises(SpecError) as info:
        load_job(spec)
    (problem,) = info.value.problems
    assert problem.path.startswith("spec.data.train[0][0]")
    assert problem.message == f"nested more than {MAX_DEPTH} levels deep (the limit on a spec)"


def test_nesting_built_from_aliases_is_bounded_too() -> None:
    # each anchor is shallow, but an alias puts one inside the next: depth grows without any deep text
    lines = ["x0: &x0 [[[[[[[[1]]]]]]]]"] + [f"x{i}: &x{i} [[[[[[[[*x{i - 1}]]]]]]]]" for i in range(1, 8)]
    text = MINIMAL + "  native:\n" + "".join(f"    {line}\n" for line in lines)
    out = spec_error(text)
    assert len(out) == 1 and f"nested more than {MAX_DEPTH} levels deep" in out[0]
    assert out[0].startswith("spec.native.x")


def test_billion_laughs_is_refused_not_expanded() -> None:
    lines = ["l0: &l0 [a, a, a, a, a, a, a, a, a, a]"] + [
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)
    ]
    text = MINIMAL + "  native:\n" + "".join(f"    {line}\n" for line in lines)
    out = spec_error(text)
    assert len(out) == 1 and f"more than {MAX_NODES} values (the limit on a spec)" in out[0]


# --- size --------------------------------------------------------------------------------------------------------


def test_a_spec_file_over_the_byte_limit_is_refused_unread(tmp_path: Path) -> None:
    spec = tmp_path / "big.yaml"
    with spec.open("w") as out:
        out.write(MINIMAL.replace("  data: {train: [train.parquet]}\n", "  data:\n    train:\n"))
        line = "      - s3://bucket/some/long/prefix/of/data/shard-000000.parquet\n"
        out.write(line * (50 * 1024 * 1024 // len(line)))
    with pytest.raises(SpecError) as info:
        load_job(spec)
    (problem,) = info.value.problems
    assert str(problem) == (
        f"<root>: the spec file is {spec.stat().st_size} bytes, larger than the limit of 4 MiB on a spec; "
        f"expected at most {MAX_SPEC_BYTES} bytes"
    )
    assert info.value.source == str(spec)


def test_spec_text_over_the_byte_limit_is_refused() -> None:
    out = spec_error(MINIMAL + "#" * MAX_SPEC_BYTES)
    assert out[0].startswith("<root>: the spec is ")


def test_a_list_over_the_entry_limit_names_the_field() -> None:
    train = "[" + ", ".join(f"d{i}.parquet" for i in range(MAX_ENTRIES + 5)) + "]"
    out = spec_error(MINIMAL.replace("[train.parquet]", train))
    assert out == [
        f"spec.data.train: more than {MAX_ENTRIES} entries (the limit on a list or mapping); "
        f"expected at most {MAX_ENTRIES} entries"
    ]
    message = usage_error(MINIMAL, [f"spec.data.train={train}"])
    assert f"the value is refused: spec.data.train: more than {MAX_ENTRIES} entries" in message
    train = "[" + ", ".join(f"d{i}.parquet" for i in range(MAX_ENTRIES)) + "]"
    assert len(load_job_text(MINIMAL.replace("[train.parquet]", train), []).spec.data.train) == MAX_ENTRIES


def test_a_mapping_over_the_entry_limit_and_merge_keys() -> None:
    env = "{" + ", ".join(f"K{i}: v" for i in range(MAX_ENTRIES + 1)) + "}"
    assert spec_error(MINIMAL + f"  env: {env}\n")[0].startswith(f"spec.env: more than {MAX_ENTRIES} entries")
    # two mappings within the limit merged into one over it
    half = MAX_ENTRIES // 2 + 1
    a = "{" + ", ".join(f"A{i}: v" for i in range(half)) + "}"
    b = "{" + ", ".join(f"B{i}: v" for i in range(half)) + "}"
    text = MINIMAL + f"  native: {{a: &a {a}, b: &b {b}}}\n  env: {{<<: [*a, *b]}}\n"
    assert spec_error(text)[0].startswith(f"spec.env: {2 * half} entries, more than {MAX_ENTRIES}")


# --- text that cannot be written ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "field"),
    [
        (r'spec.model.path="\ud800"', "spec.model.path"),
        (r'spec.data.train=["ok", "a\udfffb"]', "spec.data.train[1]"),
        (r'spec.env={"\ud83d": x}', "spec.env['\\ud83d']"),
        (r'metadata.labels.team="\U0000dc00"', "metadata.labels.team"),
    ],
)
def test_lone_surrogate_in_an_override(override: str, field: str) -> None:
    message = usage_error(MINIMAL, [override])
    assert f": the value is refused: {field}: text holds " in message
    assert "a lone UTF-16 surrogate" in message
    message.encode("utf-8")  # the message itself can be printed


def test_lone_surrogate_in_the_file(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(
        MINIMAL.replace("Qwen/Qwen2.5-0.5B-Instruct", r'"Qwen\ud800"') + '  env: {"K\\udc80": v}\n'
    )
    with pytest.raises(SpecError) as info:
        load_job(spec)
    assert [p.path for p in info.value.problems] == ["spec.model.path"]
    out = spec_error(MINIMAL + '  env: {"K\\udc80": v}\n')
    assert out[0].startswith("spec.env['K\\udc80']: text holds '\\udc80', a lone UTF-16 surrogate")


def test_a_surrogate_pair_escape_is_fine() -> None:
    job = load_job_text(MINIMAL, [r'spec.model.path="m\U0001F600"'])
    assert job.spec.model.path == "m\U0001f600"


def test_an_override_key_that_cannot_be_written() -> None:
    message = usage_error(MINIMAL, ["spec.env.\udcff=x"])  # what a non-UTF-8 argv byte decodes to
    assert message.startswith("override 'spec.env.\\udcff=x': the key")
    assert usage_error(MINIMAL, ["spec..env=x"]).startswith(
        "override 'spec..env=x': the key 'spec..env' is not"
    )


def test_an_integer_beyond_python_s_digit_limit() -> None:
    out = spec_error(MINIMAL.replace("global_batch: 64", "global_batch: " + "9" * 5000))
    assert out[0].startswith("<root>: malformed YAML")


# --- through the CLI, as users run it --------------------------------------------------------------------------


def rladapt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


@pytest.mark.parametrize(
    "override",
    [
        "spec.training.global_batch=&a [*a]",
        "spec.env=&a {A: *a}",
        f"spec.data.train={'[' * 5000}{']' * 5000}",
        r'spec.model.path="\ud800"',
    ],
    ids=["anchor-list", "anchor-map", "nested", "surrogate"],
)
@pytest.mark.parametrize("verb", ["validate", "render"])
def test_cli_exits_2_without_a_traceback(tmp_path: Path, verb: str, override: str) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(MINIMAL)
    args = [verb, str(spec), override] if verb == "validate" else [verb, "-f", "verl", str(spec), override]
    out = rladapt(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr
    assert "override " in out.stderr and out.stdout == ""


def test_cli_refuses_a_50_mb_spec(tmp_path: Path) -> None:
    spec = tmp_path / "big.yaml"
    with spec.open("w") as out:
        out.write(MINIMAL.replace("  data: {train: [train.parquet]}\n", "  data:\n    train:\n"))
        out.write(json.dumps("s3://bucket/prefix/shard.parquet").join(["      - ", "\n"]) * 1_300_000)
    result = rladapt("validate", str(spec), cwd=tmp_path)
    assert result.returncode == 2
    assert "larger than the limit of 4 MiB on a spec" in result.stderr
    assert "Traceback" not in result.stderr
