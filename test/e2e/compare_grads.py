#!/usr/bin/python3
"""Step-0 gradients of a distributed run against the single-device run (--dump-grads files).

  compare_grads.py REF_GRADS RUN_GRADS [--tol X] [--model MODEL.mlir]

Prints one line per parameter, the worst error, and `grads: N passed, M failed`; exits 1 on any
failure.
  grad[name]  max|run - ref| / max|ref| <= --tol (default 2e-6), and both files hold the same
              names and shapes.
A comparison of nothing fails: REF_GRADS must hold at least one tensor, and with --model exactly
the model's parameters (its "tdag.param" ops), so that a reference cut short cannot pass.
Gradients after one step have not been through AdamW, which divides by sqrt(v) and so turns
float32 rounding differences of near-zero gradient elements into visible parameter differences;
here a plan differs from the single-device step only in the order sums are taken (tensor
parallelism also splits each matmul's inner sum over the group and adds the parts): measured
(2026-11-23) <= 4.5e-7 relative for GPT under TP2. A lost all-reduce leaves a partial sum and
a misplaced slice mixes up elements: errors of the order of the gradient itself. (A bias added
twice does not show at step 0, where biases are zero: the loss checks catch it from step 1.)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import safetensors_io  # noqa: E402
from compare_runs import model_params  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("run")
    ap.add_argument("--tol", type=float, default=2e-6)
    ap.add_argument("--model", help="REF_GRADS must hold this model's parameters, no other")
    a = ap.parse_args()
    ref = safetensors_io.read(a.ref, as_numpy=True)
    run = safetensors_io.read(a.run, as_numpy=True)
    passed = failed = 0
    if not ref:
        print(f"FAIL grads no tensor in {a.ref}: nothing to compare")
        failed += 1
    if a.model is not None:
        names, buffers = model_params(a.model)
        params = set(names) - buffers  # a buffer (non-trained state) has no gradient
        for name in sorted(params - set(ref)):
            print(f"FAIL grad[{name}] missing from the reference {a.ref}")
            failed += 1
        for name in sorted(set(ref) - params):
            print(f"FAIL grad[{name}] in the reference but not a parameter of {a.model}")
            failed += 1
    errs = []
    for name in sorted(set(ref) | set(run)):
        if name not in ref or name not in run:
            print(f"FAIL grad[{name}] present in only one file")
            failed += 1
            continue
        x, y = np.asarray(ref[name], dtype=np.float64), np.asarray(run[name], dtype=np.float64)
        if x.shape != y.shape:
            print(f"FAIL grad[{name}] shape {y.shape}, expected {x.shape}")
            failed += 1
            continue
        err = float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-30))
        ok = err <= a.tol
        errs.append((err, name))
        print(f"{'PASS' if ok else 'FAIL'} grad[{name}] err={err:.3e} tol={a.tol:.1e}")
        passed += ok
        failed += not ok
    e, n = max(errs, default=(0.0, None), key=lambda p: p[0])
    print(f"worst: grad {e:.3e} ({n})")
    print(f"grads: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
