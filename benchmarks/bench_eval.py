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

Measured (2 cores shared with six other engineers' jobs, load average 2.5 to 6): ``--steps 40 --rounds 2`` gave
9.2 and 9.5 s per 1000 tokens without the evaluator, 0.31 and 6.7 s with it (16 of its 20 versions measured while
the training ran in the second, 0.18 s per version on one thread; the first ran on a machine that was idle for a
moment and its evaluator measured everything after the training): a ratio of x0.38, i.e. no slowdown the machine's
own noise does not hide. The same configuration's step time moves by up to 30x from run to run here (torch's
intra-op threads on oversubscribed cores), so only a quiet machine gives the figure the issue asks for: the slowdown
bounded by the one thread the evaluator takes.
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


def _step_times(ck: Path) -> dict[int, tuple[float, float]]:
    """step -> (seconds, tokens): TRL's ``step_time`` and the tokens the step processed (``num_tokens`` counts
    them from the start). Generation dominates a step on CPU and answers get shorter as the model learns, so the
    seconds per thousand tokens compare runs better than the seconds alone."""
    out = {}
    before = 0.0
    for line in (ck / "rladapt-metrics.jsonl").read_text().splitlines():
        logs = json.loads(line).get("logs") or {}
        seconds, tokens = logs.get("step_time"), logs.get("num_tokens")
        if seconds is not None and tokens is not None:
            out[int(json.loads(line)["step"])] = (float(seconds), float(tokens) - before)
            before = float(tokens)
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
        steps = [st for step, st in sorted(_step_times(ck).items()) if step > 1]
        times = [seconds for seconds, _ in steps]
        per_k = 1000 * sum(times) / max(sum(tokens for _, tokens in steps), 1.0)
        row = {
            "mean": statistics.fmean(times),
            "median": statistics.median(times),
            "wall": wall,
            "per_k": per_k,
        }
        print(f"{name:>7} the evaluator: {len(times)} steps, step time mean {row['mean']:.3f} s, median "
              f"{row['median']:.3f} s (min {min(times):.3f}, max {max(times):.3f}), {per_k:.3f} s per 1000 tokens; "
              f"launch to SUCCEEDED {wall:.1f} s", flush=True)  # fmt: skip
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
    per_k_ratio = statistics.fmean(r["per_k"] for r in report["with"]) / statistics.fmean(
        r["per_k"] for r in report["without"]
    )
    print(f"ratio with/without: step time mean x{ratio:.2f}, median x{median_ratio:.2f}, per 1000 tokens "
          f"x{per_k_ratio:.2f}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
