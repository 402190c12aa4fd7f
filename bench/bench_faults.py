#!/usr/bin/python3
"""Faults and checkpoints on the default GPT (piper-gen gpt: L=4 C=256 T=128 B=8, 3.2 M params).

Two tables:
  1. The step-time cost of --checkpoint-every N (N = 1, 10, 100; background writes into a
     --checkpoint-dir ring) against no periodic checkpoint, measured side by side in one run:
     each round runs every configuration once, in turn, and each configuration's wall time
     per step (whole runs, start-up included, the same in every row) is divided by the
     no-checkpoint run of the same round, so a machine's load drifting between rounds
     cancels; the median of the rounds' ratios. The same for the process's CPU time.
  2. Recovery under piper-run (DP4, --checkpoint-every): for each injected fault (PIPER_FAULT),
     the seconds from the fault to the restarted job's first completed step and the steps
     redone, as piper-run's "recovered:" line reports them, and how the final checkpoint
     compares with the uninterrupted DP4 run's (byte for byte at the same degree; a rank lost
     for good continues on 2 ranks, elastic, so there the largest difference of any tensor
     relative to its largest value).
  3. (--phases R) Where a recovery's seconds go: the kill -9 case R times, piper-run --phases
     splitting each recovery (mpirun reporting the rank, its exit, every rank gone, piper-run's
     decision, the new mpirun, MPI_Init, the plan's set-up, the checkpoint load, the first
     step), the median of each phase's end after the fault; with --baseline OTHER_BUILD the
     same case under that build's piper-run and plan, round by round in turn, so the two are
     compared under the same load.
Usage: bench_faults.py BUILD_DIR [--steps N] [--every 1,10,100] [--rounds R] [--gpt "piper-gen
                        flags"] [--fault-steps N] [--no-faults] [--workdir DIR]
                        [--phases R [--baseline OTHER_BUILD]]
"""
import argparse
import filecmp
import json
import struct
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def run(cmd, env=ENV, timeout=900, **kw):
    return subprocess.run(cmd, env=env, timeout=timeout, check=True, **kw)


def build_plans(bindir, work, gpt_args):
    mlir = os.path.join(work, "gpt.mlir")
    with open(mlir, "w") as f:
        run([os.path.join(bindir, "piper-gen"), "gpt"] + gpt_args, stdout=f)
    one, dp4 = os.path.join(work, "train"), os.path.join(work, "dp4")
    run([os.path.join(bindir, "piper-compile"), mlir, "-o", one])
    sched = os.path.join(work, "dp4.json")
    with open(sched, "w") as f:
        run([os.path.join(bindir, "piper-sched"), "gpipe", "--stages", "1", "--microbatches", "1",
             "--dp", "4"], stdout=f)
    run([os.path.join(bindir, "piper-compile"), mlir, "--strategy", sched, "-o", dp4])
    return one, dp4


def load_st(path):
    """{name: numpy float32 array} of a safetensors checkpoint (F32 tensors)."""
    import numpy as np
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: np.frombuffer(data[t["data_offsets"][0]:t["data_offsets"][1]], dtype="<f4")
            for k, t in header.items()}


def compare_final(out, ref):
    """'identical', or the largest |out - ref| of any tensor relative to that tensor's
    largest |ref|, or None when the run wrote no checkpoint."""
    if not os.path.exists(out):
        return None
    if not os.path.exists(ref):  # --phases: no reference run
        return "not compared"
    if filecmp.cmp(out, ref, shallow=False):
        return "identical"
    a, b = load_st(out), load_st(ref)
    if a.keys() != b.keys():
        return "other tensors"
    worst = 0.0
    for k in b:
        scale = float(abs(b[k]).max()) or 1.0
        worst = max(worst, float(abs(a[k] - b[k]).max()) / scale)
    return "max rel. diff %.1e" % worst


