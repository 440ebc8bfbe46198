#!/usr/bin/env bash
# Everything the test suite needs, from a fresh clone: the venv, the services (a private single-node Slurm),
# verl's semantic-validation venv, then pytest on 2 workers. Ray heads are started by the tests themselves.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# torch pinned to the CPU wheel: the trl extra's accelerate needs torch, and a bare torch from PyPI pulls CUDA
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' torch==2.13.0

slurm_started=0
if [ "${RLADAPT_NO_SLURM:-0}" != "1" ]; then
    eval "$(bash .ci/slurm.sh up)"
    slurm_started=1
fi
cleanup() {
    if [ "$slurm_started" = 1 ]; then bash .ci/slurm.sh down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# verl's own semantic validation runs in a separate cached venv (CPU torch + verl's pinned dependencies).
bash .ci/verl-semantic.sh >/dev/null
export RLADAPT_REQUIRE_SEMANTIC="${RLADAPT_REQUIRE_SEMANTIC:-1}"
# Engine suites (Slurm) fail instead of skipping when their engine is missing.
export RLADAPT_REQUIRE_ENGINES="${RLADAPT_REQUIRE_ENGINES:-1}"
.venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
