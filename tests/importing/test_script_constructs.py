"""The script reader on what real launch scripts do before the launch: branches the script's own defaults decide,
functions, script directories, arrays given empty, and what it cannot decide named with its line.

Each script here is written for this test (one construct each), after the shapes found in upstream launch scripts
(tests/importing/fixtures/script_reader_ledger_*.tsv lists them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rladapt.importing.script import Launch, parse_sets, read_launch
from rladapt.primitives import UsageError

LAUNCH = "python3 -m verl.trainer.main_ppo"


def _verl(argv: list[str]) -> int | None:
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] == "verl.trainer.main_ppo":
            return i + 2
    return None


def read(text: str, *sets: str, unset: tuple[str, ...] = (), source: str = "run.sh") -> Launch:
    return read_launch(text, source, _verl, parse_sets(list(sets), unset), cwd="/srv/job")


def args(text: str, *sets: str, unset: tuple[str, ...] = ()) -> list[str]:
    return list(read(text, *sets, unset=unset).args)


def refused(text: str, *sets: str, unset: tuple[str, ...] = ()) -> str:
    with pytest.raises(UsageError) as info:
        read(text, *sets, unset=unset)
    return info.value.message


CASE = f"""DEVICE=${{DEVICE:-gpu}}
case "$DEVICE" in
  gpu|cuda)
    TP=2
    ;;
  npu)
    TP=4
    export HCCL_CONNECT_TIMEOUT=1800
    ;;
  *) echo "unknown device"; exit 1 ;;
esac
ARGS=(tp=$TP)
{LAUNCH} "${{ARGS[@]}}" device=$DEVICE
"""


def test_case_takes_the_branch_the_default_selects_and_ignores_the_others_exports() -> None:
    launch = read(CASE)
    assert launch.args == ("tp=2", "device=gpu")
    assert launch.line == 13
    assert "HCCL_CONNECT_TIMEOUT" not in launch.env


def test_case_branch_chosen_by_set() -> None:
    launch = read(CASE, "DEVICE=npu")
    assert launch.args == ("tp=4", "device=npu")
    assert launch.env == {"HCCL_CONNECT_TIMEOUT": "1800"}


def test_case_branch_that_exits_is_named_when_set_selects_it() -> None:
    message = refused(CASE, "DEVICE=tpu")
    assert "run.sh:13" in message and "exits on line 10" in message


IF = f"""MODE=${{MODE:-async}}
NODES=${{NODES:-1}}
if [ "$MODE" = "sync" ]; then
    RAW=False
elif [[ $MODE == as* && -n "$MODE" ]]; then
    RAW=True
else
    RAW=None
fi
if [ "$NODES" -gt 1 ] || [ ! -z "$MULTI" ]; then
    export NCCL_IB_DISABLE=0
fi
[ -z "$RESUME" ] && RESUME_MODE=disable || RESUME_MODE=auto
{LAUNCH} data.return_raw_chat=$RAW trainer.resume_mode=$RESUME_MODE
"""


def test_if_elif_else_and_and_or_lists_on_known_values() -> None:
    launch = read(IF, unset=("MULTI", "RESUME"))
    assert launch.args == ("data.return_raw_chat=True", "trainer.resume_mode=disable")
    assert launch.env == {}


def test_if_on_set_values() -> None:
    launch = read(IF, "MODE=sync", "NODES=2", "RESUME=1", unset=("MULTI",))
    assert launch.args == ("data.return_raw_chat=False", "trainer.resume_mode=auto")
    assert launch.env == {"NCCL_IB_DISABLE": "0"}


def test_a_condition_on_the_callers_environment_names_the_variable_and_the_line() -> None:
    message = refused(IF)  # MULTI and RESUME are the caller's
    assert "run.sh:14" in message
    assert "RESUME_MODE (set on line 13)" in message and "RESUME" in message
    assert "--set RESUME_MODE=VALUE" in message


def test_functions_called_before_the_launch_apply_their_assignments() -> None:
    text = f"""setup() {{
    local engine=$1
    TP=$2
    ENGINE=$engine
}}
function unused {{ TP=99; }}
setup megatron 8
{LAUNCH} tp=$TP engine=$ENGINE
"""
    assert args(text) == ["tp=8", "engine=megatron"]


def test_a_launch_inside_a_called_function_is_found_with_its_arguments() -> None:
    text = f"""run() {{
    {LAUNCH} trainer.total_epochs=$1 "${{@:2}}"
}}
main() {{
    run 3
}}
main "$@"
"""
    launch = read(text.replace(' "${@:2}"', ""))
    assert launch.args == ("trainer.total_epochs=3",)
    assert launch.line == 2


def test_a_launch_in_a_function_never_called_is_named_not_missing() -> None:
    message = refused(f"train() {{\n  {LAUNCH} a=1\n}}\necho forgot to call it\n")
    assert message.startswith("run.sh:2: the launch command on this line is not run")
    assert "function train" in message


def test_script_directory_idioms_resolve_to_the_scripts_own_directory() -> None:
    text = f"""SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)
