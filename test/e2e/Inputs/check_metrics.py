#!/usr/bin/python3
"""Checks a --metrics file against the schema in docs/metrics-and-traces.md (metrics-kinds.test).

  check_metrics.py FILE FIRST STEPS TOKENS WORLD

Every line is a JSON object whose first key is "kind". "train" lines: keys in the order
kind, step, loss, [lr], [grad_norm], step_ms, tokens_per_s, mem; steps FIRST .. FIRST+STEPS-1
in order; a finite loss; step_ms > 0; tokens_per_s = TOKENS / (step_ms / 1000) (relative 1e-4:
both are printed to 6 significant digits); mem = {params, optim, arena}, bytes > 0 except optim
(>= 0). "eval" lines are allowed anywhere after the first step. The last line is the only
"summary": kind, ranks; ranks 0..WORLD-1, each with integer byte counts params, optim, arena,
[activations, grads], peak_rss. Prints "@train", "@summary" then "ok" or "FAIL: ...".
"""
import json
import math
import sys

from checks import exit_code, section

path, first, steps, tokens, world = sys.argv[1], *map(int, sys.argv[2:6])
lines = [json.loads(l) for l in open(path)]


p = []
train = [m for m in lines if m.get("kind") == "train"]
for m in lines:
    if not isinstance(m, dict) or list(m)[:1] != ["kind"] or m["kind"] not in ("train", "eval", "summary"):
        p.append("line without a known kind first: %s" % m)
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
