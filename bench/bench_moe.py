#!/usr/bin/python3
"""Expert parallelism: qwen3-moe under PP2 x DP2 x EP2 on 4 ranks, 1F1B against DualPipeV.

Model: qwen3-moe L4 C128 H4 KV2, E=8 experts top-2 of dim Fe=128, T64 B16, 8 microbatches.
  1F1B        piper-sched 1f1b --stages 2 --microbatches 8 --dp 2 --ep 2 (2 stages of 2 blocks)
  DualPipeV   piper-sched dualpipev --stages 4 --microbatches 8 --dp 2 --ep 2 (4 stages of one
              block, V-shaped on 2 pipeline devices; overlapped F&B pairs are two-filter order
              groups, interleaved so one microbatch's all-to-all is in flight during the
              other's compute)
  DualPipeV, unpaired   the same schedule with each pair split into two single-filter groups
              (the control: what the pairing itself buys)
Each row runs STEPS steps (the first, which pages memory in, is skipped) with --trace, REPEATS
times in turn; the median run (by step time) is kept. Per rank, per step, from the merged trace:
  a2a total ms     the sum of every all-to-all's span (issue to completion),
  a2a exposed ms   the time the rank's compute lane was blocked in prt_wait on an all-to-all
                   (wait_end - wait_begin of each all-to-all), i.e. not hidden behind compute.
The machine's cores are shared (4 ranks; see the core count printed): absolute times include
oversubscription; the rows run under the same conditions.
Usage: bench_moe.py BUILD_DIR [--repeats N]
"""
import json
import os
import statistics
import subprocess
import sys

MODEL = ["--layers", "4", "--dim", "128", "--heads", "4", "--kv-heads", "2", "--experts", "8",
         "--top-k", "2", "--expert-ffn-dim", "128", "--seq", "64", "--batch", "16"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4"]
STEPS = 6


def sh(args, **kw):
    return subprocess.run(args, check=True, env=ENV, **kw)


def build(bin_dir, work, tag, stages, sched, unpair=False):
    mlir = os.path.join(work, "%s.mlir" % tag)
    with open(mlir, "w") as f:
        sh([os.path.join(bin_dir, "piper-gen"), "qwen3-moe"] + MODEL + ["--stages", str(stages)],
           stdout=f)
    out = sh([os.path.join(bin_dir, "piper-sched"), sched, "--stages", str(stages),
              "--microbatches", "8", "--dp", "2", "--ep", "2"], capture_output=True,
             text=True).stdout
    strategy = json.loads(out)
    if unpair:
        for d in strategy:
            if d["op"] == "order":
                d["filters"] = [[f] for g in d["filters"] for f in g]
    path = os.path.join(work, "%s.json" % tag)
    with open(path, "w") as f:
        json.dump(strategy, f)
    plan = os.path.join(work, tag)
    sh([os.path.join(bin_dir, "piper-compile"), mlir, "--strategy", path, "-o", plan])
    return plan


def a2a_per_step(trace, ranks, steps):
    """Per rank: (total, exposed) all-to-all ms per step, over the steps after the first."""
    events = json.load(open(trace))["traceEvents"]
    out = []
    for k in range(ranks):
        ev = [e for e in events if e.get("ph") == "X" and e.get("pid") == k]
        step_ev = sorted((e for e in ev if e["name"] == "step"), key=lambda e: e["ts"])
        t0 = step_ev[1]["ts"] if len(step_ev) > 1 else 0.0
        a2a = [e for e in ev if e["name"].startswith("all_to_all") and e["ts"] >= t0]
        total = sum(e["dur"] for e in a2a) / 1e3
        exposed = sum(e["args"]["wait_end_us"] - e["args"]["wait_begin_us"] for e in a2a) / 1e3
        out.append((total / (steps - 1), exposed / (steps - 1)))
    return out


def run(plan, work, tag):
    metrics, trace = os.path.join(work, tag + ".jsonl"), os.path.join(work, tag + ".trace.json")
    sh(MPIRUN + [plan, "--steps", str(STEPS), "--quiet", "--metrics", metrics, "--trace", trace])
    recs = [json.loads(l) for l in open(metrics) if l.strip()]
    step = statistics.median(r["step_ms"] for r in recs if r["kind"] == "train" and r["step"] > 0)
    return step, a2a_per_step(trace, 4, STEPS)


def main():
    argv = sys.argv[1:]
    repeats = 3
    if "--repeats" in argv:
        i = argv.index("--repeats")
        repeats = int(argv[i + 1])
        del argv[i:i + 2]
    build_dir = argv[0] if argv else "build"
    bin_dir, work = os.path.join(build_dir, "bin"), os.path.join(build_dir, "bench", "moe")
    os.makedirs(work, exist_ok=True)
    rows = [("1F1B", build(bin_dir, work, "1f1b", 2, "1f1b")),
            ("DualPipeV", build(bin_dir, work, "dualpipev", 4, "dualpipev")),
            ("DualPipeV, unpaired", build(bin_dir, work, "dualpipev-unpaired", 4, "dualpipev",
                                          unpair=True))]
    res = {label: [] for label, _ in rows}
    for _ in range(repeats):
        for label, plan in rows:
            res[label].append(run(plan, work, "run"))
    print("## Expert parallelism: qwen3-moe PP2 x DP2 x EP2 on 4 ranks (%d cores), L4 C128 E8 "
          "top-2 Fe128 T64 B16, 8 microbatches; %d steps, median of %d runs\n"
          % (os.cpu_count() or 1, STEPS, repeats))
    print("| schedule | step ms | a2a total ms/step (ranks 0..3) | a2a exposed ms/step "
          "(ranks 0..3) | exposed, mean of ranks |")
    print("|---|---|---|---|---|")
    for label, _ in rows:
        step, per_rank = sorted(res[label], key=lambda r: r[0])[len(res[label]) // 2]
        print("| %s | %.1f | %s | %s | %.1f |" % (
            label, step, " / ".join("%.1f" % t for t, _ in per_rank),
            " / ".join("%.1f" % e for _, e in per_rank),
            statistics.mean(e for _, e in per_rank)))


if __name__ == "__main__":
    main()
