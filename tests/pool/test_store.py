"""The version store on a real directory: immutable versions, aliases with compare-and-swap, leases, GC."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from pathlib import Path

import pytest

from rladapt.pool import AliasMoved, DamagedManifest, Manifest, Source, VersionStore, hf_weight_files
from rladapt.primitives.errors import UsageError

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny" / "model"


def model_folder(tmp_path: Path, name: str, weights: bytes) -> Path:
    """A Hugging Face folder: the tiny model's config and tokenizer, ``weights`` as its safetensors file."""
    folder = tmp_path / name
    shutil.copytree(TINY, folder)
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "optimizer.pt").write_bytes(b"not part of the model")
    return folder


@pytest.fixture
def store(tmp_path: Path) -> VersionStore:
    return VersionStore(tmp_path / "pool")


def test_publish_copies_the_model_files_with_their_hashes(store: VersionStore, tmp_path: Path) -> None:
    folder = model_folder(tmp_path, "m", b"weights-1")
    manifest, new = store.publish(folder, source=Source(run_id="r1", step=4, framework="trl"))
    assert new and manifest.version == "v00000001"
    held = sorted(p.name for p in store.path("v00000001").iterdir())
    assert "optimizer.pt" not in held and "model.safetensors" in held and "manifest.json" in held
    assert set(manifest.files) == set(held) - {"manifest.json"}
    assert manifest.files["model.safetensors"].size == len(b"weights-1")
    assert Manifest.read(store.path("1")) == manifest
    assert store.verify("1") == []
    assert not list((store.root / "tmp").iterdir())  # nothing left half-published


def test_a_second_publish_of_the_same_step_is_the_same_version(store: VersionStore, tmp_path: Path) -> None:
    folder = model_folder(tmp_path, "m", b"weights-1")
    first, _ = store.publish(folder, source=Source(run_id="r1", step=4))
    again, new = store.publish(folder, source=Source(run_id="r1", step=4))
    assert (again.version, new) == (first.version, False)
    other, new = store.publish(folder, source=Source(run_id="r1", step=8))
    assert (
        new and other.version == "v00000002" and other.parent == "v00000001"
    )  # a run's versions form a line


def _publish_step(root: str, folder: str, queue: multiprocessing.Queue) -> None:
    manifest, new = VersionStore(root).publish(Path(folder), source=Source(run_id="r1", step=7))
    queue.put((manifest.version, new))


def test_concurrent_publishes_of_one_step_yield_one_version(store: VersionStore, tmp_path: Path) -> None:
    folder = model_folder(tmp_path, "m", os.urandom(1 << 20))
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_publish_step, args=(str(store.root), str(folder), queue)) for _ in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    results = [queue.get(timeout=5) for _ in procs]
    assert {version for version, _ in results} == {"v00000001"}
    assert sum(new for _, new in results) == 1
    assert store.versions() == ["v00000001"]
    assert not list((store.root / "tmp").iterdir())


def test_numbers_are_never_reused_after_gc(store: VersionStore, tmp_path: Path) -> None:
    for step in (1, 2, 3):
        store.publish(model_folder(tmp_path, f"m{step}", b"w%d" % step), source=Source(run_id="r", step=step))
    store.gc(keep_last=1)
    assert store.versions() == ["v00000003"]
    (store.root / "counter").unlink()  # even without the counter: the newest folder is still there
    manifest, _ = store.publish(model_folder(tmp_path, "m4", b"w4"), source=Source(run_id="r", step=4))
    assert manifest.version == "v00000004"


def test_a_folder_that_is_not_a_model_is_refused(tmp_path: Path, store: VersionStore) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no config.json"):
        store.publish(tmp_path / "empty")
    folder = model_folder(tmp_path, "m", b"w")
    (folder / "model.safetensors").unlink()
    with pytest.raises(UsageError, match=r"no \*\.safetensors"):
        hf_weight_files(folder)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps(
            {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
        )
    )
    (folder / "model-00001-of-00002.safetensors").write_bytes(b"1")
    with pytest.raises(UsageError, match="lacks shards .*model-00002-of-00002"):
        hf_weight_files(folder)
    assert store.versions() == []


def test_verify_names_every_damaged_file(store: VersionStore, tmp_path: Path) -> None:
    store.publish(model_folder(tmp_path, "m", b"0123456789"))
    folder = store.path("1")
    (folder / "model.safetensors").write_bytes(b"0123456780")  # same size, other bytes
    (folder / "tokenizer.json").unlink()
    (folder / "stray.bin").write_bytes(b"x")
    problems = store.verify("1")
    assert problems == [
        "stray.bin: not in the manifest",
        "model.safetensors: sha256 differs from the manifest",
        "tokenizer.json: missing",
    ]
    (folder / "manifest.json").write_text("{")
    assert "cannot read" in store.verify("1")[0]
    with pytest.raises(DamagedManifest):
        store.manifest("1")


