"""Training step time with and without the continuous evaluator beside it: the README's TRL job on the local launcher,
on CPU, run twice with the same settings (steps, checkpoints, pool publishing), the second time with a continuous
suite (``spec.eval.continuous``, follow: pool) so the evaluator role measures every published version while the
training goes on.

Printed for each run: TRL's own per-step time (``step_time`` in ``rladapt-metrics.jsonl``; the first step, which
pays the warm-up, is left out), its mean and median, launch to SUCCEEDED; for the evaluated run also the versions
measured, the evaluator's own seconds per version and how many of them fell while the training ran. The ratio of the
mean step times says how much the evaluator slowed the training: it generates on one CPU thread
(``rladapt.evaluate.generate``), so on a machine whose cores the training already uses, the bound is the share of
the CPU that thread takes.

    .venv/bin/python benchmarks/bench_eval.py [--steps 20] [--every 2] [--rounds 1]

Measured (2 cores shared with six other engineers' jobs, load average 8 to 12, so the figures move by tens of
percent from run to run): see the report of the change that added this file; the same command reproduces them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = "examples/grpo-tiny-trl.yaml"
FRAMEWORK = "trl==1.16.0"
SUITE = (
    "spec.eval.continuous={follow: pool, suites: [{name: share-of-a, data: [examples/tiny/val.jsonl], "
    "scorer: {function: {path: examples/tiny/reward.py, name: share_of_a}}, "
    "generation: {max_new_tokens: 8, temperature: 0.0}}]}"
)


def _step_times(ck: Path) -> dict[int, float]:
    out = {}
    for line in (ck / "rladapt-metrics.jsonl").read_text().splitlines():
        entry = json.loads(line)
        seconds = (entry.get("logs") or {}).get("step_time")
        if seconds is not None:
            out[int(entry["step"])] = float(seconds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--every", type=int, default=2, help="checkpoint (and publish a version) every N steps"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="pairs of runs; every other one starts with the evaluated run"
    )
    args = parser.parse_args()
    os.chdir(REPO)
    work = Path(tempfile.mkdtemp(prefix="rladapt-bench-eval-"))
    os.environ["RLADAPT_HOME"] = str(work / "home")
    from rladapt.evaluate import read_results
    from rladapt.launch import Runner

    runner = Runner()
    report: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    pair: list[tuple[str, list[str]]] = [("without", []), ("with", [SUITE])]
    for index, (name, extra) in enumerate(
        p for r in range(args.rounds) for p in (pair if r % 2 == 0 else pair[::-1])
    ):
        ck = work / f"ck-{name}-{index}"
        overrides = [
            f"spec.training.steps={args.steps}",
            f"spec.checkpoint.every_steps={args.every}",
            f"spec.checkpoint.keep_last={args.steps}",
            f"spec.checkpoint.dir={ck}",
            f"spec.runtime.python={sys.executable}",
            f"spec.pool.store={work / f'pool-{name}-{index}'}",
            *extra,
        ]
        started = time.monotonic()
        run = runner.launch(SPEC, overrides, framework=FRAMEWORK)
        final = runner.wait(run, interval=0.5, timeout=3600)
        wall = time.monotonic() - started
        ended = time.time()
        if final.state != "SUCCEEDED":
            sys.exit(f"{name}: the run ended {final.state}: see {run.dir / 'output.log'}")
        times = [t for step, t in sorted(_step_times(ck).items()) if step > 1]
        row = {"mean": statistics.fmean(times), "median": statistics.median(times), "wall": wall}
        print(f"{name:>7} the evaluator: {len(times)} steps, step time mean {row['mean']:.3f} s, median "
              f"{row['median']:.3f} s (min {min(times):.3f}, max {max(times):.3f}); launch to SUCCEEDED "
              f"{wall:.1f} s", flush=True)  # fmt: skip
        if extra:
            deadline = time.monotonic() + 1800
            expected = args.steps // args.every
            while time.monotonic() < deadline:  # it outlives the training: it drains the last versions
                found, _ = read_results(ck / "rladapt-eval", run.id)
                if len(found) >= expected:
                    break
                time.sleep(1)
            during = [r for r in found if datetime.fromisoformat(r.evaluated).timestamp() <= ended]
            seconds = [r.seconds for r in found]
            print(f"        evaluator: {len(found)} of {expected} versions measured ({len(during)} while the "
                  f"training ran), {statistics.fmean(seconds):.2f} s per version on one thread", flush=True)  # fmt: skip
        report[name].append(row)
    ratio = statistics.fmean(r["mean"] for r in report["with"]) / statistics.fmean(
        r["mean"] for r in report["without"]
    )
    median_ratio = statistics.fmean(r["median"] for r in report["with"]) / statistics.fmean(
        r["median"] for r in report["without"]
    )
    print(f"ratio with/without: step time mean x{ratio:.2f}, median x{median_ratio:.2f}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
