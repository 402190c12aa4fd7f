#!/usr/bin/python3
"""Gradient reductions overlapped with the backward pass: DP2 on 2 ranks, one core each.

The default GPT (L4 C256 H4 T128 B8) trained for STEPS steps (the first, which pages memory
in, is skipped), every figure a median over steps (and ranks), each row repeated REPEATS
times in turn (rows interleaved, so a noisy neighbour hits them alike) and the median run
kept:
  step ms          rank 0's step_ms (metrics),
  exposed comm     the step span minus the compute lane's busy time (the node spans inside
                   it), from the merged --trace, as ms and as a share of the step: the time a
                   rank spends in no kernel (waiting for a reduction, the gradient-norm and
                   loss agreements, the data fill),
  efficiency       single-device step / (2 x DP2 step): the speed-up over one device per
                   device (1.0 = perfect),
  hardware share   the same per-rank work with no communication: two single-device B4 runs
                   side by side, one per core; its step / (single B8 step / 2) - 1 is what
                   sharing the memory system costs, which no communication scheme recovers.
Rows: DP2 with the default buckets, bucket_size 0 (one all-reduce per gradient) and other
bucket sizes, each with progress between kernels (PIPER_PROGRESS=kernel, the default), from
a progress thread (PIPER_PROGRESS=thread, MPI_THREAD_MULTIPLE) and only inside waits
(PIPER_PROGRESS=off). See runtime/comm/mpi.c.
Usage: bench_overlap.py BUILD_DIR [--repeats N] [--before PLAN] (PLAN: an older DP2 binary of
the same model, measured as an extra row)
"""
import json
import os
import statistics
import subprocess
import sys

MODEL = ["--layers", "4", "--dim", "256", "--heads", "4", "--seq", "128"]
BASE_ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPIRUN = ["mpirun", "--allow-run-as-root", "--bind-to", "core", "--map-by", "core", "-np", "2"]
STEPS = 8


def sh(args, env=None, **kw):
    return subprocess.run(args, check=True, env=env or BASE_ENV, **kw)


def gen(bin_dir, work, batch):
    path = os.path.join(work, "gpt-b%d.mlir" % batch)
    with open(path, "w") as f:
        sh([os.path.join(bin_dir, "piper-gen"), "gpt"] + MODEL + ["--batch", str(batch)], stdout=f)
    return path


def compile_plan(bin_dir, work, mlir, tag, bucket=None):
    plan = os.path.join(work, tag)
    args = [os.path.join(bin_dir, "piper-compile"), mlir, "-o", plan]
    if bucket != "single":
        out = sh([os.path.join(bin_dir, "piper-sched"), "gpipe", "--stages", "1",
                  "--microbatches", "1", "--dp", "2"], capture_output=True, text=True).stdout
        strategy = json.loads(out)
        for d in strategy:
            if d["op"] == "replicate" and bucket is not None:
                d["bucket_size"] = bucket
        path = plan + ".json"
        with open(path, "w") as f:
            json.dump(strategy, f)
        args += ["--strategy", path]
    sh(args)
    return plan


def steps_of(metrics):
    recs = [json.loads(l) for l in open(metrics) if l.strip()]
    return [r["step_ms"] for r in recs if r["kind"] == "train" and r["step"] > 0]


def exposed(trace, ranks):
    """Median over ranks and steps of (step span - busy node spans), in ms and as a share."""
    ms, share = [], []
    events = json.load(open(trace))["traceEvents"]
    for k in range(ranks):
        ev = [e for e in events if e.get("ph") == "X" and e.get("pid") == k and e.get("tid") == 0]
        steps = sorted((e for e in ev if e["name"] == "step"), key=lambda e: e["ts"])[1:]
        spans = [e for e in ev if e["name"] != "step"]
        for s in steps:
            busy = sum(e["dur"] for e in spans if s["ts"] <= e["ts"] < s["ts"] + s["dur"])
            ms.append((s["dur"] - busy) / 1e3)
            share.append(1 - busy / s["dur"])
    return statistics.median(ms), statistics.median(share)


