#!/usr/bin/env python3
"""Tables from PIPER_CUDA_PROFILE files (runtime/kernels/cuda.c), for test/gpu/on_gpu.sh.

  on_gpu_report.py profile [--attention-shape L,B,H,T,D] FILE...
                                     per file: the step's time by device operation (a kernel
                                     of lowering/gpu_kernels.c, a cuBLAS call, an attention
                                     launch) and by runtime function (the plan's op), each with
                                     its count, milliseconds and share of the timed total; with
                                     the profiled model's attention shape (L layers), the
                                     attention's forward and backward in TFLOP/s (causal:
                                     forward 2 B H T^2 D a layer, backward 2.5x that, as
                                     bench/bench_attention_gpu.cu counts them)
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


# The runtime functions of the attention ops (runtime/kernels/cuda.c)
ATTN_FWD = ("prt_cuda_attention_fwd", "prt_cuda_gqa_attention_fwd")
ATTN_BWD = ("prt_cuda_attention_bwd", "prt_cuda_gqa_attention_bwd")


def profile(records, name, shape=None):
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
    if shape:
        L, B, H, T, D = shape
        fwd = 2.0 * B * H * T * T * D * L
        print("| attention | ops | ms | TFLOP/s |")
        print("|---|---|---|---|")
        for what, fns, flops in (("forward", ATTN_FWD, fwd), ("backward", ATTN_BWD, 2.5 * fwd)):
            n, ms = 0, 0.0
            for f in fns:
                n, ms = n + by_fn.get(f, (0, 0))[0], ms + by_fn.get(f, (0, 0.0))[1]
            print("| {} | {} | {:.3f} | {} |".format(
                what, n, ms, "{:.1f}".format(flops / ms / 1e9) if ms > 0 else "-"))
        print()


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
    args = sys.argv[1:]
    shape = None
    if len(args) > 2 and args[1] == "--attention-shape":
        try:
            shape = [int(x) for x in args[2].split(",")]
            if len(shape) != 5 or min(shape) <= 0:
                raise ValueError
        except ValueError:
            sys.exit("--attention-shape {}: expected L,B,H,T,D (positive integers)".format(args[2]))
        args = args[:1] + args[3:]
    if len(args) < 2 or args[0] not in ("profile", "memory"):
        sys.exit(__doc__)
    what, bad = args[0], 0
    for path in args[1:]:
        try:
            records = load(path)
            if what == "profile":
                profile(records, label(path), shape)
            else:
                memory(records, label(path))
        except (OSError, ValueError, StopIteration, KeyError) as e:
            print("### {}: no {} ({}: {})\n".format(label(path), what, type(e).__name__, e))
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