def checkpoint_cost(train, work, steps, everies, rounds, baseline=None):
    """Per configuration: the median wall ms per step, the median over the rounds of its
    ratio to the no-checkpoint run of the same round (the checkpoint's snapshot happens after
    the step's own step_ms is taken, so the metrics' step times would not see it), the same
    for the process's CPU time (user + system, the background writer's included: the work a
    checkpoint adds, which other jobs on a shared machine disturb less than the wall time),
    and the rounds' wall times."""
    keys = [(b, e) for b in ([train] + ([baseline] if baseline else [])) for e in [0] + everies]
    walls = {k: [] for k in keys}
    cpus = {k: [] for k in keys}
    for _ in range(rounds):
        for key in keys:
            binary, every = key
            ring = os.path.join(work, "ring-cost")
            shutil.rmtree(ring, ignore_errors=True)
            cmd = [binary, "--steps", str(steps), "--quiet"]
            if every:
                cmd += ["--checkpoint-every", str(every), "--checkpoint-dir", ring]
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            p = run(cmd, env=dict(ENV, PIPER_CKPT_STATS="1"), stderr=subprocess.PIPE, text=True)
            walls[key].append((time.monotonic() - t0) * 1e3 / steps)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[key].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e3
                             / steps)
            m = re.search(r"checkpoints: (\d+) taken, training thread ([0-9.]+) ms \(([0-9.]+) "
                          r"of them waiting for the previous write\), writer CPU ([0-9.]+) ms",
                          p.stderr)
            if m:  # per checkpoint: the training thread's ms, its wait, the writer's CPU ms
                n = int(m.group(1))
                STATS.setdefault(key, []).append(tuple(float(m.group(i)) / n for i in (2, 3, 4)))
    med_ratio = lambda xs, base: statistics.median(x / b for x, b in zip(xs, base))
    return [(b, e, statistics.median(w), med_ratio(w, walls[(b, 0)]),
             statistics.median(cpus[(b, e)]), med_ratio(cpus[(b, e)], cpus[(b, 0)]), w)
            for (b, e), w in walls.items()]


STATS = {}  # (binary, every) -> [(training-thread ms, of it waiting, writer CPU ms) a checkpoint]


