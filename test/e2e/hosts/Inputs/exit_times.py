#!/usr/bin/python3
"""exit_times.py SECONDS PID...: waits until every PID has exited (at most SECONDS) and prints
the wall-clock time (time.time()) the last one exited, or "alive N" with the count still
running at the deadline. Each process is watched through a pidfd (Linux 5.3+), which becomes
readable the moment it exits: the time is the exit's, give or take a wake-up, not a polling
round's, which a loaded machine stretches. A PID already gone when asked about counts as
exited then (the caller takes the list while they run). Exit status 0; 2 for a bad command
line."""
import os
import select
import sys
import time


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: exit_times.py SECONDS PID...")
    deadline = time.monotonic() + float(sys.argv[1])
    last = time.time()
    poller, open_fds = select.poll(), {}
    for pid in sys.argv[2:]:
        try:
            fd = os.pidfd_open(int(pid))
        except ProcessLookupError:
            continue  # gone already: it exited before now
        poller.register(fd, select.POLLIN)
        open_fds[fd] = pid
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            print("alive %d" % len(open_fds))
            return
        for fd, _ in poller.poll(left * 1000):
            last = time.time()
            poller.unregister(fd)
            os.close(fd)
            del open_fds[fd]
    print("%.3f" % last)


if __name__ == "__main__":
    main()