def run_dp2(plan, work, tag, progress):
    metrics, trace = os.path.join(work, tag + ".jsonl"), os.path.join(work, tag + ".trace.json")
    env = dict(BASE_ENV, PIPER_PROGRESS=progress)
    sh(MPIRUN + ["-x", "PIPER_PROGRESS", plan, "--steps", str(STEPS), "--quiet", "--metrics",
                 metrics, "--trace", trace], env=env)
    e_ms, e_share = exposed(trace, 2)
    return statistics.median(steps_of(metrics)), e_ms, e_share


def run_single(plan, work, tag, cores):
    """The plan on each core in `cores` at once; the median step over all of them."""
    procs, files = [], []
    for c in cores:
        metrics = os.path.join(work, "%s.core%d.jsonl" % (tag, c))
        files.append(metrics)
        procs.append(subprocess.Popen(["taskset", "-c", str(c), plan, "--steps", str(STEPS),
                                       "--quiet", "--metrics", metrics], env=BASE_ENV))
    for p in procs:
        if p.wait():
            raise SystemExit("%s failed" % plan)
    return statistics.median(x for f in files for x in steps_of(f))


def main():
    argv = sys.argv[1:]
    repeats, before = 3, None
    if "--repeats" in argv:
        i = argv.index("--repeats")
        repeats = int(argv[i + 1])
        del argv[i:i + 2]
    if "--before" in argv:
        i = argv.index("--before")
        before = argv[i + 1]
        del argv[i:i + 2]
    build_dir = argv[0] if argv else "build"
    bin_dir, work = os.path.join(build_dir, "bin"), os.path.join(build_dir, "bench", "overlap")
    os.makedirs(work, exist_ok=True)
    b8, b4 = gen(bin_dir, work, 8), gen(bin_dir, work, 4)
    single8 = compile_plan(bin_dir, work, b8, "single-b8", "single")
    single4 = compile_plan(bin_dir, work, b4, "single-b4", "single")
    rows = []  # (label, plan, progress)
    if before:
        rows.append(("before: one reduction in flight, no buckets", before, "off"))
    for label, bucket in [("default buckets (1 MB)", None), ("bucket_size 25 (DDP's)", 25),
                          ("bucket_size 4", 4), ("bucket_size 0 (per gradient)", 0)]:
        plan = compile_plan(bin_dir, work, b8, "dp2-b%s" % bucket, bucket)
        rows.append((label + ", progress between kernels", plan, "kernel"))
        if bucket is None:
            rows.append((label + ", progress thread", plan, "thread"))
        rows.append((label + ", progress only in waits", plan, "off"))
    cores = list(range(2)) if (os.cpu_count() or 1) >= 2 else [0]
    res = {r[0]: [] for r in rows}
    one, pair = [], []
    for _ in range(repeats):
        one.append(run_single(single8, work, "single-b8", [0]))
        pair.append(run_single(single4, work, "single-b4", cores))
        for label, plan, progress in rows:
            res[label].append(run_dp2(plan, work, "dp2", progress))
    one_ms, pair_ms = statistics.median(one), statistics.median(pair)
    print("## Gradient reduction overlap, DP2 on 2 ranks bound to one core each "
          "(L4 C256 H4 T128 B8, %d steps, median of %d runs)\n" % (STEPS, repeats))
    print("single device B8, one core: %.1f ms/step; two single-device B4 runs side by side "
          "(the per-rank work, no communication): %.1f ms/step, hardware share %.1f%% over "
          "the ideal %.1f ms\n" % (one_ms, pair_ms, 100 * (pair_ms / (one_ms / 2) - 1),
                                   one_ms / 2))
    print("| DP2 run | step ms | exposed comm ms | exposed / step | efficiency "
          "(1-dev step / 2 DP2 step) | step over the no-comm pair |")
    print("|---|---|---|---|---|---|")
    for label, _, _ in rows:
        runs = sorted(res[label], key=lambda r: r[0])
        step, e_ms, e_share = runs[len(runs) // 2]
        print("| %s | %.1f | %.1f | %.1f%% | %.2f | %+.1f%% |" % (
            label, step, e_ms, 100 * e_share, one_ms / (2 * step), 100 * (step / pair_ms - 1)))


if __name__ == "__main__":
    main()
