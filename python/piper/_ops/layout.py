"""Layout ops: views and reshapes (kept lazy), identities and casts, transpose and permute,
expand, slices and splits, cat and stack."""
import torch

from .._values import View, Transposed, Lazy, Const, numel
from .common import dim as _dim, out_shape
from .registry import handles


@handles("view", "_unsafe_view", "_reshape_alias", "reshape", "unsqueeze", "squeeze", "flatten")
def h_view(e, node, x, shape, *rest):
    out = out_shape(node)
    if isinstance(x, View):
        x = x.base
    if isinstance(x, Const):
        return Const(x.tensor.reshape(out), None)
    if tuple(x.shape) == out:
        return x
    return View(x, out, node)


@handles("alias", "clone", "contiguous", "detach", "lift_fresh_copy", "lift_fresh", "type_as")
def h_identity(e, node, x, *rest, **kw):
    return x


@handles("_to_copy", "to")
def h_to_copy(e, node, x, *args, **kw):
    dtype = kw.get("dtype")
    if dtype not in (None, torch.float32) and not (isinstance(x, Const)):
        e.fail(f"a cast to {dtype}: Piper trains in float32 (only casts that are identities in "
               f"fp32, .float() and .type_as on float32 tensors, are mapped)")
    return x


@handles("dropout", "native_dropout")
def h_dropout(e, node, x, p, train=True, *rest):
    if p and train:
        e.fail(f"dropout with p = {p} > 0 is refused: set p = 0 for export (Piper has no "
               f"dropout yet)")
    return (x, None) if "native_dropout" in str(node.target) else x


@handles("transpose")
def h_transpose(e, node, x, d0, d1):
    r = len(x.shape)
    d0, d1 = _dim(d0, r), _dim(d1, r)
    if d0 == d1:
        return x
    if r == 2 and e.is_param(x):
        return Transposed(x, node)
    if isinstance(x, Transposed):
        return x.base
    perm = list(range(r))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(e, x, perm)


@handles("t")
def h_t(e, node, x):
    return h_transpose(e, node, x, 0, 1) if len(x.shape) == 2 else x


def permute(e, x, perm):
    """x permuted (tdag.permute), or x itself for the identity permutation."""
    if list(perm) == list(range(len(perm))):
        return x
    v = e.value(x)
    shape = tuple(v.shape[p] for p in perm)
    return e.emit("permute", [v], [(shape, "f32")],
                  "perm = array<i64: " + ", ".join(str(p) for p in perm) + ">")


@handles("permute")
def h_permute(e, node, x, perm):
    r = len(x.shape)
    return permute(e, x, [_dim(p, r) for p in perm])


@handles("expand")
def h_expand(e, node, x, sizes, *rest):
    out = out_shape(node)
    if tuple(x.shape) == out:
        return x
    v = e.value(x)
    return e.emit("broadcast", [v], [(out, "f32")])


@handles("slice")
def h_slice(e, node, x, dim=0, start=None, end=None, step=1):
    r = len(x.shape)
    dim = _dim(dim, r)
    n = x.shape[dim]
    start = 0 if start is None else (start + n if start < 0 else start)
    end = n if end is None else (end + n if end < 0 else end)
    start, end = max(0, min(start, n)), max(0, min(end, n))
    if step != 1:
        e.fail(f"a slice with step {step}: only step 1 is mapped")
    if start == 0 and end == n:
        return x
    out = tuple(out_shape(node))
    return slice_lazy(e, node, x, dim, start, out)


def slice_lazy(e, node, x, dim, start, out):
    """x[start : start + out[dim]] along dim, emitted (tdag.slice) on first use."""
    def thunk():
        v = e.value(x)
        return e.emit("slice", [v], [(out, "f32")], f"dim = {dim} : i64, start = {start} : i64")
    return Lazy(thunk, out)


@handles("select")
def h_select(e, node, x, dim, index):
    r = len(x.shape)
    dim = _dim(dim, r)
    index = index + x.shape[dim] if index < 0 else index
    shape = list(x.shape)
    shape[dim] = 1
    piece = slice_lazy(e, node, x, dim, index, tuple(shape)) if x.shape[dim] > 1 else x
    return View(piece, out_shape(node), node)


@handles("split", "split_with_sizes")
def h_split(e, node, x, sizes, dim=0):
    r = len(x.shape)
    dim = _dim(dim, r)
    n = x.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - s) for s in range(0, n, sizes)]
    pieces, start = [], 0
    for s in sizes:
        shape = list(x.shape)
        shape[dim] = s
        pieces.append(slice_lazy(e, node, x, dim, start, tuple(shape)) if s != n else x)
        start += s
    return pieces


@handles("unbind")
def h_unbind(e, node, x, dim=0):
    r = len(x.shape)
    dim = _dim(dim, r)
    out = [list(x.shape[:dim]) + list(x.shape[dim + 1:])] * x.shape[dim]
    pieces = h_split(e, node, x, 1, dim)
    return [View(p, tuple(s), node) for p, s in zip(pieces, out)]


def concat(e, vs, dim):
    """torch.cat(vs, dim) of emitted values: one tdag.concat when the operands after the first
    share a shape (the dialect's rule: IRDL gives a variadic group one type), else a concat of
    concats, each taking the next run of equal shapes."""
    if len(vs) == 1:
        return vs[0]
    group = [vs[0]]
    for v in vs[1:]:
        if len(group) > 1 and v.shape != group[1].shape:
            group = [_concat_op(e, group, dim)]
        group.append(v)
    return _concat_op(e, group, dim)


def _concat_op(e, vs, dim):
    out = list(vs[0].shape)
    out[dim] = sum(v.shape[dim] for v in vs)
    return e.emit("concat", vs, [(tuple(out), "f32")], f"dim = {dim} : i64")


@handles("cat")
def h_cat(e, node, xs, dim=0):
    dim = _dim(dim, len(out_shape(node)))
    return concat(e, [e.value(x) for x in xs if numel(x.shape) > 0], dim)


@handles("stack")
def h_stack(e, node, xs, dim=0):
    dim = _dim(dim, len(out_shape(node)))
    pieces = []
    for x in xs:
        shape = list(x.shape)
        shape.insert(dim, 1)
        pieces.append(e.value(View(x, tuple(shape), node)))
    return concat(e, pieces, dim)
