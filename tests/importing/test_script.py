"""The launch-script reader: each shell idiom teams use in launch scripts, and what it refuses."""

from __future__ import annotations

import shlex

import pytest

from rladapt.importing.script import parse_sets, read_launch
from rladapt.primitives import UsageError


def _verl(argv: list[str]) -> int | None:
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] == "verl.trainer.main_ppo":
            return i + 2
    return None


def args(text: str, sets: dict[str, str] | None = None) -> list[str]:
    return list(read_launch(text, "run.sh", _verl, sets).args)


def test_bare_command_line() -> None:
    launch = read_launch("python3 -m verl.trainer.main_ppo a=1 b=2", "cmd", _verl)
    assert launch.prefix == ("python3", "-m", "verl.trainer.main_ppo")
    assert launch.args == ("a=1", "b=2")
    assert launch.line == 1


def test_continuations_and_the_line_of_the_launch() -> None:
    text = "set -x\necho start\npython3 -m verl.trainer.main_ppo \\\n    a=1 \\\n    b=2\necho done\n"
    launch = read_launch(text, "run.sh", _verl)
    assert launch.args == ("a=1", "b=2")
    assert launch.line == 3


def test_variables_export_and_prefix_assignments() -> None:
    text = (
        "MODEL=Qwen/Qwen2.5-7B\nexport VLLM_USE_V1=1\nN=8; TP=2\n"
        'PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo m=$MODEL n=${N} tp="$TP"'
    )
    launch = read_launch(text, "run.sh", _verl)
    assert launch.args == ("m=Qwen/Qwen2.5-7B", "n=8", "tp=2")
    assert launch.env == {"VLLM_USE_V1": "1", "PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize(
    ("expansion", "sets", "want"),
    [
        ("${X:-7}", {}, "7"),
        ("${X:-7}", {"X": "3"}, "3"),
        ("${X:-7}", {"X": ""}, "7"),
        ("${X-7}", {"X": ""}, ""),
        ("${X:+on}", {"X": "1"}, "on"),
        ("${X:+on}", {}, ""),
        ("${X:-${Y:-deep}}", {}, "deep"),
    ],
)
def test_parameter_expansion_defaults(expansion: str, sets: dict[str, str], want: str) -> None:
    assert args(f"python3 -m verl.trainer.main_ppo k={expansion}", sets) == [f"k={want}"]


def test_default_assigned_by_colon_equals_is_seen_later() -> None:
    assert args(": ${X:=5}\npython3 -m verl.trainer.main_ppo k=$X") == ["k=5"]


def test_arrays_of_overrides_over_several_lines_with_comments() -> None:
    text = """
COMMON=(
  data.train_batch_size=256   # the batch
  "trainer.experiment_name=a b"
)
COMMON+=(x=1)
EMPTY=()
python3 -m verl.trainer.main_ppo "${COMMON[@]}" "${EMPTY[@]}" first=${COMMON[0]}
"""
    assert args(text) == [
        "data.train_batch_size=256",
        "trainer.experiment_name=a b",
        "x=1",
        "first=data.train_batch_size=256",
    ]


def test_dollar_at_is_nothing() -> None:
    assert args('python3 -m verl.trainer.main_ppo a=1 "$@" $@ $*') == ["a=1"]


def test_quoting_splits_as_bash_does() -> None:
    text = "V='x y'\npython3 -m verl.trainer.main_ppo u=$V \"q=$V\" 's=$V' e=\"\""
    assert args(text) == ["u=x", "y", "q=x y", "s=$V", "e="]


def test_arithmetic() -> None:
    assert args("N=4\npython3 -m verl.trainer.main_ppo g=$((N*8)) h=$(( N / 3 + 1 ))") == ["g=32", "h=2"]


def test_redirections_pipes_and_background_are_not_arguments() -> None:
    text = "python3 -m verl.trainer.main_ppo a=1 2>&1 > out.log | tee run.log &\n"
    assert args(text) == ["a=1"]


def test_quoted_hydra_values_survive() -> None:
    text = """python3 -m verl.trainer.main_ppo trainer.logger='["console","wandb"]' data.truncation='error'"""
    assert args(text) == ['trainer.logger=["console","wandb"]', "data.truncation=error"]


@pytest.mark.parametrize("word", ["a b", "it's", '"q"', "$x", "a\\b", "", "x=${y}"])
def test_shlex_quoted_words_round_trip(word: str) -> None:
    assert args(f"python3 -m verl.trainer.main_ppo {shlex.quote(word)}") == [word]


def test_a_variable_of_the_callers_environment_names_line_and_variable() -> None:
    with pytest.raises(UsageError) as info:
        args("echo hi\npython3 -m verl.trainer.main_ppo data.train_files=$HOME/train.parquet")
    assert "run.sh:2" in info.value.message
    assert "HOME" in info.value.message
    assert "--set HOME=VALUE" in info.value.message


def test_set_gives_the_callers_variable() -> None:
    assert args("python3 -m verl.trainer.main_ppo f=$HOME/t", {"HOME": "/data"}) == ["f=/data/t"]


def test_command_substitution_is_refused_where_used() -> None:
    with pytest.raises(UsageError) as info:
        args("STAMP=$(date +%s)\npython3 -m verl.trainer.main_ppo name=run-$STAMP")
    assert "run.sh:2" in info.value.message and "STAMP" in info.value.message
    assert "command substitution" in info.value.message
    # unused, it is harmless; given with --set, it resolves
    assert args("STAMP=$(date +%s)\npython3 -m verl.trainer.main_ppo a=1") == ["a=1"]
    assert args("STAMP=`date`\npython3 -m verl.trainer.main_ppo n=$STAMP", {"STAMP": "7"}) == ["n=7"]


def test_command_substitution_in_the_launch_line_is_refused() -> None:
    with pytest.raises(UsageError, match=r"run.sh:1: .*\$\(nproc\).*command substitution"):
        args("python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$(nproc)")


def test_a_value_set_in_a_conditional_is_not_guessed() -> None:
    text = 'if [ -n "$BIG" ]; then\n  TP=8\nelse\n  TP=1\nfi\npython3 -m verl.trainer.main_ppo tp=$TP'
    with pytest.raises(UsageError, match="run.sh:6: variable TP .*conditional"):
        args(text)
    assert args(text, {"TP": "4"}) == ["tp=4"]


def test_no_launch_in_the_script() -> None:
    with pytest.raises(UsageError, match="run.sh: no launch command found in it"):
        args("echo nothing here\n")


def test_unterminated_quote() -> None:
    with pytest.raises(UsageError, match="unterminated"):
        args("python3 -m verl.trainer.main_ppo a='x")


@pytest.mark.parametrize("item", ["NOEQUALS", "1X=2", "=v"])
def test_parse_sets_refuses_malformed_items(item: str) -> None:
    with pytest.raises(UsageError, match="--set"):
        parse_sets([item])


def test_parse_sets() -> None:
    assert parse_sets(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
