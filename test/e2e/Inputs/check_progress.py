#!/usr/bin/python3
"""Checks the per-step stdout lines of a run against its --metrics (progress-line.test).

  check_progress.py STDOUT METRICS EVERY

Each line "step i/S | loss L | X ms | T tok/s | eta E" (with " | lr x" and " | grad norm g"
after the loss when the metrics line has lr / grad_norm) must show the metrics' step i-1, its
loss (6 decimals) and ms (1 decimal), and E = (S - i) x the mean step_ms of steps 1..i, in
seconds rounded to the nearest, as m:ss (h:mm:ss from an hour). The lines shown must be the
first, every i that EVERY divides, and the last. Prints "@lines", "@eta" then "ok" or "FAIL".
"""
import json
import re
import sys

from checks import exit_code, section

out, metrics, every = sys.argv[1], sys.argv[2], int(sys.argv[3])
train = [m for m in map(json.loads, open(metrics)) if m["kind"] == "train"]
LINE = re.compile(r"^step +(\d+)/(\d+) \| loss (\S+)( \| lr \S+)?( \| grad norm \S+)? \| "
                  r"(\S+) ms \| (\d+) tok/s \| eta (\d+:)?(\d+):(\d\d)$")


lines = [l.rstrip("\n") for l in open(out) if l.startswith("step ")]
p, e, shown = [], [], []
first = train[0]["step"]
for l in lines:
    m = LINE.match(l)
    if not m:
        p.append("malformed: %r" % l)
        continue
    i, S = int(m.group(1)), int(m.group(2))
    rec = train[i - 1 - first]
    shown.append(i)
    if S != train[-1]["step"] + 1 or m.group(3) != "%.6f" % rec["loss"] or \
            m.group(6) != "%.1f" % rec["step_ms"] or bool(m.group(4)) != ("lr" in rec) or \
            bool(m.group(5)) != ("grad_norm" in rec):
        p.append("%r does not show %s" % (l, rec))
    ms = [r["step_ms"] for r in train[: i - first]]
    want = (S - i) * sum(ms) / len(ms) / 1000
    got = int((m.group(8) or "0:")[:-1]) * 3600 + int(m.group(9)) * 60 + int(m.group(10))
    if m.group(8) is None and int(m.group(9)) >= 60:
        e.append("%r: minutes >= 60 without hours" % l)
    near_half = abs(want % 1 - 0.5) < 1e-3  # metrics print ms to 6 digits
    if got != int(want + 0.5) and not (near_half and abs(got - want) <= 0.5 + 1e-3):
        e.append("%r: eta %d s, want %.3f s" % (l, got, want))
last = train[-1]["step"] + 1
want_shown = [i for i in range(first + 1, last + 1) if i == first + 1 or i == last or i % every == 0]
if shown != want_shown:
    p.append("lines for steps %s, want %s" % (shown, want_shown))
section("lines", p)
section("eta", e)
sys.exit(exit_code())
