#!/usr/bin/python3
"""Checks a --metrics file against the schema in docs/metrics-and-traces.md (metrics-kinds.test).

  check_metrics.py FILE FIRST STEPS TOKENS WORLD

Every line is a JSON object whose first key is "kind". "train" lines: keys in the order
kind, step, loss, [lr], [grad_norm], step_ms, tokens_per_s, mem; steps FIRST .. FIRST+STEPS-1
in order; a finite loss; step_ms > 0; tokens_per_s = TOKENS / (step_ms / 1000) (relative 1e-4:
both are printed to 6 significant digits); mem = {params, optim, arena}, bytes > 0 except optim
(>= 0). "eval" lines are allowed anywhere after the first step. The first line is the only
"phases": kind, main, mpi_init, setup, open, wall-clock seconds in that order, none
decreasing. A "stop" line (kind, signal SIGINT or SIGTERM, steps: the last train step + 1) may
come just before the summary; "fault" lines (kind, rank, step, site, action, t, lost) anywhere
after the phases. The last line is the only "summary": kind, ranks; ranks 0..WORLD-1, each with
integer byte counts params, optim, arena, [activations, grads], peak_rss. Prints "@phases",
"@train", "@summary" then "ok" or "FAIL: ..." after each.
"""
import json
import math
import sys

from checks import exit_code, section

path, first, steps, tokens, world = sys.argv[1], *map(int, sys.argv[2:6])
lines = [json.loads(l) for l in open(path)]


KINDS = ("phases", "train", "eval", "fault", "stop", "summary")
p = []
for m in lines:
    if not isinstance(m, dict) or list(m)[:1] != ["kind"] or m["kind"] not in KINDS:
        p.append("line without a known kind first: %s" % m)
phases = [m for m in lines if isinstance(m, dict) and m.get("kind") == "phases"]
if len(phases) != 1 or lines[0] is not phases[0]:
    p.append("%d phases lines, first line %s" % (len(phases), lines[0]))
elif list(phases[0]) != ["kind", "main", "mpi_init", "setup", "open"] or \
        not all(isinstance(phases[0][k], float) for k in list(phases[0])[1:]) or \
        sorted(list(phases[0].values())[1:]) != list(phases[0].values())[1:]:
    p.append("phases %s" % phases[0])
for m in lines:
    if isinstance(m, dict) and m.get("kind") == "fault" and \
            list(m) != ["kind", "rank", "step", "site", "action", "t", "lost"]:
        p.append("fault keys %s" % list(m))
section("phases", p)

p = []
train = [m for m in lines if m.get("kind") == "train"]
stops = [i for i, m in enumerate(lines) if m.get("kind") == "stop"]
if stops and (len(stops) > 1 or stops[0] != len(lines) - 2 or list(lines[stops[0]]) !=
              ["kind", "signal", "steps"] or lines[stops[0]]["signal"] not in ("SIGINT", "SIGTERM")
              or not train or lines[stops[0]]["steps"] != train[-1]["step"] + 1):
    p.append("stop lines %s" % [lines[i] for i in stops])
if [m["step"] for m in train] != list(range(first, first + steps)):
    p.append("steps %s, want %d..%d" % ([m["step"] for m in train], first, first + steps - 1))
for m in train:
    keys = [k for k in m if k not in ("lr", "grad_norm")]
    if keys != ["kind", "step", "loss", "page_faults", "step_ms", "tokens_per_s", "mem"] or \
            not (isinstance(m["page_faults"], int) and m["page_faults"] >= 0):
        p.append("train keys %s" % list(m))
    elif not (isinstance(m["loss"], float) and math.isfinite(m["loss"]) and m["step_ms"] > 0):
        p.append("loss or step_ms wrong: %s" % m)
    elif abs(m["tokens_per_s"] - tokens / (m["step_ms"] / 1000)) > 1e-4 * m["tokens_per_s"]:
        p.append("tokens_per_s %g, want %d / %g ms" % (m["tokens_per_s"], tokens, m["step_ms"]))
    elif list(m["mem"]) != ["params", "optim", "arena"] or min(m["mem"]["params"], m["mem"]["arena"]) <= 0:
        p.append("mem %s" % m["mem"])
    for k in ("lr", "grad_norm"):  # present only when the run knows them
        if k in m and not (isinstance(m[k], float) and math.isfinite(m[k])):
            p.append("%s is %r" % (k, m[k]))
section("train", p)

p = []
summaries = [m for m in lines if m.get("kind") == "summary"]
if len(summaries) != 1 or lines[-1].get("kind") != "summary":
    p.append("%d summary lines, last line %s" % (len(summaries), lines[-1]))
else:
    s = summaries[0]
    if list(s) != ["kind", "ranks"] or [r.get("rank") for r in s["ranks"]] != list(range(world)):
        p.append("summary %s" % s)
    for r in s["ranks"]:
        keys = [k for k in r if k not in ("activations", "grads")]
        if keys != ["rank", "params", "optim", "arena", "peak_rss"] or \
                not all(isinstance(v, int) and v >= 0 for v in r.values()) or r["peak_rss"] <= 0:
            p.append("rank entry %s" % r)
section("summary", p)
sys.exit(exit_code())
