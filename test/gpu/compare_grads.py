#!/usr/bin/env python3
"""Step-0 gradients and losses of two runs, for a kernel whose products are bf16 (the
tensor-core attention, PIPER_CUDA_ATTN=tc) against the fp32 reference run of the same plan.

  compare_grads.py REF_GRADS GOT_GRADS REF_METRICS GOT_METRICS --grad-tol T --loss-rtol R

Every gradient tensor: max |got - ref| / max |ref| <= T; every train step's loss: relative
difference <= R. Prints a PASS or FAIL line each, then "N passed, M failed"; exits 1 on any
failure, or when the two runs hold different tensors or steps (nothing is skipped).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import safetensors_io as st  # noqa: E402


def losses(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["loss"] for r in rows if r.get("kind") == "train"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref_grads")
    ap.add_argument("got_grads")
    ap.add_argument("ref_metrics")
    ap.add_argument("got_metrics")
    ap.add_argument("--grad-tol", type=float, required=True)
    ap.add_argument("--loss-rtol", type=float, required=True)
    a = ap.parse_args()
    ref, got = st.read(a.ref_grads), st.read(a.got_grads)
    lref, lgot = losses(a.ref_metrics), losses(a.got_metrics)
    if sorted(ref) != sorted(got) or len(lref) != len(lgot) or not lref:
        sys.exit("the runs differ in their tensors ({} against {}) or steps ({} against {})"
                 .format(len(ref), len(got), len(lref), len(lgot)))
    passed = failed = 0
    worst = (0.0, "")
    for name in sorted(ref):
        m = float(ref[name].abs().max())
        err = float((got[name] - ref[name]).abs().max()) / (m if m > 0 else 1.0)
        ok = err <= a.grad_tol
        worst = max(worst, (err, name))
        print("{} grad[{}] err={:.3e}".format("PASS" if ok else "FAIL", name, err))
        passed, failed = passed + ok, failed + (not ok)
    for s, (r, g) in enumerate(zip(lref, lgot)):
        err = abs(g - r) / abs(r)
        ok = err <= a.loss_rtol
        print("{} loss[step {}] err={:.3e}".format("PASS" if ok else "FAIL", s, err))
        passed, failed = passed + ok, failed + (not ok)
    print("worst gradient: {:.3e} ({})".format(*worst))
    print("{} passed, {} failed".format(passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
