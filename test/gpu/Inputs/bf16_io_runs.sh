#!/bin/bash
# bf16_io_runs.sh OUT TAG MODEL.mlir STRATEGY|- RANKS ATTN [piper-compile flags...]
# One --target cuda --precision bf16 plan over the fake CUDA runtime (test/gpu/fake_cuda.c),
# built twice: as the GPU runs it (the kernels load and store bf16) and with --bf16-io convert
# (every kernel on fp32, widen and narrow around it: the reference). Each trains 3 steps from
# the same seed (PIPER_CUDA_ATTN=ATTN); OUT/TAG.{native,convert}.{losses,safetensors} hold the
# losses and gradient norms as printed (9 significant digits, a float's every bit) and the
# final checkpoint (parameters and AdamW moments). Extra environment for the native run only:
# NATIVE_ENV (the negative control's FAKE_CUDA_BF16_TRUNCATE=1); IO: the builds to run
# (default "native convert"). 2 steps: the second's matmuls read the bf16 copies the first
# step's AdamW wrote.
set -eu
out=$1 tag=$2 model=$3 strategy=$4 ranks=$5 attn=$6
shift 6
lib=$(dirname "$(command -v piper-compile)")/../lib
sopt=()
[ "$strategy" != - ] && sopt=(--strategy "$strategy")
link=piper_rt_fakecuda.link
[ "$ranks" -gt 1 ] && link=piper_rt_fakecuda_mpi.link
for io in ${IO:-native convert}; do
  bin=$out/$tag.$io
  piper-compile "$model" --target cuda --precision bf16 --bf16-io $io "${sopt[@]}" "$@" \
    --emit=obj -o $bin.o
  cc $bin.o -L$lib $(cat $lib/$link) -o $bin
  env_extra=()
  [ $io = native ] && [ -n "${NATIVE_ENV:-}" ] && env_extra=($NATIVE_ENV)
  run=($bin --steps 2 --quiet --metrics $bin.jsonl --save-checkpoint $bin.safetensors)
  [ "$ranks" -gt 1 ] && run=(mpirun --allow-run-as-root --oversubscribe -np $ranks "${run[@]}")
  env ${env_extra[@]+"${env_extra[@]}"} PIPER_CUDA_ATTN=$attn \
    ASAN_OPTIONS=detect_leaks=0:fast_unwind_on_malloc=1 timeout 600 "${run[@]}"
  sed -n 's/.*"kind": "train", "step": \([0-9]*\), "loss": \([^,]*\),.*"grad_norm": \([^,]*\),.*/\1 \2 \3/p' \
    $bin.jsonl > $bin.losses
  [ -s $bin.losses ]
done
