#!/usr/bin/env bash
# Strategy invariance for one strategy: the same GPT (L4 C32 H2 T16 B8, built-in corpus) trained
# 10 steps on one device and under a piper-sched strategy on NP real MPI ranks must give the
# same per-step losses and the same final, unsharded checkpoint (compare_runs.py states the
# tolerances).
# Usage: invariance.sh WORKDIR NP STAGES PIPER-SCHED-ARGS...
# INVARIANCE_TRAIN_ARGS (environment): more training flags for both runs (e.g. --grad-clip 0.5).
set -euo pipefail
dir=$1 np=$2 stages=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
model="--layers 4 --dim 32 --heads 2 --seq 16 --batch 8"
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
piper-gen gpt $model > single.mlir
piper-gen gpt $model --stages "$stages" > staged.mlir
piper-sched "$@" > strategy.json
piper-compile single.mlir -o single
piper-compile staged.mlir --strategy strategy.json -o plan
extra=(${INVARIANCE_TRAIN_ARGS:-})
./single --steps 10 --quiet "${extra[@]}" --metrics single.jsonl --save-checkpoint single.safetensors
# timeout: a plan that hangs fails the test instead of blocking the suite
timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
  ./plan --steps 10 --quiet "${extra[@]}" --metrics plan.jsonl --save-checkpoint plan.safetensors
/usr/bin/python3 "$here/compare_runs.py" single.jsonl single.safetensors plan.jsonl plan.safetensors
