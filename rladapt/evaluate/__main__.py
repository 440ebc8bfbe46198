"""``python -m rladapt.evaluate --settings JSON``: the evaluator role (``rladapt.evaluate.worker``).

It follows the run until the training job has ended and every version it left is evaluated, or its known last
step is (``--once``: one pass). Exit 2 for malformed settings or a
suite that cannot be read, 1 for anything else that stops it.
"""

from __future__ import annotations

import argparse
import json
import sys

from rladapt.primitives.errors import RladaptError

from .settings import EvalSettings
from .worker import Evaluator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rladapt.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--settings", required=True, help="EvalSettings as JSON")
    parser.add_argument(
        "--run-id", default=None, help="the run whose versions are followed (default: $RLADAPT_RUN_ID)"
    )
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between passes")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    args = parser.parse_args(argv)
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
