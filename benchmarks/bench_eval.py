"""Training step time with and without the continuous evaluator beside it: the README's TRL job on the local launcher,
on CPU, run twice with the same settings (steps, checkpoints, pool publishing), the second time with a continuous
suite (``spec.eval.continuous``, follow: pool) so the evaluator role measures each published version while the
training goes on.

What it compares is the overlap: while each run trains, a sampler here notes when each step's line appears in
TRL's log (``rladapt-metrics.jsonl``, with TRL's own ``step_time``) and, in the evaluated run, the CPU seconds of
the evaluator role's process group (``/proc/<pid>/stat``: utime + stime of each of its processes;
it is not a child of this process, so ``resource`` cannot see it). A step fell while the evaluator worked when the
evaluator took at least ``--busy`` of one core during that step. For those steps it prints:

- the mean step time with the evaluator, against the same steps of the run without it: "slowed by X %";
- the evaluator's CPU seconds over the same steps, as a share of the machine's CPU over their wall time
  (``os.cpu_count()`` cores): "the evaluator took Y % of the machine's CPU". On a quiet machine whose cores the
  training does not all use, X stays near 0; where it uses them all, X is bounded by about Y / (100 - Y).

Also printed per run: all steps' mean and median (the first step, which pays the warm-up, is left out), seconds per
1000 tokens, launch to SUCCEEDED; and how many versions were measured while the training ran.

    .venv/bin/python benchmarks/bench_eval.py [--steps 400] [--every 20] [--rounds 1]

A version every 20 of 400 steps gives the evaluator 20 versions to measure while the training runs (40 steps train
in about 3 s on a quiet 2-core machine, and the evaluator's start, importing torch and transformers, takes about as
long: with fewer steps it measures nothing before the training ends). Use a quiet machine for the figure: on 2
cores shared with other jobs, the step time of the same configuration moved by up to 30x from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
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
TICK = os.sysconf("SC_CLK_TCK")
SAMPLE = 0.05


def _stat(pid: int) -> tuple[int, float] | None:
    """(process group, CPU seconds: utime + stime) of ``pid`` from /proc (proc(5) fields 5, 14 and 15), or None
    when it is gone. Its children's are read from them while they live (a parent's cutime would count them twice)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[2]), sum(int(f) for f in fields[11:13]) / TICK


def _members(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] == pgid:
                out.append(int(entry.name))
    return out


