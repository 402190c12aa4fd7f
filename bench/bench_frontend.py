#!/usr/bin/python3
"""Exported PyTorch models (python/piper) against piper-gen's model of the same shape.

Rows, each a step's CPU time in ms: the CPU seconds the run's processes used (getrusage of
the waited children: every rank), STEPS steps less 2 steps, divided by STEPS - 2, so start-up
and the first steps' paging drop out. CPU time, not wall time: on a machine other jobs share,
time slices lost to them do not count (wall step_ms medians are printed too, for reference;
they are what a quiet machine would show). Each configuration runs REPEATS times in turn (rows
interleaved) and the median is kept:
  piper-gen         the zoo's model (gpt: GPT-2 with the tanh GELU; llama3: untied head),
  exported          test/frontend/models.py's module of the same shape exported by
                    piper.export and compiled as piper-compile does by default (--piper-fuse),
  exported unfused  the same export compiled with --no-fuse (the general ops' kernels): the
                    fusion pass's worth,
on one core (taskset) and as DP2 (mpirun -np 2, one core per rank). ratio = exported /
piper-gen (target <= 1.10).
Then the models in Hugging Face's idioms (test/frontend/hf_idioms.py), one core, each against
the piper-gen model nearest to it (same L, C, H, T, B, V; KV and F where it has them): hf-llama
and meta-llama against llama3, hf-qwen3 against qwen3, hf-neox-rot1 and hf-neox (Pythia's
rotary on a quarter of each head) against gpt (GPT-NeoX
differs: rotary instead of a position table, exact GELU, the parallel residual, an untied
head; the nearest the zoo has), hf-gpt2 against gpt (its Conv1D weights stored transposed, read
through a permute), hf-gemma against llama3 with one kv head and a tied head (Gemma's GeGLU
and (1 + w) RMSNorm differ).
Then the export time of a 12-layer, 768-wide GPT-2 (T 1024, V 50304; target <= 10 s): the
piper.export call alone (fake-tensor tracing and the IR), and with its 124M-parameter weights
file, median of 3 (module construction not counted).
Usage: bench_frontend.py BUILD_DIR [--repeats N] [--steps N] [--hf-only [--only NAME,...]]
  --hf-only   only the Hugging Face idioms' table
  --only      only these rows of it (e.g. hf-gpt2,hf-gemma)
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           PYTHONPATH=os.path.join(ROOT, "python"))
L, C, H, KV, F, T, B, V = 4, 256, 4, 2, 688, 128, 8, 256
MODELS = {
    "gpt": (["gpt", "--layers", str(L), "--dim", str(C), "--heads", str(H), "--seq", str(T),
             "--batch", str(B), "--vocab", str(V)],
            ["--model", "gpt2-tanh", "--layers", str(L), "--dim", str(C), "--heads", str(H),
             "--seq", str(T), "--batch", str(B), "--vocab", str(V)]),
    "llama": (["llama3", "--layers", str(L), "--dim", str(C), "--heads", str(H), "--kv-heads",
               str(KV), "--ffn-dim", str(F), "--seq", str(T), "--batch", str(B), "--vocab",
               str(V)],
              ["--model", "llama", "--layers", str(L), "--dim", str(C), "--heads", str(H),
               "--kv-heads", str(KV), "--ffn", str(F), "--seq", str(T), "--batch", str(B),
               "--vocab", str(V)]),
}

GEN_QWEN3 = ["qwen3", "--layers", str(L), "--dim", str(C), "--heads", str(H), "--kv-heads", str(KV),
             "--ffn-dim", str(F), "--seq", str(T), "--batch", str(B), "--vocab", str(V)]
HF_SHAPE = ["--layers", str(L), "--dim", str(C), "--heads", str(H), "--kv-heads", str(KV),
            "--ffn", str(F), "--seq", str(T), "--batch", str(B), "--vocab", str(V)]
HF_MODELS = {  # name: (its piper-gen model's arguments, the export's)
    "hf-llama": (MODELS["llama"][0], ["--model", "hf-llama"] + HF_SHAPE),
    "hf-qwen3": (GEN_QWEN3, ["--model", "hf-qwen3"] + HF_SHAPE),
    "hf-neox-rot1": (MODELS["gpt"][0], ["--model", "hf-neox-rot1"] + HF_SHAPE),
    "hf-neox": (MODELS["gpt"][0], ["--model", "hf-neox"] + HF_SHAPE),
    "meta-llama": (MODELS["llama"][0], ["--model", "meta-llama"] + HF_SHAPE),
    "hf-gpt2": (MODELS["gpt"][0], ["--model", "hf-gpt2"] + HF_SHAPE),
    # Gemma has one kv head and a tied head; its GeGLU and (1 + w) norm the zoo has not
    "hf-gemma": (["llama3", "--layers", str(L), "--dim", str(C), "--heads", str(H), "--kv-heads",
                  "1", "--ffn-dim", str(F), "--seq", str(T), "--batch", str(B), "--vocab", str(V),
                  "--tie-embeddings"], ["--model", "hf-gemma"] + HF_SHAPE),
}


def sh(args, **kw):
    return subprocess.run(args, check=True, env=ENV, **kw)


def build_binaries(bin_dir, work, models=MODELS, dps=(1, 2)):
    """{(model, kind, dp): (binary, its training flags)}, kind in gen / exported / unfused;
    the exported ones start from the export's weights."""
    sched = sh([os.path.join(bin_dir, "piper-sched"), "gpipe", "--stages", "1", "--microbatches",
                "1", "--dp", "2"], capture_output=True, text=True).stdout
    dp2 = os.path.join(work, "dp2.json")
    open(dp2, "w").write(sched)
    out = {}
    for name, (gen, export) in models.items():
        src = {"gen": os.path.join(work, name + "-gen.mlir")}
        with open(src["gen"], "w") as f:
            sh([os.path.join(bin_dir, "piper-gen")] + gen, stdout=f)
        d = os.path.join(work, name + "-export")
        sh([PY, os.path.join(ROOT, "test", "frontend", "vs_torch.py"), "export"] + export +
           ["-o", d])
        src["exported"] = src["unfused"] = os.path.join(d, "model.mlir")
        for kind in ("gen", "exported", "unfused"):
            for dp in dps:
                exe = os.path.join(work, f"{name}-{kind}-dp{dp}")
                args = [os.path.join(bin_dir, "piper-compile"), src[kind], "-o", exe]
                args += ["--no-fuse"] if kind == "unfused" else []
                args += ["--strategy", dp2] if dp == 2 else []
                sh(args)
                init = [] if kind == "gen" else ["--init-checkpoint",
                                                 os.path.join(d, "init.safetensors")]
                out[(name, kind, dp)] = (exe, init)
    return out