def test_alias_compare_and_swap_history_and_rollback(store: VersionStore, tmp_path: Path) -> None:
    for step in (1, 2, 3):
        store.publish(model_folder(tmp_path, f"m{step}", b"w%d" % step), source=Source(run_id="r", step=step))
    store.set_alias("serving", "1", if_current="none")
    with pytest.raises(AliasMoved, match="names v00000001, not none"):
        store.set_alias("serving", "2", if_current="none")
    store.set_alias("serving", "2", if_current="v00000001")
    with pytest.raises(AliasMoved, match="names v00000002, not v00000001"):
        store.set_alias("serving", "3", if_current="1")
    assert store.resolve("serving") == "v00000002"
    store.set_alias("serving", "3")
    assert store.rollback("serving").version == "v00000002"
    assert store.rollback("serving").version == "v00000001"
    with pytest.raises(UsageError, match="nothing to roll back to"):
        store.rollback("serving")
    actions = [(h["action"], h["version"]) for h in store.alias_state("serving").history]
    assert actions == [("set", "v00000001"), ("set", "v00000002"), ("set", "v00000003"),
                       ("rollback", "v00000002"), ("rollback", "v00000001")]  # fmt: skip
    with pytest.raises(UsageError, match="expected a letter"):
        store.set_alias("v00000002", "1")
    with pytest.raises(UsageError, match="no version v00000009"):
        store.set_alias("latest", "9")


def test_gc_keeps_newest_aliased_leased_and_every_nth(store: VersionStore, tmp_path: Path) -> None:
    for step in range(1, 9):
        store.publish(model_folder(tmp_path, f"m{step}", b"w%d" % step), source=Source(run_id="r", step=step))
    store.set_alias("serving", "2")
    store.set_alias("serving", "3")  # rollback would return to 2: kept too
    store.lease("5", "evaluator", ttl=600)
    store.lease("6", "gone", ttl=0.001)  # expired by the time GC runs
    planned = store.gc(keep_last=2, keep_every=4, dry_run=True)
    assert planned.deleted == ["v00000001", "v00000006"]
    assert len(store.versions()) == 8  # a dry run changes nothing
    report = store.gc(keep_last=2, keep_every=4)
    assert report.deleted == ["v00000001", "v00000006"]
    assert report.kept["v00000002"] == ["alias serving rolls back to it"]
    assert report.kept["v00000005"] == ["leased by evaluator"]
    assert report.kept["v00000004"] == ["every 4th"]
    assert store.versions() == ["v00000002", "v00000003", "v00000004", "v00000005", "v00000007", "v00000008"]
    assert not list((store.root / "trash").iterdir())


def test_gc_quarantines_damaged_versions_and_sweeps_dead_publishes(
    store: VersionStore, tmp_path: Path
) -> None:
    for step in (1, 2, 3):
        store.publish(model_folder(tmp_path, f"m{step}", b"w%d" % step), source=Source(run_id="r", step=step))
    (store.path("1") / "config.json").write_text("{}")  # resized: damaged
    store.lease("2", "ev", ttl=600)
    (store.path("2") / "model.safetensors").write_bytes(
        b"zzz"
    )  # resized: damaged, but leased: reported, not moved
    dead = store.root / "tmp" / "publish-dead"
    dead.mkdir(parents=True)
    (dead / ".publisher").write_text(
        json.dumps({"host": os.uname().nodename, "pid": 2**22 + 11, "started": 0})
    )
    report = store.gc(keep_last=1)
    assert set(report.quarantined) == {"v00000001"} and "config.json" in report.quarantined["v00000001"]
    assert set(report.damaged_kept) == {"v00000002"}
    assert (store.root / "quarantine" / "v00000001" / "manifest.json").is_file()
    assert report.swept == ["publish-dead"] and not dead.exists()


def test_leases_renew_release_and_need_an_existing_version(store: VersionStore, tmp_path: Path) -> None:
    store.publish(model_folder(tmp_path, "m", b"w"))
    first = store.lease("1", "ev", ttl=10)
    second = store.lease("1", "ev", ttl=1000)
    assert second.expires > first.expires and len(store.leases()) == 1
    assert store.release("1", "ev") and not store.release("1", "ev")
    with pytest.raises(UsageError, match="no version v00000002"):
        store.lease("2", "ev", ttl=10)
    with pytest.raises(UsageError, match="--ttl must be a positive"):
        store.lease("1", "ev", ttl=0)


def test_a_file_url_is_the_directory_store(tmp_path: Path) -> None:
    store = VersionStore(f"file://{tmp_path}")
    assert type(store) is VersionStore and store.root == tmp_path


def test_of_run_lists_a_runs_versions_with_their_aliases(store: VersionStore, tmp_path: Path) -> None:
    store.publish(model_folder(tmp_path, "a", b"1"), source=Source(run_id="r1", step=2))
    store.publish(model_folder(tmp_path, "b", b"2"), source=Source(run_id="r2", step=2))
    store.publish(model_folder(tmp_path, "c", b"3"), source=Source(run_id="r1", step=4))
    store.set_alias("serving", "3")
    store.set_alias("candidate", "3")
    found = [(m.version, m.source.step, aliases) for m, aliases in store.of_run("r1")]
    assert found == [("v00000001", 2, []), ("v00000003", 4, ["candidate", "serving"])]
