"""Scale benchmark: the read-side verbs at the sizes a platform team reaches, each beside its baseline in the same
run (issue 25).

Builds, in a scratch directory:

- a run store of ``--runs`` run directories (5,000), each a local run with a checkpoint directory holding a small
  events file (30 steps with a validation score every 5), as ``rladapt runs`` lists them;
- one run whose events file has ``--steps`` steps (100,000) of 8 tags: ``rladapt metrics`` and ``status`` of it;
- ten runs of ``--compare-steps`` steps (10,000): ``rladapt compare --plot`` of them;
- a ``--log-mib`` MiB log (1024) of ordinary lines with one failure, and one pathological line:
  ``rladapt triage`` of it.

Prints each verb's wall time and peak memory (the child's maximum resident set) beside its baseline: tensorboard's
own reader (``EventAccumulator``, every scalar kept) for the metrics, ``python -c pass`` for start-up, ``grep -c``
over the same log for triage. The targets of the issue are printed beside them; nothing here asserts a time.

    .venv/bin/python benchmarks/bench_scale.py [--runs 5000] [--steps 100000] [--log-mib 1024] [--keep DIR]
        [--against-tree DIR]

--against-tree DIR also lists the same store (a copy of it, built before any listing) with another rladapt source
tree, first and second listing, in the same run: before/after figures of ``runs``, e.g. DIR made with
``git archive main | tar -x -C DIR``; it runs with this interpreter and PYTHONPATH=DIR, from DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPATH"] = str(REPO) + os.pathsep + ENV.get("PYTHONPATH", "")
TAGS = (
    "critic/score/mean",
    "actor/pg_loss",
    "actor/entropy",
    "actor/kl_loss",
    "response_length/clip_ratio",
    "perf/throughput",
    "timing_s/step",
    "val-core/openai/gsm8k/reward/mean@1",
)


def events_file(
    directory: Path, steps: int, tags: tuple[str, ...] = TAGS, every_val: int = 1, first: int = 1
) -> Path:
    """An event file as torch's SummaryWriter writes it (file version 2, one scalar per event), framed with
    the CRC computed in numpy (``rladapt.metrics.records``): a 100,000-step file in seconds."""
    import numpy as np
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    from rladapt.metrics.records import masked_crc32c, masked_crc32c_rows

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "events.out.tfevents.1700000000.bench.1.0"
    payloads = [Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()]
    for step in range(first, first + steps):
        for i, tag in enumerate(tags):
            if tag.startswith("val-") and step % every_val:
                continue
            value = Summary.Value(tag=tag, simple_value=(step % 97) / 97 + i)
            event = Event(wall_time=1.7e9 + step * 2.0 + i * 1e-3, step=step, summary=Summary(value=[value]))
            payloads.append(event.SerializeToString())
    by_length: dict[int, list[int]] = {}
    for n, p in enumerate(payloads):
        by_length.setdefault(len(p), []).append(n)
    data_crc = [0] * len(payloads)
    for length, which in by_length.items():
        rows = np.frombuffer(b"".join(payloads[n] for n in which), dtype=np.uint8).reshape(len(which), length)
        for n, crc in zip(which, masked_crc32c_rows(rows).tolist(), strict=True):
            data_crc[n] = crc
    head_crc = {length: masked_crc32c(struct.pack("<Q", length)) for length in by_length}
    with path.open("wb") as f:
        for p, crc in zip(payloads, data_crc, strict=True):
            f.write(struct.pack("<QI", len(p), head_crc[len(p)]) + p + struct.pack("<I", crc))
    return path


def make_store(home: Path, count: int, steps: int, name: str = "bench") -> list[str]:
    """``count`` local runs of verl 0.9.1, each with its checkpoint directory and an events file of ``steps``
    steps: one run made through the run store, the others copies of it under new ids."""
    from rladapt.plugins.launcher import Artifacts
    from rladapt.runs import RunStore
    from rladapt.runs.record import CheckpointFacts

    store = RunStore(home)
    first = f"{name}-00000"
    ck = home / "ck" / first
    run = store.create(
        run_id=first,
        launcher="local",
        framework="verl",
        version="0.9.1",
        job_name=name,
        spec_hash="0" * 16,
        artifacts=Artifacts(launcher="local", files={"run.sh": "#!/bin/sh\ntrue\n"}),
        checkpoint=CheckpointFacts(dir=str(ck)),
        total_steps=steps,
    )
    record = json.loads((run.dir / "run.json").read_text())
    record["state"] = "SUCCEEDED"
    (run.dir / "run.json").write_text(json.dumps(record))
    events_file(ck / "rladapt-metrics" / "exp", steps, every_val=5 if steps <= 100 else 1)
    ids = [first]
    for n in range(1, count):
        rid = f"{name}-{n:05d}"
        target = store.runs_dir / rid
        shutil.copytree(run.dir, target)
        rec = dict(record, id=rid)
        rec["checkpoint"] = dict(record.get("checkpoint") or {}, dir=str(home / "ck" / rid))
        (target / "run.json").write_text(json.dumps(rec))
        shutil.copytree(ck, home / "ck" / rid)
        ids.append(rid)
    return ids


def peak_of(
    argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, float]:
    """Wall seconds, peak resident MiB and CPU seconds (user + system) of ``argv``, measured by a small parent
    that runs only it (so that the peak is that command's alone). The CPU time is what to read on a shared
    machine: the wall time there counts the other processes' turns too."""
    code = (
        "import resource,subprocess,sys,time;t=time.perf_counter();"
        "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
        "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(time.perf_counter()-t, u.ru_maxrss/1024, u.ru_utime+u.ru_stime)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env or ENV, capture_output=True, text=True, cwd=cwd
    )
    took, peak, cpu = out.stdout.split()
    return float(took), float(peak), float(cpu)


def row(
    what: str,
    ours: tuple[float, float, float],
    base: tuple[float, float, float] | None,
    target: str,
) -> None:
    def cell(m: tuple[float, float, float]) -> str:
        return f"{m[0]:8.2f} s ({m[2]:6.2f} cpu) {m[1]:5.0f} MiB"

    b = cell(base) if base else " " * 32
    print(f"{what:38} {cell(ours)}   {b}   {target}")


def tb_reader(directory: Path) -> list[str]:
    code = (
        "import sys;from tensorboard.backend.event_processing.event_accumulator import EventAccumulator,SCALARS;"
        "a=EventAccumulator(sys.argv[1],size_guidance={SCALARS:0});a.Reload();"
        "print(sum(len(a.Scalars(t)) for t in a.Tags()['scalars']))"
    )
    return [sys.executable, "-c", code, str(directory)]


def make_log(path: Path, mib: int) -> None:
    line = "(WorkerDict pid=1234) INFO 12-04 21:00:00 step 17: loss 0.4213 reward 0.731 kl 0.0012 lr 1e-06\n"
    block = line * ((1 << 20) // len(line))
    with path.open("w") as f:
        for n in range(mib):
            f.write(block)
            if n == mib // 2:
                f.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0\n")
                f.write("Could not override '" + "a" * (1 << 20) + "\n")  # a 1 MiB line that backtracked


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--compare-steps", type=int, default=10_000)
    parser.add_argument("--log-mib", type=int, default=1024)
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it")
    parser.add_argument("--against-tree", type=Path, help="also list the runs with this rladapt source tree")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="rladapt-bench-scale-"))
    scratch.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    cli = [py, "-m", "rladapt.cli"]
    try:
        t = time.perf_counter()
        many, one, cmp = scratch / "many", scratch / "one", scratch / "cmp"
        if not (many / "runs").is_dir():
            make_store(many, args.runs, 30)
            make_store(one, 1, args.steps, "long")
            make_store(cmp, 10, args.compare_steps, "cmp")
        log = scratch / "job.log"
        if not log.is_file():
            make_log(log, args.log_mib)
        print(f"built in {time.perf_counter() - t:.1f} s under {scratch}\n")
        print(f"{'verb':38} {'rladapt: wall (cpu) peak':>32}   {'baseline':>32}   target")
        env = lambda home: {**ENV, "RLADAPT_HOME": str(home)}  # noqa: E731
        against = None
        if args.against_tree is not None:  # a copy of the store as built: the other tree builds its own index
            tree = args.against_tree.resolve()
            copy = scratch / "many-against"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(many, copy, symlinks=True)
            # its checkpoint directories are recorded under the original: point the copy's records at its own
            for record_file in (copy / "runs").glob("*/run.json"):
                record_file.write_text(record_file.read_text().replace(str(many), str(copy)))
            other = {**env(copy), "PYTHONPATH": str(tree)}
            against = [peak_of([py, "-m", "rladapt.cli", "runs"], other, cwd=tree) for _ in range(2)]
        cold = peak_of([*cli, "runs"], env(many))
        warm = peak_of([*cli, "runs"], env(many))
        base_cold, base_warm = against if against is not None else (None, None)
        row(f"runs @{args.runs} (first: summaries built)", cold, base_cold, "(baseline: --against-tree)")
        row(f"runs @{args.runs} (summaries kept)", warm, base_warm, "< 2 s")
        events = one / "ck" / "long-00000" / "rladapt-metrics" / "exp"
        base = peak_of(tb_reader(events))
        row(
            f"metrics @{args.steps} steps",
            peak_of([*cli, "metrics", "long-00000"], env(one)),
            base,
            "< 5 s, 200 MiB (baseline: tensorboard's reader)",
        )
        row(
            f"metrics -m reward_mean @{args.steps}",
            peak_of([*cli, "metrics", "long-00000", "-m", "reward_mean"], env(one)),
            None,
            "",
        )
        row(
            f"status @{args.steps} (first: summary built)",
            peak_of([*cli, "status", "long-00000"], env(one)),
            None,
            "",
        )
        row(
            f"status @{args.steps} (summary kept)",
            peak_of([*cli, "status", "long-00000"], env(one)),
            None,
            "< 1 s",
        )
        grown = events / "events.out.tfevents.1700000001.bench.1.0"  # the run goes on: 100 more steps
        shutil.copy(events_file(scratch / "grow", 100, first=args.steps + 1), grown)
        row(
            f"status @{args.steps} (+100 steps)",
            peak_of([*cli, "status", "long-00000"], env(one)),
            None,
            "< 1 s",
        )
        grown.unlink()
        png = scratch / "compare.png"
        ids = [f"cmp-{n:05d}" for n in range(10)]
        row(
            f"compare --plot 10 x {args.compare_steps}",
            peak_of([*cli, "compare", *ids, "--plot", str(png), "-m", "reward_mean"], env(cmp)),
            None,
            "< 10 s",
        )
        row(
            f"triage {args.log_mib} MiB",
            peak_of([*cli, "triage", str(log)]),
            peak_of(["grep", "-c", "CUDA out of memory", str(log)]),
            "< 30 s, 200 MiB (baseline: grep -c)",
        )
        spec = str(REPO / "examples" / "grpo-gsm8k.yaml")
        render = min(peak_of([*cli, "render", "--framework", "verl", spec])[2] for _ in range(5))
        bare = min(peak_of([py, "-c", "pass"])[2] for _ in range(5))
        print(
            f"{'render start-up overhead (cpu)':38} {render - bare:8.2f} s (render {render:.2f} s, python -c pass "
            f"{bare:.2f} s)   target < 0.3 s"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
