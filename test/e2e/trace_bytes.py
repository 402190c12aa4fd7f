"""Sums the bytes (args.bytes) of the gradient collectives (all_reduce and reduce_scatter
events) in each merged --trace file given, and the ratio of the first file's sum to the
second's. Prints "NAME: B bytes in K collectives" per file, then "ratio R"."""
import json
import os
import sys

sums = []
for path in sys.argv[1:3]:
    trace = json.load(open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ours = [e for e in events if e.get("name", "").startswith(("all_reduce", "reduce_scatter"))]
    total = sum(e["args"]["bytes"] for e in ours)
    print(f"{os.path.basename(path)}: {total} bytes in {len(ours)} collectives")
    sums.append(total)
if len(sums) != 2 or sums[1] == 0:
    sys.exit("trace_bytes.py: expected two traces, the second with gradient collectives")
print(f"ratio {sums[0] / sums[1]:.4f}")
