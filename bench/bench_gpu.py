#!/usr/bin/python3
"""GPU training step: Piper's --target cuda binary against PyTorch on the same GPU, one run.

The GPT of the issue (L12 C768 H12 T1024 B16 V256, 86M parameters), one AdamW step:
  piper fp32           piper-compile --target cuda (cuBLAS in pedantic fp32: no TF32)
  piper bf16           piper-compile --target cuda --precision bf16 (docs/mixed-precision.md:
                       activations stored bf16, each kernel loading and storing bf16 itself;
                       the linears on bf16 operands, fp32 accumulate; the attention
                       FlashAttention-2's, runtime/kernels/cuda_fa2.cu, the default at head
                       size 64 in both plans, fp32 FMAs in the fp32 one)
  piper bf16, tensor-core attention
                       the same binary with PIPER_CUDA_ATTN=tc: runtime/kernels/cuda_flash.cu,
                       the bf16 plans' attention before FlashAttention-2 (the H200's 149.6 ms)
  piper bf16, fp32 attention
                       only with --all-rows: the same binary with PIPER_CUDA_ATTN=fp32, the
                       scalar fp32 attention kernels (15x slower on an H200: docs/gpu-speed.md)
  pytorch eager fp32   test/oracle/gpt_torch.py's model on CUDA, TF32 off
  pytorch eager bf16   the same under torch.autocast(bfloat16)
  pytorch compile bf16 torch.compile of the step's forward and loss, autocast bf16
For each: median ms/step over the timed steps (after warm-up), tokens/s,
  TFLOP/s = (6 * params * tokens + 12 * L * B * T^2 * C) / step time (fwd + bwd; attention
            counted over the full T x T as the 6PT convention's companion term)
  MFU     = TFLOP/s / the GPU's dense bf16 tensor peak (H100 SXM: 989; A100: 312; --peak).
Without a GPU it prints that the table was skipped and why, and exits 0.

The GPU machine has no LLVM/MLIR, so the binary is built where piper-compile runs:
  bench_gpu.py BUILD_DIR --compile-only OUT_DIR   (here: writes OUT_DIR/piper_gpu_train and
                                                   OUT_DIR/piper_gpu_train_bf16)
  bench_gpu.py BUILD_DIR --binary OUT_DIR/piper_gpu_train   (there; the bf16 binary is taken
                                                   from beside it, or --binary-bf16)
The table ends with the bf16 row against PyTorch's eager bf16 autocast and torch.compile bf16
(the issue's targets: <= 28.2 ms, aiming at 21 ms on an H100).
`make bench` runs it with BUILD_DIR alone: compile, then measure, when a GPU is present.

Without a GPU:
  bench_gpu.py BUILD_DIR --counters OUT_DIR   what a step asks of a GPU, counted by the fake
                                              CUDA runtime (test/gpu/fake_cuda.c): kernels a
                                              step and a layer, launch calls, host waits,
                                              allocations after the warm-up, bytes each way
  bench_gpu.py BUILD_DIR --estimate           the roofline floor of the bench step
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = dict(layers=12, dim=768, heads=12, seq=1024, batch=16, vocab=256)
PEAKS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}  # dense bf16 TFLOP/s


def params_of(m):
    L, C, T, V = m["layers"], m["dim"], m["seq"], m["vocab"]
    return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C


def flops_of(m):
    P, tokens = params_of(m), m["batch"] * m["seq"]
    return 6 * P * tokens + 12 * m["layers"] * m["batch"] * m["seq"] ** 2 * m["dim"]


def gpu_name():
    """The first GPU's name, or None (with the reason printed) when there is none."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, "nvidia-smi not found"
    out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True)
    names = [l.strip() for l in out.stdout.splitlines() if l.strip()]
    if out.returncode != 0 or not names:
        return None, "nvidia-smi lists no GPU"
    return names[0], None


