#!/usr/bin/python3
"""PyTorch oracle (ground truth) for Piper's GPT training.

Model: GPT-2 style, fp32, no dropout, byte tokens, tied embedding/head.
  x = wte[tok] + wpe[pos]
  per block: x += attn(ln_1(x)); x += mlp(ln_2(x))          (LayerNorm eps 1e-5)
  attn: q,k,v = split(c_attn(h)) (in that order, head j = channels j*C/H..(j+1)*C/H),
        causal softmax(q k^T / sqrt(C/H)) v, then c_proj
  mlp:  c_proj(gelu_tanh(c_fc(h))), hidden 4C
  logits = ln_f(x) @ wte^T; loss = mean cross-entropy over all B*T targets.
Optimizer: torch.optim.AdamW(lr, betas=(0.9, 0.95), eps=1e-8, foreach=False),
  weight decay only on 2-D tensors (wte, wpe, all Linear weights).
  With --grad-clip G: torch.nn.utils.clip_grad_norm_(params, G) before each step (the norm
  before clipping is reported per step). --lr-schedule/--warmup-steps/--min-lr set each step's
  lr (lr_at below, the formulas of Piper's docs/models.md).
Data: step s, sample b starts at o = ((s*B + b) * T) mod (N - T - 1) of the data file
  (N bytes); inputs data[o:o+T], targets data[o+1:o+T+1]. The loss of step s is
  computed before step s's update.

Subcommands: init, train, compare (see --help of each).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402  (the init/train flags and loop)
import precision  # noqa: E402  (--precision: where bf16 rounds)
import safetensors_io as st  # noqa: E402

LN_EPS = 1e-5
BETAS = (0.9, 0.95)
ADAM_EPS = 1e-8


# ----------------------------------------------------------------------------- model

def param_specs(L, C, V, T):
    """Canonical (name, shape, init_kind) list; init_kind in {'normal', 'zeros', 'ones'}."""
    specs = [("wte.weight", (V, C), "normal"), ("wpe.weight", (T, C), "normal")]
    for i in range(L):
        p = f"h.{i}."
        specs += [
            (p + "ln_1.weight", (C,), "ones"),
            (p + "ln_1.bias", (C,), "zeros"),
            (p + "attn.c_attn.weight", (3 * C, C), "normal"),
            (p + "attn.c_attn.bias", (3 * C,), "zeros"),
            (p + "attn.c_proj.weight", (C, C), "normal"),
            (p + "attn.c_proj.bias", (C,), "zeros"),
            (p + "ln_2.weight", (C,), "ones"),
            (p + "ln_2.bias", (C,), "zeros"),
            (p + "mlp.c_fc.weight", (4 * C, C), "normal"),
            (p + "mlp.c_fc.bias", (4 * C,), "zeros"),
            (p + "mlp.c_proj.weight", (C, 4 * C), "normal"),
            (p + "mlp.c_proj.bias", (C,), "zeros"),
        ]
    specs += [("ln_f.weight", (C,), "ones"), ("ln_f.bias", (C,), "zeros")]
    return specs


def init_params(L, C, V, T, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    out = {}
    for name, shape, kind in param_specs(L, C, V, T):
        if kind == "normal":
            t = torch.empty(shape, dtype=torch.float32).normal_(0.0, 0.02, generator=g)
        elif kind == "zeros":
            t = torch.zeros(shape, dtype=torch.float32)
        else:
            t = torch.ones(shape, dtype=torch.float32)
        out[name] = t
    return out


def attention(h, P, p, H):
    B, T, C = h.shape
    hd = C // H
    pc = precision.current()
    qkv = pc.linear(h, P[p + "attn.c_attn.weight"], P[p + "attn.c_attn.bias"])

    def core(qkv):  # one op: scores and softmax in fp32, only its output stored (precision.py)
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(B, T, H, hd).transpose(1, 2)
        v = v.view(B, T, H, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.ones(T, T, dtype=torch.bool, device=h.device).triu(1)  # True above diagonal
        att = att.masked_fill(mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = att @ v  # (B, H, T, hd)
        return y.transpose(1, 2).contiguous().view(B, T, C)

    return pc.linear(pc.op(core, qkv), P[p + "attn.c_proj.weight"], P[p + "attn.c_proj.bias"])


def forward(P, idx, targets, L, H):
    """idx, targets: (B, T) int64. Returns (mean loss, logits)."""
    B, T = idx.shape
    C = P["wte.weight"].shape[1]
    pc = precision.current()  # fp32: every pc.* below is the plain expression
    add = lambda a, b: a + b  # noqa: E731  (the residual add, an op of its own)
    x = pc.out(F.embedding(idx, P["wte.weight"]) + P["wpe.weight"][:T].unsqueeze(0))
    for i in range(L):
        p = f"h.{i}."
        h = pc.op(lambda t: F.layer_norm(t, (C,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], LN_EPS), x)
        x = pc.op(add, x, attention(h, P, p, H))
        h = pc.op(lambda t: F.layer_norm(t, (C,), P[p + "ln_2.weight"], P[p + "ln_2.bias"], LN_EPS), x)
        h = pc.linear(h, P[p + "mlp.c_fc.weight"], P[p + "mlp.c_fc.bias"])
        h = pc.op(lambda t: F.gelu(t, approximate="tanh"), h)
        x = pc.op(add, x, pc.linear(h, P[p + "mlp.c_proj.weight"], P[p + "mlp.c_proj.bias"]))
    x = pc.op(lambda t: F.layer_norm(t, (C,), P["ln_f.weight"], P["ln_f.bias"], LN_EPS), x)
    logits = pc.linear(x, P["wte.weight"])
    # the loss and its internals are fp32; the logits' gradient is an activation gradient
    logits = pc.act(logits)
    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))
    return loss, logits


def make_optimizer(P, lr, wd, betas=BETAS, eps=ADAM_EPS):
    names = list(P)
    decay = [P[n] for n in names if P[n].dim() == 2]
    no_decay = [P[n] for n in names if P[n].dim() != 2]
    groups = [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, foreach=False)


def lr_at(s, lr, schedule, W, S, min_lr):
    """Learning rate of step s (0-based) of S: lr*(s+1)/W during warm-up, then with
    u = (s-W)/(S-W): constant lr, cosine min+(lr-min)*0.5*(1+cos(pi*u)), linear lr+(min-lr)*u."""
    if s < W:
        return lr * (s + 1) / W
    if schedule == "constant" or S <= W:
        return lr
    u = (s - W) / (S - W)
    if schedule == "cosine":
        return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * u))
    return lr + (min_lr - lr) * u


def load_data(path, V):
    data = open(path, "rb").read()
    t = torch.tensor(list(data), dtype=torch.int64) if data else torch.zeros(0, dtype=torch.int64)
    if t.numel() and int(t.max()) >= V:
        raise SystemExit(f"data file {path} contains byte {int(t.max())} >= vocab {V}")
    return t


def get_batch(data, s, B, T):
    N = data.numel()
    if N < T + 2:
        raise SystemExit(f"data file has {N} bytes; need at least T+2 = {T + 2}")
    m = N - T - 1
    xs, ys = [], []
    for b in range(B):
        o = ((s * B + b) * T) % m
        xs.append(data[o:o + T])
        ys.append(data[o + 1:o + T + 1])
    return torch.stack(xs), torch.stack(ys)


def check_config(L, C, H, T, V):
    if C % H:
        raise SystemExit(f"--dim {C} not divisible by --heads {H}")
    if min(L, C, H, T, V) <= 0:
        raise SystemExit("all model sizes must be positive")


# ----------------------------------------------------------------------------- init / train

def add_model_args(ap, batch=False):
    ap.add_argument("--layers", type=int, required=True, help="L")
    ap.add_argument("--dim", type=int, required=True, help="C (channels)")
    ap.add_argument("--heads", type=int, required=True, help="H")
    ap.add_argument("--seq", type=int, required=True, help="T (sequence length = wpe rows)")
    ap.add_argument("--vocab", type=int, default=256, help="V (default 256, byte tokens)")
    if batch:
        ap.add_argument("--batch", type=int, required=True, help="B")


def cmd_init(a):
    check_config(a.layers, a.dim, a.heads, a.seq, a.vocab)
    P = init_params(a.layers, a.dim, a.vocab, a.seq, a.seed)
    meta = {"layers": a.layers, "dim": a.dim, "heads": a.heads, "seq": a.seq, "vocab": a.vocab,
            "seed": a.seed, "generator": "torch.Generator normal_(0,0.02) in canonical order"}
    st.write(a.output, P, meta)
    n = sum(t.numel() for t in P.values())
    print(f"wrote {a.output}: {len(P)} tensors, {n} parameters")


def cmd_train(a):
    L, C, H, T, V, B = a.layers, a.dim, a.heads, a.seq, a.vocab, a.batch
    check_config(L, C, H, T, V)
    asked = a.device
    P = oc.load_init(a, {n: shape for n, shape, _ in param_specs(L, C, V, T)})
    if asked != "cpu":  # say where the reference ran (a GPU run's log shows it was one)
        where = torch.cuda.get_device_name(a.device) if a.device.type == "cuda" else "cpu"
        print(f"oracle device: {a.device} ({where}), TF32 off")
    opt = make_optimizer(P, a.lr, a.weight_decay, (a.adam_beta1, a.adam_beta2), a.adam_eps)
    data = load_data(a.data, V)

    norms = []

    def clip_and_schedule(s):
        if a.grad_clip is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(list(P.values()), a.grad_clip)))
        for g in opt.param_groups:
            g["lr"] = lr_at(s, a.lr, a.lr_schedule, a.warmup_steps, a.steps, a.min_lr)

    losses = oc.train_steps(a, P, opt, lambda s: get_batch(data, s, B, T),
                            lambda x, y: forward(P, x, y, L, H)[0], clip_and_schedule)
    if a.norms:
        oc.write_json(a.norms, norms)
    oc.write_outputs(a, P, losses)


# ----------------------------------------------------------------------------- compare
# The metrics, their bounds and why: compare.py (NumPy only, shared with compare_runs.py).
from compare import (DEFAULT_GRAD_TOL, DEFAULT_KBIAS_TOL, DEFAULT_LOSS_RTOL,  # noqa: E402,F401
                     DEFAULT_PARAM_CAP, DEFAULT_PARAM_OUTLIERS, DEFAULT_PARAM_TOL, Checker,
                     compare_grads, compare_params, read_metrics, worst_of)


def cmd_compare(a):
    ck = Checker()
    pairs = [("losses", a.losses_ref, a.metrics), ("grads", a.grads_ref, a.grads),
             ("final", a.final_ref, a.final)]
    for what, r, c in pairs:
        if (r is None) != (c is None):
            raise SystemExit(f"compare: give both the reference and candidate for {what}, or neither")
    if all(r is None for _, r, _ in pairs):
        raise SystemExit("compare: nothing to compare")
    print("metrics: loss = |cand-ref|/|ref| per step; grad = max|cand-ref|/max|ref| per tensor; "
          "param = elementwise |cand-ref|/max|ref| per tensor: all <= cap, at most the allowed "
          "outlier count above tol (AdamW sign-flip allowance); c_attn.bias k third separately")
    worst = []

    if a.losses_ref is not None:
        ref = json.load(open(a.losses_ref))
        cand, dup = read_metrics(a.metrics)
        for s in sorted(set(dup)):
            ck.fail(f"loss[step {s}]", "duplicate step in metrics")
        lerrs = []
        for s, lr in enumerate(ref):
            if s not in cand:
                ck.fail(f"loss[step {s}]", f"missing from {a.metrics}")
                continue
            lc = cand[s]
            err = abs(lc - lr) / max(abs(lr), 1e-30)
            lerrs.append((err, f"step {s}"))
            ck.check(f"loss[step {s}]", err, a.loss_rtol, f" (ref {lr:.7f} cand {lc:.7f})")
        for s in sorted(set(cand) - set(range(len(ref)))):
            ck.fail(f"loss[step {s}]", "extra step (not in reference)")
        worst.append(worst_of("loss", lerrs))
    if a.norms_ref is not None:  # the metrics' grad_norm (before clipping) against torch's
        ref = json.load(open(a.norms_ref))
        cand = {}
        for line in open(a.metrics):
            rec = json.loads(line) if line.strip() else {}
            if isinstance(rec, dict) and "grad_norm" in rec and rec.get("kind", "train") == "train":
                cand[int(rec["step"])] = float(rec["grad_norm"])
        for s, nr in enumerate(ref):
            if s not in cand:
                ck.fail(f"grad_norm[step {s}]", f"missing from {a.metrics}")
                continue
            err = abs(cand[s] - nr) / max(abs(nr), 1e-30)
            ck.check(f"grad_norm[step {s}]", err, a.loss_rtol, f" (ref {nr:.7f} cand {cand[s]:.7f})")
    if a.grads_ref is not None:
        worst.append(compare_grads(ck, a.grads_ref, a.grads, a.grad_tol, a.grad_l2_tol))
    if a.final_ref is not None:
        worst.append(compare_params(ck, a.final_ref, a.final, a.param_tol, a.param_outliers,
                                    a.param_cap, a.kbias_tol))

    print("worst: " + "; ".join(worst))
    print(f"{ck.passed} passed, {ck.failed} failed")
    return 1 if ck.failed else 0


# ----------------------------------------------------------------------------- CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = oc.init_parser(sub, add_model_args)
    p.set_defaults(fn=cmd_init)

    p = oc.train_parser(sub, add_model_args)
    oc.add_device_flag(p)
    p.add_argument("--grad-clip", type=float, help="clip_grad_norm_ to this max norm each step")
    p.add_argument("--norms", help="output JSON list of per-step gradient norms (--grad-clip)")
    p.add_argument("--lr-schedule", choices=["constant", "cosine", "linear"], default="constant")
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--adam-beta1", type=float, default=BETAS[0])
    p.add_argument("--adam-beta2", type=float, default=BETAS[1])
    p.add_argument("--adam-eps", type=float, default=ADAM_EPS)
    p.add_argument("--min-lr", type=float, default=0.0)
    p.set_defaults(fn=cmd_train)

    p = sub.add_parser(
        "compare",
        help="compare a Piper run against the oracle",
        description="Metrics: loss[step s] = |cand-ref|/|ref|; grad[name], param[name] = "
                    "max_i|cand_i-ref_i| / max_i|ref_i| (max abs diff relative to the reference "
                    "tensor's max abs); for params up to --param-outliers of the elements may exceed "
                    "--param-tol (but not --param-cap), and the k third of c_attn.bias is bounded by "
                    "--kbias-tol. Each check passes iff its bounds hold (NaN fails). Missing, "
                    "extra, duplicate or misshaped entries fail. Prints one line per check and "
                    "'N passed, M failed'; exit 1 if anything failed.")
    p.add_argument("--losses-ref", help="oracle losses JSON list")
    p.add_argument("--metrics", help="Piper metrics JSON lines {\"kind\": \"train\", \"step\": s, \"loss\": L, ...}")
    p.add_argument("--norms-ref", help="oracle per-step gradient norms JSON list (with --metrics)")
    p.add_argument("--grads-ref", help="oracle step-0 gradients")
    p.add_argument("--grads", help="Piper step-0 gradients")
    p.add_argument("--final-ref", help="oracle final parameters")
    p.add_argument("--final", help="Piper final parameters")
    p.add_argument("--loss-rtol", type=float, default=DEFAULT_LOSS_RTOL,
                   help=f"per-step relative loss tolerance (default {DEFAULT_LOSS_RTOL:g})")
    p.add_argument("--grad-tol", type=float, default=DEFAULT_GRAD_TOL,
                   help=f"gradient max-abs-diff / ref max-abs tolerance (default {DEFAULT_GRAD_TOL:g})")
    p.add_argument("--grad-l2-tol", type=float, default=None,
                   help="also bound the global relative L2 difference of all gradients "
                        "(off by default; for bf16 runs, where the max metric is noise-bound: "
                        "see the notes above DEFAULT_LOSS_RTOL)")
    p.add_argument("--param-tol", type=float, default=DEFAULT_PARAM_TOL,
                   help=f"parameter elementwise |d|/max|ref| tolerance (default {DEFAULT_PARAM_TOL:g})")
    p.add_argument("--param-outliers", type=float, default=DEFAULT_PARAM_OUTLIERS,
                   help="fraction of a tensor's elements (at least 1 element) allowed above --param-tol: "
                        "AdamW turns rounding noise in ~zero gradients into isolated update flips "
                        f"(default {DEFAULT_PARAM_OUTLIERS:g})")
    p.add_argument("--param-cap", type=float, default=DEFAULT_PARAM_CAP,
                   help=f"hard bound on every element's |d|/max|ref| (default {DEFAULT_PARAM_CAP:g})")
    p.add_argument("--kbias-tol", type=float, default=DEFAULT_KBIAS_TOL,
                   help="bound on max|d|/max|ref| for the k third of c_attn.bias, whose true gradient is "
                        f"zero so it only carries noise (default {DEFAULT_KBIAS_TOL:g})")
    p.set_defaults(fn=cmd_compare)

    a = ap.parse_args(argv)
    return a.fn(a) or 0


if __name__ == "__main__":
    sys.exit(main())
