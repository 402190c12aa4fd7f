"""piper.export's refusals, every one the exporter makes: each bad model below must stop with an
ExportError whose message names the op, the module path and the user's source line (the line
marked `# <- refused`, or for the example inputs the line of the export call), and must leave
no output file. The cases are the rows of docs/frontend.md's refusal table, by name: the script
checks both lists are the same, so the guide cannot promise or omit a refusal. Prints
PASS/FAIL per case; exits 1 if any fails.

Run by test/frontend/refusals.test."""
import inspect
import os
import re
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import models  # noqa: E402
import piper  # noqa: E402

V, C = 16, 8
SRC = os.path.abspath(__file__)


def refused_line(obj, mark="# <- refused"):
    """The line of `obj`'s source marked `mark`."""
    lines, first = inspect.getsourcelines(obj)
    return next(first + i for i, l in enumerate(lines) if mark in l)


class Model(nn.Module):
    """tokens -> embedding -> `inner` (at blocks.1) -> head -> cross entropy."""

    def __init__(self, inner, class_weights=False, **ce):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList([nn.Identity(), inner])
        self.head = nn.Linear(C, V)
        self.ce = {"ignore_index": -1, **ce}
        self.register_buffer("class_weights", torch.linspace(0.5, 1.5, V) if class_weights else None)

    def forward(self, tokens, targets):
        x = self.blocks[1](self.blocks[0](self.wte(tokens)))
        logits = self.head(x).view(-1, V)
        return F.cross_entropy(logits, targets.view(-1), self.class_weights, **self.ce)  # <- refused


class Inner(nn.Module):
    """A block whose forward is one of the lambdas below (x: (2, 4, C) activations), with a
    parameter w (C, C) and a constant boolean mask m (4, C)."""

    def __init__(self, f):
        super().__init__()
        self.f = f
        self.w = nn.Parameter(torch.ones(C, C))
        self.register_buffer("m", torch.tril(torch.ones(4, C, dtype=torch.bool)))

    def forward(self, x):
        return self.f(self, x)


# Each lambda is on its own line, which the refusal must name.
BODIES = {
    "unmapped-op": lambda s, x: torch.cumsum(x, dim=1),
    "data-dependent-control-flow": lambda s, x: x * 2 if x.sum() > 0 else x,
    "data-dependent-shape": lambda s, x: x + (x > 0).nonzero().shape[0],
    "cast-to-half": lambda s, x: x.half().float(),
    "functional-dropout": lambda s, x: F.dropout(x, 0.1, training=True),
    "data-dependent-mask": lambda s, x: x.masked_fill(x > 0, 0.0),
    "rounding-division": lambda s, x: torch.div(x, 2, rounding_mode="floor"),
    "tensor-exponent": lambda s, x: x ** x,
    "tensor-fill-value": lambda s, x: x.masked_fill(s.m, x[0, 0, 0]),
    "where-of-two-tensors": lambda s, x: torch.where(s.m, x, x * 2),
    "strided-slice": lambda s, x: torch.cat((x[:, ::2], x[:, 1::2]), 1),
    "addmm-scaled": lambda s, x: torch.addmm(x[0, 0], x.reshape(-1, C), s.w.t(), beta=0.5).view(x.shape),
    "addmm-of-activations": lambda s, x: torch.addmm(x[0, 0], x.reshape(-1, C), x.reshape(-1, C)[:C]).view(x.shape),
    "matmul-of-activations": lambda s, x: (x.reshape(-1, C) @ x.reshape(-1, C)[:C].t()).view(x.shape),
    "layer-norm-over-two-dims": lambda s, x: F.layer_norm(x, x.shape[-2:]),
}
BODY_OPS = {
    "unmapped-op": "aten.cumsum", "data-dependent-control-flow": "reading a tensor's value",
    "data-dependent-shape": "aten.nonzero", "cast-to-half": "aten._to_copy",
    "functional-dropout": "aten.empty_like", "data-dependent-mask": "aten.gt",
    "rounding-division": "aten.div.Tensor_mode", "tensor-exponent": "aten.pow.Tensor_Tensor",
    "tensor-fill-value": "aten.masked_fill.Tensor", "where-of-two-tensors": "aten.where.self",
    "strided-slice": "aten.slice", "addmm-scaled": "aten.addmm", "addmm-of-activations": "aten.addmm",
    "matmul-of-activations": "aten.mm", "layer-norm-over-two-dims": "aten.native_layer_norm",
}
BODY_LINES = {n: inspect.getsourcelines(f)[1] for n, f in BODIES.items()}


