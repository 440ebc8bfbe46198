"""Load-limit benchmark: the time and peak memory to refuse oversized specs, against loading a normal example.

Each case runs in a fresh interpreter, after a warm-up, as ``rladapt validate`` runs it: ``load_job`` on a
file. Prints the median wall time over N runs, the peak of the memory the load allocated (tracemalloc, in a
run of its own) and the time as a ratio to the normal example. Target: every refusal well under a second (before these limits, a 50 MB list
of data paths took 48 s and 832 MiB to validate).

    .venv/bin/python benchmarks/bench_load_limits.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "grpo-gsm8k.yaml"
TARGET_S = 1.0
HEAD = """apiVersion: rladapt/v1alpha1
kind: RLJob
metadata: {name: big}
spec:
  model: {path: Qwen/Qwen2.5-0.5B-Instruct}
  algorithm: {name: grpo, group_size: 4}
  training: {global_batch: 64, mini_batch: 16, micro_batch_per_gpu: 2}
  reward: {function: {path: reward.py}}
  data:
    train:
"""
LINE = "      - s3://bucket/datasets/some/long/prefix/train/shard-000000-of-100000.parquet\n"

# One load in a fresh interpreter; prints its seconds, or with "memory" the peak of the memory it allocated
# (tracemalloc, which slows the load down: so a separate run), as JSON. Imports are the same in every case and
# are left out.
PROBE = """
import json, sys, time, tracemalloc
from rladapt.primitives import RladaptError, load_job
memory = sys.argv[2:] == ["memory"]
if memory:
    tracemalloc.start()
start = time.perf_counter()
try:
    load_job(sys.argv[1])
    outcome = "loaded"
except RladaptError as exc:
    outcome = "refused: " + exc.message.splitlines()[-1].strip()[:90]
elapsed = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1] if memory else 0
print(json.dumps({"s": elapsed, "bytes": peak, "outcome": outcome}))
"""


def write_specs(folder: Path) -> dict[str, Path]:
    big = folder / "paths-50mb.yaml"
    with big.open("w") as out:
        out.write(HEAD)
        out.write(LINE * (50 * 1024 * 1024 // len(LINE)))
    under = folder / "paths-3.9mb.yaml"  # under the byte limit, over the entry limit: refused while parsing
    with under.open("w") as out:
        out.write(HEAD)
        out.write(LINE * (39 * 1024 * 1024 // 10 // len(LINE)))
    deep = folder / "nested-20000.yaml"
    deep.write_text(HEAD.replace("    train:\n", f"    train: {'[' * 20_000}{']' * 20_000}\n"))
    return {
        "example (normal spec)": EXAMPLE,
        "50 MB list of paths": big,
        "3.9 MB list of paths": under,
        "20,000 nested lists": deep,
    }


def measure(path: Path, runs: int) -> tuple[float, int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    argv = [sys.executable, "-c", PROBE, str(path)]

    def once(*extra: str) -> dict[str, Any]:
        out = subprocess.run([*argv, *extra], check=True, capture_output=True, text=True, env=env).stdout
        return dict(json.loads(out.strip().splitlines()[-1]))

    once()  # warm-up: bytecode caches, page cache
    samples = [once() for _ in range(runs)]
    return statistics.median(s["s"] for s in samples), once("memory")["bytes"], samples[-1]["outcome"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        specs = write_specs(Path(tmp))
        base_s, base_kib, _ = measure(specs.pop("example (normal spec)"), args.runs)
        print(
            f"{'example (normal spec)':<24} {base_s * 1000:8.1f} ms  peak {base_kib / 2**20:7.2f} MiB  "
            f"(baseline, median of {args.runs})"
        )
        worst = 0.0
        for name, path in specs.items():
            s, kib, outcome = measure(path, args.runs)
            worst = max(worst, s)
            print(
                f"{name:<24} {s * 1000:8.1f} ms  peak {kib / 2**20:7.2f} MiB  "
                f"time x{s / base_s:5.1f}  {outcome}"
            )
    verdict = "within" if worst < TARGET_S else "OVER"
    print(f"slowest refusal {worst * 1000:.1f} ms: {verdict} the {TARGET_S * 1000:.0f} ms target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
