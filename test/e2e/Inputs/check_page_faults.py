"""check_page_faults.py (dp-page-faults.test): rank 0's "page_faults" in steps 3-9 of a
--metrics file; their median must be under 64 (a one-off burst, Open MPI growing a free list,
does not count; a per-step re-fault of the buckets' buffers does)."""
import json
import statistics
import sys

faults = [m["page_faults"] for m in map(json.loads, open(sys.argv[1]))
          if m["kind"] == "train" and 3 <= m["step"] <= 9]
if len(faults) != 7:
    sys.exit("FAIL: %d train records for steps 3-9, want 7" % len(faults))
if statistics.median(faults) >= 64:
    print("FAIL: steps 3-9: page faults %s, want a median under 64" % faults)
    sys.exit(1)
print("steps 3-9: median under 64 page faults %s" % faults)
