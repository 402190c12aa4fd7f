#!/usr/bin/python3
"""piper-tune's predictions against measurement on 2 MPI ranks.

Two models: --model gpt (default L4 C128 H4 T64 B8 V256, 2 PP stages) and --model moe (a
Qwen3-MoE L4 C64 H4 KV2, 8 experts top-2 Fe64, T32 B8, 4 PP stages, so that DualPipeV and
interleaved 1F1B fit 2 devices). piper-tune --calibrate under mpirun -np 2 writes a profile,
then piper-tune --devices 2 --dump DIR predicts every candidate. Measured (14 each):
  gpt: DP2 with ZeRO 0-3 (M1, default bucket), PP2 gpipe, 1f1b and zb-h1 at M in {2, 4, 8},
       TP2 (M1);
  moe: DP2 and DP2 EP2 with ZeRO 0-3, PP2 interleaved-1f1b M in {2, 4, 8}, PP2 dualpipev M in
       {4, 8}, TP2.
Each is compiled with piper-compile --strategy as piper-tune wrote it and run under mpirun -np
2 (one core a rank, one thread); measured step: rank 0's step_ms after the first step, the
median and the least (the least disturbed by other jobs on a shared machine). Printed:
predicted vs measured per candidate, the Spearman rank correlation (against both), whether
the pick (the fastest predicted among these) is within 10% of the fastest measured, memory.
--per-op NAME,...: for those candidates also a table of predicted (piper-tune --strategy
--trace-out) against measured (--trace) time per span class (node label without microbatch,
transfer kind), each class's least over the steps: where the cost model misses.
--explain NAME,...: for those candidates piper-tune --strategy --explain's table: per kernel
kind, the profile's prediction against each op's kernel run alone at the plan's shape.
The load average (os.getloadavg, as uptime) is printed before and after the measurements.
--explain-only: calibrate and print the --explain tables without running the candidates.
--also-env VAR=VAL [--repeats R]: then each DP candidate as built and with VAR=VAL, in turn, R
rounds: median and least step, and rank 0's page faults a step (e.g. PIPER_MPI_TRIM=1: the
runtime before it kept freed memory mapped).
--issue-probe: instead, a 2-rank C program (mpicc) that issues four MPI_Iallreduce 2-3 ms of
computing apart, as a DP step issues its gradient buckets, and prints how long each issue
takes to return (the first alone in flight, the next ones behind it) and the page faults of
each step, with glibc's default malloc and with freed memory kept mapped (the runtime's
setting), after the cost of touching a fresh MB against a reused one.
Usage: bench_tune.py BUILD_DIR [--model gpt|moe] [--steps N] [--per-op NAMES] [--explain NAMES]
                     [--explain-only] [--also-env VAR=VAL [--repeats R]]
       bench_tune.py BUILD_DIR --issue-probe
                     [--layers L --dim C --heads H --seq T --batch B]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile

ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "core",
          "--map-by", "core", "-np", "2"]
WANTED = {
    "gpt": ["DP2", "DP2 Z1", "DP2 Z2", "DP2 Z3"] +
           ["PP2 %s M%d" % (s, m) for s in ("gpipe", "1f1b", "zb-h1") for m in (2, 4, 8)] +
           ["TP2"],
    "moe": ["DP2", "DP2 Z1", "DP2 Z2", "DP2 Z3", "DP2 EP2", "DP2 EP2 Z1", "DP2 EP2 Z2",
            "DP2 EP2 Z3"] + ["PP2 interleaved-1f1b M%d" % m for m in (2, 4, 8)] +
           ["PP2 dualpipev M%d" % m for m in (4, 8)] + ["TP2"],
}


def sh(args, **kw):
    return subprocess.run(args, check=True, env=ENV, **kw)


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5


def span_table(trace_path, skip_first):
    """Per device: {class: us per step} of a trace, classes being compute spans by node label
    without its microbatch ("F PP=0 layer=1"), transfers by kind ("comm all_reduce"), plus
    "step" (the runtime's span around piper_step) and "(outside spans)" (the step's time on
    the compute track not in any compute span: waits, the gradient-norm sync, data fill).
    A measured trace holds several steps: the first (warm-up) is skipped when skip_first, and
    each class's figure is its smallest over the steps (the least disturbed by other jobs on a
    shared machine: a step's classes are each delayed by whatever ran beside them)."""
    with open(trace_path) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    out = {}
    for pid in sorted({e["pid"] for e in ev}):
        mine = sorted((e for e in ev if e["pid"] == pid), key=lambda e: e["ts"])
        steps = [e for e in mine if e["name"] == "step"]
        if skip_first and len(steps) > 1:
            steps = steps[1:]
        per_step = []
        for st in steps:
            t0, t1 = st["ts"], st["ts"] + st["dur"]
            table = collections.defaultdict(float)
            table["step"] = st["dur"]
            inside = 0.0
            for e in mine:
                if e["name"] == "step" or not t0 <= e["ts"] < t1:
                    continue
                if e["cat"] == "comm":
                    kind = e["name"].split("->")[0].split("<-")[0].split(" ")[0]
                    table["comm " + kind] += e["dur"]
                    continue
                key = " ".join(w for w in e["name"].split() if not w.startswith("mb="))
                table[key] += e["dur"]
                inside += e["dur"]
            table["(outside spans)"] = st["dur"] - inside
            per_step.append(table)
        keys = {k for t in per_step for k in t}
        out[pid] = {k: min(t.get(k, 0.0) for t in per_step) for k in keys}
    return out


