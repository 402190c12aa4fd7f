#!/usr/bin/python3
"""ref_tail.py REF.jsonl RUN.jsonl END OUT.jsonl: REF's metrics from the first step RUN.jsonl
holds on, into OUT.jsonl, for compare_runs.py (a supervised run's --metrics holds its last
job's steps only). Exits 1 unless RUN.jsonl's train steps are exactly first..END-1, so a job
that stopped early or skipped a step cannot pass."""
import json
import sys

ref, run, end, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
steps = [json.loads(l)["step"] for l in open(run) if '"train"' in l]
if not steps or steps != list(range(steps[0], end)):
    sys.exit(f"ref_tail.py: {run} holds steps {steps}, expected a run of steps ending at {end - 1}")
with open(out, "w") as f:
    f.writelines(l for l in open(ref) if '"train"' not in l or json.loads(l)["step"] >= steps[0])
print(f"ref_tail.py: steps {steps[0]}..{end - 1}")
