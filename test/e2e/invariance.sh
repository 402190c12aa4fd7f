#!/usr/bin/env bash
# Strategy invariance for one strategy: the same model (by default GPT L4 C32 H2 T16 B8, built-in
# corpus) trained 10 steps on one device and under a piper-sched strategy on NP real MPI ranks
# must give the same per-step losses and the same final, unsharded checkpoint (compare_runs.py
# states the tolerances).
# Usage: invariance.sh WORKDIR NP STAGES PIPER-SCHED-ARGS...
# INVARIANCE_TRAIN_ARGS (environment): more training flags for both runs (e.g. --grad-clip 0.5).
# INVARIANCE_EXPORT (environment): instead of piper-gen, a PyTorch module exported by
#   python/piper: test/frontend/vs_torch.py export's flags, without --stages and -o (e.g.
#   "--model llama --batch 8"); both runs start from the export's weights (--init-checkpoint).
# INVARIANCE_EXPORTED="ONE STAGED" (environment): INVARIANCE_EXPORT's two exports made once
#   beforehand (vs_torch.py export -o ONE, and with --stages -o STAGED), so that one test runs
#   several strategies on a single export; both runs start from ONE/init.safetensors.
# INVARIANCE_MODEL (environment): the piper-gen model and its flags, without --stages (e.g.
#   "qwen3 --layers 4 --dim 32 --heads 4 --kv-heads 2 --ffn-dim 64 --seq 16 --batch 8"; tensor
#   parallelism needs heads divisible by the group size).
# INVARIANCE_SED (environment): a sed script both piper-gen models go through (e.g.
#   's/"tdag.gelu"/"tdag.relu"/': an op of the same signature swapped in); the run stops if it
#   changed nothing.
# INVARIANCE_COMPILE_ARGS (environment): more piper-compile flags for both binaries (e.g.
#   "--precision bf16": then the plan is held to the one-device bf16 run).
# INVARIANCE_COMPARE_ARGS (environment): more compare_runs.py flags (e.g. --param-tol).
# INVARIANCE_GRADS=1 (environment): also compare both runs' step-0 gradients (--dump-grads, a
# separate 1-step run of each) with compare_grads.py.
# INVARIANCE_GRADS_ARGS (environment): more compare_grads.py flags (e.g. --tol 1e-2).
# INVARIANCE_ROUTING="MAXFLIPS MAXGAP" (environment, MoE): the one-device run records every
#   token's expert choices (--routing-record) and the plan replays them (--routing-replay), so
#   both route every token alike and the checkpoints compare without admitting a token that
#   went to another expert; check_routing.py then bounds the plan's own disagreements (flips:
#   at most MAXFLIPS of its routings, each within MAXGAP of its token's largest |logit|).
# INVARIANCE_FROM_STATES="S..." (environment): for each S, both binaries load the one-device
#   run's own state after S steps (parameters, AdamW moments, step) and train one step from it;
#   that step's gradients (compare_grads.py with INVARIANCE_GRADS_ARGS) and the checkpoint after
#   it (compare_runs.py with INVARIANCE_STATE_COMPARE_ARGS) are compared, so a plan's step is
#   held to one device's step from the same state and differences cannot compound over steps
#   (the bf16 tests: see compare_runs.py --losses-only).
# INVARIANCE_PLAN_ARGS (environment): training flags for the distributed run alone, after the
#   shared ones (negative controls: a plan trained differently must fail).
# INVARIANCE_LAUNCH (environment): what runs mpirun (e.g. "hosts.sh run SET node1": on a host
#   of test/e2e/hosts), and INVARIANCE_MPIRUN_ARGS more mpirun flags (e.g. "--hostfile F").
# The comparers are told the steps run and the model, so a reference cut short fails too.
set -euo pipefail
dir=$1 np=$2 stages=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
model=${INVARIANCE_MODEL:-gpt --layers 4 --dim 32 --heads 2 --seq 16 --batch 8}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
extra=(${INVARIANCE_TRAIN_ARGS:-})
if [ -n "${INVARIANCE_EXPORT:-}" ]; then
  export=(${INVARIANCE_EXPORT})
  /usr/bin/python3 "$here/../frontend/vs_torch.py" export "${export[@]}" -o one
  /usr/bin/python3 "$here/../frontend/vs_torch.py" export "${export[@]}" --stages "$stages" -o staged
  mv one/model.mlir single.mlir && mv staged/model.mlir staged.mlir
  cmp one/init.safetensors staged/init.safetensors # the stages' tags change no weight
  extra+=(--init-checkpoint one/init.safetensors)