def per_op(a, bin_dir, work, model, profile, names, cands, dump):
    """Predicted (piper-tune --strategy --trace-out) vs measured (--trace) time per span
    class, summed over the devices, for each candidate in `names`; returns {name: (predicted
    table, measured table)} summed over devices."""
    result = {}
    for name in names:
        c = cands[name]
        strat = os.path.join(dump, c["file"])
        exe = os.path.join(work, c["file"] + ".train")
        sh([os.path.join(bin_dir, "piper-compile"), model, "--strategy", strat, "-o", exe])
        meas = os.path.join(work, c["file"] + ".trace.json")
        sh(MPIRUN + [exe, "--steps", str(a.steps), "--quiet", "--trace", meas])
        pred = os.path.join(work, c["file"] + ".pred.json")
        sh([os.path.join(bin_dir, "piper-tune"), model, "--strategy", strat, "--profile",
            profile, "--trace-out", pred], stdout=subprocess.DEVNULL)
        pt, mt = span_table(pred, False), span_table(meas, True)
        keys = sorted({k for d in mt for k in mt[d]} | {k for d in pt for k in pt[d]})
        psum = {k: sum(pt[d].get(k, 0) for d in pt) for k in keys}
        msum = {k: sum(mt[d].get(k, 0) for d in mt) for k in keys}
        result[name] = (psum, msum)
        print("\n### %s: us per step, summed over the devices; measured: each class's least "
              "over steps 2..%d\n" % (name, a.steps))
        print("| span class | predicted us | measured us | measured / predicted |")
        print("|---|---|---|---|")
        for k in keys:
            p, m = psum[k], msum[k]
            print("| %s | %.0f | %.0f | %s |" % (k, p, m, "%.2f" % (m / p) if p > 0 else "-"))
    return result


