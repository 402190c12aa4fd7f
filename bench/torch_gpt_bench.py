#!/usr/bin/python3
"""PyTorch CPU baseline for Piper's GPT training step (single thread).

Times the full training step: zero_grad + forward + loss + backward + AdamW step, with the exact
model/optimizer of test/oracle/gpt_torch.py (fp32, tied head, AdamW betas (0.9, 0.95), eps 1e-8,
decay on 2-D tensors, foreach=False). Batches are random byte tokens (content does not affect
timing). Run pinned: OMP_NUM_THREADS=1 taskset -c 0 /usr/bin/python3 bench/torch_gpt_bench.py ...

Prints one JSON line:
  {"impl": "pytorch", "params": P, "tokens_per_s": B*T/median_step_s, "step_ms": median,
   "model": {...}, ...}
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "oracle"))
import gpt_torch as G  # noqa: E402


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    if a.steps < 1:
        ap.error("--steps must be >= 1")

    L, C, H, T, B, V = a.layers, a.dim, a.heads, a.seq, a.batch, a.vocab
    G.check_config(L, C, H, T, V)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    P = {n: t.requires_grad_(True) for n, t in G.init_params(L, C, V, T, a.seed).items()}
    opt = G.make_optimizer(P, a.lr, a.weight_decay)
    n_params = sum(t.numel() for t in P.values())
    total = a.warmup + a.steps
    g = torch.Generator().manual_seed(a.seed + 1)
    data = torch.randint(0, V, (total, B, T + 1), generator=g)

    times = []
    loss = None
    for s in range(total):
        x, y = data[s, :, :-1], data[s, :, 1:]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss, _ = G.forward(P, x, y, L, H)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if s >= a.warmup:
            times.append(t1 - t0)

    med = statistics.median(times)
    print(json.dumps({
        "impl": "pytorch",
        "params": n_params,
        "tokens_per_s": B * T / med,
        "step_ms": med * 1e3,
        "step_ms_min": min(times) * 1e3,
        "step_ms_mean": statistics.mean(times) * 1e3,
        "steps": a.steps,
        "warmup": a.warmup,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu": cpu_name(),
        "final_loss": float(loss),
        "model": {"layers": L, "dim": C, "heads": H, "seq": T, "batch": B, "vocab": V},
    }))


if __name__ == "__main__":
    main()