def op_counts(bin_dir, mlir):
    """{tdag op: count} of a model after --piper-fuse."""
    text = sh([os.path.join(bin_dir, "piper-opt"), mlir, "--piper-fuse"], capture_output=True,
              text=True).stdout
    counts = {}
    for line in text.splitlines():
        if '"tdag.' in line:
            op = line.split('"tdag.')[1].split('"')[0]
            counts[op] = counts.get(op, 0) + 1
    return counts


GENERAL = {"reshape", "permute", "broadcast", "sum_to", "slice", "slice_grad", "concat", "bmm",
           "add_bcast", "sub", "mul", "div", "mul_scalar", "add_scalar", "pow_scalar", "exp",
           "tanh", "rsqrt", "silu", "gelu_erf", "softmax", "log_softmax", "masked_fill",
           "triangle", "full", "rope_table"}


def general_ops(counts):
    """The general ops (python/piper's) an op count holds: "softmax x2, bmm x4" or "none"."""
    left = [f"{op} x{n}" for op, n in sorted(counts.items()) if op in GENERAL]
    return ", ".join(left) if left else "none"


def run_cpu_seconds(exe, dp, steps, work):
    """(CPU seconds of every process of a run of `steps` steps, its wall step_ms median)."""
    exe, flags = exe
    metrics = os.path.join(work, "m.jsonl")
    run = [exe, "--steps", str(steps), "--quiet", "--metrics", metrics] + flags
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if dp == 1:
        sh(["taskset", "-c", "0"] + run, stderr=subprocess.DEVNULL)
    else:
        sh(["mpirun", "--allow-run-as-root", "--bind-to", "core", "--map-by", "core", "-np",
            "2"] + run, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ms = [json.loads(l)["step_ms"] for l in open(metrics) if '"kind": "train"' in l]
    return cpu, statistics.median(ms[2:]) if len(ms) > 2 else float("nan")


def step_ms(exe, dp, steps, work):
    """(CPU ms of one step, wall step_ms median) of binary `exe` on dp ranks."""
    long, wall = run_cpu_seconds(exe, dp, steps, work)
    short, _ = run_cpu_seconds(exe, dp, 2, work)
    return 1000.0 * (long - short) / (steps - 2), wall


def export_seconds(repeats):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "test", "frontend"))
    import torch
    import models
    import piper
    m = models.GPT2(V=50304, C=768, H=12, L=12, T=1024)
    tok = torch.randint(0, 50304, (4, 1024))
    work = tempfile.mkdtemp()
    ir, both = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        piper.export(m, (tok, tok.clone()), os.path.join(work, "m.mlir"))
        ir.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        piper.export(m, (tok, tok.clone()), os.path.join(work, "m.mlir"),
                     weights=os.path.join(work, "w.safetensors"))
        both.append(time.perf_counter() - t0)
    params = sum(p.numel() for p in m.parameters())
    return statistics.median(ir), statistics.median(both), params


