#!/usr/bin/python3
"""PyTorch oracle (ground truth) for Piper's Qwen3 training, written from issue #9's
"The models, exactly" (Hugging Face Qwen3 semantics and parameter names), not from Piper's C.

Model: fp32, no dropout, no biases. Letters: V vocab, T sequence, C channels, H query heads,
KV key/value heads (divides H), D head dim (default C/H), F FFN dim.
  x = embed_tokens[tok]
  block i:  h = x + o_proj(attn(rms(x, input_layernorm)))
            x = h + mlp(rms(h, post_attention_layernorm))
  rms(x, w) = x / sqrt(mean(x^2) + 1e-6) * w over the last dim (per head for q_norm/k_norm)
  attn: q = q_proj(h) (H*D), k = k_proj(h), v = v_proj(h) (KV*D); per head q = rms(q, q_norm),
        k = rms(k, k_norm); RoPE on q and k (rotate-half: for j < D/2, f_j = theta^(-2j/D),
        a = t f_j, (x_j, x_{j+D/2}) -> (x_j cos a - x_{j+D/2} sin a, x_{j+D/2} cos a + x_j sin a));
        causal softmax(q k^T / sqrt(D)) v with query head j reading kv head floor(j KV / H);
        o_proj maps H*D back to C.
  dense mlp: down_proj(silu(gate_proj(h)) * up_proj(h))
  logits = lm_head(rms(x, norm)) (or embed_tokens^T with --tie-embeddings); loss = mean
  cross-entropy over all B*T targets.
Optimizer, data, lr schedule and the compare metrics are GPT's (gpt_torch.py): AdamW with
weight decay on 2-D tensors only; step s, sample b reads the data file at
((s*B + b) * T) mod (N - T - 1).

MoE (qwen3-moe, with --experts E --top-k K --expert-ffn-dim Fe instead of --ffn-dim): every
block's mlp is issue #9's MoE mlp, moe_torch.moe_mlp: p = softmax(gate(h)) over E, the K
experts with the largest p (ties: lower index), weights p_k / sum of the K p's,
y = sum_k weight_k * expert_{e_k}(h), each expert a SwiGLU of dim Fe; dropless, no auxiliary
loss. Names: mlp.gate.weight (E,C), mlp.experts.{e}.gate_proj.weight (Fe,C), up_proj (Fe,C),
down_proj (C,Fe).

Extending: an MoE variant registers its MLP in MLPS (param specs + forward) and its model flags
in add_model_args; forward() takes the MLP by name. Another decoder of the same parameter
layout (llama3_torch.py) is a Model record: its own forward, its defaults, and main(argv, model)
gives it this file's flags, init, train and compare.

Subcommands: init, train (as gpt_torch.py's), compare (gpt_torch.py's compare, unchanged).
"""
import argparse
import collections
import functools
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as common  # noqa: E402  (optimizer, data, lr schedule, compare)
import moe_torch  # noqa: E402  (the MoE mlp)
import oracle_common as oc  # noqa: E402  (the init/train flags and loop)
import precision  # noqa: E402  (--precision: where bf16 rounds)
import safetensors_io as st  # noqa: E402

RMS_EPS = 1e-6


# ----------------------------------------------------------------------------- config

