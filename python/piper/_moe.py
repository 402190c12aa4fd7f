"""Mixture-of-experts blocks from PyTorch code: recognised at the module level and exported as
tdag.moe (docs/frontend.md, "MoE from PyTorch code").

A top-k routed block written as Hugging Face's Qwen3-MoE, Mixtral or OLMoE write it (a router
nn.Linear, softmax, topk, maybe renormalised weights; a ModuleList of SwiGLU experts computed
by a loop over experts with one_hot/where/index_add_) gathers each expert's tokens by their
values, which tracing cannot follow (nonzero has a data-dependent shape). So the exporter finds
such blocks before it traces:
  * by structure: a module with a bias-free nn.Linear child C -> E (the router) and an
    nn.ModuleList child of E experts, each with exactly three bias-free nn.Linear children
    shaped (Fe, C), (Fe, C), (C, Fe) (gate, up, down: by their names gate_proj/w1,
    up_proj/w3, down_proj/w2, else by shape, gate and up told apart by the probe below), and
    top_k from an attribute top_k or num_experts_per_tok;
  * or by the hint piper.annotate(block, moe=True) (or moe={"router": ..., "experts": ...,
    "top_k": ..., "gate": ..., "up": ..., "down": ...} naming the children when their names
    or shapes are ambiguous); moe=False keeps a block from being recognised.
Then it checks what the block computes, not only how it is built: the probe runs the block's
own forward on a seeded random input and compares it with tdag.moe's meaning (_library.py
moe_reference) with and without renormalised weights (and gate/up swapped where only the
shapes named them): the block is exported only if one matches (1e-4 of the output's largest
value). What tdag.moe does not compute is refused by name: a shared expert, a capacity factor
(token dropping), router jitter, a router bias, a router activation other than softmax
(sigmoid: DeepSeek-V3's), an expert activation other than SiLU, and an auxiliary loss computed
from the router logits the block returns (the refusal is raised where they are used).

While tracing, each recognised block's forward is replaced by one call of the op piper.moe
(_library.py) on its own parameters, whose handler (_ops/moe.py) emits tdag.matmul_nt (router
logits), moe_topk, moe_dispatch, moe_experts, moe_combine. The experts' weights are the
module's own parameters under their own names, so the weights file and piper.load round-trip
with strict=True."""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._errors import ExportError, user_frame
from ._library import moe_reference

_ATTR = "_piper_moe"  # piper.annotate(block, moe=...) stores the hint here

_ROLE_NAMES = {"gate": ("gate_proj", "w1", "gate"), "up": ("up_proj", "w3", "up"),
               "down": ("down_proj", "w2", "down")}
_TOP_K_ATTRS = ("top_k", "num_experts_per_tok")
_SHARED_NAMES = ("shared_expert", "shared_experts", "shared_expert_gate", "shared_mlp")
_CAPACITY_ATTRS = ("capacity_factor", "expert_capacity", "train_capacity_factor",
                   "eval_capacity_factor", "drop_tokens")
_JITTER_ATTRS = ("jitter_noise", "router_jitter_noise")
_PROBE_TOL = 1e-4  # fp32 rounding of the same sums in another order, relative to max|y|


class MoESpec:
    """A recognised block: its path, router (nn.Linear), experts [(gate, up, down) nn.Linear],
    top_k, whether the weights are renormalised, and where its forward's results go (out: the
    tuple index of y, or None for a plain tensor; logits: the index of the router logits and
    whether they are flattened to (N, E)). `refused` names what makes it unexportable, raised
    when the block is called."""

    def __init__(self, path, module):
        self.path, self.module = path, module
        self.router, self.experts, self.top_k = None, [], None
        self.normalize, self.out, self.logits, self.flat_logits, self.arity = True, None, None, False, 1
        self.refused = None


def _linears(m):
    return {n: c for n, c in m.named_children() if isinstance(c, nn.Linear)}


def _expert_roles(path, expert, C, hint):
    """(gate, up, down, named): the three linears of one expert; `named` is False when gate and
    up were told apart by nothing (the probe tries both)."""
    lin = _linears(expert)
    if hint:
        names = [hint.get(r) for r in ("gate", "up", "down")]
        if all(names):
            missing = [n for n in names if n not in lin]
            if missing:
                raise _hint_error(path, f"an expert has no linear {missing[0]!r} (its linears: "
                                        f"{sorted(lin)})")
            return lin[names[0]], lin[names[1]], lin[names[2]], True
    by_role = {}
    for role, names in _ROLE_NAMES.items():
        for n in names:
            if n in lin:
                by_role[role] = lin[n]
                break
    if len(by_role) == 3 and len({id(v) for v in by_role.values()}) == 3:
        return by_role["gate"], by_role["up"], by_role["down"], True
    downs = [l for l in lin.values() if l.out_features == C and l.in_features != C]
    ins = [l for l in lin.values() if l.in_features == C and l.out_features != C]
    if len(lin) == 3 and len(downs) == 1 and len(ins) == 2:
        return ins[0], ins[1], downs[0], False
    return None


