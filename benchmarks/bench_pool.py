"""Model pool benchmark: what publishing and a two-phase switch cost beside copying the same files.

- publish: ``VersionStore.publish`` of a model folder with a SIZE MiB safetensors file (copy, sha256 as it writes,
  read-back hash, fsync, rename), against ``shutil.copytree`` of the same folder in the same run;
- publish to ``memory://``: the same through the object-store protocol (``rladapt.pool.objects``);
- switch: a two-phase switch of REPLICAS reference replicas to another version of the tiny example model (each
  replica re-hashes the version's files and loads them, then all commit), against copying that version's files
  once per replica.

    .venv/bin/python benchmarks/bench_pool.py [--size 512] [--replicas 2]

Publishing reads every byte twice more than a copy does (the read-back hash) and fsyncs; a switch's cost is the
replicas' model loads, not the files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rladapt.pool import ServeGroup, Source, VersionStore, open_store, switch  # noqa: E402

TINY = REPO / "examples" / "tiny" / "model"


def _big_model(folder: Path, size_mib: int) -> Path:
    shutil.copytree(TINY, folder)
    with (folder / "model.safetensors").open("wb") as handle:
        for _ in range(size_mib):
            handle.write(os.urandom(1 << 20))
    return folder


def _timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="MiB of weights to publish")
    parser.add_argument("--replicas", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = _big_model(root / "model", args.size)
        store = VersionStore(root / "pool")
        copy = _timed(lambda: shutil.copytree(folder, root / "copy"))
        publish = _timed(lambda: store.publish(folder, source=Source(run_id="bench", step=1)))
        print(
            f"publish {args.size} MiB: {publish:.2f} s; copytree baseline {copy:.2f} s ({publish / copy:.1f}x)"
        )
        # the object-store protocol (upload, manifest last, create-if-absent claims) on fsspec's memory filesystem
        remote = open_store("memory://bench-pool")
        upload = _timed(lambda: remote.publish(folder, source=Source(run_id="bench", step=1)))
        print(f"publish {args.size} MiB to memory://: {upload:.2f} s ({upload / copy:.1f}x the copy)")

        small = VersionStore(root / "small")
        for step in (1, 2):
            small.publish(TINY, source=Source(run_id="bench", step=step))
        small.set_alias("serving", "1")
        group = ServeGroup(small, "serving", args.replicas)
        group.start()
        try:
            urls = [m.url for m in group.members]
            took = _timed(lambda: switch(urls, "v00000002"))
            baseline = _timed(
                lambda: [shutil.copytree(small.path("2"), root / f"replica{i}") for i in range(args.replicas)]
            )
            print(
                f"switch {args.replicas} replicas: {took:.2f} s; copying the version per replica {baseline:.3f} s"
            )
        finally:
            group.stop()


if __name__ == "__main__":
    main()
