"""Drives piper-run over a launcher that will not die the polite way, to check that a job
piper-run gives up on leaves no rank running.

stray_rank.py PIPER_RUN [piper-run flags]: writes ./stubborn-mpirun, a stand-in for mpirun
that ignores SIGUSR1 and SIGTERM and starts one "rank" in a session (so a process group) of
its own, as Open MPI does, which ignores them too; runs PIPER_RUN --mpirun ./stubborn-mpirun
FLAGS -- ./plan; once the rank runs, sends piper-run SIGTERM (so piper-run asks, waits
--grace, sends SIGTERM, and 10 s later its last resort: SIGKILL); then prints piper-run's
exit status and whether the rank is still alive (and kills it if so, so no test leaves it).
"""
import os
import signal
import subprocess
import sys
import time

LAUNCHER = """#!/bin/sh
setsid sh -c 'trap "" TERM USR1 HUP; echo $$ > rank.pid; while :; do sleep 0.2; done' &
trap '' TERM USR1 HUP
while :; do sleep 0.2; done
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead: only its parent has not reaped it yet
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def main():
    with open("stubborn-mpirun", "w") as f:
        f.write(LAUNCHER)
    os.chmod("stubborn-mpirun", 0o755)
    if os.path.exists("rank.pid"):
        os.remove("rank.pid")
    cmd = [sys.argv[1], "--mpirun", "./stubborn-mpirun"] + sys.argv[2:] + ["--", "./plan"]
    p = subprocess.Popen(cmd)
    deadline = time.monotonic() + 60
    while not (os.path.exists("rank.pid") and os.path.getsize("rank.pid")):
        if time.monotonic() > deadline or p.poll() is not None:
            print("the stand-in rank never started")
            p.kill()
            return 1
        time.sleep(0.05)
    with open("rank.pid") as f:
        rank = int(f.read())
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=90)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "timeout"
    print("exit %s" % rc)
    time.sleep(0.5)  # the kill is asynchronous for a process piper-run no longer reaps
    if alive(rank):
        print("rank %d left running" % rank)
        os.killpg(rank, signal.SIGKILL)
    else:
        print("no rank left running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
