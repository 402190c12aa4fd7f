#!/usr/bin/env python3
"""Tables from PIPER_CUDA_PROFILE files (runtime/kernels/cuda.c), for test/gpu/on_gpu.sh.

  on_gpu_report.py profile FILE...   per file: the step's time by device operation (a kernel
                                     of lowering/gpu_kernels.c, a cuBLAS call, an attention
                                     launch) and by runtime function (the plan's op), each with
                                     its count, milliseconds and share of the timed total
  on_gpu_report.py memory FILE...    per file: the plan's device bytes (parameters, AdamW
                                     moments, arena, inputs and loss) and the runtime's scratch,
                                     against what the process took (cudaMemGetInfo's free bytes
                                     before the plan allocated minus after the profiled step)

A file that is missing or holds no step (its run failed) is named and counted: the script then
exits 1 after printing the tables it could make.
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def label(path):
    return os.path.basename(path).replace("profile_", "").replace(".jsonl", "")


def table(title, rows, total):
    print("| {} | ops | ms | share |".format(title))
    print("|---|---|---|---|")
    for name, (n, ms) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        print("| {} | {} | {:.3f} | {:.1f}% |".format(name, n, ms, 100 * ms / total if total else 0))
    print()


def profile(records, name):
    ops = [r for r in records if r["kind"] == "op"]
    step = next(r for r in records if r["kind"] == "step")
    total = sum(r["ms"] for r in ops)
    print("### {}: step pass {}, {} operations, {:.3f} ms first to last event, {:.3f} ms "
          "inside operations{}\n".format(name, step["pass"], step["ops"], step["ms"], total,
                                         ", {} untimed".format(step["untimed"])
                                         if step["untimed"] else ""))
    by_op, by_fn = {}, {}
    for r in ops:
        for key, d in ((r["name"], by_op), (r["fn"], by_fn)):
            n, ms = d.get(key, (0, 0.0))
            d[key] = (n + 1, ms + r["ms"])
    table("device operation", by_op, total)
    table("runtime function", by_fn, total)


def memory(records, name):
    m = next(r for r in records if r["kind"] == "mem")
    plan = m["params"] + m["optim"] + m["arena"] + m["io"]
    used = m["free_at_setup"] - m["free"]
    mb = lambda b: "{:.1f}".format(b / 1e6)
    print("### {}\n".format(name))
    print("| bytes (MB) | value |")
    print("|---|---|")
    for k in ("params", "optim", "arena", "io"):
        print("| plan: {} | {} |".format(k, mb(m[k])))
    print("| plan total | {} |".format(mb(plan)))
    print("| runtime scratch (kernels/cuda.c) | {} |".format(mb(m["runtime"])))
    print("| taken from the device (cudaMemGetInfo) | {} |".format(mb(used)))
    print("| taken - plan - scratch (CUDA context modules, cuBLAS workspace, graphs) | {} |"
          .format(mb(used - plan - m["runtime"])))
    print("| device total / free at setup | {} / {} |\n".format(mb(m["total"]),
                                                              mb(m["free_at_setup"])))


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("profile", "memory"):
        sys.exit(__doc__)
    what, bad = sys.argv[1], 0
    for path in sys.argv[2:]:
        try:
            records = load(path)
            (profile if what == "profile" else memory)(records, label(path))
        except (OSError, ValueError, StopIteration, KeyError) as e:
            print("### {}: no {} ({}: {})\n".format(label(path), what, type(e).__name__, e))
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
