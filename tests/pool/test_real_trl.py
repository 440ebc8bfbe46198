"""The pool on the README's TRL run, for real: TRL 1.16.0 trains the tiny model on CPU with checkpoints every two
steps; both checkpoints are published from the run record, and a reference replica serving the newest answers with
exactly what transformers generates from the checkpoint folder itself."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from rladapt.launch import Runner
from rladapt.pool import ServeGroup, VersionStore
from tests.pool.test_cli import rladapt
from tests.pool.test_serve import MAX_TOKENS, PROMPTS, greedy

REPO = Path(__file__).resolve().parents[2]
SPEC = "examples/grpo-tiny-trl.yaml"


def test_the_readme_trl_run_is_published_and_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ck = tmp_path / "ck"
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RLADAPT_POOL", str(tmp_path / "pool"))
    runner = Runner()
    run = runner.launch(
        SPEC,
        [
            "spec.training.steps=4",
            "spec.checkpoint.every_steps=2",
            "spec.checkpoint.keep_last=3",
            f"spec.checkpoint.dir={ck}",
            f"spec.runtime.python={sys.executable}",
        ],
        framework="trl==1.16.0",
    )
    final = runner.wait(run, interval=0.2, timeout=600)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-2000:]

    code, out, err = rladapt(capsys, "pool", "publish", run.id, "--step", "2", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["source"]["step"] == 2
    code, out, err = rladapt(capsys, "pool", "publish", run.id, "--alias", "serving", "--format", "json")
    assert code == 0, err
    newest = json.loads(out)
    assert (newest["version"], newest["source"]["step"], newest["parent"]) == ("v00000002", 4, "v00000001")
    assert newest["source"]["framework_version"] == "1.16.0" and newest["source"]["run_id"] == run.id
    assert "optimizer.pt" not in newest["files"] and "model.safetensors" in newest["files"]
    store = VersionStore(tmp_path / "pool")
    assert store.verify("1") == [] and store.verify("serving") == []

    expected = greedy(ck / "checkpoint-4")
    group = ServeGroup(store, "serving", replicas=1)
    group.start()
    try:
        url = group.members[0].url
        for prompt in PROMPTS:
            body = json.dumps({"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0}).encode()
            request = urllib.request.Request(url + "/v1/completions", data=body,
                                             headers={"Content-Type": "application/json"})  # fmt: skip
            with urllib.request.urlopen(request, timeout=120) as response:
                answer = json.loads(response.read())
            assert answer["weight_version"] == "v00000002"
            assert answer["choices"][0]["text"] == expected[prompt], prompt
    finally:
        group.stop()
