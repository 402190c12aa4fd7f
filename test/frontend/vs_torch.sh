#!/usr/bin/env bash
# An exported module trained by Piper against the same module trained by torch (vs_torch.py):
# export, piper-compile (with COMPILE_ARGS, e.g. --no-fuse), 10 steps of AdamW at lr 1e-2 on
# a seeded byte file of tokens below 64, the same in torch, then gpt_torch.py compare (losses,
# step-0 gradients, final parameters; its default tolerances) and piper.load into the module
# with strict=True. Prints both reports for FileCheck. ADAM_EPS (environment): AdamW's eps for
# both runs (default 1e-8).
# Usage: vs_torch.sh WORKDIR MODEL [vs_torch.py model flags...]
set -euo pipefail
dir=$1 model=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
$py -c "import random; r = random.Random(3); open('data.bin', 'wb').write(bytes(r.randrange(64) for _ in range(4000)))"
$py "$here/vs_torch.py" export --model "$model" "$@" -o .
piper-compile model.mlir ${COMPILE_ARGS:-} -o train
eps=${ADAM_EPS:-1e-8}
./train --steps 10 --lr 1e-2 --adam-eps "$eps" --data data.bin --init-checkpoint init.safetensors \
  --metrics m.jsonl --dump-grads grads.safetensors --save-checkpoint final.safetensors --quiet
$py "$here/vs_torch.py" train --model "$model" "$@" --data data.bin --steps 10 --lr 1e-2 \
  --adam-eps "$eps" --losses ref.json --grads ref_grads.safetensors --final ref_final.safetensors \
  --init init.safetensors
$py "$here/../oracle/gpt_torch.py" compare --losses-ref ref.json --metrics m.jsonl \
  --grads-ref ref_grads.safetensors --grads grads.safetensors --final-ref ref_final.safetensors \
  --final final.safetensors
$py "$here/vs_torch.py" load --model "$model" "$@" --checkpoint final.safetensors
