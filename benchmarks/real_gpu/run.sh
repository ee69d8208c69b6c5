#!/bin/sh
# gpuwatch on a real GPU, in one command (docs/real-gpu.md):
#   bash benchmarks/real_gpu/run.sh                 # writes into $OUT
#   bash benchmarks/real_gpu/run.sh --out DIR       # or into DIR
#   bash benchmarks/real_gpu/run.sh --dry-run --out DIR   # CPU torch + the fake driver
# Needs python3 with PyTorch, nvidia-ml-py, psutil and numpy; gpuwatch runs from this
# source tree (no install, no Qt, no platformdirs).
set -eu
cd "$(dirname "$0")/../.."
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
exec "${PYTHON:-python3}" benchmarks/real_gpu/run.py "$@"