# --issue-probe: how long Open MPI's MPI_Iallreduce (in place, as the runtime issues the plan's
# all-reduces) takes to return when an earlier one on the same communicator is still in flight
# and the peer is computing (the DP "B" issue spans), with glibc's default malloc and with
# freed blocks kept mapped as the runtime's MPI backend sets it (prt_mpi_keep_freed), and the
# page faults each step takes (getrusage): libnbc mallocs a bucket-sized buffer per call and
# copies the bucket into it inside MPI_Iallreduce. Rank 0 first times touching a freshly
# mapped MB against one touched before: the price of a first-touch page fault here.
ISSUE_PROBE = r"""
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
                          return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static long faults(void) { struct rusage u; getrusage(RUSAGE_SELF, &u); return u.ru_minflt; }
static void busy(double us) { double t = now(); while (now() - t < us) {} }
static void touch_cost(void) {  /* 50 fresh MBs mapped, touched, unmapped; then one MB 50x */
  size_t mb = 1 << 20; char *keep = malloc(mb); memset(keep, 0, mb);
  double w = now(), c = cpu();
  for (int i = 0; i < 50; i++) {
    char *p = mmap(NULL, mb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, i, mb); munmap(p, mb);
  }
  double wf = (now() - w) / 50e3, cf = (cpu() - c) / 50e3;
  w = now(); for (int i = 0; i < 50; i++) memset(keep, i, mb);
  printf("touching a MB: fresh pages %.2f ms wall (%.2f ms CPU), pages touched before %.3f ms\n",
         wf, cf, (now() - w) / 50e3);
  free(keep);
}
int main(int argc, char **argv) {
  int keep = argc > 1 && !strcmp(argv[1], "keep");
  if (keep) { mallopt(M_MMAP_THRESHOLD, 32 << 20); mallopt(M_TRIM_THRESHOLD, 0x7fffffff); }
  MPI_Init(&argc, &argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (r == 0 && !keep) touch_cost();
  MPI_Comm w, g; MPI_Comm_dup(MPI_COMM_WORLD, &w); MPI_Comm_split(w, 0, r, &g);
  int n[4] = {264064, 132736, 263808, 173696};  /* the GPT DP2's four buckets, floats */
  float *b[4]; for (int i = 0; i < 4; i++) b[i] = calloc(n[i], 4);
  for (int step = 0; step < 8; step++) {
    MPI_Barrier(w); MPI_Request q[4]; double iss[4]; long f0 = faults();
    for (int i = 0; i < 4; i++) {  /* compute between issues, rank 1 longer than rank 0 */
      busy(r == 0 ? 2000 : 3000);
      double t0 = now();
      MPI_Iallreduce(MPI_IN_PLACE, b[i], n[i], MPI_FLOAT, MPI_SUM, g, &q[i]);
      iss[i] = now() - t0;
    }
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    if (step >= 2)  /* past the communicator's set-up */
      printf("%s rank %d step %d: MPI_Iallreduce returned after %.0f %.0f %.0f %.0f us; "
             "%ld page faults\n", keep ? "kept  " : "glibc ", r, step, iss[0], iss[1], iss[2],
             iss[3], faults() - f0);
  }
  MPI_Finalize();
  return 0;
}
"""


def issue_probe(work):
    src, exe = os.path.join(work, "issue_probe.c"), os.path.join(work, "issue_probe")
    with open(src, "w") as f:
        f.write(ISSUE_PROBE)
    sh(["mpicc", "-O2", src, "-o", exe])
    print("## MPI_Iallreduce issue while the previous bucket's is in flight (load %.1f)\n" %
          os.getloadavg()[0])
    print("glibc: its default malloc; kept: freed blocks kept mapped (the runtime's setting)\n")
    for mode in ("glibc", "keep"):
        out = subprocess.run(MPIRUN + [exe, mode], check=True, env=ENV, capture_output=True,
                             text=True)
        print("\n".join(sorted(out.stdout.splitlines())) + "\n")


def gen_model(a, bin_dir, path):
    if a.model == "gpt":
        args = ["gpt", "--layers", str(a.layers), "--dim", str(a.dim), "--heads", str(a.heads),
                "--seq", str(a.seq), "--batch", str(a.batch), "--vocab", "256", "--stages", "2"]
    else:
        args = ["qwen3-moe", "--layers", "4", "--dim", "64", "--heads", "4", "--kv-heads", "2",
                "--experts", "8", "--top-k", "2", "--expert-ffn-dim", "64", "--seq", "32",
                "--batch", str(a.batch), "--stages", "4"]
    with open(path, "w") as f:
        sh([os.path.join(bin_dir, "piper-gen")] + args, stdout=f)
    return " ".join(args)