def compile_binary(build, outdir, m, target=("--target", "cuda", "--gpu-arch", "sm_80")):
    """OUT_DIR/piper_gpu_train (fp32) and OUT_DIR/piper_gpu_train_bf16 (--precision bf16) of
    model m; `target` () makes CPU binaries, for a dry run of ours() without a GPU."""
    os.makedirs(outdir, exist_ok=True)
    mlir, exe = os.path.join(outdir, "gpt_gpu.mlir"), os.path.join(outdir, "piper_gpu_train")
    with open(mlir, "w") as f:
        subprocess.run([os.path.join(build, "bin", "piper-gen"), "gpt"] +
                       [a for k, v in m.items() for a in ("--" + k, str(v))],
                       stdout=f, check=True)
    compiler = os.path.join(build, "bin", "piper-compile")
    subprocess.run([compiler, mlir, *target, "-o", exe], check=True)
    subprocess.run([compiler, mlir, *target, "--precision", "bf16", "-o", exe + "_bf16"],
                   check=True)
    return exe


def ours(exe, steps, workdir, env=None, tag=""):
    metrics = os.path.join(workdir, os.path.basename(exe) + tag + ".jsonl")
    subprocess.run([exe, "--steps", str(steps + 3), "--metrics", metrics, "--quiet"], check=True,
                   env=dict(os.environ, **(env or {})))
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    ms = [r["step_ms"] for r in records if r.get("kind") == "train"]
    return statistics.median(ms[3:])  # the first steps load the PTX, size scratch buffers


def torch_modes(m, steps):
    """(name, function giving ms/step) of PyTorch's eager fp32, eager bf16 autocast and
    torch.compile bf16, each measured when called."""
    def mode_ms(mode):
        import torch
        sys.path.insert(0, os.path.join(HERE, "..", "test", "oracle"))
        import gpt_torch as G
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        dev = torch.device("cuda")
        L, C, H, T, B, V = (m[k] for k in ("layers", "dim", "heads", "seq", "batch", "vocab"))
        P = {k: t.to(dev).requires_grad_(True) for k, t in G.init_params(L, C, V, T, 1).items()}
        opt = G.make_optimizer(P, 1e-4, 0.1)
        fwd = (lambda i, t: G.forward(P, i, t, L, H)[0])
        if mode.startswith("compile"):
            fwd = torch.compile(fwd)
        g = torch.Generator(device=dev)
        g.manual_seed(0)

        def step():
            idx = torch.randint(0, V, (B, T), device=dev, generator=g)
            tgt = torch.randint(0, V, (B, T), device=dev, generator=g)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode.endswith("bf16")):
                loss = fwd(idx, tgt)
            loss.backward()
            opt.step()
            return loss

        for _ in range(3 if not mode.startswith("compile") else 5):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step().item()  # the host reads the loss each step, as ours does
            times.append((time.perf_counter() - t0) * 1e3)
        del P, opt
        torch.cuda.empty_cache()
        return statistics.median(times)

    return [("pytorch " + mode, lambda mode=mode: mode_ms(mode))
            for mode in ("eager fp32", "eager bf16", "compile bf16")]


# ---- the roofline floor of the bench step (no GPU) ----
PEAK_BF16, PEAK_FP32, BANDWIDTH = 790e12, 60e12, 3e12  # FLOP/s (measured bf16 GEMM; fp32
# without TF32), bytes/s: DESIGN.md "GPU speed"


