"""The job's publisher on checkpoint directories as TRL writes them: complete steps become versions once, partial
ones wait, every_steps filters, a step without weights is reported and skipped, and following a process publishes
what it wrote last after it exits."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.pool import VersionStore
from rladapt.pool.publisher import PublishSettings, follow, publish_new
from tests.adapters.checkpoint_builders import trl_step, verl_step

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny" / "model"


def settings(tmp_path: Path, **more: object) -> PublishSettings:
    return PublishSettings(store=str(tmp_path / "pool"), framework="trl", version="1.16.0",
                           dir=str(tmp_path / "ck"), run_id="r1", **more)  # type: ignore[arg-type]  # fmt: skip


def step(tmp_path: Path, n: int, *, complete: bool = True) -> Path:
    folder = trl_step(tmp_path / "ck", n)
    shutil.copy(TINY / "tokenizer.json", folder / "tokenizer.json")
    if not complete:
        (folder / "trainer_state.json").unlink()
    return folder


def test_each_complete_step_is_published_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    step(tmp_path, 2)
    step(tmp_path, 4, complete=False)
    made = publish_new(settings(tmp_path, alias="candidate"))
    assert [(m.version, m.source.step) for m in made] == [("v00000001", 2)]
    assert publish_new(settings(tmp_path, alias="candidate")) == []  # again: nothing new
    (tmp_path / "ck" / "checkpoint-4" / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    made = publish_new(settings(tmp_path, alias="candidate"))
    assert [(m.version, m.source.step, m.parent) for m in made] == [("v00000002", 4, "v00000001")]
    store = VersionStore(tmp_path / "pool")
    assert store.alias_state("candidate").version == "v00000002"
    assert "published step 4 as v00000002" in capsys.readouterr().err


def test_every_steps_publishes_only_multiples(tmp_path: Path) -> None:
    for n in (2, 4, 6, 8):
        step(tmp_path, n)
    made = publish_new(settings(tmp_path, every_steps=4))
    assert [m.source.step for m in made] == [4, 8]


def test_a_step_without_weights_is_reported_once_and_training_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verl_step(tmp_path / "ck", 10)
    reported: set[int] = set()
    verl = PublishSettings(
        store=str(tmp_path / "pool"), framework="verl", version="0.9.1", dir=str(tmp_path / "ck")
    )
    assert publish_new(verl, reported=reported) == []
    assert publish_new(verl, reported=reported) == []
    err = capsys.readouterr().err
    assert err.count("cannot publish step 10") == 1 and "spec.checkpoint.save_hf" in err


def test_follow_publishes_the_last_step_after_the_process_exits(tmp_path: Path) -> None:
    import threading
    import time

    step(tmp_path, 2)
    done = tmp_path / "done"  # the stand-in training exits when told, however slow the machine is
    wait = f"import os, time\nwhile not os.path.exists({str(done)!r}): time.sleep(0.05)"
    writer = subprocess.Popen([sys.executable, "-c", wait])
    # a pass every 60 s: after the first one, only the pass made when the training exits can see step 4
    follower = threading.Thread(target=follow, args=(settings(tmp_path), writer.pid), kwargs={"interval": 60})
    follower.start()
    store = VersionStore(tmp_path / "pool")
    while not store.versions():
        time.sleep(0.1)
    step(tmp_path, 4)  # the final checkpoint lands just before the training exits
    done.touch()
    writer.wait()
    follower.join(60)
    assert not follower.is_alive()
    assert [m.source.step for m, _ in store.of_run("r1")] == [2, 4]


def test_the_module_refuses_malformed_settings() -> None:
    done = subprocess.run([sys.executable, "-m", "rladapt.pool.publisher", "--settings", "{}", "--parent", "1"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "malformed settings" in done.stderr
