#!/usr/bin/env python3
"""compare_eval.py REF CAND [RTOL]: the {"kind": "eval"} lines of two metrics files must have
the same steps and eval_loss within RTOL relative (default 1e-5: the runs differ only in the
order float sums are taken). Prints one PASS/FAIL line per evaluation and 'N passed, M failed';
exits 1 on any failure or when REF has no evaluation (a check that cannot fail is none)."""
import json
import sys


def evals(path):
    out = {}
    for line in open(path):
        rec = json.loads(line) if line.strip() else {}
        if isinstance(rec, dict) and rec.get("kind") == "eval":
            out[int(rec["step"])] = rec["eval_loss"]
    return out


ref, cand = evals(sys.argv[1]), evals(sys.argv[2])
rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
passed = failed = 0
if not ref:
    print(f"FAIL no evaluation in {sys.argv[1]}")
    failed += 1
for s in sorted(set(ref) | set(cand)):
    r, c = ref.get(s), cand.get(s)
    ok = r is not None and c is not None and abs(c - r) <= rtol * abs(r)
    err = abs(c - r) / abs(r) if ok or (r is not None and c is not None) else float("nan")
    print(f"{'PASS' if ok else 'FAIL'} eval_loss[step {s}] err={err:.3e} tol={rtol:.1e} (ref {r} cand {c})")
    passed, failed = passed + ok, failed + (not ok)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
