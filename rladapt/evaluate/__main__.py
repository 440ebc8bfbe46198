"""``python -m rladapt.evaluate --settings JSON``: the evaluator role (``rladapt.evaluate.worker``).

It follows the run until the training job has ended and every version it left is evaluated, or its known last
step is (``--once``: one pass). Exit 2 for malformed settings or a
suite that cannot be read, 1 for anything else that stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rladapt.primitives.errors import RladaptError

from .settings import EvalSettings
from .worker import Evaluator


def lower_priority(by: int) -> None:
    """Lower this process's CPU priority by ``by`` (``os.nice``).

    The evaluator role passes 10. Where it shares cores with the training (the local launcher, a Slurm node), the
    training's threads then get the CPU first. Measured with ``benchmarks/bench_eval.py`` on 2 cores: the median
    step time slowed by 13% with the evaluator at the training's priority, and by none at nice 10. On Ray and
    Kubernetes the role has cores of its own, and this changes nothing there.
    """
    if by > 0:
        os.nice(by)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rladapt.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--settings", required=True, help="EvalSettings as JSON")
    parser.add_argument(
        "--run-id", default=None, help="the run whose versions are followed (default: $RLADAPT_RUN_ID)"
    )
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between passes")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    parser.add_argument(
        "--nice", type=int, default=0, help="lower this process's CPU priority by N (the role passes 10)"
    )
    args = parser.parse_args(argv)
    lower_priority(args.nice)
    try:
        settings = EvalSettings.from_json(json.loads(args.settings))
    except ValueError as exc:
        print(f"rladapt.evaluate: malformed --settings: {exc}", file=sys.stderr)
        return 2
    try:
        evaluator = Evaluator(settings, run_id=args.run_id)
        if args.once:
            evaluator.run_pass()
            return 0
        return evaluator.follow(interval=args.interval)
    except RladaptError as exc:
        print(f"rladapt.evaluate: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
