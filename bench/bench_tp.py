#!/usr/bin/python3
"""Tensor parallelism against data and pipeline parallelism on 2 ranks: memory and step time.

The bench GPT (L4 C256 H4 T128 B8 V256) trained STEPS steps on one device and under three
2-rank strategies, each rank bound to one core (OMP/OpenBLAS one thread):
  TP2  gpipe --stages 1 --microbatches 1 --tp 2      (shard_tensor over [0,1])
  DP2  gpipe --stages 1 --microbatches 1 --dp 2      (each rank B4)
  PP2  1f1b --stages 2 --microbatches 4              (each rank half the blocks)
Per rank, from the metrics summary (the plan's own accounting): parameter bytes, AdamW state
bytes, and the compiler's peak activation bytes in the arena; and rank 0's median step time
(steps after the first).

Theory (columns "theory"), with P the single-device parameter count:
  parameters  DP2: P on each rank (replicas). PP2: each stage its blocks, embeddings on stage
              0, ln_f and a copy of the tied wte on stage 1. TP2: every block's c_attn, c_proj,
              c_fc, c_proj weights (12 C^2 per block) and the column biases are halved; the
              embeddings, layernorms and row biases are whole on both ranks:
              P_TP = P - L * (6 C^2 + 2.5 C)... computed exactly below from the shapes.
  AdamW       two moments per parameter element: 2x the parameter bytes in every case.
  activations TP2 halves the activations of the split regions (qkv, attention output and
              probs, c_fc output and gelu) but keeps the residual stream and layernorm
              outputs whole, so it saves less than DP2, which halves every activation (half
              the batch). PP2 keeps about M/S.. microbatches of half the layers in flight.
Step time: TP2 adds 4 all-reduces of a (B,T,C) activation per block per step (2 forward, 2
backward) on the critical path, where DP2 all-reduces the gradients once, overlapped with the
backward. The machine is shared (2 cores, other jobs): read the step times as indicative only.
Usage: bench_tp.py BUILD_DIR [--steps N]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

L, C, H, T, B, V = 4, 256, 4, 128, 8, 256
MODEL = ["--layers", str(L), "--dim", str(C), "--heads", str(H), "--seq", str(T), "--batch",
         str(B), "--vocab", str(V)]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "core",
          "--map-by", "core", "-np", "2"]


def sh(args, **kw):
    return subprocess.run(args, check=True, env=ENV, **kw)


def param_counts():
    """Single-device, TP2 per-rank and PP2 per-stage parameter counts from the GPT's shapes."""
    block_split = 3 * C * C + 3 * C + C * C + 4 * C * C + 4 * C + 4 * C * C  # split by TP
    block_whole = C + C + 4 * C  # row biases, layernorms
    emb = V * C + T * C
    single = emb + L * (block_split + block_whole) + 2 * C
    tp2 = emb + L * (block_split // 2 + block_whole) + 2 * C
    pp = [emb + (L // 2) * (block_split + block_whole),
          (L - L // 2) * (block_split + block_whole) + 2 * C + V * C]  # stage 1: tied wte copy
    return single, tp2, pp


def run(bin_dir, work, tag, mlir, sched, np, steps):
    plan = os.path.join(work, tag)
    args = [os.path.join(bin_dir, "piper-compile"), mlir, "-o", plan]
    if sched:
        strategy = os.path.join(work, tag + ".json")
        with open(strategy, "w") as f:
            sh([os.path.join(bin_dir, "piper-sched")] + sched, stdout=f)
        args += ["--strategy", strategy]
    sh(args)
    metrics = os.path.join(work, tag + ".jsonl")
    cmd = [plan, "--steps", str(steps), "--quiet", "--metrics", metrics]
    sh((MPIRUN if np > 1 else ["taskset", "-c", "0"]) + cmd)
    recs = [json.loads(l) for l in open(metrics) if l.strip()]
    ms = statistics.median(r["step_ms"] for r in recs if r["kind"] == "train" and r["step"] > 0)
    ranks = [r for r in recs if r["kind"] == "summary"][0]["ranks"]
    return ms, ranks


def main():
    bin_dir = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "bin")
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 6
    work = tempfile.mkdtemp(prefix="bench_tp.")
    one = os.path.join(work, "gpt.mlir")
    two = os.path.join(work, "gpt-s2.mlir")
    with open(one, "w") as f:
        sh([os.path.join(bin_dir, "piper-gen"), "gpt"] + MODEL, stdout=f)
    with open(two, "w") as f:
        sh([os.path.join(bin_dir, "piper-gen"), "gpt"] + MODEL + ["--stages", "2"], stdout=f)
    single, tp2, pp = param_counts()
    rows = [("single", one, None, 1, [single]),
            ("TP2", one, ["gpipe", "--stages", "1", "--microbatches", "1", "--tp", "2"], 2,
             [tp2, tp2]),
            ("DP2", one, ["gpipe", "--stages", "1", "--microbatches", "1", "--dp", "2"], 2,
             [single, single]),
            ("PP2 1F1B M4", two, ["1f1b", "--stages", "2", "--microbatches", "4"], 2, pp)]
    print("## Tensor parallelism vs data and pipeline parallelism, 2 ranks, one core each "
          "(GPT L%d C%d H%d T%d B%d V%d, %d steps)\n" % (L, C, H, T, B, V, steps))
    print("| strategy | rank | params MB (theory) | AdamW MB | activations MB | step ms |")
    print("|---|---|---|---|---|---|")
    for tag, mlir, sched, np, theory in rows:
        ms, ranks = run(bin_dir, work, tag.split()[0].lower(), mlir, sched, np, steps)
        for r in ranks:
            k = r["rank"]
            print("| %s | %d | %.2f (%.2f) | %.2f | %.2f | %s |" % (
                tag, k, r["params"] / 1e6, 4 * theory[k] / 1e6, r["optim"] / 1e6,
                r.get("activations", r["arena"]) / 1e6, "%.1f" % ms if k == 0 else ""))
    print("\nparams theory: TP2 halves the 12 C^2 + 7 C split weights and biases of each block "
          "and keeps embeddings, layernorms and row biases whole; PP2 stage 1 holds a copy of "
          "the tied wte. Activations are the compiler's peak arena activation bytes.")


if __name__ == "__main__":
    main()
