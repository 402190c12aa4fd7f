#!/usr/bin/python3
"""Faults and checkpoints on the default GPT (piper-gen gpt: L=4 C=256 T=128 B=8, 3.2 M params).

Two tables:
  1. The step-time cost of --checkpoint-every N (N = 1, 10, 100; background writes into a
     --checkpoint-dir ring) against no periodic checkpoint: wall milliseconds per step of whole
     runs (start-up included, the same in every row), the median of 3 interleaved rounds.
  2. Recovery under piper-run (DP2, --checkpoint-every 10): for each injected fault
     (PIPER_FAULT), the seconds from the fault to the restarted job's first completed step and
     the steps redone, as piper-run's "recovered:" line reports them, and whether the final
     checkpoint equals the uninterrupted run's byte for byte.
Usage: bench_faults.py BUILD_DIR [--steps N] [--every 1,10,100] [--gpt "piper-gen flags"]
                        [--fault-steps N] [--no-faults] [--workdir DIR]
"""
import argparse
import filecmp
import json
import os
import re
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
    one, dp2 = os.path.join(work, "train"), os.path.join(work, "dp2")
    run([os.path.join(bindir, "piper-compile"), mlir, "-o", one])
    sched = os.path.join(work, "dp2.json")
    with open(sched, "w") as f:
        run([os.path.join(bindir, "piper-sched"), "gpipe", "--stages", "1", "--microbatches", "1",
             "--dp", "2"], stdout=f)
    run([os.path.join(bindir, "piper-compile"), mlir, "--strategy", sched, "-o", dp2])
    return one, dp2


def checkpoint_cost(train, work, steps, everies, rounds=3):
    """Wall seconds per step of whole runs (the checkpoint's snapshot happens after the step's
    own step_ms is taken, so the metrics' step times would not see it), every configuration
    once per round, in turn, so a machine's load drifts over all alike; the median round."""
    walls = {e: [] for e in [0] + everies}
    for _ in range(rounds):
        for every in walls:
            ring = os.path.join(work, "ring-cost")
            shutil.rmtree(ring, ignore_errors=True)
            cmd = [train, "--steps", str(steps), "--quiet"]
            if every:
                cmd += ["--checkpoint-every", str(every), "--checkpoint-dir", ring]
            t0 = time.monotonic()
            run(cmd)
            walls[every].append((time.monotonic() - t0) * 1e3 / steps)
    base = statistics.median(walls[0])
    return [(e, statistics.median(w), 100.0 * (statistics.median(w) - base) / base)
            for e, w in walls.items()]


def fault_case(dp2, work, name, fault, steps, every, extra):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = dict(ENV, PIPER_FAULT=fault + ",once=" + os.path.join(d, "fired"))
    cmd = [os.path.join(BINDIR, "piper-run"), "-np", "2", "--checkpoint-dir",
           os.path.join(d, "ring"), "--", dp2, "--steps", str(steps), "--checkpoint-every", str(every),
           "--save-checkpoint", os.path.join(d, "out.st")] + extra
    p = subprocess.run(cmd, env=env, timeout=900, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    m = re.search(r"recovered: the restarted job completed step (\d+) ([0-9.]+) s after the "
                  r"fault \((\d+) steps? redone\)", p.stderr)
    lost = re.search(r"; ([0-9.]+) s lost", p.stderr)
    same = p.returncode == 0 and filecmp.cmp(os.path.join(d, "out.st"),
                                             os.path.join(work, "ref.st"), shallow=False)
    if not m:
        sys.stderr.write(p.stderr[-3000:])
        return (name, None, None, None, same)
    return (name, float(m.group(2)), int(m.group(3)), float(lost.group(1)) if lost else None,
            same)


def main():
    global BINDIR
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=200, help="steps of each cost run")
    ap.add_argument("--every", default="1,10,100", help="--checkpoint-every values to cost")
    ap.add_argument("--gpt", default="", help="piper-gen gpt flags (default: its defaults)")
    ap.add_argument("--fault-steps", type=int, default=40, help="steps of each fault run")
    ap.add_argument("--no-faults", action="store_true", help="only the cost table")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    BINDIR = os.path.join(os.path.abspath(a.build), "bin")
    ENV["PATH"] = BINDIR + os.pathsep + ENV.get("PATH", "")
    work = a.workdir or tempfile.mkdtemp(prefix="piper-faults-")
    os.makedirs(work, exist_ok=True)
    train, dp2 = build_plans(BINDIR, work, a.gpt.split())
    model = "GPT " + (a.gpt or "(piper-gen defaults)")

    print("### --checkpoint-every: step-time cost (%s, one device, %d steps)" % (model, a.steps))
    print("| --checkpoint-every | wall ms per step | cost |")
    print("|---|---|---|")
    everies = [int(e) for e in a.every.split(",")]
    for every, ms, cost in checkpoint_cost(train, work, a.steps, everies):
        print("| %s | %.1f | %s |" % (every or "off", ms, "-" if not every else "%+.1f%%" % cost))
    sys.stdout.flush()
    if a.no_faults:
        return

    steps = a.fault_steps
    every = max(2, steps // 4)
    run(MPIRUN + ["-np", "2", dp2, "--steps", str(steps), "--quiet", "--save-checkpoint",
                  os.path.join(work, "ref.st")])
    mid = steps // 2 + every // 2 + 1  # a few steps after a checkpoint
    cases = [
        ("kill -9 rank 1 at step %d" % mid, "kill@step=%d,rank=1" % mid, []),
        ("SIGSTOP rank 1 at step %d (--timeout 2)" % mid, "stop@step=%d,rank=1" % mid,
         ["--timeout", "2"]),
        ("kill rank 0 while it writes step %d" % (2 * every), "kill@save=%d,rank=0" % (2 * every),
         []),
        ("kill -9 rank 1 in the last step (%d)" % (steps - 1), "kill@step=%d,rank=1" % (steps - 1),
         []),
    ]
    print()
    print("### Recovery under piper-run (%s, DP2, %d steps, --checkpoint-every %d)"
          % (model, steps, every))
    print("| fault | fault to next completed step (s) | steps redone | s lost (piper-run) | "
          "final == uninterrupted |")
    print("|---|---|---|---|---|")
    for name, fault, extra in cases:
        r = fault_case(dp2, work, re.sub(r"\W+", "-", name), fault, steps, every, extra)
        fmt = lambda v, f: "?" if v is None else f % v
        print("| %s | %s | %s | %s | %s |" % (name, fmt(r[1], "%.2f"), fmt(r[2], "%d"),
                                              fmt(r[3], "%.2f"), "yes" if r[4] else "NO"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