class Float64(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(C, dtype=torch.float64))

    def forward(self, x):
        return x * self.w.float()  # <- refused


class Dropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(x)  # <- refused


class DoubleInput(nn.Module):
    """A dtype bug of the user's own: torch's message, no data-dependent hint."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(C, C)

    def forward(self, x):
        return self.lin(x.double())  # <- refused


class TokenArithmetic(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V + 1, C)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        x = self.wte(tokens + 1)  # <- refused
        return F.cross_entropy(self.head(x).view(-1, V), targets.view(-1))


class TokenSlice(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        x = self.wte(tokens[:, 1:])  # <- refused
        return F.cross_entropy(self.head(x).reshape(-1, V), targets[:, 1:].reshape(-1))


class ConstantIndices(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wte(torch.tensor([3, 1, 2, 0]))  # <- refused
        return F.cross_entropy(self.head(x).view(-1, V), targets.view(-1))


class TokensAsTargets(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        logits = self.head(self.wte(tokens)).view(-1, V)
        return F.cross_entropy(logits, tokens.view(-1))  # <- refused


class NllWithoutLogSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        logits = self.head(self.wte(tokens)).view(-1, V)
        return F.nll_loss(logits, targets.view(-1))  # <- refused


class SmoothedWeighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        logits = self.head(self.wte(tokens)).view(-1, V)
        return F.cross_entropy(logits, targets.view(-1), reduction="sum", label_smoothing=0.1)  # <- refused


class NoCrossEntropy(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)

    def forward(self, tokens, targets):
        return self.wte(tokens).mean()


class ReturnsLogits(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)

    def forward(self, tokens, targets):
        return self.wte(tokens)


# ---- mixture-of-experts blocks tdag.moe does not compute (models.py's HF-style blocks) ----

class MoEModel(nn.Module):
    """tokens -> embedding -> MoE block `moe` (at blocks.1) -> head -> cross entropy; an
    auxiliary loss on the router logits with aux=True."""

    def __init__(self, moe, aux=False):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList([nn.Identity(), moe])
        self.head = nn.Linear(C, V)
        self.aux = aux

    def forward(self, tokens, targets):
        x = self.wte(tokens)
        y, router_logits = self.blocks[1](x)  # <- refused
        loss = F.cross_entropy(self.head(x + y).view(-1, V), targets.view(-1))
        if self.aux:
            loss = loss + 0.01 * router_logits.pow(2).mean()  # <- aux
        return loss


def qwen3_moe(**kw):
    torch.manual_seed(0)
    return models.Qwen3MoeSparseMoeBlock(C, 4, 2, 12, **kw)


class SharedExpertMoE(models.Qwen3MoeSparseMoeBlock):
    """Qwen2-MoE's shared expert, added to the routed output."""

    def __init__(self):
        super().__init__(C, 4, 2, 12)
        self.shared_expert = models.Qwen3MoeMLP(C, 12)

    def forward(self, h):
        y, logits = super().forward(h)
        return y + self.shared_expert(h), logits


class CapacityMoE(models.Qwen3MoeSparseMoeBlock):
    def __init__(self):
        super().__init__(C, 4, 2, 12)
        self.capacity_factor = 1.25