def measure(a, bin_dir, work, model, c, env=None):
    exe = os.path.join(work, c["file"] + ".train")
    if not os.path.exists(exe):
        sh([os.path.join(bin_dir, "piper-compile"), model, "--strategy",
            os.path.join(work, "dump", c["file"]), "-o", exe])
    metrics = os.path.join(work, c["file"] + ".jsonl")
    subprocess.run(MPIRUN + [exe, "--steps", str(a.steps), "--quiet", "--metrics", metrics],
                   check=True, env=dict(ENV, **(env or {})))
    recs = [json.loads(l) for l in open(metrics) if l.strip()]
    steps = [r["step_ms"] for r in recs if r["kind"] == "train" and r["step"] > 0]
    faults = [r.get("page_faults", -1) for r in recs if r["kind"] == "train" and r["step"] > 0]
    summary = [r for r in recs if r["kind"] == "summary"][0]["ranks"]
    top = max(summary, key=lambda r: r["params"] + r["optim"] + r["arena"])
    return dict(name=c["name"], pred=c["step_ms"], meas=statistics.median(steps),
                least=min(steps), spread=(max(steps) - min(steps)) / statistics.median(steps),
                mem_pred=c["peak_bytes"], mem_meas=top["params"] + top["optim"] + top["arena"],
                rss=max(r["peak_rss"] for r in summary), bubble=c["bubble"],
                comm=c["exposed_comm"], faults=statistics.median(faults))


def also_env(a, bin_dir, work, model, cands):
    """--also-env VAR=VAL: each DP candidate run again with VAR=VAL right after its plain run
    (in turn, so a noisy neighbour hits both alike), --repeats times; the medians side by side."""
    var, val = a.also_env.split("=", 1)
    print("\n## DP candidates: as built vs %s=%s, in turn, %d rounds (load %.1f)\n" % (
        var, val, a.repeats, os.getloadavg()[0]))
    print("| strategy | predicted ms | as built: median (least) ms, page faults a step | "
          "%s=%s: median (least) ms, page faults a step |" % (var, val))
    print("|---|---|---|---|")
    for name in (n for n in WANTED[a.model] if n.startswith("DP")):
        got = {False: [], True: []}
        for _ in range(a.repeats):
            for alt in (False, True):
                got[alt].append(measure(a, bin_dir, work, model, cands[name],
                                        {var: val} if alt else None))
        cell = lambda rs: "%.1f (%.1f), %.0f" % (statistics.median(r["meas"] for r in rs),
                                                 min(r["least"] for r in rs),
                                                 statistics.median(r["faults"] for r in rs))
        print("| %s | %.1f | %s | %s |" % (name, cands[name]["step_ms"], cell(got[False]),
                                            cell(got[True])))
    print("load after: %.1f" % os.getloadavg()[0])


