"""``rladapt triage`` on log files: output formats and exit codes (0 matched, 1 nothing matched, 2 usage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rladapt.cli import main
from tests.cli.test_cli import rladapt

# vllm/v1/engine/exceptions.py EngineDeadError; torch ProcessGroupNCCL.cpp's watchdog
LOG = (
    "[rladapt] step 3/10  reward 0.2\n"
    "\x1b[36m(APIServer pid=480795)\x1b[0m ERROR 03-16 00:55:10 [async_llm.py:538] "
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
    "root cause.\n"
    "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 "
    "milliseconds before timing out.\n"
)


def test_json_is_exactly_the_matches_in_log_order(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG)
    res = rladapt("triage", str(log), "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert list(doc) == ["matches"]
    assert [m["signature"] for m in doc["matches"]] == ["vllm-engine-dead", "nccl-timeout"]
    for m in doc["matches"]:
        assert list(m) == ["signature", "cause", "fix", "evidence"]
    # the colour codes vLLM prints are gone from the evidence
    assert doc["matches"][0]["evidence"][0].startswith("(APIServer pid=480795) ERROR")


def test_text_names_the_cause_fix_and_numbered_lines(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG)
    res = rladapt("triage", str(log), "-f", "verl==0.9.1")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("2 known failures in ")
    assert "[vllm-engine-dead] The vLLM engine process died" in res.stdout
    assert "  evidence: line 2: (APIServer pid=480795) ERROR" in res.stdout
    assert "  evidence: line 3: [rank0]" in res.stdout
    assert "  source:   vllm/v1/engine/exceptions.py" in res.stdout


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``rladapt ARGS`` through the CLI's own entry point and error policy, without a new interpreter."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), out.out, out.err


def test_nothing_matched_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "fine.log"
    log.write_text("[rladapt] step 10/10  reward 0.9\n")
    code, out, err = in_process(capsys, "triage", str(log))
    assert (code, out) == (1, "")
    assert "no known failure signature matched" in err
    code, out, _ = in_process(capsys, "triage", str(log), "--format", "json")
    assert (code, json.loads(out)) == (1, {"matches": []})
    # the installed command (python -m rladapt.cli) exits 1 too
    assert rladapt("triage", str(log)).returncode == 1


def test_usage_errors_are_exit_2_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG)
    cases = {
        (str(tmp_path / "missing.log"),): "no such log file",
        ("no-such-run",): "is neither a log file nor a run: no run 'no-such-run'",
        (str(log), "-f", "verll"): "unknown framework 'verll'",
        (str(log), "-f", "verl==9.9"): "verl",
        (str(log), "-f", "verl=="): "expected NAME or NAME==VERSION",
        (str(tmp_path),): "is a directory",
    }
    for args, message in cases.items():
        code, out, err = in_process(capsys, "triage", *args)
        assert code == 2, (args, err)
        assert message in err, (args, err)
        assert "Traceback" not in err and out == ""
