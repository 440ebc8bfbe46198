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
            f"spec.pool.store={tmp_path / 'pool'}",
            "spec.pool.alias=candidate",
        ],
        framework="trl==1.16.0",
    )
    final = runner.wait(run, interval=0.2, timeout=600)
    assert final.state == "SUCCEEDED", (run.dir / "output.log").read_text()[-2000:]
    store = VersionStore(tmp_path / "pool")
    published = [(m.version, m.source.step, m.parent, aliases) for m, aliases in store.of_run(run.id)]
    assert published == [("v00000001", 2, None, []), ("v00000002", 4, "v00000001", ["candidate"])]
    newest = store.manifest("candidate")
    assert newest.source.framework_version == "1.16.0" and newest.source.checkpoint == str(
        ck / "checkpoint-4"
    )
    assert "optimizer.pt" not in newest.files and "model.safetensors" in newest.files
    assert store.verify("1") == [] and store.verify("candidate") == []

    code, out, err = rladapt(capsys, "pool", "publish", run.id, "--step", "2")
    assert (code, out.strip()) == (0, "already published as v00000001"), err
    code, out, err = rladapt(capsys, "pool", "alias", "serving", "candidate")
    assert (code, out.strip()) == (0, "serving -> v00000002"), err

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
