"""Cold-start benchmark: `rladapt validate` / `rladapt render` against `python -c pass`, in the same run.

Prints median wall times over N runs, the overhead over a bare interpreter and the ratio, and which heavy modules
(torch, ray, verl, openrlhf, hydra, kubernetes) a CLI start-up imported. Target: < 0.3 s overhead, none imported.

    .venv/bin/python benchmarks/cold_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = str(REPO / "examples" / "grpo-gsm8k.yaml")
HEAVY = ("torch", "ray", "verl", "openrlhf", "hydra", "kubernetes", "vllm", "transformers", "rich")
TARGET_OVERHEAD_S = 0.3


# As users run it: bytecode caches written once and reused (some shells set PYTHONDONTWRITEBYTECODE, which
# would measure compiling rladapt's sources on every start instead).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], runs: int) -> float:
    subprocess.run(argv, check=True, capture_output=True, env=ENV)  # warm-up: writes the bytecode caches
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=ENV)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def imported_heavy(args: list[str]) -> list[str]:
    probe = (
        "import sys, json\n"
        "from rladapt.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=ENV
    ).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "rladapt.cli"]
    cases = {
        # --no-path-check: the example names data files this checkout does not hold; the check is not start-up
        "validate": ["validate", "--no-path-check", SPEC],
        "render verl": ["render", "--framework", "verl", SPEC],
        "render openrlhf": ["render", "--framework", "openrlhf", SPEC],
    }
    baseline = timed([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass                   {baseline * 1000:7.1f} ms (baseline, median of {args.runs})")
    worst = 0.0
    for name, case in cases.items():
        t = timed(cli + case, args.runs)
        overhead = t - baseline
        worst = max(worst, overhead)
        heavy = imported_heavy(case)
        print(
            f"rladapt {name:<24} {t * 1000:7.1f} ms  overhead {overhead * 1000:6.1f} ms  "
            f"ratio {t / baseline:5.1f}x  heavy imports: {', '.join(heavy) or 'none'}"
        )
    verdict = "within" if worst < TARGET_OVERHEAD_S else "OVER"
    print(f"worst overhead {worst * 1000:.1f} ms: {verdict} the {TARGET_OVERHEAD_S * 1000:.0f} ms target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
