#!/usr/bin/python3
"""Faults across hosts (test/e2e/hosts/hosts.sh: hosts made of Linux namespaces on this machine).

One table, a row per case, each case run R times (the median, and every round):
  1. a cut link under plain mpirun, Open MPI's TCP keepalive at 1 s / 1 s / 3 probes
     (docs/hosts.md's settings): seconds from the cut to mpirun's end, to the last rank gone on
     the cut host, and what was left running on either host;
  2. a cut link caught by the plan's watchdog (--timeout 3), under piper-run with Open MPI's
     keepalive left at its defaults: the same, and the seconds until the cut host is empty once
     its cable is back (its daemon ends then);
  3. a host lost under piper-run --min-ranks 2: the seconds from the cut to the first step the
     job completed on the hosts left (the restart on node1 alone, elastic).
DP4 (GPT L1 C32 H2 T16 B8) on node1 and node2, 2 slots each, the cut after 5 steps. The scenario
scripts are the tests' (test/e2e/hosts/Inputs). Where hosts cannot be made here, one line says
why and the script exits 0.
Usage: bench_hosts.py BUILD_DIR [--rounds R] [--workdir DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS_DIR = os.path.join(HERE, "..", "test", "e2e", "hosts")
HOSTS = os.path.join(HOSTS_DIR, "hosts.sh")


def run(cmd, cwd, env, timeout=600, **kw):
    return subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, check=True, **kw)


def values(text):
    """The "key value" lines a scenario script printed, as a dict of their last words."""
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2:
            out[words[0]] = words[-1]
    return out


def scenario(work, env, script, args):
    """One round of a scenario script inside a fresh set of hosts; its printed values."""
    p = subprocess.run(["bash", HOSTS, "with", "node1", "node2", "--", "bash",
                        os.path.join(HOSTS_DIR, "Inputs", script)] + args, cwd=work, env=env,
                       timeout=600, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return values(p.stdout), p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    check = subprocess.run(["sh", HOSTS, "check"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    print("### Faults across hosts (test/e2e/hosts: DP4 on node1 + node2, 2 slots each)")
    if check.returncode != 0:
        print("not measured: no hosts can be made on this machine: %s" % check.stdout.strip())
        return 0
    bindir = os.path.join(os.path.abspath(a.build), "bin")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = a.workdir or tempfile.mkdtemp(prefix="bench-hosts-")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "gpt.mlir"), "w") as f:
        run(["piper-gen", "gpt", "--layers", "1", "--dim", "32", "--heads", "2", "--seq", "16",
             "--batch", "8"], work, env, stdout=f)
    with open(os.path.join(work, "dp4.json"), "w") as f:
        run(["piper-sched", "gpipe", "--stages", "1", "--microbatches", "1", "--dp", "4"], work,
            env, stdout=f)
    run(["piper-compile", "gpt.mlir", "--strategy", "dp4.json", "-o", "plan"], work, env)
    with open(os.path.join(work, "hosts"), "w") as f:
        f.write("node1 slots=2\nnode2 slots=2\n")

    keepalive_mpirun = ["m.jsonl", "5", "node2", "--", "mpirun", "--allow-run-as-root", "-np",
                        "4", "--hostfile", "hosts", "--mca", "oob_tcp_keepalive_time", "1",
                        "--mca", "oob_tcp_keepalive_intvl", "1", "--mca",
                        "oob_tcp_keepalive_probes", "3", "./plan", "--steps", "100000",
                        "--timeout", "30", "--metrics", "m.jsonl"]
    watchdog = ["m.jsonl", "5", "node2", "--", "env", "OMPI_MCA_oob_tcp_keepalive_time=300",
                "OMPI_MCA_oob_tcp_keepalive_intvl=20", "OMPI_MCA_oob_tcp_keepalive_probes=9",
                "piper-run", "-np", "4", "--hostfile", "hosts", "--max-restarts", "0",
                "--checkpoint-dir", "ring", "--", "./plan", "--steps", "100000",
                "--checkpoint-every", "2", "--timeout", "3", "--metrics", "m.jsonl"]
    lost = ["m.jsonl", "5", "node2", "hosts", "-", "--", "piper-run", "-np", "4", "--hostfile",
            "hosts", "--min-ranks", "2", "--checkpoint-dir", "ring", "--", "./plan", "--steps",
            "60", "--checkpoint-every", "2", "--timeout", "60", "--metrics", "m.jsonl"]
    cases = [("cut link, plain mpirun, keepalive 1 s / 1 s / 3", "cut_link.sh", keepalive_mpirun,
              ["ended", "ranks-gone", "healed-empty"]),
             ("cut link, piper-run, watchdog --timeout 3 (keepalive off)", "cut_link.sh",
              watchdog, ["ended", "ranks-gone", "healed-empty"]),
             ("host lost, piper-run --min-ranks 2 (its keepalive defaults)", "lose_host.sh", lost,
              ["cut-to-step"])]
    print()
    print("| case | cut to the job's end (s) | cut to the cut host's last rank gone (s) | "
          "cable back to the cut host empty (s) | cut to the next completed step (s) | rounds |")
    print("|---|---|---|---|---|---|")
    for name, script, args, keys in cases:
        got = {k: [] for k in keys}
        notes = []
        for _ in range(a.rounds):
            shutil.rmtree(os.path.join(work, "ring"), ignore_errors=True)
            v, text = scenario(work, env, script, args)
            for k in keys:
                if k in v:
                    got[k].append(float(v[k]))
            left = [l for l in text.splitlines() if l.startswith("left ") and
                    not l.endswith(": none") and "ranks 0, others 0" not in l]
            notes += left
        cols = []
        for k in ["ended", "ranks-gone", "healed-empty", "cut-to-step"]:
            cols.append("%.2f" % statistics.median(got[k]) if got.get(k) else "-")
        rounds = "; ".join(",".join("%.1f" % x for x in got[k]) for k in keys if got[k])
        print("| %s | %s | %s |" % (name, " | ".join(cols), rounds))
        for n in sorted(set(notes)):
            print("|  | left at the end: %s |  |  |  |  |" % n)
    print()
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
