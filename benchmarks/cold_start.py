"""Cold-start benchmark: the CLI's verbs against `python -c pass`, in the same run.

For each verb: median wall and CPU time (user + system of the child) over N interleaved rounds (one round runs
every command once, so a change in the machine's load hits them all alike; on a shared machine read the CPU
figures), the overhead over a bare interpreter, and which heavy modules (torch, ray, verl, openrlhf, hydra,
kubernetes ...) it imported. The verbs: `validate` and `render` of the GSM8K example, `--help` (every verb's
module), and, on a store of one finished run with a 30-step events file, `runs`, `status RUN` and `metrics RUN`
(their summaries kept: what is left is start-up). Target: render < 0.3 s overhead, nothing heavy imported.

--against-tree DIR times the same commands of another rladapt source tree in the same rounds (before/after), e.g.
DIR made with `git worktree add DIR main` or `git archive main | tar -x -C DIR`; it runs with this interpreter and
PYTHONPATH=DIR, from DIR. --importtime prints the ten slowest imports (``-X importtime``, cumulative) of each verb.

    .venv/bin/python benchmarks/cold_start.py [--runs 15] [--against-tree DIR] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SPEC = str(REPO / "examples" / "grpo-gsm8k.yaml")
HEAVY = ("torch", "ray", "verl", "openrlhf", "hydra", "kubernetes", "vllm", "transformers", "rich")
TARGET_OVERHEAD_S = 0.3


# As users run it: bytecode caches written once and reused (some shells set PYTHONDONTWRITEBYTECODE, which
# would measure compiling rladapt's sources on every start instead).
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "RLADAPT_DEEP_CHECK")}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_together(
    commands: dict[str, tuple[list[str], dict[str, str], Path]], runs: int
) -> dict[str, tuple[float, float]]:
    """Median (wall, cpu) seconds of each command over ``runs`` interleaved rounds, after one warm-up round
    (bytecode caches, the page cache, the runs' summaries and index)."""
    for argv, env, cwd in commands.values():
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=cwd)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, env, cwd) in commands.items():
            before = _children_cpu()
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, env=env, cwd=cwd)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - before)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in commands}


def imported_heavy(args: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    probe = (
        "import sys, json\n"
        "from rladapt.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env, cwd=cwd
    ).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def slowest_imports(argv: list[str], env: dict[str, str], cwd: Path, top: int = 10) -> list[tuple[int, str]]:
    """The ``top`` imports of ``argv`` (a ``python -m rladapt.cli`` command) with the largest cumulative time
    (microseconds), as ``-X importtime`` reports them."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, env=env, cwd=cwd, check=True
    )
    found = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        found.append((int(cumulative), name.strip()))
    return sorted(found, reverse=True)[:top]


def one_run_store(home: Path) -> str:
    """A store of one finished local run with a 30-step events file (bench_scale's builder)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_scale import make_store

    (run_id,) = make_store(home, 1, 30, "cold")
    return run_id


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against-tree", type=Path, help="also time this rladapt source tree, same rounds")
    parser.add_argument("--importtime", action="store_true", help="print each verb's ten slowest imports")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="rladapt-cold-start-"))
    try:
        run_id = one_run_store(home / "store")
        cases = {
            # --no-path-check: the example names data files this checkout does not hold; the check is not start-up
            "validate": ["validate", "--no-path-check", SPEC],
            "render verl": ["render", "--framework", "verl", SPEC],
            "render openrlhf": ["render", "--framework", "openrlhf", SPEC],
            "--help": ["--help"],
            "runs (1 run)": ["runs"],
            "status RUN": ["status", run_id],
            "metrics RUN": ["metrics", run_id],
        }
        env = {**ENV, "RLADAPT_HOME": str(home / "store"), "PYTHONPATH": str(REPO)}
        trees = {"": (env, REPO)}
        if args.against_tree is not None:
            tree = args.against_tree.resolve()
            # a store of its own: the other tree's index and summaries may be of another format
            shutil.copytree(home / "store", home / "against")
            trees[" [against]"] = (
                {**env, "RLADAPT_HOME": str(home / "against"), "PYTHONPATH": str(tree)},
                tree,
            )
        cli = [sys.executable, "-m", "rladapt.cli"]
        commands = {"python -c pass": ([sys.executable, "-c", "pass"], ENV, REPO)}
        for name, case in cases.items():
            for suffix, (tree_env, cwd) in trees.items():
                commands[name + suffix] = (cli + case, tree_env, cwd)
        times = timed_together(commands, args.runs)
        bare_wall, bare_cpu = times["python -c pass"]
        print(f"{'command':32} {'wall ms':>8} {'cpu ms':>8} {'+wall ms':>9} {'+cpu ms':>8}  heavy imports")
        print(
            f"{'python -c pass':32} {bare_wall * 1000:8.1f} {bare_cpu * 1000:8.1f}  (baseline, median of {args.runs})"
        )
        worst = 0.0
        for name, case in cases.items():
            for suffix, (tree_env, cwd) in trees.items():
                wall, cpu = times[name + suffix]
                if name.startswith("render") and not suffix:
                    worst = max(worst, cpu - bare_cpu)
                heavy = imported_heavy(case, tree_env, cwd)
                print(
                    f"{'rladapt ' + name + suffix:32} {wall * 1000:8.1f} {cpu * 1000:8.1f} "
                    f"{(wall - bare_wall) * 1000:9.1f} {(cpu - bare_cpu) * 1000:8.1f}  {', '.join(heavy) or 'none'}"
                )
        verdict = "within" if worst < TARGET_OVERHEAD_S else "OVER"
        print(
            f"worst render overhead (cpu) {worst * 1000:.1f} ms: {verdict} the {TARGET_OVERHEAD_S * 1000:.0f} ms target"
        )
        if args.importtime:
            for name, case in cases.items():
                for suffix, (tree_env, cwd) in trees.items():
                    print(f"\nslowest imports (cumulative) of rladapt {name}{suffix}:")
                    for micros, module in slowest_imports(cli + case, tree_env, cwd):
                        print(f"  {micros / 1000:7.1f} ms  {module}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