class SigmoidRouterMoE(models.Qwen3MoeSparseMoeBlock):
    """DeepSeek-V3's scoring: sigmoid, not softmax."""

    def forward(self, hidden_states):
        B, T, D = hidden_states.shape
        h = hidden_states.view(-1, D)
        logits = self.gate(h)
        w, ex = torch.topk(torch.sigmoid(logits), self.top_k, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        y = torch.zeros_like(h)
        for e in range(self.num_experts):
            y = y + ((ex == e).float() * w).sum(-1, keepdim=True) * self.experts[e](h)
        return y.view(B, T, D), logits


class GeluExpertsMoE(models.Qwen3MoeSparseMoeBlock):
    def __init__(self):
        super().__init__(C, 4, 2, 12)
        for ex in self.experts:
            ex.act_fn = nn.GELU()


class AuxOutputMoE(models.Qwen3MoeSparseMoeBlock):
    """A block that returns its own auxiliary loss as a third result."""

    def forward(self, hidden_states):
        y, logits = super().forward(hidden_states)
        return y, logits, logits.softmax(-1).mean()


def moe_jitter():
    torch.manual_seed(0)
    return models.MixtralSparseMoeBlock(C, 4, 2, 12, jitter_noise=0.01)


def moe_router_bias():
    m = qwen3_moe()
    m.gate = nn.Linear(C, 4, bias=True)
    return m


MOE_CASES = [
    # name, block, op named, message part
    ("moe-shared-expert", SharedExpertMoE, "shared expert", "blocks.1.shared_expert"),
    ("moe-capacity-factor", CapacityMoE, "capacity factor", "capacity_factor = 1.25"),
    ("moe-router-jitter", moe_jitter, "router jitter", "jitter_noise = 0.01"),
    ("moe-router-bias", moe_router_bias, "router bias", "a router with a bias"),
    ("moe-sigmoid-router", lambda: SigmoidRouterMoE(C, 4, 2, 12), "router activation", "sigmoid"),
    ("moe-gelu-experts", GeluExpertsMoE, "expert activation", "GELU"),
    ("moe-extra-result", lambda: AuxOutputMoE(C, 4, 2, 12), "block results", "auxiliary loss"),
]


def check(name, model, want, tokens=None, targets=None, absent=()):
    tokens = torch.randint(0, V, (2, 4)) if tokens is None else tokens
    targets = torch.randint(0, V, (2, 4)) if targets is None else targets
    out = os.path.join(tempfile.mkdtemp(), "m.mlir")
    try:
        piper.export(model, (tokens, targets), out, weights=out + ".safetensors")  # <- export
    except piper.ExportError as err:
        msg = str(err)
        missing = [w for w in want if w not in msg]
        present = [a for a in absent if a in msg]
        if missing or present or os.path.exists(out) or os.path.exists(out + ".safetensors"):
            print(f"FAIL {name}: message lacks {missing}, has {present}, or an output exists: {msg}")
            return False
        print(f"PASS {name}: {msg}")
        return True
    print(f"FAIL {name}: exported without an error")
    return False


def guide_rows():
    """The case names docs/frontend.md's refusal table lists (its first column)."""
    text = open(os.path.join(ROOT, "docs", "frontend.md")).read()
    section = text.split("### Refusals", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.M)


def main():
    ok = True
    line = lambda cls: f"{SRC}:{refused_line(cls)}"  # noqa: E731
    export_line = f"{SRC}:{refused_line(check, '# <- export')}"
    names = []

    def case(name, model, want, **kw):
        nonlocal ok
        names.append(name)
        ok &= check(name, model, want, **kw)

    for name, f in BODIES.items():
        case(name, Model(Inner(f)), [BODY_OPS[name], "module blocks.1", f"{SRC}:{BODY_LINES[name]}"],
             absent=() if "data-dependent" in name else ("data-dependent control flow",))
    case("float64-parameter", Model(Float64()), ["torch.float64", "module blocks.1", line(Float64)])
    case("dropout", Model(Dropout()), ["op Dropout", "module blocks.1.drop", line(Dropout)])
    case("torch-error", Model(DoubleInput()),
         ["torch raised RuntimeError", "op aten.addmm", "module blocks.1.lin", line(DoubleInput)],
         absent=("data-dependent",))
    case("token-arithmetic", TokenArithmetic(), ["token ids", "op aten.add", "module (the root module)",
                                                 line(TokenArithmetic)])
    case("token-slice", TokenSlice(), ["token ids", "tdag.slice", "op aten.embedding", line(TokenSlice)])
    case("embedding-at-constant-indices", ConstantIndices(),
         ["constant indices other than a range", "op aten.embedding", line(ConstantIndices)])
    case("ignore-index", Model(nn.Identity(), ignore_index=0),
         ["aten.nll_loss_forward", "module (the root module)", line(Model), "ignore_index=0"])
    case("class-weights", Model(nn.Identity(), class_weights=True),
         ["no class weights", "aten.nll_loss_forward", line(Model)])
    case("sum-reduction", Model(nn.Identity(), reduction="sum"),
         ["reduction='mean'", "aten.nll_loss_forward", line(Model)])
    case("smoothing-with-sum", SmoothedWeighted(),
         ["label_smoothing=0.1", "op F.cross_entropy", "module (the root module)", line(SmoothedWeighted)])
    case("targets-not-the-input", TokensAsTargets(),
         ["targets must be the targets input", "aten.nll_loss_forward", line(TokensAsTargets)])
    case("nll-without-log-softmax", NllWithoutLogSoftmax(),
         ["after log_softmax", "aten.nll_loss_forward", line(NllWithoutLogSoftmax)])
    case("no-cross-entropy", NoCrossEntropy(), ["no loss found", "module (the root module)", export_line])
    case("no-scalar-loss", ReturnsLogits(), ["scalar loss", "module (the root module)", export_line])
    case("float-tokens", Model(nn.Identity()), [export_line, "integer"], tokens=torch.rand(2, 4))
    case("tokens-not-2d", Model(nn.Identity()), [export_line, "(B, T)"],
         tokens=torch.randint(0, V, (8,)), targets=torch.randint(0, V, (8,)))
    for name, block, op, part in MOE_CASES:
        case(name, MoEModel(block()), [f"op {op}", "module blocks.1", line(MoEModel), part])
    not_moe = nn.Linear(C, C)
    piper.annotate(not_moe, moe=True)
    case("moe-hint-mismatch", MoEModel(not_moe), ["moe=...", "no ModuleList of experts", "op MoE hint",
                                                 "module blocks.1", export_line])
    aux_line = f"{SRC}:{refused_line(MoEModel, '# <- aux')}"
    case("moe-auxiliary-loss", MoEModel(qwen3_moe(), aux=True),
         ["router logits", "auxiliary", "op aten.pow", "module (the root module)", aux_line])

    for name, kw, part in (("sdpa-with-mask", {"is_causal": False}, "is_causal=True"),
                           ("sdpa-other-scale", {"is_causal": True, "scale": 0.3}, "scale")):
        names.append(name)
        if not hasattr(F, "scaled_dot_product_attention"):
            print(f"UNSUPPORTED {name}: torch {torch.__version__} has no scaled_dot_product_attention")
            continue
        case_sdpa = Inner(lambda s, x, kw=kw: F.scaled_dot_product_attention(  # <- sdpa
            x[:, None], x[:, None], x[:, None], **kw)[:, 0])
        sdpa_line = f"{SRC}:{refused_line(main, '# <- sdpa')}"
        ok &= check(name, Model(case_sdpa), ["scaled_dot_product_attention", part, "module blocks.1", sdpa_line])

    rows = guide_rows()
    if sorted(rows) != sorted(names):
        print(f"FAIL guide: docs/frontend.md's refusal table lists {sorted(set(rows) - set(names))} "
              f"that no case checks and lacks {sorted(set(names) - set(rows))}")
        ok = False
    else:
        print(f"PASS guide: docs/frontend.md's refusal table lists the {len(names)} cases")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
