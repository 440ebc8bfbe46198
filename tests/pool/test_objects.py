"""The version store on fsspec filesystems (``rladapt.pool.objects``): fsspec's real in-memory filesystem
(``memory://``) and its real local one, driven through the object-store protocol (manifest written last,
create-if-absent claims, alias entry logs), across processes where it matters. No S3 server runs here (a real one is
not installable in this environment; a mock would prove nothing about S3's conditional writes)."""

from __future__ import annotations

import multiprocessing
import uuid
from pathlib import Path

import pytest

fsspec = pytest.importorskip("fsspec")

from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]  # noqa: E402
from fsspec.implementations.memory import MemoryFileSystem  # type: ignore[import-untyped]  # noqa: E402

from rladapt.pool import AliasMoved, Source, VersionStore, open_store  # noqa: E402
from rladapt.pool.objects import ObjectVersionStore  # noqa: E402
from rladapt.primitives.errors import UsageError  # noqa: E402
from tests.pool.test_store import model_folder  # noqa: E402


@pytest.fixture
def store() -> ObjectVersionStore:
    made = open_store(f"memory://pool-{uuid.uuid4().hex[:8]}")
    assert isinstance(made, ObjectVersionStore)
    return made


def test_a_memory_store_publishes_verifies_and_lists(store: ObjectVersionStore, tmp_path: Path) -> None:
    first, new = store.publish(model_folder(tmp_path, "a", b"one"), source=Source(run_id="r", step=1))
    assert (first.version, new) == ("v00000001", True)
    again, new = store.publish(model_folder(tmp_path, "a2", b"one"), source=Source(run_id="r", step=1))
    assert (again.version, new) == ("v00000001", False)  # the same step: the same version
    second, _ = store.publish(model_folder(tmp_path, "b", b"two"), source=Source(run_id="r", step=2))
    assert second.parent == "v00000001" and store.versions() == ["v00000001", "v00000002"]
    assert "optimizer.pt" not in store.manifest("2").files and store.verify("2") == []
    assert [m.version for m, _ in store.of_run("r")] == ["v00000001", "v00000002"]
    store.fs.pipe_file(store._p("versions", "v00000002", "model.safetensors"), b"tw0")
    assert store.verify("2") == ["model.safetensors: sha256 differs from the manifest"]
    with pytest.raises(UsageError, match="object store: a version has no local folder"):
        store.path("1")


def test_a_version_without_its_manifest_is_invisible(store: ObjectVersionStore, tmp_path: Path) -> None:
    store.publish(model_folder(tmp_path, "a", b"one"))
    # an upload cut short: files, no manifest (written last)
    store.fs.pipe_file(store._p("versions", "v00000002", "model.safetensors"), b"half")
    assert store.versions() == ["v00000001"]
    with pytest.raises(UsageError, match="has no version v00000002"):
        store.resolve("2")
    manifest, _ = store.publish(model_folder(tmp_path, "b", b"two"))
    assert manifest.version == "v00000003"  # v00000002 was claimed: numbers are never handed out twice


def test_memory_aliases_compare_and_swap_roll_back_and_gc_keeps_what_is_named(
    store: ObjectVersionStore, tmp_path: Path
) -> None:
    for step in (1, 2, 3, 4):
        store.publish(
            model_folder(tmp_path, f"s{step}", str(step).encode()), source=Source(run_id="r", step=step)
        )
    store.set_alias("serving", "1", if_current="none")
    store.set_alias("serving", "2", if_current="1")
    with pytest.raises(AliasMoved, match="names v00000002, not v00000001"):
        store.set_alias("serving", "3", if_current="1")
    assert store.rollback("serving").version == "v00000001"
    state = store.alias_state("serving")
    assert [h["action"] for h in state.history] == ["set", "set", "rollback"]
    store.lease("3", "evaluator", 3600)
    report = store.gc(keep_last=1)
    assert report.deleted == ["v00000002"]
    assert set(report.kept) == {"v00000001", "v00000003", "v00000004"}
    assert store.versions() == ["v00000001", "v00000003", "v00000004"]
    assert store.release("3", "evaluator") and store.leases() == []


def _move(root: str, queue: multiprocessing.Queue[str]) -> None:
    store = ObjectVersionStore(root, fs=LocalFileSystem())
    try:
        queue.put(store.set_alias("serving", "2", if_current="1").version)
    except AliasMoved:
        queue.put("lost")


