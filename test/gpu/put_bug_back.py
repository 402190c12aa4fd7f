#!/usr/bin/env python3
"""Writes a copy of a runtime source with one known bug put back, for the fake CUDA runtime's
negative controls (test/gpu/fake-cuda-strict.test): each detector of test/gpu/fake_cuda.c must
stop the runtime built from that copy, naming the bug.

    put_bug_back.py NAME SRC_ROOT OUT    writes OUT: SRC_ROOT's file with bug NAME put back
    put_bug_back.py --list               the bugs, one a line

Each bug is an exact text replacement, which must match the file once: when the runtime's text
moved (an edit of the anchor lines), this stops naming the bug and what to update, rather than
writing a copy without the bug (a negative control that cannot fail)."""
import sys

# name: (file, the text today, the text with the bug, what the bug is)
BUGS = {
    # The first H200 run: a plan of several ranks launched each AdamW update at once with a
    # one-entry table, rewriting the pinned entry for the next update before the asynchronous
    # copy of the previous one ran (multi-rank plans updated the wrong tensors).
    "adam-table-rewritten": (
        "runtime/kernels/cuda.c",
        "  table_add(&S.adam_tab, e, n, fn);\n  if (!S.defer) adam_flush(ctx);\n",
        "  if (!S.defer) S.adam_tab.n = S.adam_tab.launched = 0; /* BUG PUT BACK */\n"
        "  table_add(&S.adam_tab, e, n, fn);\n  if (!S.defer) adam_flush(ctx);\n",
        "each AdamW update of a multi-rank plan rewrites entry 0 of the pinned table",
    ),
    # A replayed step's optimizer scalars written to the pinned row after the graph launch:
    # the captured copy that reads them may not have run yet.
    "graph-scalars-late": (
        "runtime/kernels/cuda.c",
        "    adam_scalars_fill(ctx);\n"
        "    CUDA_OR_DIE(\"the step's CUDA graph\", \"cudaGraphLaunch\",\n"
        "                cudaGraphLaunch(S.graph, compute_stream()));\n",
        "    CUDA_OR_DIE(\"the step's CUDA graph\", \"cudaGraphLaunch\",\n"
        "                cudaGraphLaunch(S.graph, compute_stream()));\n"
        "    adam_scalars_fill(ctx); /* BUG PUT BACK */\n",
        "the graph's pinned AdamW scalars are written after cudaGraphLaunch",
    ),
    # The first H200 run: a plan without declared streams computed on the legacy stream, which
    # CUDA refuses to capture, so no step ever ran as a CUDA graph.
    "legacy-compute-stream": (
        "runtime/device/cuda_common.c",
        "  if (ctx->streams && ctx->nstreams > 0) return (cudaStream_t)ctx->streams[0];\n",
        "  if (ctx->streams && ctx->nstreams > 0) return (cudaStream_t)ctx->streams[0];\n"
        "  return (cudaStream_t)0; /* BUG PUT BACK: the legacy stream */\n",
        "a plan without declared streams computes on the legacy stream",
    ),
    # The device's alloc without its zeroing: the runtime relies on zeroed device memory
    # (device.h's contract), which a GPU's cudaMalloc does not give.
    "alloc-not-zeroed": (
        "runtime/device/cuda.c",
        "  cudaError_t e = cudaMemset(p, 0, n);\n",
        "  cudaError_t e = cudaSuccess; /* BUG PUT BACK: no cudaMemset(p, 0, n) */\n",
        "device/cuda.c's alloc returns cudaMalloc's memory unzeroed",
    ),
}


def main(argv):
    if argv[1:] == ["--list"]:
        for name, (path, _, _, what) in BUGS.items():
            print(f"{name}: {path}: {what}")
        return 0
    if len(argv) != 4 or argv[1] not in BUGS:
        sys.stderr.write(f"usage: {argv[0]} NAME SRC_ROOT OUT (NAME: {', '.join(BUGS)}) "
                         f"or --list\n")
        return 2
    name, root, out = argv[1:]
    path, today, bug, _ = BUGS[name]
    with open(f"{root}/{path}") as f:
        text = f.read()
    if text.count(today) != 1:
        sys.stderr.write(f"put_bug_back.py: {name}: {path} holds the anchor text "
                         f"{text.count(today)} times, not once: the runtime changed; update "
                         f"BUGS['{name}'] in test/gpu/put_bug_back.py to the new text\n")
        return 2
    with open(out, "w") as f:
        f.write(text.replace(today, bug))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
