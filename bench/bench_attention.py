#!/usr/bin/python3
"""CPU attention, forward + backward, dense (the T x T probabilities saved, the kernels before
the blocked rewrite, kept in bench/attention_dense.c) against the blocked kernels of
libpiper_rt (one log-sum-exp per query row saved), at the bench GPT shapes (B 8; C 256 H 4 and
C 512 H 8, head dim 64) and T 128 and 1024. One core (taskset -c 0, one thread); the two
alternate within one run, medians shown. `saved` is what the forward keeps for the backward
per layer: B*H*T*T floats dense, B*H*T blocked.
Usage: bench_attention.py BUILD_DIR [--seqs 128,1024] [--reps N]
"""
import argparse
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PIN = ["taskset", "-c", "0"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")


def mib(n):
    return "%.2f MiB" % (n / 2**20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seqs", default="128,1024")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    workdir = os.path.join(args.build, "bench")
    os.makedirs(workdir, exist_ok=True)
    exe = os.path.join(workdir, "bench_attention")
    lib = os.path.join(args.build, "lib")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "bench_attention.c"), "-o", exe,
                    "-L" + lib, "-lpiper_rt", "-lpiper_base", "-lopenblas", "-lm"], check=True)
    print("## CPU attention kernels, forward + backward, one core (taskset -c 0, 1 thread)\n")
    print("| B | T | C | H | kernel | fwd ms | bwd ms | fwd+bwd ms | saved for backward |")
    print("|---|---|---|---|---|---|---|---|---|")
    for T in [int(t) for t in args.seqs.split(",")]:
        out = subprocess.run(PIN + [exe, str(T), str(args.reps)], env=ENV, check=True,
                             capture_output=True, text=True).stdout
        for r in (json.loads(l) for l in out.splitlines() if l.strip()):
            row = ("| {B} | {T} | {C} | {H} | {impl} | {fwd_ms:.1f} | {bwd_ms:.1f} | {tot:.1f} "
                   "| {sv} |")
            print(row.format(tot=r["fwd_ms"] + r["bwd_ms"], sv=mib(r["saved_bytes"]), **r))


if __name__ == "__main__":
    main()