def report(a, desc, profile, rows, load_before):
    print("## piper-tune: predicted vs measured, %s, 2 ranks (one core each), %d steps\n" %
          (desc, a.steps))
    with open(profile) as f:
        print("profile: " + json.load(f)["source"])
    print("load average (1 min) before the runs %.1f, after %.1f, on %d cores (the measured "
          "times share them)\n" % (load_before, os.getloadavg()[0], os.cpu_count()))
    print("| strategy | predicted ms | measured ms: median (spread), least | error vs median | "
          "vs least | peak MB predicted | measured (params+AdamW+arena) | peak RSS MB | bubble | "
          "exposed comm |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: r["meas"]):
        print("| %s | %.1f | %.1f (%.0f%%), %.1f | %+.0f%% | %+.0f%% | %.3f | %.3f | %.1f | %.0f%% | "
              "%.0f%% |" % (r["name"], r["pred"], r["meas"], 100 * r["spread"], r["least"],
                            100 * (r["pred"] / r["meas"] - 1), 100 * (r["pred"] / r["least"] - 1),
                            r["mem_pred"] / 1e6, r["mem_meas"] / 1e6, r["rss"] / 1e6,
                            100 * r["bubble"], 100 * r["comm"]))
    pick = min(rows, key=lambda r: r["pred"])
    for key, what in (("meas", "median"), ("least", "least")):
        rho = spearman([r["pred"] for r in rows], [r[key] for r in rows])
        best = min(rows, key=lambda r: r[key])
        within = pick[key] <= 1.10 * best[key]
        errs = [abs(r["pred"] / r[key] - 1) for r in rows]
        print("\nagainst the %s step: Spearman %.2f over %d candidates; pick %s %.1f ms, best %s "
              "%.1f ms: %s; error median %.0f%%, max %.0f%%, %d of %d within 20%%" % (
                  what, rho, len(rows), pick["name"], pick[key], best["name"], best[key],
                  "within 10%" if within else "NOT within 10%% (%.0f%% slower)" %
                  (100 * (pick[key] / best[key] - 1)), 100 * statistics.median(errs),
                  100 * max(errs), sum(e <= 0.2 for e in errs), len(errs)))
    print("memory: predicted peak == measured params+AdamW+arena for %d of %d" % (
        sum(r["mem_pred"] == r["mem_meas"] for r in rows), len(rows)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--model", choices=("gpt", "moe"), default="gpt")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--per-op", default="", help="candidate names, comma-separated")
    ap.add_argument("--explain", default="", help="candidate names, comma-separated")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--also-env", default="",
                    help="VAR=VAL: the DP candidates also run with it, in turn (before/after)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of --also-env")
    ap.add_argument("--explain-only", action="store_true",
                    help="calibrate and print --explain's tables, run no candidate")
    ap.add_argument("--issue-probe", action="store_true",
                    help="only time MPI_Iallreduce's issue with an earlier one in flight")
    a = ap.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    work = tempfile.mkdtemp(prefix="bench_tune.")
    if a.issue_probe:
        issue_probe(work)
        return
    model = os.path.join(work, "model.mlir")
    desc = gen_model(a, bin_dir, model)
    profile = os.path.join(work, "profile.json")
    sh(MPIRUN + [os.path.join(bin_dir, "piper-tune"), model, "--calibrate", "-o", profile])
    dump = os.path.join(work, "dump")
    os.makedirs(dump)
    sh([os.path.join(bin_dir, "piper-tune"), model, "--devices", "2", "--memory", "64G",
        "--profile", profile, "--dump", dump, "-o", os.path.join(work, "best.json")],
       stdout=subprocess.DEVNULL)
    cands = {c["name"]: c for c in (json.loads(l) for l in open(os.path.join(dump, "candidates.jsonl")))}
    load_before = os.getloadavg()[0]
    if not a.explain_only:
        rows = [measure(a, bin_dir, work, model, cands[name]) for name in WANTED[a.model]]
        report(a, desc, profile, rows, load_before)
    else:
        print("## %s: profile and --explain only (load %.1f)" % (desc, load_before))
    if a.also_env:
        also_env(a, bin_dir, work, model, cands)
    if a.per_op:
        per_op(a, bin_dir, work, model, profile, a.per_op.split(","), cands, dump)
    for name in filter(None, a.explain.split(",")):
        print("\n### %s: piper-tune --explain (one core)\n" % name)
        out = subprocess.run(["taskset", "-c", "0", os.path.join(bin_dir, "piper-tune"), model,
                              "--strategy", os.path.join(dump, cands[name]["file"]), "--profile",
                              profile, "--explain"], check=True, env=ENV, capture_output=True,
                             text=True).stdout
        print(out[out.index("kernels of one step"):])


if __name__ == "__main__":
    main()