def _publish(root: str, folder: str, queue: multiprocessing.Queue[str]) -> None:
    store = ObjectVersionStore(root, fs=LocalFileSystem())
    manifest, new = store.publish(Path(folder), source=Source(run_id="r", step=7))
    queue.put(f"{manifest.version} {new}")


def test_on_fsspecs_local_filesystem_concurrent_movers_and_publishers_agree(tmp_path: Path) -> None:
    root = str(tmp_path / "pool")
    store = ObjectVersionStore(root, fs=LocalFileSystem())
    for step in (1, 2):
        store.publish(
            model_folder(tmp_path, f"s{step}", str(step).encode()), source=Source(run_id="r", step=step)
        )
    store.set_alias("serving", "1")
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[str] = ctx.Queue()
    movers = [ctx.Process(target=_move, args=(root, queue)) for _ in range(4)]
    folder = model_folder(tmp_path, "s7", b"seven")
    publishers = [ctx.Process(target=_publish, args=(root, str(folder), queue)) for _ in range(4)]
    for process in movers + publishers:
        process.start()
    for process in movers + publishers:
        process.join(120)
    answers = sorted(queue.get(timeout=10) for _ in range(8))
    moved = [a for a in answers if a in ("lost", "v00000002")]
    assert sorted(moved) == ["lost", "lost", "lost", "v00000002"]  # one compare-and-swap won
    published = [a for a in answers if a not in moved]
    assert len({a.split()[0] for a in published}) == 1 and sum(a.endswith("True") for a in published) == 1
    assert [m.source.step for m in map(store.manifest, store.versions())] == [1, 2, 7]


class _NoConditional(MemoryFileSystem):
    """fsspec's memory filesystem under a name rladapt knows no atomic create-if-absent for."""

    protocol = ("plainmem",)


def test_a_filesystem_without_a_known_conditional_write_reads_but_refuses_writes(tmp_path: Path) -> None:
    readable = open_store(f"memory://ro-{uuid.uuid4().hex[:8]}")
    assert isinstance(readable, ObjectVersionStore)
    readable.publish(model_folder(tmp_path, "a", b"one"))
    plain = ObjectVersionStore(readable.base, fs=_NoConditional())
    assert plain.versions() == ["v00000001"] and plain.verify("1") == []
    for write in (lambda: plain.set_alias("serving", "1"), lambda: plain.lease("1", "h", 10),
                  lambda: plain.publish(model_folder(tmp_path, "b", b"two"))):  # fmt: skip
        with pytest.raises(UsageError, match="needs an atomic create-if-absent.*not 'plainmem'"):
            write()


def test_an_s3_url_without_s3fs_is_a_usage_error() -> None:
    # s3fs is not installed here; where it is, the URL opens (and writes are refused, as above)
    try:
        import s3fs  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="pool store 's3://bucket/pool'.*s3fs"):
            open_store("s3://bucket/pool")
    else:
        pytest.skip("s3fs is installed")


def test_the_pool_commands_take_a_memory_url(
    store: ObjectVersionStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from tests.cli.test_help import cli_run

    store.publish(model_folder(tmp_path, "a", b"one"), source=Source(run_id="r", step=1))
    store.publish(model_folder(tmp_path, "b", b"two"), source=Source(run_id="r", step=2))
    code, out, err = cli_run("pool", "alias", "serving", "2", "--store", store.url, capsys=capsys)
    assert code == 0, err
    code, out, err = cli_run("pool", "list", "--store", store.url, "--format", "json", capsys=capsys)
    rows = json.loads(out)
    assert code == 0 and [row["version"] for row in rows] == ["v00000001", "v00000002"], out
    code, out, err = cli_run("pool", "verify", "2", "--store", store.url, capsys=capsys)
    assert code == 0, err
    code, out, err = cli_run("pool", "serve", "--alias", "serving", "--store", store.url, capsys=capsys)
    assert code == 2 and "object store: a version has no local folder" in err


def test_a_directory_store_refuses_a_url_and_names_open_store() -> None:
    # a URL taken for a directory would write into a folder named "memory:" beside the caller
    with pytest.raises(UsageError, match="open_store"):
        VersionStore("memory://pool")