def step_kernels(m, act_bytes):
    """(class, FLOPs, bytes) of every kernel an ideal implementation of one training step of
    GPT m runs, activations stored in act_bytes an element: each operand read once and each
    result written once, the bias added in the GEMMs' epilogue (no pass of its own; its
    gradient is a read of dout), GELU and the residual adds as passes of their own (an
    epilogue or a fused norm would save some of their bytes), no conversion passes, the
    optimizer in fp32. Attention is counted causal (half the T x T products) and the backward
    recomputes the scores (FlashAttention-2: 5 T x T products against the forward's 2)."""
    L, C, H, T, B, V = (m[k] for k in ("layers", "dim", "heads", "seq", "batch", "vocab"))
    N, a, out = B * T, act_bytes, []

    def gemm(cls, M, O, K):  # out(M,O) = x(M,K) w(O,K)^T, its input and weight gradients
        for rows, cols, inner in ((M, O, K), (M, K, O), (O, K, M)):
            out.append((cls, 2 * rows * cols * inner, a * (rows * inner + inner * cols +
                                                           rows * cols)))

    for _ in range(L):
        for O, K in ((3 * C, C), (C, C), (4 * C, C), (C, 4 * C)):
            gemm("matmul (linear, fwd + bwd)", N, O, K)
            out.append(("bias gradient", 0, a * N * O))
        causal = B * H * T * T * (C // H)  # one T x T product of all heads, causal half x 2 FLOP
        out.append(("attention fwd", 2 * causal, a * 4 * N * C + 4 * B * H * T))
        out.append(("attention bwd", 5 * causal, a * 8 * N * C + 4 * B * H * T))
        for _ in range(2):
            out.append(("layernorm fwd", 8 * N * C, a * 2 * N * C))
            out.append(("layernorm bwd", 12 * N * C, a * 3 * N * C))
            out.append(("residual add fwd + bwd", 2 * N * C, a * 6 * N * C))
        out.append(("gelu fwd", 10 * N * 4 * C, a * 2 * N * 4 * C))
        out.append(("gelu bwd", 15 * N * 4 * C, a * 3 * N * 4 * C))
    gemm("matmul (LM head, fwd + bwd)", N, V, C)
    out.append(("layernorm fwd", 8 * N * C, a * 2 * N * C))
    out.append(("layernorm bwd", 12 * N * C, a * 3 * N * C))
    out.append(("cross-entropy fwd + bwd", 8 * N * V, a * 3 * N * V + 8 * N))
    out.append(("embedding fwd + bwd", 2 * N * C, a * 3 * N * C + 4 * (V + T) * C))
    P = params_of(m)
    out.append(("gradient norm", 2 * P, 4 * P))
    out.append(("AdamW", 12 * P, 4 * 7 * P))  # reads p, g, m, v; writes p, m, v
    return out


def estimate(m):
    """Prints the roofline floor: per kernel class its FLOPs, bytes and the time the faster of
    compute and memory allows, summed over its kernels (each kernel at max(FLOPs / peak,
    bytes / bandwidth)); bf16 (2-byte activations, 790 TFLOP/s) and fp32 (4 bytes, 60
    TFLOP/s), both at 3 TB/s."""
    rows = {}
    for prec, act, peak in (("bf16", 2, PEAK_BF16), ("fp32", 4, PEAK_FP32)):
        for cls, fl, by in step_kernels(m, act):
            r = rows.setdefault(cls, {})
            f, b, t = r.get(prec, (0, 0, 0.0))
            r[prec] = (f + fl, b + by, t + max(fl / peak, by / BANDWIDTH))
    print("## Roofline floor of one training step (GPT L{layers} C{dim} H{heads} T{seq} B{batch} "
          "V{vocab}, {p:.1f} M parameters)\n".format(p=params_of(m) / 1e6, **m))
    print("bf16: 2-byte activations at {:.0f} TFLOP/s; fp32: 4-byte at {:.0f} TFLOP/s (no TF32); "
          "both {:.0f} TB/s. Each kernel at max(FLOPs / peak, bytes / bandwidth).\n".format(
              PEAK_BF16 / 1e12, PEAK_FP32 / 1e12, BANDWIDTH / 1e12))
    print("| kernel class | GFLOP | bf16 MB | bf16 ms | fp32 MB | fp32 ms |")
    print("|---|---|---|---|---|---|")
    tot = {"bf16": [0, 0, 0.0], "fp32": [0, 0, 0.0]}
    for cls, r in sorted(rows.items(), key=lambda kv: -kv[1]["bf16"][2]):
        for prec in tot:
            for i in range(3):
                tot[prec][i] += r[prec][i]
        print("| {} | {:.1f} | {:.0f} | {:.3f} | {:.0f} | {:.3f} |".format(
            cls, r["bf16"][0] / 1e9, r["bf16"][1] / 1e6, r["bf16"][2] * 1e3,
            r["fp32"][1] / 1e6, r["fp32"][2] * 1e3))
    print("| **step floor** | {:.1f} | {:.0f} | **{:.2f}** | {:.0f} | **{:.2f}** |".format(
        tot["bf16"][0] / 1e9, tot["bf16"][1] / 1e6, tot["bf16"][2] * 1e3, tot["fp32"][1] / 1e6,
        tot["fp32"][2] * 1e3))
    print("\nFor comparison (DESIGN.md, PyTorch 2.11 on an H100): torch.compile bf16 28.2 ms, "
          "eager bf16 33.5 ms, eager fp32 (TF32 off) 220.7 ms; the issue's targets: bf16 <= "
          "28.2 ms (aim 21), fp32 <= 220.7 ms. bench_gpu.py's MFU counts {:.1f} TFLOP a step "
          "(6 P tokens + attention over the full T x T).".format(flops_of(m) / 1e12))


# ---- counters under the fake CUDA runtime (no GPU): what the step asks of a GPU ----
# The bench GPT's depth (L12) at a size the fake runs in seconds: the launches, waits and
# allocations of a step do not depend on C, T or B (sizes are kernel arguments); the bytes do,
# and the table says how they scale.
COUNTER_MODEL = dict(layers=12, dim=32, heads=2, seq=16, batch=2, vocab=256)
# The bytes a step moves depend on the shape: one where the activations outweigh the weights
# as at the bench shape (B T / C = 32 here, 21 there), that the fake runs in seconds.
BYTES_MODEL = dict(layers=2, dim=32, heads=2, seq=128, batch=8, vocab=256)


def fake_binary(build, outdir, m, precision, tag, extra=()):
    """A --target cuda binary of model m linked against libpiper_fakecuda (extra: more
    piper-compile flags)."""
    lib = os.path.join(build, "lib")
    mlir = os.path.join(outdir, tag + ".mlir")
    with open(mlir, "w") as f:
        subprocess.run([os.path.join(build, "bin", "piper-gen"), "gpt"] +
                       [a for k, v in m.items() for a in ("--" + k, str(v))],
                       stdout=f, check=True)
    obj, exe = os.path.join(outdir, tag + ".o"), os.path.join(outdir, tag)
    subprocess.run([os.path.join(build, "bin", "piper-compile"), mlir, "--target", "cuda",
                    "--precision", precision, *extra, "--emit=obj", "-o", obj], check=True)
    with open(os.path.join(lib, "piper_rt_fakecuda.link")) as f:
        link = f.read().split()
    subprocess.run(["cc", obj, "-L" + lib] + link + ["-o", exe], check=True)
    return exe


def fake_counts(exe, steps, graph, workdir, attn=None):
    """The fake runtime's counters of each step pass (FAKE_CUDA_COUNTERS)."""
    path = exe + (".graph" if graph else ".kernels") + (attn or "") + ".counters.jsonl"
    env = dict(os.environ, FAKE_CUDA_COUNTERS=path, PIPER_CUDA_GRAPH="1" if graph else "0")
    if attn:
        env["PIPER_CUDA_ATTN"] = attn
    subprocess.run([exe, "--steps", str(steps), "--quiet"], check=True, env=env, cwd=workdir)
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if isinstance(r.get("pass"), int)]


