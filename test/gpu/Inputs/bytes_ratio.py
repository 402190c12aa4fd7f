"""bytes_ratio.py FP32.jsonl BF16.jsonl MAX: the device bytes (read + written) of pass 1 of two
runs' fake CUDA counters (FAKE_CUDA_COUNTERS), their ratio, PASS when it is at most MAX (exit 1
otherwise)."""
import json
import sys


def step_bytes(path):
    for line in open(path):
        row = json.loads(line)
        if row.get("pass") == 1:
            return row["read"] + row["written"], row
    sys.exit(f"{path}: no step pass 1")


fp32, r32 = step_bytes(sys.argv[1])
bf16, r16 = step_bytes(sys.argv[2])
limit = float(sys.argv[3])
ratio = bf16 / fp32
print(f"fp32 step: {fp32} B ({r32['read']} read, {r32['written']} written)")
print(f"bf16 step: {bf16} B ({r16['read']} read, {r16['written']} written)")
ok = ratio <= limit
print(f"bf16 step / fp32 step: {ratio:.4f} (at most {limit}): {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
