#!/usr/bin/python3
"""Single-device training step: Piper's compiled binary against PyTorch, both on one core.

For each model: piper-gen + piper-compile a binary, run it pinned to core 0 with one thread,
run bench/torch_gpt_bench.py the same way, and print a table of tokens/s and effective GFLOP/s.
  model GFLOP/s = 6 * params * tokens / time                    (the usual 6PT estimate)
  attn  GFLOP/s = 12 * L * B * T^2 * C / time per step          (QK^T and PV, fwd + bwd,
                                                                  full T x T, as the dense
                                                                  kernels did; the blocked
                                                                  ones skip the masked half)
The two runs alternate (ours, torch, ours, torch) so machine noise hits both alike; the table
shows the median step of each. Usage: bench_gpt.py BUILD_DIR [--steps N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PIN = ["taskset", "-c", "0"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")

MODELS = [
    dict(layers=4, dim=256, heads=4, seq=128, batch=8, vocab=256),
    dict(layers=4, dim=512, heads=8, seq=128, batch=8, vocab=256),
]


def params_of(m):
    L, C, T, V = m["layers"], m["dim"], m["seq"], m["vocab"]
    return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C


def ours(build, m, steps, workdir):
    tag = "L{layers}_C{dim}".format(**m)
    mlir, exe = os.path.join(workdir, tag + ".mlir"), os.path.join(workdir, tag + ".train")
    if not os.path.exists(exe):
        with open(mlir, "w") as f:
            subprocess.run([os.path.join(build, "bin", "piper-gen"), "gpt"] +
                           [a for k, v in m.items() for a in ("--" + {"dim": "dim"}.get(k, k), str(v))],
                           stdout=f, check=True)
        subprocess.run([os.path.join(build, "bin", "piper-compile"), mlir, "-o", exe], check=True)
    metrics = os.path.join(workdir, tag + ".jsonl")
    subprocess.run(PIN + [exe, "--steps", str(steps), "--metrics", metrics, "--quiet"],
                   env=ENV, check=True)
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    ms = [r["step_ms"] for r in records if r["kind"] == "train"]  # not the "summary" line
    return ms[2:]  # the first steps warm caches and page in the arena


def torch_step(m, steps):
    out = subprocess.run(PIN + ["/usr/bin/python3", os.path.join(HERE, "torch_gpt_bench.py")] +
                         [a for k, v in m.items() for a in ("--" + k, str(v))] +
                         ["--steps", str(steps), "--warmup", "2"],
                         env=ENV, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["step_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    workdir = os.path.join(args.build, "bench")
    os.makedirs(workdir, exist_ok=True)

    peak_bin = os.path.join(workdir, "sgemm_peak")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "sgemm_peak.c"), "-o", peak_bin,
                    "-lopenblas"], check=True)
    peaks = [json.loads(l) for l in subprocess.run(PIN + [peak_bin], env=ENV, check=True,
                                                   capture_output=True, text=True).stdout.split("\n") if l]
    peak = max(p["gflops"] for p in peaks)

    print("## Single-device GPT training step, one core (taskset -c 0, 1 thread)\n")
    print("machine single-core sgemm (OpenBLAS): " +
          ", ".join("{m}x{n}x{k}: {gflops:.1f} GFLOP/s".format(**p) for p in peaks) + "\n")
    print("| model | params | impl | step ms | tokens/s | model GFLOP/s (6PT) | + attn GFLOP/s | % of sgemm peak | vs PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in MODELS:
        P, tokens = params_of(m), m["batch"] * m["seq"]
        flops = 6 * P * tokens
        attn = 12 * m["layers"] * m["batch"] * m["seq"] ** 2 * m["dim"]
        ours_ms, torch_ms = [], []
        for _ in range(2):  # alternate, so noise affects both
            ours_ms += ours(args.build, m, args.steps, workdir)
            torch_ms.append(torch_step(m, args.steps))
        rows = [("piper", statistics.median(ours_ms)), ("pytorch", statistics.median(torch_ms))]
        name = "L{layers} C{dim} H{heads} T{seq} B{batch}".format(**m)
        for impl, ms in rows:
            s = ms / 1e3
            print("| {} | {:.2f} M | {} | {:.1f} | {:.0f} | {:.1f} | {:.1f} | {:.0f}% | {:.2f}x |".format(
                name, P / 1e6, impl, ms, tokens / s, flops / s / 1e9, (flops + attn) / s / 1e9,
                100 * (flops + attn) / s / 1e9 / peak, rows[1][1] / ms))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