def fault_case(dp4, work, name, fault, steps, every, extra, sup_extra=(), bindir=None):
    d = os.path.join(work, re.sub(r"\W+", "-", name))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = dict(ENV, PIPER_FAULT=fault + ",once=" + os.path.join(d, "fired"))
    cmd = [os.path.join(bindir or BINDIR, "piper-run"), "-np", "4", "--checkpoint-dir",
           os.path.join(d, "ring")] + list(sup_extra) + [
           "--", dp4, "--steps", str(steps), "--checkpoint-every", str(every),
           "--save-checkpoint", os.path.join(d, "out.st")] + extra
    p = subprocess.run(cmd, env=env, timeout=1800, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    with open(os.path.join(d, "err.txt"), "w") as f:
        f.write(p.stderr)
    on = re.search(r"finished: .*, on (\d+) of (\d+) ranks", p.stderr)
    if on:
        name += " [ended on %s of %s ranks]" % on.groups()
    m = re.search(r"recovered: the restarted job completed step (\d+) ([0-9.]+) s after the "
                  r"fault \((\d+) steps? redone\)", p.stderr)
    lost = re.search(r"; ([0-9.]+) s lost", p.stderr)
    final = compare_final(os.path.join(d, "out.st"), os.path.join(work, "ref.st")) \
        if p.returncode == 0 else "run failed (%d)" % p.returncode
    if not m:
        sys.stderr.write(p.stderr[-3000:])
        return (name, None, None, None, final)
    phases = re.search(r"phases \(s after the fault\): (.*)", p.stderr)
    FAULT_PHASES[name] = phases.group(1) if phases else None
    return (name, float(m.group(2)), int(m.group(3)), float(lost.group(1)) if lost else None,
            final)


FAULT_PHASES = {}  # fault_case's name -> piper-run's --phases line (or None)


def phase_table(work, a, model):
    """--phases: the kill -9 case a.phases times under this build (piper-run --phases), and as
    often under --baseline's build, in turn; the median end of each phase after the fault."""
    steps = a.fault_steps
    every = max(2, steps // 4)
    mid = steps // 2 + every // 2 + 1
    builds = [("this build", BINDIR)]
    if a.baseline:
        builds.append(("baseline " + a.baseline, os.path.join(os.path.abspath(a.baseline), "bin")))
    plans = {}
    for label, bindir in builds:
        sub = os.path.join(work, "phases-" + str(len(plans)))
        os.makedirs(sub, exist_ok=True)
        plans[label] = build_plans(bindir, sub, a.gpt.split())[1]
    totals = {label: [] for label, _ in builds}
    phases = {}
    for _ in range(a.phases):
        for label, bindir in builds:
            sup = ["--phases"] if bindir == BINDIR else []
            name = "kill -9 rank 1 at step %d (%s)" % (mid, label)
            r = fault_case(plans[label], work, name, "kill@step=%d,rank=1" % mid, steps, every,
                           [], sup, bindir)
            totals[label].append(r[1])
            line = FAULT_PHASES.get(name)
            for part in (line.split(", ") if line else []):
                key, _, val = part.rpartition(" +")
                if key:
                    phases.setdefault(key, []).append(float(val))
    print()
    print("### Where a recovery's seconds go (%s, DP4, %d steps, --checkpoint-every %d, kill -9 "
          "rank 1 at step %d, %d rounds)" % (model, steps, every, mid, a.phases))
    print("| phase ends (this build) | median s after the fault | the rounds |")
    print("|---|---|---|")
    for key, vals in phases.items():
        print("| %s | %.2f | %s |" % (key, statistics.median(vals),
                                     ", ".join("%.2f" % v for v in vals)))
    print()
    print("| build | fault to next completed step, median s | the rounds |")
    print("|---|---|---|")
    for label, vals in totals.items():
        ok = [v for v in vals if v is not None]
        print("| %s | %s | %s |" % (label, "%.2f" % statistics.median(ok) if ok else "?",
                                    ", ".join("?" if v is None else "%.2f" % v for v in vals)))
    sys.stdout.flush()


def grow_case(dp4, work, steps, every, mid):
    """Growing back: the hostfile lists 2 slots, so the job starts on 2 of 4 ranks; rank 1
    stops itself at step `mid` (holding the job still), the hostfile is rewritten with 4
    slots, and once piper-run says it will grow the rank continues. Returns the row: the
    seconds from the smaller job's end to the first step on 4 ranks and the steps redone, as
    piper-run's "grown:" line reports them, and the final checkpoint against the reference."""
    import signal
    import threading
    name = "hostfile 2 -> 4 slots during step %d: DP2 -> DP4" % mid
    d = os.path.join(work, "grow")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    hosts, fired = os.path.join(d, "hosts"), os.path.join(d, "fired")
    with open(hosts, "w") as f:
        f.write("localhost slots=2\n")
    env = dict(ENV, PIPER_FAULT="stop@step=%d,rank=1,once=%s" % (mid, fired))
    cmd = [os.path.join(BINDIR, "piper-run"), "-np", "4", "--hostfile", hosts, "--min-ranks",
           "2", "--checkpoint-dir", os.path.join(d, "ring"), "--", dp4, "--steps", str(steps),
           "--checkpoint-every", str(every), "--save-checkpoint", os.path.join(d, "out.st")]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    lines, planned = [], threading.Event()

    def read():
        for line in p.stderr:
            lines.append(line)
            if "growing to 4" in line:
                planned.set()
    t = threading.Thread(target=read)
    t.start()
    deadline = time.monotonic() + 600
    while not (os.path.exists(fired) and os.path.getsize(fired)) and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(hosts, "w") as f:
        f.write("localhost slots=4\n")
    planned.wait(timeout=120)
    with open(fired) as f:
        os.kill(int(f.read().split()[0]), signal.SIGCONT)
    rc = p.wait(timeout=1800)
    t.join()
    err = "".join(lines)
    with open(os.path.join(d, "err.txt"), "w") as f:
        f.write(err)
    m = re.search(r"grown: the job on 4 ranks completed step \d+ ([0-9.]+) s after the smaller "
                  r"one ended \((\d+) steps? redone\)", err)
    final = compare_final(os.path.join(d, "out.st"), os.path.join(work, "ref.st")) \
        if rc == 0 else "run failed (%d)" % rc
    if not m:
        sys.stderr.write(err[-3000:])
        return (name, None, None, None, final)
    return (name, float(m.group(1)), int(m.group(2)), None, final)


def main():
    global BINDIR
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=200, help="steps of each cost run")
    ap.add_argument("--every", default="1,10,100", help="--checkpoint-every values to cost")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the cost table")
    ap.add_argument("--gpt", default="", help="piper-gen gpt flags (default: its defaults)")
    ap.add_argument("--fault-steps", type=int, default=40, help="steps of each fault run")
    ap.add_argument("--no-faults", action="store_true", help="only the cost table")
    ap.add_argument("--no-cost", action="store_true", help="only the fault table")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--phases", type=int, default=0,
                    help="rounds of the recovery-phase table (kill -9 under DP4)")
    ap.add_argument("--baseline", default=None,
                    help="another build directory to compare the recovery with, in turn")
    a = ap.parse_args()
    BINDIR = os.path.join(os.path.abspath(a.build), "bin")
    ENV["PATH"] = BINDIR + os.pathsep + ENV.get("PATH", "")
    work = a.workdir or tempfile.mkdtemp(prefix="piper-faults-")
    os.makedirs(work, exist_ok=True)
    train, dp4 = build_plans(BINDIR, work, a.gpt.split())
    model = "GPT " + (a.gpt or "(piper-gen defaults)")
    print("load average at the start: %.2f %.2f %.2f on %d cores"
          % (os.getloadavg() + (os.cpu_count(),)))

    if a.phases:
        phase_table(work, a, model)
        print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
        return
    if not a.no_cost:
        print_cost(train, work, a, model)
    if a.no_faults:
        return
    fault_table(dp4, work, a, model)
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


