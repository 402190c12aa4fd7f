#!/usr/bin/env bash
# The frontend's checks under another torch than Debian's 1.13, run by test/gpu/on_gpu.sh's
# optional `frontend` piece on the GPU machine (torch 2.x, no LLVM/MLIR there):
#   tags.py and refusals.py   the annotations and the refusals, as the lit tests run them here
#   sdpa_torch2.py            the F.scaled_dot_product_attention(is_causal=True) export, which
#                             torch 1.13 cannot trace; it writes OUT/sdpa/{manual,sdpa}/ with
#                             model.mlir, init.safetensors and the torch losses (ref.json)
# The SDPA export comes back in OUT/sdpa (the GPU machine has no piper-compile): copied into
# test/frontend/Inputs/sdpa-torch2/, test/frontend/sdpa-torch2.test trains it here against
# torch 2's own losses.
# Usage: on_gpu.sh OUT    (PYTHON names the interpreter; exits 1 when any check failed)
set -uo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
"$py" -c 'import torch; print("torch", torch.__version__)' | tee "$out/torch.txt"
failed=0
for check in tags refusals; do
  if "$py" "$here/$check.py" > "$out/$check.log" 2>&1; then echo "PASS $check.py"
  else echo "FAIL $check.py (see $check.log)"; failed=1; fi
done
if "$py" "$here/sdpa_torch2.py" "$out/sdpa" > "$out/sdpa.log" 2>&1; then echo "PASS sdpa_torch2.py"
else echo "FAIL sdpa_torch2.py (see sdpa.log)"; failed=1; fi
cat "$out/sdpa.log"
exit $failed