def counters(build, outdir, steps=3):
    """Prints the counters table: per step after the warm-up (the last pass but one: the last
    also saves and reports), for fp32 and bf16, one CUDA graph a step and kernel by kernel."""
    os.makedirs(outdir, exist_ok=True)
    m = COUNTER_MODEL
    L = m["layers"]
    small = dict(m, layers=2)
    print("## GPU step counters under the fake CUDA runtime (GPT L{layers}, launch structure of "
          "the bench GPT; C{dim} H{heads} T{seq} B{batch} V{vocab})\n".format(**m))
    print("| plan | mode | kernels a step | kernels a layer | conversion kernels a step | "
          "launch calls a step | graph launches | host waits in the step | host waits after "
          "it | allocations after the warm-up | host->device B a step | device->host B a "
          "step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    plans = (("fp32", "fp32", ()), ("bf16", "bf16", ()),
             ("bf16, --bf16-io convert", "bf16", ("--bf16-io", "convert")))
    for name, precision, extra in plans:
        tag = precision + ("_convert" if extra else "")
        exe = fake_binary(build, outdir, m, precision, "gpt_l%d_%s" % (L, tag), extra)
        exe2 = fake_binary(build, outdir, small, precision, "gpt_l2_%s" % tag, extra)
        for graph in (True, False):
            rows = fake_counts(exe, steps, graph, outdir)
            rows2 = fake_counts(exe2, steps, graph, outdir)
            steady, steady2 = rows[-2], rows2[-2]
            per_layer = (steady["kernels"] - steady2["kernels"]) / (L - 2)
            allocs = sum(r["allocs"] for r in rows[1:-1])
            print("| {} | {} | {} | {:g} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                name, "CUDA graph" if graph else "kernel by kernel", steady["kernels"],
                per_layer, steady["conversions"], steady["launch_calls"],
                steady["graph_launches"], steady["syncs_in_step"], steady["syncs_after"],
                allocs, steady["h2d"], steady["d2h"]))
    tok = 2 * m["batch"] * m["seq"] * 4
    print("\nBytes a step: host->device = the tokens and targets ({} B here: 2 x B x T x 4; "
          "131072 B for the bench GPT's B16 T1024) and 32 B of AdamW scalars (the step's lr "
          "and bias corrections); device->host = the loss (4 B) and the squared gradient norm "
          "(8 B). Waits after the step: the norm's read, then the losses' (copied to page-locked "
          "staging, one device synchronize). The warm-up step (the first) sizes the scratch "
          "and is not counted.".format(tok))
    b = BYTES_MODEL
    print("\n## Device bytes a step (GPT L{layers} C{dim} H{heads} T{seq} B{batch} V{vocab}: "
          "kernels' distinct loads and stores, cuBLAS's matrices, the nvcc kernels' tensors)\n"
          .format(**b))
    print("| plan | attention | read MB | written MB | total MB | of fp32's |")
    print("|---|---|---|---|---|---|")
    base = None
    for name, precision, extra in plans:
        tag = precision + ("_convert" if extra else "")
        exe = fake_binary(build, outdir, b, precision, "bytes_%s" % tag, extra)
        for attn in ("fp32", None) if precision == "bf16" else ("fp32",):
            row = fake_counts(exe, steps, True, outdir, attn)[-2]
            total = row["read"] + row["written"]
            base = base or total
            print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1%} |".format(
                name, "fp32 kernels" if attn else "tensor cores (default)", row["read"] / 1e6,
                row["written"] / 1e6, total / 1e6, total / base))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per implementation")
    ap.add_argument("--binary", help="a piper --target cuda binary of MODEL built elsewhere")
    ap.add_argument("--binary-bf16", help="its --precision bf16 twin (default: BINARY_bf16)")
    ap.add_argument("--compile-only", metavar="OUT_DIR",
                    help="only build the binary into OUT_DIR (no GPU needed)")
    ap.add_argument("--peak", type=float, help="dense bf16 TFLOP/s of this GPU (MFU)")
    ap.add_argument("--all-rows", action="store_true",
                    help="also the bf16 binary with the fp32 attention kernels (slow)")
    ap.add_argument("--model-flags", metavar="FLAGS",
                    help="with --compile-only: piper-gen gpt flags of another model (a dry "
                    "run's small one), e.g. \"--layers 2 --dim 64 --heads 4 --seq 128 "
                    "--batch 4 --vocab 256\"")
    ap.add_argument("--target-flags", metavar="FLAGS", default="--target cuda --gpu-arch sm_80",
                    help="with --compile-only: piper-compile's target flags (\"\": CPU "
                    "binaries, for a dry run without a GPU)")
    ap.add_argument("--counters", metavar="OUT_DIR",
                    help="no GPU needed: build GPT L12 binaries on the fake CUDA runtime into "
                    "OUT_DIR and print what a step asks of a GPU (kernels, launches, host waits, "
                    "allocations, bytes)")
    ap.add_argument("--estimate", action="store_true",
                    help="no GPU needed: print the roofline floor of the bench step, per kernel "
                    "class")
    args = ap.parse_args()
    if args.estimate:
        estimate(MODEL)
        return
    if args.counters:
        counters(args.build, args.counters)
        return
    if args.compile_only:
        model = MODEL
        if args.model_flags:
            words = args.model_flags.split()
            model = {w[2:]: int(v) for w, v in zip(words[::2], words[1::2])}
        print(compile_binary(args.build, args.compile_only, model,
                             tuple(args.target_flags.split())))
        return
    name, why = gpu_name()
    print("## GPU training step (L{layers} C{dim} H{heads} T{seq} B{batch} V{vocab})\n"
          .format(**MODEL))
    if not name:
        print("skipped: no GPU ({}); run bench/bench_gpu.py on a machine with one".format(why))
        return
    workdir = os.path.join(args.build, "bench", "gpu")
    os.makedirs(workdir, exist_ok=True)
    exe = args.binary or compile_binary(args.build, workdir, MODEL)
    peak = args.peak or next((v for k, v in PEAKS.items() if k in name), None)
    exe_bf16 = args.binary_bf16 or exe + "_bf16"
    rows = [("piper fp32", lambda: ours(exe, args.steps, workdir)),
            ("piper bf16", lambda: ours(exe_bf16, args.steps, workdir)),
            ("piper bf16, tensor-core attention", lambda: ours(
                exe_bf16, args.steps, workdir, {"PIPER_CUDA_ATTN": "tc"}, "_tcattn"))]
    if args.all_rows:
        rows.append(("piper bf16, fp32 attention", lambda: ours(
            exe_bf16, args.steps, workdir, {"PIPER_CUDA_ATTN": "fp32"}, "_fp32attn")))
    rows += torch_modes(MODEL, args.steps)
    tokens, flops = MODEL["batch"] * MODEL["seq"], flops_of(MODEL)
    print("GPU: {}; params {:.1f} M; MFU against {} TFLOP/s dense bf16\n".format(
        name, params_of(MODEL) / 1e6, peak if peak else "an unknown peak (--peak)"))
    print("| impl | ms/step | tokens/s | TFLOP/s | MFU |")
    print("|---|---|---|---|---|")
    sys.stdout.flush()
    ms = {}
    for impl, measure in rows:  # each row printed when measured: a cut-short run keeps them
        try:
            ms[impl] = measure()
        except Exception as e:  # a failing row is reported; the others still run
            print("| {} | failed: {} | | | |".format(impl, str(e).splitlines()[0][:120]))
            sys.stdout.flush()
            continue
        tf = flops / (ms[impl] / 1e3) / 1e12
        mfu = "{:.1f}%".format(100 * tf / peak) if peak else "-"
        print("| {} | {:.1f} | {:.0f} | {:.1f} | {} |".format(impl, ms[impl],
                                                           tokens / (ms[impl] / 1e3), tf, mfu))
        sys.stdout.flush()
    for ours_row in ("piper bf16", "piper bf16, tensor-core attention",
                     "piper bf16, fp32 attention"):
        if all(k in ms for k in (ours_row, "pytorch eager bf16", "pytorch compile bf16")):
            print("\n{} / pytorch eager bf16: {:.2f}x the time; / torch.compile bf16: {:.2f}x "
                  "(issue 29's target: <= 1)".format(ours_row, ms[ours_row] / ms["pytorch eager bf16"],
                                                     ms[ours_row] / ms["pytorch compile bf16"]))
    if any(k not in ms for k, _ in rows):
        sys.exit(1)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
