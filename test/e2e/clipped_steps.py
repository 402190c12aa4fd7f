#!/usr/bin/env python3
"""clipped_steps.py METRICS G: counts the steps of a metrics file whose grad_norm (the global
norm before clipping) is above G, so a clipping test can show that clipping really happened.
Exits 1 if no step has a grad_norm."""
import json
import sys

path, g = sys.argv[1], float(sys.argv[2])
norms = []
with open(path) as f:
    for line in f:
        rec = json.loads(line)
        if "grad_norm" in rec and rec.get("kind", "train") == "train":
            norms.append(rec["grad_norm"])
if not norms:
    sys.exit(f"clipped_steps.py: no grad_norm in {path}")
print(f"clipped on {sum(n > g for n in norms)} of {len(norms)} steps")
print(f"not clipped on {sum(n <= g for n in norms)} of {len(norms)} steps")