elif [ -n "${INVARIANCE_EXPORTED:-}" ]; then
  read -r one staged <<< "$INVARIANCE_EXPORTED"
  cp "$one/model.mlir" single.mlir && cp "$staged/model.mlir" staged.mlir
  cmp "$one/init.safetensors" "$staged/init.safetensors" # the stages' tags change no weight
  extra+=(--init-checkpoint "$one/init.safetensors")
else
  piper-gen $model > single.mlir
  piper-gen $model --stages "$stages" > staged.mlir
  if [ -n "${INVARIANCE_SED:-}" ]; then
    piper-gen $model > generated.mlir
    sed -i "$INVARIANCE_SED" single.mlir staged.mlir
    if cmp -s generated.mlir single.mlir; then
      echo "invariance.sh: INVARIANCE_SED changed nothing in the model" >&2
      exit 1
    fi
  fi
fi
piper-sched "$@" > strategy.json
compile=(${INVARIANCE_COMPILE_ARGS:-})
piper-compile single.mlir "${compile[@]}" -o single
piper-compile staged.mlir "${compile[@]}" --strategy strategy.json -o plan
planonly=(${INVARIANCE_PLAN_ARGS:-})
launch=(${INVARIANCE_LAUNCH:-})
mpiargs=(${INVARIANCE_MPIRUN_ARGS:-})
record=() replay=()
if [ -n "${INVARIANCE_ROUTING:-}" ]; then
  record=(--routing-record routing.safetensors)
  replay=(--routing-replay routing.safetensors)
fi
./single --steps 10 --quiet "${extra[@]}" "${record[@]}" --metrics single.jsonl \
  --save-checkpoint single.safetensors
# timeout: a plan that hangs fails the test instead of blocking the suite
timeout 300 "${launch[@]}" mpirun --allow-run-as-root --oversubscribe -np "$np" "${mpiargs[@]}" \
  ./plan --steps 10 --quiet "${extra[@]}" "${planonly[@]}" "${replay[@]}" --metrics plan.jsonl \
  --save-checkpoint plan.safetensors | tee plan.out
if [ -n "${INVARIANCE_ROUTING:-}" ]; then
  read -r maxflips maxgap <<< "$INVARIANCE_ROUTING"
  /usr/bin/python3 "$here/check_routing.py" plan.out --max-flips "$maxflips" --max-gap "$maxgap"
fi
if [ "${INVARIANCE_GRADS:-0}" = 1 ]; then
  ./single --steps 1 --quiet "${extra[@]}" --dump-grads single.grads.safetensors
  timeout 300 "${launch[@]}" mpirun --allow-run-as-root --oversubscribe -np "$np" "${mpiargs[@]}" \
    ./plan --steps 1 --quiet "${extra[@]}" "${planonly[@]}" "${replay[@]}" \
    --dump-grads plan.grads.safetensors
  grads=(${INVARIANCE_GRADS_ARGS:-})
  /usr/bin/python3 "$here/compare_grads.py" single.grads.safetensors plan.grads.safetensors \
    --model single.mlir "${grads[@]}"
fi
compare=(${INVARIANCE_COMPARE_ARGS:-})
/usr/bin/python3 "$here/compare_runs.py" single.jsonl single.safetensors plan.jsonl plan.safetensors \
  --steps 10 --model single.mlir "${compare[@]}"
for s in ${INVARIANCE_FROM_STATES:-}; do
  echo "from the one-device state after $s steps:"
  ./single --steps "$s" --quiet "${extra[@]}" --save-checkpoint "state$s.safetensors"
  ./single --init-checkpoint "state$s.safetensors" --steps 1 --quiet "${extra[@]}" \
    --dump-grads "single$s.grads.safetensors" --metrics "single$s.jsonl" \
    --save-checkpoint "single$s.safetensors"
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
    ./plan --init-checkpoint "state$s.safetensors" --steps 1 --quiet "${extra[@]}" "${planonly[@]}" \
    --dump-grads "plan$s.grads.safetensors" --metrics "plan$s.jsonl" --save-checkpoint "plan$s.safetensors"
  /usr/bin/python3 "$here/compare_grads.py" "single$s.grads.safetensors" "plan$s.grads.safetensors" \
    --model single.mlir ${INVARIANCE_GRADS_ARGS:-}
  /usr/bin/python3 "$here/compare_runs.py" "single$s.jsonl" "single$s.safetensors" "plan$s.jsonl" \
    "plan$s.safetensors" --model single.mlir ${INVARIANCE_STATE_COMPARE_ARGS:-}
done