def print_cost(train, work, a, model):
    print("### --checkpoint-every: step-time cost (%s, one device, %d steps, %d rounds side "
          "by side)" % (model, a.steps, a.rounds))
    print("| build | --checkpoint-every | wall ms per step | wall ratio to none | CPU ms per "
          "step | CPU ratio to none | the rounds' wall ms | a checkpoint: training thread ms "
          "(waiting), writer CPU ms |")
    print("|---|---|---|---|---|---|---|---|")
    everies = [int(e) for e in a.every.split(",")]
    base = None
    if a.baseline:
        base = os.path.join(work, "baseline")
        os.makedirs(base, exist_ok=True)
        base = build_plans(os.path.join(os.path.abspath(a.baseline), "bin"), base,
                           a.gpt.split())[0]
    for b, every, ms, ratio, cpu, cratio, w in checkpoint_cost(train, work, a.steps, everies,
                                                               a.rounds, base):
        st = STATS.get((b, every))
        per = "-" if not st else "%.1f (%.1f), %.1f" % tuple(
            statistics.median(x[i] for x in st) for i in range(3))
        print("| %s | %s | %.1f | %s | %.1f | %s | %s | %s |" % (
            "baseline" if b == base else "this", every or "none", ms,
            "1" if not every else "%.3f" % ratio, cpu, "1" if not every else "%.3f" % cratio,
            ", ".join("%.1f" % x for x in w), per))
    sys.stdout.flush()


def fault_table(dp4, work, a, model):
    steps = a.fault_steps
    every = max(2, steps // 4)
    run(MPIRUN + ["-np", "4", dp4, "--steps", str(steps), "--quiet", "--save-checkpoint",
                  os.path.join(work, "ref.st")])
    mid = steps // 2 + every // 2 + 1  # a few steps after a checkpoint
    cases = [
        ("kill -9 rank 1 at step %d" % mid, "kill@step=%d,rank=1" % mid, [], []),
        ("SIGSTOP rank 1 at step %d (--timeout 2)" % mid, "stop@step=%d,rank=1" % mid,
         ["--timeout", "2"], []),
        ("rank 3 lost for good at step %d: DP4 -> DP2 (--min-ranks 2)" % mid,
         "kill@step=%d,rank=3,lost" % mid, [], ["--min-ranks", "2"]),
        ("kill rank 0 while it writes step %d" % (2 * every), "kill@save=%d,rank=0" % (2 * every),
         [], []),
        ("kill -9 rank 1 in the last step (%d)" % (steps - 1), "kill@step=%d,rank=1" % (steps - 1),
         [], []),
    ]
    print()
    print("### Recovery under piper-run (%s, DP4, %d steps, --checkpoint-every %d)"
          % (model, steps, every))
    print("| fault | fault to next completed step (s) | steps redone | s lost (piper-run) | "
          "final vs uninterrupted DP4 |")
    print("|---|---|---|---|---|")
    for name, fault, extra, sup in cases:
        r = fault_case(dp4, work, name, fault, steps, every, extra, sup)
        fmt = lambda v, f: "?" if v is None else f % v
        print("| %s | %s | %s | %s | %s |" % (r[0], fmt(r[1], "%.2f"), fmt(r[2], "%d"),
                                              fmt(r[3], "%.2f"), r[4] or "no checkpoint"))
        sys.stdout.flush()
    r = grow_case(dp4, work, steps, every, mid)
    print("| %s | %s (from the smaller job's end) | %s | - | %s |" % (
        r[0], "?" if r[1] is None else "%.2f" % r[1], "?" if r[2] is None else r[2], r[4]))


if __name__ == "__main__":
    main()
