#!/usr/bin/env bash
# Build (idempotent, cached) the venv in which verl's own semantic config validation runs on CPU.
# Usage: .ci/verl-semantic.sh            -> prints the venv's python path on stdout (progress on stderr)
# Env:   RLADAPT_VERL_SEMANTIC_VENV  venv dir (default .cache/verl-semantic/venv-<verl version>)
#        RLADAPT_VERL_SEMANTIC_VERSION  verl version (default: the newest pinned one, 0.9.1)
# The verl wheel is installed --no-deps; only what `import verl.utils.config` + `validate_config` (and its
# TensorBoard logger: tensorboard, a dependency of verl from 0.6.1) need is added, at verl's own pins (unpinned
# tensordict/transformers resolve outside verl's ranges). torch is the CPU wheel:
# always `torch==X`, never a bare `torch` (that would pull CUDA wheels worth gigabytes).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${RLADAPT_VERL_SEMANTIC_VERSION:-0.9.1}"
VENV="${RLADAPT_VERL_SEMANTIC_VENV:-.cache/verl-semantic/venv-$VERSION}"
PY="${RLADAPT_VERL_SEMANTIC_PYTHON:-python3}"
STAMP="$VENV/.rladapt-complete"
# bump when the package set below changes, so a cached venv is rebuilt
STAMP_VALUE="$VERSION deps-3"
say() { echo "verl-semantic.sh: $*" >&2; }

case "$VERSION" in
  0.9.*) DEPS=("numpy>=2" "tensordict>=0.8.0,<=0.10.0,!=0.9.0" "transformers>=5.5.3,<5.11,!=5.6.0") ;;
  0.6.*|0.7.*|0.8.*) DEPS=("numpy<2" "tensordict>=0.8.0,<=0.10.0,!=0.9.0" "transformers<5") ;;
  0.5.*) DEPS=("numpy<2" "tensordict>=0.8.0,<=0.9.1,!=0.9.0" "transformers<4.56" torchdata) ;;
  *) say "no dependency set for verl $VERSION"; exit 2 ;;
esac

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_VALUE" ]; then
  say "cached: $VENV"
  echo "$VENV/bin/python"
  exit 0
fi

start=$(date +%s)
mkdir -p "$(dirname "$VENV")"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
# torch first and alone, so that later resolutions keep the CPU build.
"${PIP[@]}" "torch==2.13.0" >&2
"${PIP[@]}" --no-deps "verl==$VERSION" >&2
"${PIP[@]}" "torch==2.13.0" "hydra-core>=1.3" omegaconf "ray>=2.41" "${DEPS[@]}" \
  codetiming orjson datasets pillow aiohttp tensorboard >&2
"$VENV/bin/python" -c "import torch, ray, tensordict, transformers; print('torch', torch.__version__)" >&2
echo "$STAMP_VALUE" > "$STAMP"
say "built $VENV in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1))"
echo "$VENV/bin/python"