def _hint_error(path, what):
    """The ExportError for a piper.annotate(block, moe=...) hint the block does not fit, at the
    piper.export call's line (the hint is read before tracing)."""
    src = user_frame()
    return ExportError(f"{src[0]}:{src[1]}: piper.export: piper.annotate(block, moe=...) names "
                       f"a mixture-of-experts block, but {what} (op MoE hint, module "
                       f"{path or '(the root module)'})")


def _structure(path, m, hint):
    """The MoESpec of module m when it is shaped as a routed block (or the hint says it is one),
    else None (auto) or an ExportError (a hint that does not fit)."""
    if hint is True:
        hint = {}
    children = dict(m.named_children())
    lists = {n: c for n, c in children.items() if isinstance(c, nn.ModuleList)}
    lin = _linears(m)
    ex_name = (hint or {}).get("experts")
    router_name = (hint or {}).get("router")

    def bad(what):
        if hint is None:
            return None
        raise _hint_error(path, what)
    experts = lists.get(ex_name) if ex_name else (next(iter(lists.values())) if len(lists) == 1 else None)
    if experts is None or len(experts) < 2:
        return bad("no ModuleList of experts found (name it: moe={'experts': NAME})")
    E = len(experts)
    routers = [lin[router_name]] if router_name in lin else \
        [l for l in lin.values() if l.out_features == E]
    if len(routers) != 1:
        return bad(f"no router found: a child nn.Linear with {E} outputs (name it: "
                   f"moe={{'router': NAME}})")
    router = routers[0]
    C = router.in_features
    spec = MoESpec(path, m)
    spec.router = router
    named = True
    for e, expert in enumerate(experts):
        roles = _expert_roles(f"{path}.{ex_name or 'experts'}.{e}", expert, C, hint)
        if roles is None or any(l.bias is not None for l in roles[:3]):
            return bad(f"expert {e} is not three bias-free linears gate, up (Fe, C) and down "
                       f"(C, Fe) (name them: moe={{'gate': ..., 'up': ..., 'down': ...}})")
        gate, up, down = roles[:3]
        named &= roles[3]
        if gate.weight.shape != up.weight.shape or down.weight.shape != gate.weight.t().shape:
            return bad(f"expert {e}'s linears do not have the shapes (Fe, C), (Fe, C), (C, Fe)")
        spec.experts.append((gate, up, down))
    spec.gate_up_named = named
    k = (hint or {}).get("top_k")
    if k is None:
        k = next((getattr(m, a) for a in _TOP_K_ATTRS if isinstance(getattr(m, a, None), int)), None)
    if not isinstance(k, int) or not 1 <= k <= E:
        return bad("top_k unknown: give the block an int attribute top_k or "
                   "num_experts_per_tok, or moe={'top_k': K}")
    spec.top_k = k
    return spec


def _unsupported(spec):
    """What tdag.moe cannot compute that the block's own attributes and children say, or None."""
    m = spec.module
    for n, c in m.named_children():
        if n in _SHARED_NAMES:
            return (f"a shared expert ({spec.path}.{n}): tdag.moe routes every token to its "
                    f"top-k experts only", "shared expert")
    for a in _CAPACITY_ATTRS:
        v = getattr(m, a, None)
        if v not in (None, False, 0):
            return (f"a capacity factor ({a} = {v}): tdag.moe is dropless (every token reaches "
                    f"all its experts), so token dropping is not computed", "capacity factor")
    for a in _JITTER_ATTRS:
        v = getattr(m, a, None)
        if isinstance(v, (int, float)) and v > 0 and m.training:
            return (f"router jitter noise ({a} = {v}) in training mode: tdag.moe's router is "
                    f"deterministic; set it to 0", "router jitter")
    if spec.router.bias is not None:
        return ("a router with a bias: tdag.moe's router is a bias-free linear", "router bias")
    return None


def _first_tensor_and_layout(out, x, logits):
    """(y, out index or None, logits index or None, logits flattened, arity) of the block's
    result, or a refusal text."""
    if isinstance(out, torch.Tensor):
        return out, None, None, False, 1
    if not isinstance(out, (tuple, list)):
        return f"its forward returns {type(out).__name__}, not a tensor or a tuple"
    iy = next((i for i, o in enumerate(out) if isinstance(o, torch.Tensor) and o.shape == x.shape), None)
    il, flat = None, False
    for i, o in enumerate(out):
        if i == iy or not isinstance(o, torch.Tensor):
            continue
        for f, want in ((False, logits), (True, logits.reshape(-1, logits.shape[-1]))):
            if o.shape == want.shape and torch.allclose(o, want, rtol=1e-4, atol=1e-5):
                il, flat = i, f
    extra = [i for i in range(len(out)) if i not in (iy, il) and out[i] is not None]
    if iy is None:
        return "its forward returns no tensor of its input's shape"
    if extra:
        return (f"its forward returns more than its output and router logits (result "
                f"#{extra[0]}: an auxiliary loss?), which tdag.moe does not compute")
    return out[iy], iy, il, flat, len(out)


