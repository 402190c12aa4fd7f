#!/usr/bin/python3
"""Context parallelism (shard_sequence): per-device memory and step time against the sequence
length T and the group size G, and what the causal load balancing buys.

The GPT of the table (L4 C128 H4 B1 V256, --seq T) is compiled for one device and for
`piper-sched gpipe --stages 1 --microbatches 1 --cp G` (G = 2, 4), and each plan is started
with --steps 0 under `mpirun -np G`: the binary allocates its state and arena and prints the
compiler's memory plan per rank (parameters, AdamW moments, arena, of which activations) and
the rank's peak RSS, without training. That is cheap at every T, so the memory table goes
from T 1024 to well past what one device holds under the budget (--budget, default 256 MiB
per device: parameters + moments + arena, as piper-tune counts it). The longest sequence
that fits the budget at each G is read off the table.

Step time is measured only where a step takes seconds (--time-seqs, default 1024 and 2048):
STEPS steps, rank 0's median after the first. CP4 runs 4 ranks on this machine's 2 cores
(oversubscribed), and the machine is shared: only side-by-side ratios within one run mean
anything, and CP4's step time is not what 4 devices would give.

Load balancing: member r of the group holds sequence chunks r and 2G-1-r (2G chunks of T/(2G)
rows). The (query, key) pairs a member's causal attention computes are counted exactly from
the layout, against the contiguous layout (member r holds rows [r T/G, (r+1) T/G)); the ring
step takes as long as its busiest member, so max/mean is the slowdown the layout causes.
These are counts from the chunk layout, not timings.
Usage: bench_cp.py BUILD_DIR [--budget 256M] [--seqs 1024,2048,4096,8192,16384]
                   [--time-seqs 1024,2048] [--steps 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

L, C, H, B, V = 4, 128, 4, 1, 256
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
GROUPS = (1, 2, 4)


def sh(args, **kw):
    return subprocess.run(args, check=True, env=ENV, **kw)


def parse_bytes(text):
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * scale[text[-1]]) if text[-1] in scale else int(text)


def build_plan(bin_dir, work, T, G):
    """The plan binary for sequence T on a group of G devices (G = 1: one device)."""
    mlir = os.path.join(work, "gpt-T%d.mlir" % T)
    if not os.path.exists(mlir):
        with open(mlir, "w") as f:
            sh([os.path.join(bin_dir, "piper-gen"), "gpt", "--layers", str(L), "--dim", str(C),
                "--heads", str(H), "--seq", str(T), "--batch", str(B), "--vocab", str(V)],
               stdout=f)
    plan = os.path.join(work, "plan-T%d-cp%d" % (T, G))
    args = [os.path.join(bin_dir, "piper-compile"), mlir, "-o", plan]
    if G > 1:
        strategy = plan + ".json"
        with open(strategy, "w") as f:
            sh([os.path.join(bin_dir, "piper-sched"), "gpipe", "--stages", "1",
                "--microbatches", "1", "--cp", str(G)], stdout=f)
        args += ["--strategy", strategy]
    sh(args)
    return plan


def launch(plan, G, steps, metrics, data):
    cmd = [plan, "--steps", str(steps), "--quiet", "--metrics", metrics, "--data", data]
    if G > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(G)] + cmd
    else:
        cmd = ["taskset", "-c", "0"] + cmd
    sh(cmd, stdout=subprocess.DEVNULL)
    return [json.loads(l) for l in open(metrics) if l.strip()]


def memory_of(records):
    """Per-rank memory of the summary line: the worst rank (they are equal under CP)."""
    ranks = [r for r in records if r["kind"] == "summary"][0]["ranks"]
    return max(ranks, key=lambda r: r["params"] + r["optim"] + r["arena"])


def causal_pairs(rows):
    """(query, key) pairs causal attention computes for these query positions: p + 1 each."""
    return sum(p + 1 for p in rows)


def layouts(T, G):
    c = T // (2 * G)
    balanced = [list(range(r * c, (r + 1) * c)) + list(range((2 * G - 1 - r) * c,
                                                            (2 * G - r) * c))
                for r in range(G)]
    contiguous = [list(range(r * T // G, (r + 1) * T // G)) for r in range(G)]
    return balanced, contiguous


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--budget", default="256M")
    ap.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    ap.add_argument("--time-seqs", default="1024,2048")
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    budget = parse_bytes(args.budget)
    work = tempfile.mkdtemp(prefix="bench_cp.")
    seqs = [int(t) for t in args.seqs.split(",")]
    # The built-in corpus (10 KB) is shorter than the longest sequences: a fixed English text
    # (test/e2e/Inputs/prose.txt, not the documentation, whose edits would move the losses)
    # repeated gives every T its T + 2 tokens (bytes, V 256).
    data = os.path.join(work, "corpus.txt")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e",
                           "Inputs", "prose.txt"), "rb") as f:
        text = f.read()
    with open(data, "wb") as f:
        f.write(text * (1 + 4 * max(seqs) // len(text)))

    print("## Context parallelism: memory per device (GPT L%d C%d H%d B%d V%d; the plan's own "
          "accounting, --steps 0)\n" % (L, C, H, B, V))
    print("| T | G | params+AdamW MB | activations MB | arena MB | total MB | peak RSS MB "
          "| fits %s |" % args.budget)
    print("|---|---|---|---|---|---|---|---|")
    longest = {G: 0 for G in GROUPS}
    activ = {}
    for T in seqs:
        for G in GROUPS:
            plan = build_plan(bin_dir, work, T, G)
            m = memory_of(launch(plan, G, 0, plan + ".mem.jsonl", data))
            total = m["params"] + m["optim"] + m["arena"]
            fits = total <= budget
            if fits:
                longest[G] = max(longest[G], T)
            activ[(T, G)] = m["activations"]
            print("| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %s |" % (
                T, G, (m["params"] + m["optim"]) / 2**20, m["activations"] / 2**20,
                m["arena"] / 2**20, total / 2**20, m["peak_rss"] / 2**20,
                "yes" if fits else "no"))
    print("\nactivations per device relative to one device (1/G would be 0.50 and 0.25):")
    for T in seqs:
        print("  T %5d: CP2 %.3f, CP4 %.3f" % (T, activ[(T, 2)] / activ[(T, 1)],
                                               activ[(T, 4)] / activ[(T, 1)]))
    print("\nlongest T of the table within %s per device: %s" % (
        args.budget, ", ".join("CP%d %s" % (G, longest[G] or "none") for G in GROUPS)))

    print("\n## Step time (%d steps, rank 0's median after the first; CP4 is 4 ranks on 2 "
          "cores)\n" % args.steps)
    print("| T | G | step ms | loss at the last step |")
    print("|---|---|---|---|")
    for T in [int(t) for t in args.time_seqs.split(",") if t]:
        for G in GROUPS:
            plan = build_plan(bin_dir, work, T, G)
            recs = launch(plan, G, args.steps, plan + ".time.jsonl", data)
            train = [r for r in recs if r["kind"] == "train"]
            ms = statistics.median(r["step_ms"] for r in train if r["step"] > 0)
            print("| %d | %d | %.0f | %.6f |" % (T, G, ms, train[-1]["loss"]))

    print("\n## Causal attention work per member: load-balanced chunks against contiguous "
          "rows (counted from the layout)\n")
    print("| T | G | layout | (q,k) pairs per member | max/mean |")
    print("|---|---|---|---|---|")
    for T in (seqs[0], seqs[-1]):
        for G in (2, 4):
            for name, lay in zip(("balanced", "contiguous"), layouts(T, G)):
                work_per = [causal_pairs(rows) for rows in lay]
                print("| %d | %d | %s | %s | %.3f |" % (
                    T, G, name, ", ".join(str(w) for w in work_per),
                    max(work_per) / statistics.mean(work_per)))


if __name__ == "__main__":
    main()
