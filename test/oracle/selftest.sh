#!/bin/sh
# Self-test of the PyTorch oracle and its comparator (no Piper binary needed).
#  1. init + train twice with identical args: outputs must be bit-identical and compare must PASS.
#  2. compare against perturbed candidates (final param scaled by 1%, one loss off by 1e-3,
#     a gradient tensor missing, a NaN param): each must FAIL with exit 1 -> the checks can fail.
#  3. calibrate.py: fp64 / 2-thread runs must pass, deliberately buggy variants must fail.
#  4. bf16 (precision.py): bf16_selftest.py (r() ties to even, the wrappers, each model under
#     bf16 is not its fp32 self), and `train --precision bf16` through the CLI: its run is
#     not the fp32 run (compare at the fp32 tolerances fails), two bf16 runs are identical.
# Tiny model: L2 C32 H2 T16 B4, 5 steps. Usage: test/oracle/selftest.sh [python]
set -eu
PY=${1:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
O="$HERE/gpt_torch.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/piper-oracle-selftest.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
ok()  { echo "selftest: ok   - $*"; }
bad() { echo "selftest: FAIL - $*"; fails=$((fails + 1)); }

"$PY" - "$TMP/data.txt" <<'PYEOF'
import random, sys
r = random.Random(0)
w = "the quick brown fox jumps over a lazy dog while piper compiles tiny gpt models".split()
open(sys.argv[1], "w").write(" ".join(r.choice(w) for _ in range(5000)))
PYEOF

M="--layers 2 --dim 32 --heads 2 --seq 16 --vocab 256"
for run in a b; do
  "$PY" "$O" init $M --seed 7 -o "$TMP/init_$run.st" >/dev/null
  "$PY" "$O" train $M --batch 4 --init "$TMP/init_$run.st" --data "$TMP/data.txt" --steps 5 \
      --lr 1e-3 --weight-decay 0.1 --losses "$TMP/loss_$run.json" --grads "$TMP/grads_$run.st" \
      --final "$TMP/final_$run.st" >/dev/null
done
same=1
for f in init grads final; do cmp -s "$TMP/${f}_a.st" "$TMP/${f}_b.st" || same=0; done
cmp -s "$TMP/loss_a.json" "$TMP/loss_b.json" || same=0
[ $same = 1 ] && ok "two identical runs are bit-identical" || bad "two identical runs differ"

# candidate files in Piper's format: metrics as JSON lines with extra keys, plus perturbed copies
"$PY" - "$TMP" "$HERE" <<'PYEOF'
import json, sys
tmp, here = sys.argv[1], sys.argv[2]
sys.path.insert(0, here)
import safetensors_io as st
losses = json.load(open(f"{tmp}/loss_b.json"))
def metrics(path, ls):
    with open(path, "w") as f:
        for s, l in enumerate(ls):
            f.write(json.dumps({"kind": "train", "step": s, "loss": l, "lr": 1e-3, "step_ms": 1.0}) + "\n")
            if s == 1:                                          # other kinds are skipped
                f.write(json.dumps({"kind": "eval", "step": s, "loss": 99.0}) + "\n")
        f.write(json.dumps({"kind": "summary", "ranks": []}) + "\n")
metrics(f"{tmp}/metrics_b.jsonl", losses)
bad = list(losses); bad[3] *= 1 + 1e-3
metrics(f"{tmp}/metrics_bad.jsonl", bad)
metrics(f"{tmp}/metrics_short.jsonl", losses[:-1])
fin = st.read(f"{tmp}/final_b.st")
p = dict(fin); p["h.1.mlp.c_fc.weight"] = p["h.1.mlp.c_fc.weight"] * 1.01
st.write(f"{tmp}/final_perturbed.st", p)
p = dict(fin); p["ln_f.bias"] = p["ln_f.bias"].clone(); p["ln_f.bias"][0] = float("nan")
st.write(f"{tmp}/final_nan.st", p)
g = st.read(f"{tmp}/grads_b.st"); del g["wpe.weight"]
st.write(f"{tmp}/grads_missing.st", g)
PYEOF

cmpr() {  # cmpr LABEL EXPECTED_RC metrics grads final
  set +e
  "$PY" "$O" compare --losses-ref "$TMP/loss_a.json" --metrics "$3" --grads-ref "$TMP/grads_a.st" \
      --grads "$4" --final-ref "$TMP/final_a.st" --final "$5" >"$TMP/out.txt" 2>&1
  rc=$?
  set -e
  summary=$(tail -n 1 "$TMP/out.txt")
  if [ "$rc" = "$2" ] && echo "$summary" | grep -Eq '^[0-9]+ passed, [0-9]+ failed$'; then
    ok "$1: exit $rc, '$summary'"
  else
    bad "$1: exit $rc (want $2), '$summary'"; cat "$TMP/out.txt"
  fi
  grep '^FAIL' "$TMP/out.txt" | head -n 3 | sed 's/^/    /' || true
}
cmpr "identical outputs pass"        0 "$TMP/metrics_b.jsonl"     "$TMP/grads_b.st"       "$TMP/final_b.st"
cmpr "final param perturbed 1% fails" 1 "$TMP/metrics_b.jsonl"    "$TMP/grads_b.st"       "$TMP/final_perturbed.st"
cmpr "one loss off by 1e-3 fails"    1 "$TMP/metrics_bad.jsonl"   "$TMP/grads_b.st"       "$TMP/final_b.st"
cmpr "missing last step fails"       1 "$TMP/metrics_short.jsonl" "$TMP/grads_b.st"       "$TMP/final_b.st"
cmpr "missing grad tensor fails"     1 "$TMP/metrics_b.jsonl"     "$TMP/grads_missing.st" "$TMP/final_b.st"
cmpr "NaN param fails"               1 "$TMP/metrics_b.jsonl"     "$TMP/grads_b.st"       "$TMP/final_nan.st"

if "$PY" "$HERE/calibrate.py" --steps 5 >"$TMP/calib.txt" 2>&1; then
  ok "calibrate: fp64/threads variants pass, bug variants fail"
else
  bad "calibrate"; cat "$TMP/calib.txt"
fi

if "$PY" "$HERE/bf16_selftest.py" >"$TMP/bf16.txt" 2>&1; then
  ok "bf16: r() ties to even, the wrappers round where documented, bf16 models differ from fp32"
else
  bad "bf16_selftest.py"; cat "$TMP/bf16.txt"
fi
for run in a b; do
  "$PY" "$O" train $M --batch 4 --init "$TMP/init_a.st" --data "$TMP/data.txt" --steps 5 \
      --lr 1e-3 --weight-decay 0.1 --precision bf16 --losses "$TMP/bf16_loss_$run.json" \
      --grads "$TMP/bf16_grads_$run.st" --final "$TMP/bf16_final_$run.st" >/dev/null
done
"$PY" - "$TMP" <<'PYEOF'
import json, sys
with open(f"{sys.argv[1]}/metrics_bf16.jsonl", "w") as f:
    for s, l in enumerate(json.load(open(f"{sys.argv[1]}/bf16_loss_a.json"))):
        f.write(json.dumps({"kind": "train", "step": s, "loss": l}) + "\n")
PYEOF
same=1
for f in bf16_loss_X.json bf16_grads_X.st bf16_final_X.st; do
  cmp -s "$TMP/$(echo $f | sed s/X/a/)" "$TMP/$(echo $f | sed s/X/b/)" || same=0
done
[ $same = 1 ] && ok "two bf16 runs are bit-identical" || bad "two bf16 runs differ"
cmpr "bf16 run against fp32 fails" 1 "$TMP/metrics_bf16.jsonl" "$TMP/bf16_grads_a.st" "$TMP/bf16_final_a.st"

if [ $fails = 0 ]; then echo "selftest: all passed"; else echo "selftest: $fails failed"; exit 1; fi
