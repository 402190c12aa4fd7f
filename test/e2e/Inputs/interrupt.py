#!/usr/bin/python3
"""Runs a training command and interrupts it mid-run, for the signal and watchdog tests.

  interrupt.py MODE METRICS MIN_STEPS TARGET -- COMMAND...

Starts COMMAND (a ./train or an mpirun), waits until METRICS holds MIN_STEPS "train" lines (so
training is under way), then acts on TARGET, which is "self" (the started process: ./train or
mpirun) or "rank" (mpirun's last child, one rank):
  term   SIGTERM        int   SIGINT        kill   SIGKILL        stop   SIGSTOP
Then waits for COMMAND (at most 120 s, so a regression fails instead of hanging) and prints
`exit N` (negative: killed by that signal) and `elapsed S` (seconds from the signal to the end).
A stopped rank is continued and killed afterwards, whatever happened.
"""
import os
import signal
import subprocess
import sys
import time

SIGNALS = {"term": signal.SIGTERM, "int": signal.SIGINT, "kill": signal.SIGKILL,
           "stop": signal.SIGSTOP}


def steps_in(path):
    try:
        with open(path) as f:
            return sum(1 for line in f if line.startswith('{"kind": "train"'))
    except FileNotFoundError:
        return 0


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return sorted(out)


def main():
    mode, metrics, min_steps, target = sys.argv[1:5]
    assert sys.argv[5] == "--"
    cmd = sys.argv[6:]
    proc = subprocess.Popen(cmd)
    victim = None
    try:
        deadline = time.time() + 120
        while steps_in(metrics) < int(min_steps):
            if proc.poll() is not None or time.time() > deadline:
                print(f"error: the run ended or stalled before step {min_steps}: exit "
                      f"{proc.returncode}")
                return 1
            time.sleep(0.02)
        victim = proc.pid if target == "self" else children(proc.pid)[-1]
        t0 = time.time()
        os.kill(victim, SIGNALS[mode])
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            print("error: the run did not end within 120 s")
        print(f"exit {rc}")
        print(f"elapsed {time.time() - t0:.1f}")
        sys.stdout.flush()
    finally:
        if proc.poll() is None:
            proc.kill()
        if victim and mode == "stop":
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(victim, sig)
                except ProcessLookupError:
                    pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