def _probe(spec):
    """Runs the block's forward on a seeded random input and keeps the configuration of tdag.moe
    that gives its output, or records why none does."""
    m = spec.module
    C = spec.router.in_features
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(2, 3, C, generator=g, dtype=spec.router.weight.dtype)
    W = spec.router.weight.detach()
    with torch.no_grad():
        out = m(x)
        layout = _first_tensor_and_layout(out, x, x @ W.t())
        if isinstance(layout, str):
            spec.refused = (layout, "block results")
            return
        y, spec.out, spec.logits, spec.flat_logits, spec.arity = layout
        scale = float(y.abs().max()) or 1.0
        orders = [spec.experts]
        if not spec.gate_up_named:
            orders.append([(u, gt, d) for gt, u, d in spec.experts])

        def err(experts, normalize, route=None, act=F.silu):
            gs, us, ds = ([l.weight.detach() for l in ls] for ls in zip(*experts))
            ref, _ = moe_reference(x, W, gs, us, ds, spec.top_k, normalize, route, act)
            return float((y - ref).abs().max()) / scale

        best = None
        for experts in orders:
            for normalize in (True, False):
                e = err(experts, normalize)
                if best is None or e < best[0]:
                    best = (e, experts, normalize)
        if best[0] <= _PROBE_TOL:
            _, spec.experts, spec.normalize = best
            return
        for experts in orders:
            for normalize in (True, False):
                if err(experts, normalize, route=torch.sigmoid) <= _PROBE_TOL:
                    spec.refused = ("a sigmoid router (DeepSeek-V3's scoring): tdag.moe routes "
                                    "by softmax", "router activation")
                    return
                if err(experts, normalize, act=F.gelu) <= _PROBE_TOL:
                    spec.refused = ("experts with GELU: tdag.moe's experts are SwiGLU "
                                    "(down(silu(gate x) * up x))", "expert activation")
                    return
        spec.refused = (f"its output differs from a softmax top-{spec.top_k} MoE of "
                        f"SwiGLU experts by {best[0]:.2e} of its largest value (with or without "
                        f"renormalised weights): it computes something tdag.moe does not",
                        "MoE block")


def find(model):
    """The MoE blocks of `model` (MoESpec each, probed), outermost first; a block inside a
    recognised one is not looked at."""
    specs, inside = [], []
    for path, m in model.named_modules():
        if any(path.startswith(p + ".") for p in inside):
            continue
        hint = getattr(m, _ATTR, None)
        if hint is False:
            continue
        spec = _structure(path, m, hint)
        if spec is None:
            continue
        inside.append(path)
        spec.refused = _unsupported(spec)
        if spec.refused is None:
            _probe(spec)
        specs.append(spec)
    return specs


def _traced_forward(spec):
    """The block's forward while tracing: one piper.moe call, results laid out as the block's."""
    def forward(hidden_states, *args, **kwargs):
        if spec.refused is not None:
            what, op = spec.refused
            src = user_frame()
            raise ExportError(f"{src[0]}:{src[1]}: piper.export: a mixture-of-experts block "
                              f"tdag.moe cannot compute: {what} (op {op}, module "
                              f"{spec.path or '(the root module)'})")
        y, logits = torch.ops.piper.moe(
            hidden_states, spec.router.weight, [g.weight for g, _, _ in spec.experts],
            [u.weight for _, u, _ in spec.experts], [d.weight for _, _, d in spec.experts],
            spec.top_k, spec.normalize)
        if spec.out is None:
            return y
        if spec.flat_logits:
            logits = logits.reshape(-1, logits.shape[-1])
        out = [None] * spec.arity
        out[spec.out] = y
        if spec.logits is not None:
            out[spec.logits] = logits
        return tuple(out)
    return forward


@contextlib.contextmanager
def exported_as_moe(model):
    """While the exporter traces `model`: every recognised MoE block runs as piper.moe."""
    specs = find(model)
    saved = [(s.module, s.module.__dict__.get("forward")) for s in specs]
    for s in specs:
        s.module.forward = _traced_forward(s)
    try:
        yield specs
    finally:
        for m, own in saved:  # the module's own forward again
            if own is None:
                del m.forward
            else:
                m.forward = own


def hint(module, value):
    """piper.annotate(module, moe=value): True, False or a dict naming router, experts,
    top_k, gate, up, down."""
    if not (isinstance(value, bool) or isinstance(value, dict)):
        raise TypeError("piper.annotate: moe= takes True, False or a dict (router, experts, "
                        "top_k, gate, up, down)")
    if isinstance(value, dict):
        unknown = set(value) - {"router", "experts", "top_k", "gate", "up", "down"}
        if unknown:
            raise TypeError(f"piper.annotate: moe= does not know {sorted(unknown)} (router, "
                            f"experts, top_k, gate, up, down)")
    setattr(module, _ATTR, value)