def main():
    bin_dir = os.path.join(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build"), "bin")
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 3
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 10
    work = tempfile.mkdtemp(prefix="bench-frontend-")
    if "--hf-only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
        unknown = set(only or ()) - set(HF_MODELS)
        if unknown:
            sys.exit(f"bench_frontend.py: --only {','.join(sorted(unknown))}: no such row; "
                     f"the rows are {', '.join(HF_MODELS)}")
        hf_table(bin_dir, work, repeats, steps, only)
        return
    exes = build_binaries(bin_dir, work)
    runs = {k: [] for k in exes}
    walls = {k: [] for k in exes}
    for _ in range(repeats):
        for k, exe in exes.items():
            cpu, wall = step_ms(exe, k[2], steps, work)
            runs[k].append(cpu)
            walls[k].append(wall)
    print(f"### Exported models against piper-gen (L{L} C{C} H{H} T{T} B{B} V{V}; llama KV{KV} "
          f"F{F}; CPU ms per step, all ranks, median of {repeats} runs; wall ms in brackets)")
    print("| model | devices | piper-gen | exported | ratio | exported unfused | unfused ratio |")
    print("|---|---|---|---|---|---|---|")
    same = {name: op_counts(bin_dir, os.path.join(work, name + "-gen.mlir")) ==
            op_counts(bin_dir, os.path.join(work, name + "-export", "model.mlir"))
            for name in MODELS}
    for name in MODELS:
        for dp in (1, 2):
            g, e, u = (statistics.median(runs[(name, k, dp)]) for k in ("gen", "exported", "unfused"))
            wg, we, wu = (statistics.median(walls[(name, k, dp)])
                          for k in ("gen", "exported", "unfused"))
            print(f"| {name} | {'1 core' if dp == 1 else 'DP2'} | {g:.1f} ({wg:.0f}) | "
                  f"{e:.1f} ({we:.0f}) | {e / g:.3f} | {u:.1f} ({wu:.0f}) | {u / g:.3f} |")
    for name in MODELS:
        print(f"{name}: after --piper-fuse the export's ops are "
              f"{'the same as' if same[name] else 'NOT the same as'} piper-gen's (tdag op counts)")
    hf_table(bin_dir, work, repeats, steps)
    ir, both, params = export_seconds(3)
    print()
    print(f"### Export time, GPT-2 L12 C768 H12 T1024 V50304 ({params / 1e6:.0f}M parameters)")
    print("| piper.export | seconds |")
    print("|---|---|")
    print(f"| IR only | {ir:.2f} |")
    print(f"| IR and weights file | {both:.2f} |")


def hf_table(bin_dir, work, repeats, steps, only=None):
    """The Hugging Face idioms' rows (those named in `only`, else all): each family fused and
    unfused against its nearest piper-gen model, one core."""
    models = {n: m for n, m in HF_MODELS.items() if only is None or n in only}
    hf = build_binaries(bin_dir, work, models, (1,))
    hruns = {k: [] for k in hf}
    for _ in range(repeats):
        for k, exe in hf.items():
            hruns[k].append(step_ms(exe, 1, steps, work)[0])
    print()
    print(f"### Models in Hugging Face's idioms against the nearest piper-gen model (one core, "
          f"CPU ms per step, median of {repeats} runs)")
    print("| model | piper-gen | nearest | exported | ratio | exported unfused | unfused ratio | "
          "general ops left |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (gen, _) in models.items():
        g, e, u = (statistics.median(hruns[(name, k, 1)]) for k in ("gen", "exported", "unfused"))
        left = general_ops(op_counts(bin_dir, os.path.join(work, name + "-export", "model.mlir")))
        print(f"| {name} | {gen[0]} | {g:.1f} | {e:.1f} | {e / g:.3f} | {u:.1f} | {u / g:.3f} | "
              f"{left} |")


if __name__ == "__main__":
    main()
