#!/usr/bin/python3
"""Compile time against device count: piper-compile (autodiff, directives, extraction, no-hang
proof, lowering, x86-64 object) for a small GPT (L2 C32 H2 T16) under pure data parallelism
and under PP x DP, as the device count grows. Prints wall time and peak memory of the compiler.
Usage: bench_compile.py BUILD_DIR
"""
import os
import subprocess
import sys
import time


def compile_time(bin_dir, work, tag, stages, batch, sched_args):
    mlir, strategy = os.path.join(work, tag + ".mlir"), os.path.join(work, tag + ".json")
    with open(mlir, "w") as f:
        subprocess.run([os.path.join(bin_dir, "piper-gen"), "gpt", "--layers", "2", "--dim", "32",
                        "--heads", "2", "--seq", "16", "--batch", str(batch),
                        "--stages", str(stages)], stdout=f, check=True)
    with open(strategy, "w") as f:
        subprocess.run([os.path.join(bin_dir, "piper-sched")] + sched_args, stdout=f, check=True)
    rss = os.path.join(work, tag + ".rss")
    t0 = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss, os.path.join(bin_dir, "piper-compile"),
                    mlir, "--strategy", strategy, "-o", os.path.join(work, tag + ".o"),
                    "--emit=obj"], check=True)
    seconds = time.perf_counter() - t0
    return seconds, int(open(rss).read().split()[-1]) / 1024


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    bin_dir, work = os.path.join(build, "bin"), os.path.join(build, "bench", "compile")
    os.makedirs(work, exist_ok=True)
    print("## Compile time against devices (L2 C32 GPT; one process, this machine)\n")
    print("| strategy | devices | compile s | s per device | compiler peak RSS MB |")
    print("|---|---|---|---|---|")
    for dp in (2, 8, 32, 128, 512, 1024):
        s, mb = compile_time(bin_dir, work, "dp%d" % dp, 1, dp,
                             ["gpipe", "--stages", "1", "--microbatches", "1", "--dp", str(dp)])
        print("| DP%d | %d | %.2f | %.3f | %.0f |" % (dp, dp, s, s / dp, mb))
    for dp in (2, 8, 32):
        n = 2 * dp
        s, mb = compile_time(bin_dir, work, "pp2dp%d" % dp, 2, 4 * dp,
                             ["1f1b", "--stages", "2", "--microbatches", "4", "--dp", str(dp)])
        print("| PP2 x DP%d 1F1B, 4 microbatches | %d | %.2f | %.3f | %.0f |" % (dp, n, s, s / n, mb))
    print("\nExtraction writes one function per device, so time grows linearly with devices. "
          "Data-parallel replicas differ only in their batch offset, peers and shard index: "
          "sharing one function per role (those values read from the rank at run time) is the "
          "planned step to constant time in the replica count.")


if __name__ == "__main__":
    main()
