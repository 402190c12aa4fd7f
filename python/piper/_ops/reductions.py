"""Reductions: mean and sum over dims, softmax and log_softmax (over the last dim kept lazy:
with nll_loss it is a cross entropy)."""
from .._values import View, LogSoftmax, fattr, numel
from .common import dim as _dim, out_shape
from .registry import handles


def _reduce(e, node, x, dims, keepdim, mean):
    v = e.value(x)
    r = len(v.shape)
    dims = list(range(r)) if dims is None or dims == [] else [_dim(d, r) for d in dims]
    kept = tuple(1 if i in dims else s for i, s in enumerate(v.shape))
    out = e.emit("sum_to", [v], [(kept, "f32")])
    if mean:
        n = numel([v.shape[d] for d in dims])
        out = e.emit("mul_scalar", [out], [(kept, "f32")], f"value = {fattr(1.0 / n)}")
    final = out_shape(node)
    return out if kept == final else View(out, final, node)


@handles("mean")
def h_mean(e, node, x, dims=None, keepdim=False, dtype=None):
    return _reduce(e, node, x, dims, keepdim, True)


@handles("sum")
def h_sum(e, node, x, dims=None, keepdim=False, dtype=None):
    return _reduce(e, node, x, dims, keepdim, False)


@handles("_softmax", "softmax")
def h_softmax(e, node, x, dim, half=False):
    v = e.value(x)
    return e.emit("softmax", [v], [(v.shape, "f32")], f"dim = {_dim(dim, len(v.shape))} : i64")


@handles("_log_softmax", "log_softmax")
def h_log_softmax(e, node, x, dim, half=False):
    if _dim(dim, len(x.shape)) == len(x.shape) - 1:
        return LogSoftmax(x, node)
    v = e.value(x)
    return e.emit("log_softmax", [v], [(v.shape, "f32")], f"dim = {_dim(dim, len(v.shape))} : i64")
