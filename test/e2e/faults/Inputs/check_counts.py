#!/usr/bin/python3
"""check_counts.py ERR...: in each piper-run stderr file, the first fault line's "after N
completed steps; resuming from step K" and the "recovered" line's "completed step F ... (R steps
redone)" must agree: R = N - K and F = K + 1. Exits 1 naming the file otherwise."""
import re
import sys

for path in sys.argv[1:]:
    text = open(path).read()
    fault = re.search(r"after (\d+) completed steps?; resuming from step (\d+)", text)
    rec = re.search(r"recovered: the restarted job completed step (\d+) .*\((\d+) steps? redone\)",
                    text)
    if not fault or not rec:
        sys.exit("check_counts.py: %s lacks the fault or the recovered line" % path)
    n, k = int(fault.group(1)), int(fault.group(2))
    f, r = int(rec.group(1)), int(rec.group(2))
    if r != n - k or f != k + 1:
        sys.exit("check_counts.py: %s: after %d steps, resumed from %d, first step %d, %d redone"
                 % (path, n, k, f, r))
    print("check_counts.py: %s: after %d, from %d, first %d, redone %d" % (path, n, k, f, r))