@dataclass
class Sampler:
    """Watches one run while it trains: when each step's log line appears, and the evaluator group's CPU."""

    ck: Path
    run_dir: Path
    seen: dict[int, float] = field(default_factory=dict)
    #: (wall time, CPU seconds the evaluator took since the sample before)
    cpu: list[tuple[float, float]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def _pgid(self) -> int | None:
        try:
            roles = json.loads((self.run_dir / "services" / "state.json").read_text())
        except (OSError, ValueError):
            return None
        role = next((r for r in roles if r.get("name") == "evaluator"), None)
        return int(role["pgid"]) if role and role.get("pgid") else None

    def run(self) -> None:
        offset, pending = 0, ""
        pgid: int | None = None
        members: list[int] = []
        scanned = 0.0
        last: dict[int, float] = {}
        while not self.done.is_set():
            now = time.time()
            path = self.ck / "rladapt-metrics.jsonl"
            if path.exists():
                with path.open(encoding="utf-8") as text:
                    text.seek(offset)
                    chunk = text.read()
                    offset = text.tell()
                *lines, pending = (pending + chunk).split("\n")
                for line in lines:
                    step = json.loads(line).get("step") if line.strip() else None
                    if isinstance(step, int):
                        self.seen.setdefault(step, now)
            current = self._pgid()
            if current != pgid or now - scanned > 0.5:  # a restart makes a new group; children come and go
                pgid, scanned = current, now
                members = _members(pgid) if pgid else []
            took = 0.0
            for pid in members:
                stat = _stat(pid)
                if stat is not None:
                    took += max(
                        0.0, stat[1] - last.get(pid, 0.0)
                    )  # a new member: all it took since it started
                    last[pid] = stat[1]
            self.cpu.append((now, took))
            time.sleep(SAMPLE)


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


def _busy_steps(
    sampler: Sampler, steps: dict[int, tuple[float, float]], busy: float
) -> dict[int, tuple[float, float]]:
    """step -> (wall seconds, evaluator CPU seconds) of each step during which the evaluator took at least
    ``busy`` of one core; a step spans ``step_time`` seconds up to when its log line appeared."""
    out = {}
    for step, (seconds, _) in steps.items():
        end = sampler.seen.get(step)
        if end is None or step <= 1:
            continue
        start = end - seconds
        took = sum(cpu for when, cpu in sampler.cpu if start < when <= end + SAMPLE)
        if took >= busy * seconds:
            out[step] = (seconds, took)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--every", type=int, default=20, help="checkpoint (and publish a version) every N steps"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="pairs of runs; every other one starts with the evaluated run"
    )
    parser.add_argument(
        "--busy", type=float, default=0.1,
        help="a step fell while the evaluator worked when it took at least this share of one core in it",
    )  # fmt: skip
    args = parser.parse_args()
    os.chdir(REPO)
    work = Path(tempfile.mkdtemp(prefix="rladapt-bench-eval-"))
    os.environ["RLADAPT_HOME"] = str(work / "home")
    from rladapt.evaluate import EvalResult, read_results
    from rladapt.launch import Runner

    runner = Runner()
    cores = os.cpu_count() or 1
    report: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    pair: list[tuple[str, list[str]]] = [("without", []), ("with", [SUITE])]
    runs: dict[tuple[str, int], tuple[dict[int, tuple[float, float]], Sampler]] = {}
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
        sampler = Sampler(ck, run.dir)
        thread = threading.Thread(target=sampler.run, daemon=True)
        thread.start()
        final = runner.wait(run, interval=0.5, timeout=3600)
        sampler.done.set()
        thread.join()
        wall = time.monotonic() - started
        ended = time.time()
        if final.state != "SUCCEEDED":
            sys.exit(f"{name}: the run ended {final.state}: see {run.dir / 'output.log'}")
        all_steps = _step_times(ck)
        runs[(name, index // 2)] = (all_steps, sampler)
        steps = [st for step, st in sorted(all_steps.items()) if step > 1]
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
            found: list[EvalResult] = []
            while time.monotonic() < deadline:  # it outlives the training: it drains the last versions
                found, _ = read_results(ck / "rladapt-eval", run.id)
                if len(found) >= expected:
                    break
                time.sleep(1)
            during = [r for r in found if datetime.fromisoformat(r.evaluated).timestamp() <= ended]
            seconds = [r.seconds for r in found]
            print(f"        evaluator: {len(found)} of {expected} versions measured ({len(during)} while the "
                  f"training ran), {statistics.fmean(seconds) if seconds else 0:.2f} s per version on one thread, "
                  f"{sum(c for _, c in sampler.cpu):.1f} CPU s while the training ran", flush=True)  # fmt: skip
        report[name].append(row)

    for r in range(args.rounds):
        (with_steps, sampler), (without_steps, _) = runs[("with", r)], runs[("without", r)]
        busy = {s: v for s, v in _busy_steps(sampler, with_steps, args.busy).items() if s in without_steps}
        if not busy:
            print(f"round {r + 1}: no step fell while the evaluator worked: use more --steps")
            continue
        with_mean = statistics.fmean(v[0] for v in busy.values())
        without_mean = statistics.fmean(without_steps[s][0] for s in busy)
        window = sum(v[0] for v in busy.values())
        share = sum(v[1] for v in busy.values()) / (window * cores)
        print(f"round {r + 1}: {len(busy)} steps fell while the evaluator worked (at least {args.busy:g} of a core): "
              f"step time {with_mean:.3f} s with it, {without_mean:.3f} s for the same steps without it: slowed by "
              f"{100 * (with_mean / without_mean - 1):+.1f} %; the evaluator took {100 * share:.1f} % of the "
              f"machine's CPU over the same window ({sum(v[1] for v in busy.values()):.1f} CPU s in {window:.1f} s "
              f"on {cores} cores)", flush=True)  # fmt: skip
    ratio = statistics.fmean(r["mean"] for r in report["with"]) / statistics.fmean(
        r["mean"] for r in report["without"]
    )
    per_k_ratio = statistics.fmean(r["per_k"] for r in report["with"]) / statistics.fmean(
        r["per_k"] for r in report["without"]
    )
    print(f"all steps, with/without: step time mean x{ratio:.2f}, per 1000 tokens x{per_k_ratio:.2f}; "
          f"{cores} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