class Config:
    """The model's shape, from the command line (add_model_args). qk_norm: the blocks have
    q_norm and k_norm (Qwen3; not Llama 3)."""

    def __init__(self, a, qk_norm=True):
        self.qk_norm = qk_norm
        self.L, self.C, self.H, self.KV = a.layers, a.dim, a.heads, a.kv_heads
        self.D = a.head_dim or (a.dim // a.heads if a.heads else 0)
        self.F, self.T, self.V = a.ffn_dim, a.seq, a.vocab
        self.theta, self.tie = a.rope_theta, a.tie_embeddings
        self.args = a  # for MLP variants' own flags
        # a model without the MoE flags (add_model_args moe=False) is dense
        self.E, self.K, self.Fe = (getattr(a, f, 0) for f in ("experts", "top_k", "expert_ffn_dim"))
        self.mlp = "moe" if self.E else "dense"
        if self.mlp == "moe":
            if min(self.E, self.K, self.Fe) <= 0 or self.K > self.E:
                raise SystemExit("qwen3-moe needs --experts E, --top-k K <= E, --expert-ffn-dim")
            self.F = self.F or 1  # unused
        if min(self.L, self.C, self.H, self.KV, self.F, self.T, self.V) <= 0:
            raise SystemExit("all model sizes must be positive")
        if self.H % self.KV:
            raise SystemExit(f"--kv-heads {self.KV} must divide --heads {self.H}")
        if not a.head_dim and self.C % self.H:
            raise SystemExit(f"--heads {self.H} must divide --dim {self.C}")
        if self.D % 2:
            raise SystemExit(f"head dim {self.D} must be even")


def add_model_args(ap, batch=False, rope_theta=1e6, moe=True):
    """The model flags; rope_theta: --rope-theta's default; moe: also the qwen3-moe flags."""
    ap.add_argument("--layers", type=int, required=True, help="L")
    ap.add_argument("--dim", type=int, required=True, help="C (channels)")
    ap.add_argument("--heads", type=int, required=True, help="H (query heads)")
    ap.add_argument("--kv-heads", type=int, required=True, help="KV (key/value heads)")
    ap.add_argument("--head-dim", type=int, default=0, help="D (default C/H)")
    ap.add_argument("--ffn-dim", type=int, default=0, help="F (dense MLP hidden dim)")
    if moe:
        ap.add_argument("--experts", type=int, default=0, help="E: qwen3-moe (every mlp an MoE)")
        ap.add_argument("--top-k", type=int, default=0, help="K experts per token (qwen3-moe)")
        ap.add_argument("--expert-ffn-dim", type=int, default=0, help="Fe (qwen3-moe)")
    ap.add_argument("--seq", type=int, required=True, help="T")
    ap.add_argument("--vocab", type=int, default=256, help="V (default 256, byte tokens)")
    ap.add_argument("--rope-theta", type=float, default=rope_theta)
    ap.add_argument("--tie-embeddings", action="store_true", help="logits = x embed_tokens^T")
    if batch:
        ap.add_argument("--batch", type=int, required=True, help="B")


# ----------------------------------------------------------------------------- model

def dense_mlp_specs(cfg, p):
    return [(p + "mlp.gate_proj.weight", (cfg.F, cfg.C), "normal"),
            (p + "mlp.up_proj.weight", (cfg.F, cfg.C), "normal"),
            (p + "mlp.down_proj.weight", (cfg.C, cfg.F), "normal")]


def swiglu(g, u):
    return F.silu(g) * u


def dense_mlp(P, p, h, cfg):
    pc = precision.current()
    g = pc.linear(h, P[p + "mlp.gate_proj.weight"])
    u = pc.linear(h, P[p + "mlp.up_proj.weight"])
    return pc.linear(pc.op(swiglu, g, u), P[p + "mlp.down_proj.weight"])


def moe_mlp_specs(cfg, p):
    specs = [(p + "mlp.gate.weight", (cfg.E, cfg.C), "normal")]
    for e in range(cfg.E):
        specs += [(p + f"mlp.experts.{e}.gate_proj.weight", (cfg.Fe, cfg.C), "normal"),
                  (p + f"mlp.experts.{e}.up_proj.weight", (cfg.Fe, cfg.C), "normal"),
                  (p + f"mlp.experts.{e}.down_proj.weight", (cfg.C, cfg.Fe), "normal")]
    return specs


def moe_mlp(P, p, h, cfg):
    return moe_torch.moe_mlp(h, P[p + "mlp.gate.weight"],
                             moe_torch.expert_weights(P, p + "mlp.", cfg.E), cfg.K)


# name -> (param specs of one block's MLP under prefix p, forward of that MLP)
MLPS = {"dense": (dense_mlp_specs, dense_mlp), "moe": (moe_mlp_specs, moe_mlp)}


def param_specs(cfg):
    """Canonical (name, shape, init_kind) list; init_kind 'normal' or 'ones'."""
    C, H, KV, D, V = cfg.C, cfg.H, cfg.KV, cfg.D, cfg.V
    specs = [("model.embed_tokens.weight", (V, C), "normal")]
    for i in range(cfg.L):
        p = f"model.layers.{i}."
        specs += [
            (p + "input_layernorm.weight", (C,), "ones"),
            (p + "self_attn.q_proj.weight", (H * D, C), "normal"),
            (p + "self_attn.k_proj.weight", (KV * D, C), "normal"),
            (p + "self_attn.v_proj.weight", (KV * D, C), "normal"),
            (p + "self_attn.o_proj.weight", (C, H * D), "normal"),
        ]
        if cfg.qk_norm:
            specs += [(p + "self_attn.q_norm.weight", (D,), "ones"),
                      (p + "self_attn.k_norm.weight", (D,), "ones")]
        specs.append((p + "post_attention_layernorm.weight", (C,), "ones"))
        specs += MLPS[cfg.mlp][0](cfg, p)
    specs.append(("model.norm.weight", (C,), "ones"))
    if not cfg.tie:
        specs.append(("lm_head.weight", (V, C), "normal"))
    return specs


def init_params(cfg, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    out = {}
    for name, shape, kind in param_specs(cfg):
        if kind == "normal":
            out[name] = torch.empty(shape, dtype=torch.float32).normal_(0.0, 0.02, generator=g)
        else:
            out[name] = torch.ones(shape, dtype=torch.float32)
    return out


def rms(x, w):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w


def rope(x, theta):
    """x (B, heads, T, D): rotate-half RoPE at positions t = 0..T-1. Angles in float64."""
    T, D = x.shape[-2], x.shape[-1]
    j = torch.arange(D // 2, dtype=torch.float64)
    f = theta ** (-2.0 * j / D)
    a = torch.arange(T, dtype=torch.float64)[:, None] * f[None, :]  # (T, D/2)
    c, s = torch.cos(a).to(x.dtype), torch.sin(a).to(x.dtype)
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def attention(P, p, h, cfg):
    B, T, _ = h.shape
    H, KV, D = cfg.H, cfg.KV, cfg.D
    pc = precision.current()
    q = pc.linear(h, P[p + "self_attn.q_proj.weight"]).view(B, T, H, D)
    k = pc.linear(h, P[p + "self_attn.k_proj.weight"]).view(B, T, KV, D)
    v = pc.linear(h, P[p + "self_attn.v_proj.weight"]).view(B, T, KV, D)
    q = pc.op(lambda t: rms(t, P[p + "self_attn.q_norm.weight"]), q).transpose(1, 2)  # (B, H, T, D)
    k = pc.op(lambda t: rms(t, P[p + "self_attn.k_norm.weight"]), k).transpose(1, 2)  # (B, KV, T, D)
    v = v.transpose(1, 2)
    q, k = pc.op(lambda t: rope(t, cfg.theta), q), pc.op(lambda t: rope(t, cfg.theta), k)

    def core(q, k, v):  # one op: scores and softmax in fp32, only its output stored
        kv_of = torch.tensor([j * KV // H for j in range(H)])  # query head j reads kv head j*KV//H
        k, v = k[:, kv_of], v[:, kv_of]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(att, dim=-1) @ v  # (B, H, T, D)
        return y.transpose(1, 2).reshape(B, T, H * D)

    return pc.linear(pc.op(core, q, k, v), P[p + "self_attn.o_proj.weight"])


def add(a, b):
    return a + b


def forward(P, idx, targets, cfg):
    """idx, targets: (B, T) int64. Returns (mean loss, logits)."""
    mlp = MLPS[cfg.mlp][1]
    pc = precision.current()  # fp32: every pc.* below is the plain expression
    x = pc.out(F.embedding(idx, P["model.embed_tokens.weight"]))
    for i in range(cfg.L):
        p = f"model.layers.{i}."
        h = pc.op(lambda t: rms(t, P[p + "input_layernorm.weight"]), x)
        x = pc.op(add, x, attention(P, p, h, cfg))
        h = pc.op(lambda t: rms(t, P[p + "post_attention_layernorm.weight"]), x)
        x = pc.op(add, x, mlp(P, p, h, cfg))
    x = pc.op(lambda t: rms(t, P["model.norm.weight"]), x)
    head = P["model.embed_tokens.weight"] if cfg.tie else P["lm_head.weight"]
    logits = pc.act(pc.linear(x, head))  # the loss is fp32; the logits' gradient is not
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return loss, logits


# ----------------------------------------------------------------------------- init / train

def cmd_init(a, cfg, model):
    P = init_params(cfg, a.seed)
    meta = {"model": model.name, "seed": a.seed,
            "generator": "torch.Generator normal_(0,0.02) in canonical order"}
    st.write(a.output, P, meta)
    print(f"wrote {a.output}: {len(P)} tensors, {sum(t.numel() for t in P.values())} parameters")


def cmd_train(a, cfg, model):
    P = oc.load_init(a, {n: shape for n, shape, _ in param_specs(cfg)})
    opt = common.make_optimizer(P, a.lr, a.weight_decay)
    data = common.load_data(a.data, cfg.V)
    losses = oc.train_steps(a, P, opt, lambda s: common.get_batch(data, s, a.batch, cfg.T),
                            lambda x, y: model.forward(P, x, y, cfg)[0])
    oc.write_outputs(a, P, losses)


# ----------------------------------------------------------------------------- CLI

# A decoder this file's CLI serves: name (the checkpoint's metadata), doc (--help), the
# --rope-theta default, moe (the qwen3-moe flags exist), qk_norm (q_norm/k_norm parameters) and
# forward(P, idx, targets, cfg) -> (loss, logits).
Model = collections.namedtuple("Model", "name doc rope_theta moe qk_norm forward")
QWEN3 = Model("qwen3", __doc__, 1e6, True, True, forward)


def build_parser(model):
    ap = argparse.ArgumentParser(description=model.doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    model_args = functools.partial(add_model_args, rope_theta=model.rope_theta, moe=model.moe)
    oc.init_parser(sub, model_args).set_defaults(fn=cmd_init)
    oc.train_parser(sub, model_args).set_defaults(fn=cmd_train)
    sub.add_parser("compare", help="gpt_torch.py's compare (same flags and metrics)")
    return ap


def main(argv=None, model=QWEN3):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "compare":
        return common.main(argv)
    a = build_parser(model).parse_args(argv)
    return a.fn(a, Config(a, qk_norm=model.qk_norm), model) or 0


if __name__ == "__main__":
    sys.exit(main())
