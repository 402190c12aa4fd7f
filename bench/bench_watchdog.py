#!/usr/bin/python3
"""The --timeout watchdog's margin on the healthy runs of the tests that time it.

The tests that check the watchdog (e2e/faults/stopped-rank-watchdog.test,
e2e/hosts/cut-link-watchdog.test) run a healthy job under a short --timeout until their fault
lands. Their verdict holds only while no healthy wait (start-up's connections, a step's
collectives, a rank waiting at the agreement while rank 0 writes and fsyncs a checkpoint, a
restarted job loading one) lasts that long. This measures how long those waits can be: the
same healthy runs, each under a ladder of --timeout values, R runs a rung, counting the runs
the watchdog ended. A rung where it never fired bounds the longest healthy wait of those runs
from above, a rung where it fired from below; the tests' timeout over the smallest rung that
never fired is their margin.

Scenarios:
  dp2    stopped-rank-watchdog's supervised run (GPT L1 C32 H2 T16 B4, DP2, 10 steps,
         --checkpoint-every 2, --save-checkpoint) with rank 1 killed at step 5 instead of
         stopped: a restart resumes from the ring under the watchdog too; everything but the
         stop itself.
  stall  stall-timeout.test's supervised run the same way (its --stall-timeout ladder, the
         plan's --timeout 300): the longest the healthy job goes without a completed checkpoint
         or a line of output once its first step is done (piper-run's stall clock).
  hosts  cut-link-watchdog's two jobs before their cut, across two hosts (hosts.sh: DP4 on
         node1 and node2, 2 slots each; PP2 1F1B, one slot each), 10 steps each with
         --checkpoint-every 2; skipped, saying why, where hosts cannot be made.
--stress N keeps the machine busy meanwhile with N `stress-ng --cpu 1` workers (Debian's
stress-ng), as the suite's busy runs do (docs/testing.md).
Usage: bench_watchdog.py BUILD_DIR [--rounds R] [--timeouts 0.05,0.1,...] [--stress N]
                         [--scenarios dp2,stall,hosts] [--workdir DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS_DIR = os.path.join(HERE, "..", "test", "e2e", "hosts")
HOSTS = os.path.join(HOSTS_DIR, "hosts.sh")
ENV_EXTRA = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
# the tests' timeouts, for the margin line: scenario -> (test, --timeout)
TESTS = {"dp2": [("stopped-rank-watchdog", 20.0)], "stall": [("stall-timeout", 10.0)],
         "hosts": [("cut-link-watchdog DP4", 10.0), ("cut-link-watchdog PP2", 10.0)]}


def sh(cmd, cwd, env, **kw):
    subprocess.run(cmd, cwd=cwd, env=env, check=True, timeout=600, **kw)


def plans(bindir, work, env):
    """The tests' plans: DP2 (B4), DP4 (B8) and PP2 1F1B (2 layers, B8)."""
    gen, sched, comp = (os.path.join(bindir, t) for t in ("piper-gen", "piper-sched",
                                                           "piper-compile"))
    base = ["gpt", "--dim", "32", "--heads", "2", "--seq", "16"]
    for name, model, strategy in (
            ("dp2", ["--layers", "1", "--batch", "4"], ["gpipe", "--stages", "1",
                                                         "--microbatches", "1", "--dp", "2"]),
            ("dp4", ["--layers", "1", "--batch", "8"], ["gpipe", "--stages", "1",
                                                         "--microbatches", "1", "--dp", "4"]),
            ("pp2", ["--layers", "2", "--batch", "8", "--stages", "2"],
             ["1f1b", "--stages", "2", "--microbatches", "4"])):
        with open(os.path.join(work, name + ".mlir"), "w") as f:
            sh([gen] + base + model, work, env, stdout=f)
        with open(os.path.join(work, name + ".json"), "w") as f:
            sh([sched] + strategy, work, env, stdout=f)
        sh([comp, name + ".mlir", "--strategy", name + ".json", "-o", name], work, env)


WHAT = {}  # (job, timeout) -> the waits the watchdog ended, as it named them


def fired(text, job=None, timeout=None):
    """Whether the watchdog ended the run; notes what it ended at under (job, timeout)."""
    hits = [line.split("watchdog: ", 1)[1].split(": a rank stopped")[0]
            for line in text.splitlines() if "piper: error: watchdog: " in line]
    if hits and job:
        WHAT.setdefault((job, timeout), []).append(hits[0])
    return bool(hits)


