#!/usr/bin/python3
"""PyTorch oracle for Piper's mixture-of-experts MLP, written from issue 9's text:

  p = softmax(gate(h)) over the E experts; the K experts with the largest p (ties: the lower
  index); weights w_k = p_k / sum of the K chosen p's; y = sum_k w_k * expert_{e_k}(h), each
  expert a SwiGLU down(silu(gate_proj(h)) * up_proj(h)) of dim Fe. Dropless: every token
  reaches all K of its experts. No auxiliary loss.

moe_mlp() is the MLP (qwen3-moe's oracle uses it). The `block` model below is a small test
model around it, independent of the qwen3 ops:
  x = wte[tok] + wpe[pos]; per layer i: x = x + moe_i(x); logits = x @ wte^T;
  loss = mean cross-entropy.
Names: wte.weight (V,C), wpe.weight (T,C), layers.{i}.mlp.gate.weight (E,C),
layers.{i}.mlp.experts.{e}.{gate,up}_proj.weight (Fe,C), ...down_proj.weight (C,Fe).
Data, AdamW and `compare` are gpt_torch.py's.

Subcommands: init, train (block model), ir (the block model as tdag IR, for piper-compile).
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as gt  # noqa: E402
import oracle_common as oc  # noqa: E402  (the init/train flags and loop)
import precision  # noqa: E402  (--precision: where bf16 rounds)
import safetensors_io as st  # noqa: E402


def topk_route(logits, K):
    """(weights (...,K), experts (...,K)): softmax probabilities of the K largest, renormalised.
    Ties go to the lower index: a stable descending sort keeps equal values in index order."""
    p = torch.softmax(logits, dim=-1)
    order = torch.sort(p, dim=-1, descending=True, stable=True).indices[..., :K]
    w = torch.gather(p, -1, order)
    return w / w.sum(dim=-1, keepdim=True), order


def moe_mlp(h, gate_w, experts, K):
    """h (..., C); gate_w (E, C); experts: list of (gate_proj, up_proj, down_proj) weights.
    Every token goes through each of its K experts (dropless).
    bf16 (precision.py): the router's scores and weights w stay fp32; the dispatch rows, each
    expert's linears and swiglu, and the combine are stored in bf16; the dispatch's gradient
    for x (the sum over a token's K rows) is rounded once, as the one op that produces it."""
    pc = precision.current()
    shape = h.shape
    x = h.reshape(-1, shape[-1])
    w, ex = topk_route(pc.router(x, gate_w), K)
    xd = pc.act(x)  # the dispatch's operand
    y = torch.zeros_like(x)
    for e, (g, u, d) in enumerate(experts):
        # An expert no token chose still runs on its (empty) rows, so its weights get a zero
        # gradient rather than none: AdamW then steps it (moments decay, weight decay applies)
        # as it does any parameter whose gradient is zero, which is what Piper does. (Skipping
        # it would leave grad None, and torch's AdamW skips a parameter without a gradient.)
        tok, slot = (ex == e).nonzero(as_tuple=True)
        xe = xd[tok]
        if pc.bf16:
            out = pc.linear(pc.op(swiglu, pc.linear(xe, g), pc.linear(xe, u)), d)
        else:  # the fp32 expression as it always was
            out = F.linear(F.silu(F.linear(xe, g)) * F.linear(xe, u), d)
        y = y.index_add(0, tok, pc.act(out) * w[tok, slot].unsqueeze(-1))
    return pc.out(y).reshape(shape)  # the combine's output


def swiglu(g, u):
    return F.silu(g) * u


def expert_weights(P, prefix, E):
    return [(P[f"{prefix}experts.{e}.gate_proj.weight"], P[f"{prefix}experts.{e}.up_proj.weight"],
             P[f"{prefix}experts.{e}.down_proj.weight"]) for e in range(E)]


# ----------------------------------------------------------------------------- block model

def block_specs(L, C, V, T, E, Fe):
    specs = [("wte.weight", (V, C)), ("wpe.weight", (T, C))]
    for i in range(L):
        p = f"layers.{i}.mlp."
        specs.append((p + "gate.weight", (E, C)))
        for e in range(E):
            specs += [(p + f"experts.{e}.gate_proj.weight", (Fe, C)),
                      (p + f"experts.{e}.up_proj.weight", (Fe, C)),
                      (p + f"experts.{e}.down_proj.weight", (C, Fe))]
    return specs


def block_forward(P, idx, targets, L, E, K):
    T = idx.shape[1]
    pc = precision.current()
    x = pc.out(F.embedding(idx, P["wte.weight"]) + P["wpe.weight"][:T].unsqueeze(0))
    for i in range(L):
        p = f"layers.{i}.mlp."
        x = pc.op(lambda a, b: a + b, x, moe_mlp(x, P[p + "gate.weight"], expert_weights(P, p, E), K))
    logits = pc.act(pc.out(pc.act(x) @ pc.weight(P["wte.weight"]).t()))
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def cmd_init(a):
    g = torch.Generator()
    g.manual_seed(a.seed)
    P = {n: torch.empty(s).normal_(0.0, a.std, generator=g)
         for n, s in block_specs(a.layers, a.dim, a.vocab, a.seq, a.experts, a.expert_ffn_dim)}
    if a.tie_router:  # experts 1 and 2 get equal router rows: every token's logits tie there
        for i in range(a.layers):
            P[f"layers.{i}.mlp.gate.weight"][2] = P[f"layers.{i}.mlp.gate.weight"][1]
    st.write(a.output, P, {"seed": str(a.seed)})
    print(f"wrote {a.output}: {len(P)} tensors")


def cmd_train(a):
    P = oc.load_init(a, dict(block_specs(a.layers, a.dim, a.vocab, a.seq, a.experts,
                                         a.expert_ffn_dim)))
    opt = gt.make_optimizer(P, a.lr, a.weight_decay)
    data = gt.load_data(a.data, a.vocab)
    losses = oc.train_steps(a, P, opt, lambda s: gt.get_batch(data, s, a.batch, a.seq),
                            lambda x, y: block_forward(P, x, y, a.layers, a.experts, a.top_k))
    oc.write_outputs(a, P, losses)


def cmd_ir(a):
    """The block model as tdag IR (the ops under test, written independently of piper-gen)."""
    L, C, V, T, E, Fe, K, B = (a.layers, a.dim, a.vocab, a.seq, a.experts, a.expert_ffn_dim,
                               a.top_k, a.batch)
    R = B * T * K
    f = lambda *d: "tensor<" + "x".join(map(str, d)) + "xf32>"  # noqa: E731
    i32 = lambda *d: "tensor<" + "x".join(map(str, d)) + "xi32>"  # noqa: E731
    out = ["func.func @main() {",
           f'  %tok = "tdag.input"() {{name = "tokens"}} : () -> {i32(B, T)}',
           f'  %tgt = "tdag.input"() {{name = "targets"}} : () -> {i32(B, T)}']
    for n, s in block_specs(L, C, V, T, E, Fe):
        out.append(f'  %{n.replace(".", "_")} = "tdag.param"() {{init = "normal", name = "{n}"}}'
                   f' : () -> {f(*s)}')
    out.append(f'  %x0 = "tdag.embedding"(%tok, %wte_weight, %wpe_weight) : ({i32(B, T)}, '
               f'{f(V, C)}, {f(T, C)}) -> {f(B, T, C)}')
    for i in range(L):
        p = f"%layers_{i}_mlp_"
        tg = f"tags = {{layer = {i} : i64}}"
        te = f"tags = {{EP = 0 : i64, layer = {i} : i64}}"
        ws = [p + f"experts_{e}_{w}_proj_weight" for w in ("gate", "up", "down") for e in range(E)]
        wt = [f(Fe, C)] * (2 * E) + [f(C, Fe)] * E
        out += [
            f'  %l{i} = "tdag.matmul_nt"(%x{i}, {p}gate_weight) {{{tg}}} : ({f(B, T, C)}, {f(E, C)}) -> {f(B, T, E)}',
            f'  %w{i}, %e{i} = "tdag.moe_topk"(%l{i}) {{top_k = {K} : i64, {tg}}} : ({f(B, T, E)}) -> ({f(B, T, K)}, {i32(B, T, K)})',
            f'  %r{i}, %c{i} = "tdag.moe_dispatch"(%x{i}, %e{i}) {{num_experts = {E} : i64, {te}}} : ({f(B, T, C)}, {i32(B, T, K)}) -> ({f(R, C)}, {i32(E)})',
            f'  %o{i}, %h{i} = "tdag.moe_experts"(%r{i}, %c{i}, {", ".join(ws)}) {{operandSegmentSizes = array<i32: 1, 1, {E}, {E}, {E}>, {te}}} : ({f(R, C)}, {i32(E)}, {", ".join(wt)}) -> ({f(R, C)}, {f(R, 2 * Fe)})',
            f'  %y{i} = "tdag.moe_combine"(%o{i}, %w{i}, %e{i}) {{num_experts = {E} : i64, {tg}}} : ({f(R, C)}, {f(B, T, K)}, {i32(B, T, K)}) -> {f(B, T, C)}',
            f'  %x{i + 1} = "tdag.add"(%x{i}, %y{i}) {{{tg}}} : ({f(B, T, C)}, {f(B, T, C)}) -> {f(B, T, C)}']
    out += [f'  %logits = "tdag.matmul_nt"(%x{L}, %wte_weight) : ({f(B, T, C)}, {f(V, C)}) -> {f(B, T, V)}',
            f'  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) : ({f(B, T, V)}, {i32(B, T)}) -> (tensor<f32>, {f(B, T, V)})',
            '  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()', "  return", "}"]
    print("\n".join(out))


def add_block_args(p, batch=False):
    """The block model's flags; with batch (train, ir) also --top-k and --batch."""
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--experts", type=int, required=True)
    p.add_argument("--expert-ffn-dim", type=int, required=True)
    if batch:
        p.add_argument("--top-k", type=int, required=True)
        p.add_argument("--batch", type=int, required=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = oc.init_parser(sub, add_block_args)
    p.add_argument("--std", type=float, default=0.02)
    p.add_argument("--tie-router", action="store_true",
                   help="router rows of experts 1 and 2 equal (a tie in every token)")
    p.set_defaults(fn=cmd_init)
    oc.train_parser(sub, add_block_args).set_defaults(fn=cmd_train)
    p = sub.add_parser("ir", help="the block model as tdag IR")
    add_block_args(p, batch=True)
    p.set_defaults(fn=cmd_ir)
    a = ap.parse_args(argv)
    return a.fn(a) or 0


if __name__ == "__main__":
    sys.exit(main())
