"""Matmuls: nn.Linear (addmm/mm with a parameter: tdag.linear, tdag.matmul_nt) and the batched
matmul; embedding lookups."""
import torch

from .._values import View, Transposed, Const
from .common import out_shape
from .registry import handles


def _as_rows(e, x):
    """The operand of a linear for x, a (M, K) view of rows: x's base when that already ends in
    K, else the base as (b0, M / b0, K), so the batch stays dim 0 as the zoo's linears have it."""
    if isinstance(x, View) and len(x.shape) == 2:
        base = x.base.shape
        if base[-1] == x.shape[-1]:
            return e.value(x.base)
        if len(base) >= 2 and x.shape[0] % base[0] == 0:
            return e.value(View(x.base, (base[0], x.shape[0] // base[0], x.shape[1]), x.node))
    return e.value(x)


def _shaped(out, node):
    """out viewed as node's result shape."""
    return View(out, out_shape(node), node) if out.shape != out_shape(node) else out


def _weight(e, w):
    """The (N, K) weight a linear of w reads: nn.Linear's W for W.t(), permute(W) for a
    parameter W stored (K, N) (Hugging Face's Conv1D), which the passes read through (the
    parameter keeps its name and layout, so piper.load gives it back as the module has it);
    None for anything else."""
    if isinstance(w, Transposed):
        return e.value(w.base)
    wv = e.value(w)
    if e.is_param(wv) and len(wv.shape) == 2:
        return e.emit("permute", [wv], [((wv.shape[1], wv.shape[0]), "f32")],
                      "perm = array<i64: 1, 0>")
    return None


@handles("addmm")
def h_addmm(e, node, bias, x, w, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        e.fail("addmm with beta or alpha other than 1 is not mapped")
    W = _weight(e, w)
    if W is None:
        e.fail("addmm maps as a linear layer: x @ W.t() + b or x @ W + b with W a parameter")
    xv = _as_rows(e, x)
    out = e.emit("linear", [xv, W, e.value(bias)], [(xv.shape[:-1] + (W.shape[0],), "f32")])
    return _shaped(out, node)


@handles("mm")
def h_mm(e, node, a, b):
    W = _weight(e, b)
    if W is not None:
        xv = _as_rows(e, a)
        out = e.emit("matmul_nt", [xv, W], [(xv.shape[:-1] + (W.shape[0],), "f32")])
        return _shaped(out, node)
    e.fail("a 2-D matmul of two activations is not mapped (batched matmuls are)")


@handles("bmm")
def h_bmm(e, node, a, b):
    av, bv = e.value(a), e.value(b)
    return e.emit("bmm", [av, bv], [(out_shape(node), "f32")],
                  "transpose_a = 0 : i64, transpose_b = 0 : i64")


@handles("embedding")
def h_embedding(e, node, weight, indices, *rest):
    w = e.value(weight)
    if isinstance(indices, Const):
        idx = indices.tensor.reshape(-1)
        n = idx.numel()
        if n and torch.equal(idx, torch.arange(int(idx[0]), int(idx[0]) + n, dtype=idx.dtype)):
            out = e.emit("slice", [w], [((n, w.shape[1]), "f32")],
                         f"dim = 0 : i64, start = {int(idx[0])} : i64") \
                if (n, w.shape[1]) != w.shape else w
            return View(out, out_shape(node), node) if out_shape(node) != out.shape else out
        e.fail("an embedding lookup at constant indices other than a range is not mapped")
    tok = e.value(indices)  # the token ids (tdag.emit refuses them computed on)
    return e.emit("embed", [tok, w], [(tok.shape + (w.shape[1],), "f32")])