HERE=$(dirname "$0")
PROJECT_DIR="$(pwd)"
MODEL=/models/Qwen/Qwen2.5-7B-Instruct
NAME=$(basename $MODEL)
SHORT=${{MODEL##*/}}
{LAUNCH} --config-path="$SCRIPT_DIR/config" here=$HERE p=$PROJECT_DIR n=$NAME s=${{SHORT,,}}
"""
    assert list(read(text, source="examples/sglang/run.sh").args) == [
        "--config-path=/srv/job/examples/sglang/config",
        "here=examples/sglang",
        "p=/srv/job",
        "n=Qwen2.5-7B-Instruct",
        "s=qwen2.5-7b-instruct",
    ]


def test_an_unknown_command_substitution_names_each_variable_and_its_line() -> None:
    text = f"NOW=$(date +%Y%m%d)\nDIR=/tmp/$NOW\nNAME=run-$DIR\n{LAUNCH} trainer.experiment_name=$NAME\n"
    message = refused(text)
    assert message.startswith("run.sh:4: variable NAME cannot be resolved")
    assert "NAME (set on line 3) <- DIR (set on line 2) <- NOW (set on line 1) <- $(date +%Y%m%d)" in message
    assert "command substitution" in message
    assert args(text, "NAME=x") == ["trainer.experiment_name=x"]


def test_undecidable_branches_make_only_what_they_set_differently_unknown() -> None:
    text = f"""if [ -f /data/big.parquet ]; then
    TP=8
    SAME=1
else
    TP=1
    SAME=1
fi
{LAUNCH} same=$SAME tp=$TP
"""
    message = refused(text)
    assert message.startswith("run.sh:8: variable TP cannot be resolved")
    assert (
        "TP (set on line 2): set differently (on lines 2, 5) by the branches of the conditional (if) on line 1"
        in message
    )
    assert "it tests the file system (-f /data/big.parquet)" in message
    assert args(text, "TP=2") == ["same=1", "tp=2"]
    assert args(text.replace(" tp=$TP", "")) == ["same=1"]


def test_undecidable_branches_with_a_launch_in_both_say_so() -> None:
    text = f"""if command -v nvidia-smi; then
    {LAUNCH} trainer.device=cuda
else
    {LAUNCH} trainer.device=npu
fi
"""
    message = refused(text)
    assert "run.sh:1: the if on line 1 chooses between the launches on lines 2 and 4" in message
    assert "nvidia-smi" in message


def test_a_launch_on_the_only_path_that_goes_on_is_read() -> None:
    text = f"[ -d /ckpt ] || {{ echo missing; exit 1; }}\npip install -q foo && {LAUNCH} a=1\n"
    assert args(text) == ["a=1"]


def test_empty_set_unset_and_arrays_given_on_the_command_line() -> None:
    text = f"""EXTRA=(${{EXTRA_ARGS:-trainer.val_before_train=False}})
{LAUNCH} a=${{A:-1}} b=${{B-2}} c=$C "${{EXTRA[@]}}" "${{OVR[@]}}" d=1
"""
    assert args(text, "A=", "B=", "C=", "OVR=()", unset=("EXTRA_ARGS",)) == [
        "a=1",
        "b=",
        "c=",
        "trainer.val_before_train=False",
        "d=1",
    ]
    assert args(text, "C=x", "OVR=(e=1 'f=a b')", unset=("EXTRA_ARGS", "A", "B")) == [
        "a=1",
        "b=2",
        "c=x",
        "trainer.val_before_train=False",
        "e=1",
        "f=a b",
        "d=1",
    ]
    message = refused(text, "C=x", unset=("EXTRA_ARGS",))
    assert "OVR" in message and "--set OVR=VALUE" in message


def test_an_empty_array_in_the_script_and_appends_in_branches() -> None:
    text = f"""ARGS=()
USE_KL=${{USE_KL:-1}}
if [[ "$USE_KL" -eq 1 ]]; then
    ARGS+=(actor.use_kl_loss=True)
fi
for n in 1 2; do ARGS+=("x$n=$n"); done
{LAUNCH} "${{ARGS[@]}}" n=${{#ARGS[@]}}
"""
    assert args(text) == ["actor.use_kl_loss=True", "x1=1", "x2=2", "n=3"]
    assert args(text, "USE_KL=0") == ["x1=1", "x2=2", "n=2"]


def test_export_of_an_unset_variable_puts_nothing_in_the_environment() -> None:
    launch = read(f"export CUDA_VISIBLE_DEVICES\nexport A=1\n{LAUNCH} x=1\n", unset=("CUDA_VISIBLE_DEVICES",))
    assert launch.env == {"A": "1"}


def test_arithmetic_with_nested_parentheses() -> None:
    text = f"P=1024\nR=3072\nMAX=$(((P + R)))\n{LAUNCH} max=$MAX half=$(( (MAX / 2) ))\n"
    assert args(text) == ["max=4096", "half=2048"]


def test_heredocs_are_input_not_commands() -> None:
    text = f"cat > cfg.yaml <<EOF\nTP=9\n{LAUNCH} wrong=1\nEOF\nTP=2\n{LAUNCH} tp=$TP\n"
    assert read(text).line == 6
    assert args(text) == ["tp=2"]


def test_parse_sets_unset_and_conflicts() -> None:
    given = parse_sets(["A=1", "E=()"], ["B"])
    assert dict(given) == {"A": "1", "E": "()"} and given.unset == frozenset({"B"})
    with pytest.raises(UsageError, match="--unset"):
        parse_sets([], ["1B"])
    with pytest.raises(UsageError, match="give one of them"):
        parse_sets(["A=1"], ["A"])


def test_a_launch_inside_bash_dash_c_is_read() -> None:
    text = f"""VERSION=2.40.0
srun --nodes=1 -w "$(hostname)" bash -c \\
"pip install ray==$VERSION \\
&& ray job submit --address=http://localhost:8265 -- {LAUNCH} a=1 'b=x y'" &>> job.log
"""
    launch = read(text)
    assert launch.args == ("a=1", "b=x y")
    assert launch.prefix[:3] == ("ray", "job", "submit")
    assert launch.line == 2


def test_a_function_that_may_return_early_has_an_unknown_status() -> None:
    text = f"""wait_for_server() {{
    for attempt in 1 2 3; do
        if curl -s http://localhost:30000/health; then
            return 0
        fi
        sleep 10
    done
    return 1
}}
if ! wait_for_server; then
    exit 1
fi
{LAUNCH} a=1
"""
    assert args(text) == ["a=1"]


def test_the_scripts_own_arguments() -> None:
    text = f'NAME="$1"\nTP=${{2:-4}}\n{LAUNCH} --config-name "$NAME" tp=$TP "${{@:3}}"\n'
    message = refused(text)
    assert message.startswith("run.sh:3: variable NAME cannot be resolved")
    assert "NAME (set on line 1) <- $1: an argument of the script" in message and "--set 1=VALUE" in message
    assert args(text, "1=ppo_trainer") == ["--config-name", "ppo_trainer", "tp=4"]
    assert args(text, "1=ppo_trainer", "2=8", "3=a=1", "4=b=2") == [
        "--config-name", "ppo_trainer", "tp=8", "a=1", "b=2",
    ]  # fmt: skip


def test_a_sourced_file_is_read_where_it_is_and_one_missing_is_named(tmp_path: Path) -> None:
    (tmp_path / "env.sh").write_text("export NCCL_DEBUG=WARN\nTP=4\n")
    text = f'source "$(dirname "$0")/env.sh"\n. /opt/toolkit/set_env.sh\n{LAUNCH} tp=$TP\n'
    launch = read_launch(text, str(tmp_path / "run.sh"), _verl, {}, cwd="/srv/job")
    assert launch.args == ("tp=4",) and launch.env == {"NCCL_DEBUG": "WARN"}
    with pytest.raises(UsageError) as info:
        read_launch(
            text.replace("tp=$TP", "dev=$ASCEND_HOME"), str(tmp_path / "run.sh"), _verl, {}, cwd="/srv/job"
        )
    assert "ASCEND_HOME" in info.value.message
    assert "/opt/toolkit/set_env.sh (sourced on line 2, not read)" in info.value.message


def test_locals_and_prefix_assignments_do_not_outlive_their_command() -> None:
    text = f"""MODEL=global
TP=1
setup() {{
    local MODEL=$1
    local TP
    TP=8
    NAME=$MODEL-$TP
}}
setup inner
CUDA_VISIBLE_DEVICES=0 vllm serve x &
{LAUNCH} m=$MODEL tp=$TP n=$NAME gpus=${{CUDA_VISIBLE_DEVICES:-all}}
"""
    assert args(text) == ["m=global", "tp=1", "n=inner-8", "gpus=all"]


def test_a_usage_check_on_the_arguments_is_decided_by_the_arguments_given() -> None:
    text = f'[ $# -lt 1 ] && {{ echo "usage: $0 MODEL"; exit 1; }}\n{LAUNCH} model=$1\n'
    message = refused(text)
    assert message.startswith("run.sh:2: the launch command on this line is not run")
    assert "exits on line 1" in message and "1=VALUE" in message
    assert args(text, "1=Qwen/Qwen3-8B") == ["model=Qwen/Qwen3-8B"]