def dp2_round(work, env, timeout, stall=False):
    """One supervised DP2 run, rank 1 killed at step 5; --timeout (stall: --stall-timeout)
    at `timeout`. Whether the watchdog (stall: piper-run's stall clock) ended a job."""
    d = tempfile.mkdtemp(dir=work)
    e = dict(env, PIPER_FAULT="kill@step=5,rank=1,once=%s/fired" % d)
    sup, plan = ((["--stall-timeout", str(timeout)], ["--quiet", "--timeout", "300"]) if stall
                 else ([], ["--timeout", str(timeout)]))
    p = subprocess.run(["piper-run", "-np", "2", "--checkpoint-dir", "ring"] + sup + ["--",
                        os.path.join(work, "dp2"), "--steps", "10", "--checkpoint-every", "2",
                        "--save-checkpoint", "out.st"] + plan, cwd=d,
                       env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    shutil.rmtree(d, ignore_errors=True)
    hit = ("--stall-timeout): ending it" in p.stdout) if stall else \
        fired(p.stdout, "stopped-rank-watchdog", timeout)
    if p.returncode != 0 and not hit:
        sys.exit("dp2 at %g s failed for another reason:\n%s" % (timeout, p.stdout))
    return [hit]


# Inside `hosts.sh with node1 node2`: each job once at timeout $1, printing "fired" or "quiet"
# per job (a job that fails without the watchdog is reported with its output).
HOSTS_ROUND = r"""
set -u
t=$1 work=$2
printf 'node1 slots=2\nnode2 slots=2\n' > hosts
printf 'node1 slots=1\nnode2 slots=1\n' > hosts11
for job in "dp4 -np 4 --hostfile hosts" "pp2 -np 2 --hostfile hosts11"; do
  set -- $job
  plan=$1; shift
  rm -rf ring
  "$PIPER_HOSTS_SH" run "$PIPER_HOSTS" node1 piper-run "$@" --max-restarts 0 \
    --checkpoint-dir ring -- "$work/$plan" --steps 10 --checkpoint-every 2 --quiet \
    --timeout "$t" > out.txt 2>&1
  rc=$?
  if grep -q 'watchdog:' out.txt; then echo "$plan fired"; grep 'watchdog:' out.txt
  elif [ $rc = 0 ]; then echo "$plan quiet"
  else echo "$plan failed"; cat out.txt; fi
done
"""


def hosts_round(work, env, timeout):
    d = tempfile.mkdtemp(dir=work)
    e = dict(env, PIPER_HOSTS_SH=HOSTS)
    p = subprocess.run(["bash", HOSTS, "with", "node1", "node2", "--", "bash", "-c", HOSTS_ROUND,
                        "round", str(timeout), work], cwd=d, env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    shutil.rmtree(d, ignore_errors=True)
    verdicts = [line.split()[1] for line in p.stdout.splitlines()
                if line.split()[:1] in (["dp4"], ["pp2"]) and len(line.split()) == 2]
    if len(verdicts) != 2 or "failed" in verdicts:
        sys.exit("hosts at --timeout %g failed for another reason:\n%s" % (timeout, p.stdout))
    names = dict(dp4="cut-link-watchdog DP4", pp2="cut-link-watchdog PP2")
    plan = None
    for line in p.stdout.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in names:
            plan = words[0]
        elif plan:
            fired(line, names[plan], timeout)
    return [v == "fired" for v in verdicts]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--timeouts", default="0.02,0.05,0.1,0.2,0.5,1")
    ap.add_argument("--stress", type=int, default=0)
    ap.add_argument("--scenarios", default="dp2,stall,hosts")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    bindir = os.path.abspath(os.path.join(a.build, "bin"))
    env = dict(os.environ, **ENV_EXTRA)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    work = os.path.abspath(a.workdir) if a.workdir else tempfile.mkdtemp(prefix="bench-watchdog-")
    os.makedirs(work, exist_ok=True)
    plans(bindir, work, env)
    scenarios = a.scenarios.split(",")
    if "hosts" in scenarios:
        check = subprocess.run(["sh", HOSTS, "check"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        if check.returncode != 0:
            print("hosts: skipped: %s" % check.stdout.strip())
            scenarios.remove("hosts")
    stress = None
    if a.stress:
        stress = subprocess.Popen(["stress-ng", "--cpu", str(a.stress), "--quiet"])
    try:
        print("| scenario | --timeout (s) | runs | watchdog fired |")
        print("|---|---|---|---|")
        for sc in scenarios:
            jobs = [t for t, _ in TESTS[sc]]
            rungs = [[] for _ in jobs]  # per job: (timeout, runs the watchdog ended)
            for t in sorted(float(x) for x in a.timeouts.split(",")):
                counts = [0] * len(jobs)
                for _ in range(a.rounds):
                    for k, f in enumerate(dp2_round(work, env, t, sc == "stall")
                                          if sc in ("dp2", "stall")
                                          else hosts_round(work, env, t)):
                        counts[k] += f
                for k, name in enumerate(jobs):
                    print("| %s | %g | %d | %d |" % (name, t, a.rounds, counts[k]), flush=True)
                    rungs[k].append((t, counts[k]))
            for (name, test_t), rs in zip(TESTS[sc], rungs):
                hit = [t for t, c in rs if c]
                clear = [t for t, c in rs if not hit or t > max(hit)]
                print("%s: fired up to --timeout %s, never from %s; the test's --timeout %g: "
                      "margin %s" % (name, "%g s" % max(hit) if hit else "(none)",
                                     "%g s" % min(clear) if clear else "(every rung fired)",
                                     test_t, "%.0fx" % (test_t / min(clear)) if clear else
                                     "unknown"))
                if hit:  # what the longest healthy waits were
                    for what in sorted(set(WHAT.get((name, max(hit)), []))):
                        print("  at --timeout %g: %s" % (max(hit), what))
    finally:
        if stress:
            stress.terminate()
            stress.wait()
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
