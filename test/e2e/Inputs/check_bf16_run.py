"""A --precision bf16 run against the fp32 run of the same binary's model, from their metrics
files (--metrics): the bf16 run must not be the fp32 run (some step's loss differs: a bf16
build that rounded nothing would give the fp32 losses bit for bit), and its planned activation
memory (the end-of-run summary's "activations", the memory plan's peak) must be under
--max-ratio (default 0.6) of the fp32 run's. Prints both arenas and activation peaks; exits 1
on a failed check.

  check_bf16_run.py FP32_METRICS BF16_METRICS [--max-ratio R]
"""
import argparse
import json
import sys


def read(path):
    losses, summary = {}, None
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("kind") == "train":
                losses[rec["step"]] = rec["loss"]
            elif rec.get("kind") == "summary":
                summary = rec["ranks"][0]
    if not losses or summary is None or summary.get("activations", -1) < 0:
        raise SystemExit(f"{path}: no train steps, or no summary with activations")
    return losses, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fp32")
    ap.add_argument("bf16")
    ap.add_argument("--max-ratio", type=float, default=0.6)
    a = ap.parse_args()
    l32, s32 = read(a.fp32)
    l16, s16 = read(a.bf16)
    failed = 0
    if sorted(l32) != sorted(l16):
        print("FAIL steps: the runs hold different steps")
        failed += 1
    diff = max(abs(l16[s] - l32[s]) / abs(l32[s]) for s in l32 if s in l16)
    ok = diff > 0
    print(f"{'PASS' if ok else 'FAIL'} not-fp32: max relative loss difference bf16 vs fp32 "
          f"{diff:.3e} (must be > 0)")
    failed += not ok
    ratio = s16["activations"] / s32["activations"]
    ok = ratio < a.max_ratio
    print(f"{'PASS' if ok else 'FAIL'} activations: bf16 {s16['activations'] / 1e6:.2f} MB / "
          f"fp32 {s32['activations'] / 1e6:.2f} MB = {ratio:.3f} (must be < {a.max_ratio})")
    failed += not ok
    print(f"arena: fp32 {s32['arena'] / 1e6:.2f} MB, bf16 {s16['arena'] / 1e6:.2f} MB "
          f"(bf16's includes one op's fp32 conversion scratch)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
