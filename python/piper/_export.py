"""piper.export: a PyTorch module's training forward -> a tdag module piper-compile takes, and its
weights -> a safetensors file --init-checkpoint loads.

Capture: make_fx over a functional_call of the module (parameters and buffers as inputs) gives an
ATen graph with concrete shapes (fake tensors: nothing is computed). Each ATen op maps to tdag
ops (_HANDLERS below); the exporter keeps three things lazy so the IR reads as the model does:
a reshape (View) until an op needs it materialised, the transpose of a 2-D parameter
(Transposed) until a matmul takes it as a linear's weight, and split pieces until used.
Computations on constants alone (buffers, arange, tril, ==) are folded here with real values:
a causal mask becomes a tdag.triangle, a uniform tensor a tdag.full, arange positions into an
embedding a slice of its table; any other constant is stored as non-trained state. What cannot
be mapped stops with the op, the module's path and the user's source line (ExportError).
"""
import inspect
import math
import os

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call
import torch.utils._pytree as pytree

from . import _annotate
from . import _record
from . import _safetensors

_TORCH_DIR = os.path.dirname(torch.__file__)
_PIPER_DIR = os.path.dirname(os.path.abspath(__file__))
aten = torch.ops.aten


class ExportError(Exception):
    """A model piper.export cannot map: the message names the op, the module path and the
    user's source line."""


# ----------------------------------------------------------------------------- capture

def _user_frame():
    """(file, line) of the innermost frame outside torch and piper: the user's source line."""
    f = inspect.currentframe()
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_TORCH_DIR) and not fn.startswith(_PIPER_DIR) and "<" not in fn[:1]:
            return fn, f.f_lineno
        f = f.f_back
    return "<unknown>", 0


class _Recorder:
    """Wraps fx's Tracer.create_node while tracing: every node gets the tags, module path and
    user source line current when the model created it (node.meta["piper"])."""

    def __enter__(self):
        self.orig = torch.fx.Tracer.create_node

        def create_node(tracer, *args, **kwargs):
            node = self.orig(tracer, *args, **kwargs)
            tags, path = _annotate.current()
            node.meta["piper"] = {"tags": tags, "path": path, "src": _user_frame()}
            return node

        torch.fx.Tracer.create_node = create_node
        return self

    def __exit__(self, *exc):
        torch.fx.Tracer.create_node = self.orig


# ----------------------------------------------------------------------------- values

class V:
    """A tdag SSA value: its name, shape, element type ("f32" | "i32"), the tags of the op that
    made it, and its emission index (the operand-computed-last rule compares them)."""

    def __init__(self, name, shape, elem, tags, index):
        self.name, self.shape, self.elem, self.tags, self.index = name, tuple(shape), elem, tags, index

    @property
    def type(self):
        return _ttype(self.shape, self.elem)


class View:
    """x reshaped to `shape`, not yet emitted."""

    def __init__(self, base, shape, node):
        self.base, self.shape, self.node = base, tuple(shape), node
        self.value = None


class Transposed:
    """The transpose of a 2-D parameter `base`, not yet emitted: a matmul takes it as a linear's
    weight."""

    def __init__(self, base, node):
        self.base, self.node = base, node
        self.shape = (base.shape[1], base.shape[0])
        self.value = None


class Lazy:
    """A value emitted on first use by `thunk()` (the pieces of a split)."""

    def __init__(self, thunk, shape):
        self.thunk, self.shape, self.value = thunk, tuple(shape), None


class Const:
    """A tensor known at export time: a buffer (its name), or a value folded from constants."""

    def __init__(self, tensor, buffer=None):
        self.tensor, self.buffer = tensor, buffer
        self.shape = tuple(tensor.shape)


class LogSoftmax:
    """log_softmax(x) over the last dim, kept for nll_loss: together they are tdag.cross_entropy."""

    def __init__(self, x, node):
        self.x, self.node, self.shape, self.value = x, node, x.shape, None


def _ttype(shape, elem):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


def _fattr(v):
    if math.isinf(v):
        return ("0xFFF0000000000000" if v < 0 else "0x7FF0000000000000") + " : f64"
    if math.isnan(v):
        raise ValueError("NaN attribute")
    return "%.17e : f64" % v


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# ----------------------------------------------------------------------------- the emitter

class Emitter:
    def __init__(self, B, T):
        self.lines = []
        self.count = 0
        self.B, self.T = B, T
        self.params = {}       # name -> V (declared tdag.param)
        self.state = {}        # name -> tensor written to the weights file
        self.buffers = set()   # names among them that are not trained
        self.inputs = {}       # "tokens" | "targets" -> V
        self.node = None       # the fx node being mapped (tags, loc)
        self.ops = []          # [(line index, V results, operand Vs, node tags)] for tags
        self.loss = None
        self.consts = 0
        self.const_values = {}  # (shape, bytes) -> V: equal constants are stored once

    # -- locations and errors
    def loc(self, node=None):
        node = node or self.node
        src = node.meta.get("piper", {}).get("src") if node is not None else None
        if not src:
            return "loc(unknown)"
        return f'loc("{src[0]}":{src[1]}:0)'

    def fail(self, what, node=None):
        node = node or self.node
        meta = node.meta.get("piper", {}) if node is not None else {}
        path = meta.get("path") or "(the root module)"
        src = meta.get("src") or ("<unknown>", 0)
        target = getattr(node, "target", "?")
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: {what} (op {target}, module "
                          f"{path})")

    # -- emission
    def emit(self, op, operands, results, attrs="", leaf_tags=None):
        """Emits "tdag.<op>"(operands) {attrs} and returns its result V(s); results are
        (shape, elem) pairs."""
        names = []
        outs = []
        for shape, elem in results:
            self.count += 1
            names.append(f"%v{self.count}")
            outs.append(V(names[-1], shape, elem, None, self.count))
        tags = (self.node.meta.get("piper", {}).get("tags") if self.node is not None else None)
        if leaf_tags is not None:
            tags = leaf_tags
        for o in outs:
            o.tags = tags
        lhs = (", ".join(names) + " = ") if names else ""
        rtypes = ", ".join(o.type for o in outs)
        rtypes = f"({rtypes})" if len(outs) != 1 else rtypes
        self.lines.append([lhs, f'"tdag.{op}"(' + ", ".join(o.name for o in operands) + ")",
                           attrs, "(" + ", ".join(o.type for o in operands) + ") -> " + rtypes,
                           self.loc()])
        self.ops.append((len(self.lines) - 1, outs, list(operands), tags))
        return outs[0] if len(outs) == 1 else outs

    def param(self, name, tensor, buffer=False):
        if name in self.params:
            return self.params[name]
        if tensor.dtype != torch.float32:
            self.fail(f"{'buffer' if buffer else 'parameter'} {name} is {tensor.dtype}; Piper "
                      f"trains float32 models (convert it with .float() before export)")
        init = "buffer" if buffer else "normal"
        v = self.emit("param", [], [(tuple(tensor.shape), "f32")],
                      f'init = "{init}", name = "{name}"', leaf_tags={})
        self.params[name] = v
        self.state[name] = tensor.detach()
        if buffer:
            self.buffers.add(name)
        return v

    def input(self, name, shape):
        if name not in self.inputs:
            self.inputs[name] = self.emit("input", [], [(shape, "i32")], f'name = "{name}"',
                                          leaf_tags={})
        return self.inputs[name]

    # -- values
    def value(self, x):
        """The emitted V of a mapped value (materialising a lazy one)."""
        if isinstance(x, V):
            return x
        if isinstance(x, (View, Transposed, Lazy, LogSoftmax)):
            if x.value is None:
                saved = self.node
                if isinstance(x, View):
                    self.node = x.node
                    base = self.value(x.base)
                    x.value = base if base.shape == x.shape else self.emit(
                        "reshape", [base], [(x.shape, base.elem)])
                elif isinstance(x, Transposed):
                    self.node = x.node
                    x.value = self.emit("permute", [self.value(x.base)], [(x.shape, "f32")],
                                        "perm = array<i64: 1, 0>")
                elif isinstance(x, LogSoftmax):
                    self.node = x.node
                    xv = self.value(x.x)
                    x.value = self.emit("log_softmax", [xv], [(xv.shape, "f32")],
                                        f"dim = {len(xv.shape) - 1} : i64")
                else:
                    x.value = x.thunk()
                self.node = saved
            return x.value
        if isinstance(x, Const):
            return self.const(x)
        self.fail(f"expected a tensor, got {type(x).__name__} {x!r}")

    def const(self, c):
        """A constant as IR: a buffer param, a tdag.rope_table, tdag.triangle or tdag.full
        (reshaped), or a new non-trained tensor piper.const.<k>; equal constants once."""
        t = c.tensor
        if t.dtype == torch.bool or not t.is_floating_point():
            t = t.to(torch.float32)
        key = (c.buffer, tuple(t.shape), t.contiguous().numpy().tobytes())
        if key not in self.const_values:
            self.const_values[key] = self._const(c)
        return self.const_values[key]

    def _const(self, c):
        t = c.tensor
        if t.dtype == torch.bool or not t.is_floating_point():
            t = t.to(torch.float32)
        if c.buffer is not None and c.tensor.is_floating_point():
            return self.param(c.buffer, c.tensor, buffer=True)
        flat = t.reshape(-1)
        if flat.numel() and bool((flat == flat[0]).all()):
            return self.emit("full", [], [(c.shape, "f32")], f"value = {_fattr(float(flat[0]))}")
        rope = _rope_table(t)
        if rope is not None:
            D, theta, sn = rope
            rows = [d for d in c.shape if d != 1]
            m = self.emit("rope_table", [], [(tuple(rows), "f32")],
                          f"head_dim = {D} : i64, theta = {_fattr(theta)}, sin = {sn} : i64")
            return m if tuple(rows) == c.shape else self.emit("reshape", [m], [(c.shape, "f32")])
        tri = _triangle(t)
        if tri is not None:
            d, inside, outside = tri
            R, C = t.shape[-2], t.shape[-1]
            m = self.emit("triangle", [], [((R, C), "f32")],
                          f"diagonal = {d} : i64, inside = {_fattr(inside)}, outside = "
                          f"{_fattr(outside)}")
            return m if (R, C) == c.shape else self.emit("reshape", [m], [(c.shape, "f32")])
        self.consts += 1
        return self.param(f"piper.const.{self.consts}", t.contiguous(), buffer=True)


# RoPE bases tried first (exactly representable in fp32, as tdag.rope passes theta)
_ROPE_THETAS = (10000.0, 500000.0, 1000000.0, 100000.0, 50000.0, 20000.0, 1000.0)


def _rope_table(t):
    """(head_dim, theta, sin) when t, dims of 1 aside, is a (T, N) RoPE table: cos or sin of
    pos * theta^(-2 (j mod D/2) / D), N = D (rotate-half: the D/2 angles twice) or D/2 (one
    column per pair), within the rounding of an fp32 table (1e-6 + 5e-7 T); else None."""
    rows = [d for d in t.shape if d != 1]
    if len(rows) != 2 or not t.is_floating_point() or rows[0] < 2 or rows[1] < 2:
        return None
    T, N = rows
    m = t.reshape(T, N).to(torch.float64)
    if torch.allclose(m[0], torch.ones(N, dtype=torch.float64), atol=1e-6):
        sn = 0
    elif torch.allclose(m[0], torch.zeros(N, dtype=torch.float64), atol=1e-6):
        sn = 1
    else:
        return None
    D = N if N % 2 == 0 and torch.equal(m[:, : N // 2], m[:, N // 2:]) else 2 * N
    half = D // 2
    if half < 2:
        return None
    v = float(m[1, 1])
    a1 = math.asin(max(-1.0, min(1.0, v))) if sn else math.acos(max(-1.0, min(1.0, v)))
    guesses = list(_ROPE_THETAS)
    if 0 < a1 < 1:
        guesses.append(float(torch.tensor(a1 ** (-D / 2), dtype=torch.float32)))
    pos = torch.arange(T, dtype=torch.float64).view(T, 1)
    j = (torch.arange(N) % half).to(torch.float64).view(1, N)
    tol = 1e-6 + 5e-7 * T
    for theta in guesses:
        ang = pos * theta ** (-2.0 * j / D)
        ref = torch.sin(ang) if sn else torch.cos(ang)
        if float((ref - m).abs().max()) <= tol:
            return D, theta, sn
    return None


def _triangle(t):
    """(diagonal, inside, outside) when t (leading dims of 1, then R x C) is
    where(j - i <= diagonal, inside, outside) with inside != outside; else None."""
    if t.dim() < 2 or any(d != 1 for d in t.shape[:-2]):
        return None
    m = t.reshape(t.shape[-2], t.shape[-1]).to(torch.float64)
    R, C = m.shape
    if R < 2 or C < 2:
        return None
    inside, outside = float(m[0, 0]), float(m[0, C - 1])
    if inside == outside or (math.isnan(inside) or math.isnan(outside)):
        return None
    # the diagonal: the last column j of row 0 that holds `inside`
    row0 = (m[0] == inside).nonzero()
    d = int(row0.max())
    i = torch.arange(R).view(R, 1)
    j = torch.arange(C).view(1, C)
    want = torch.where(j - i <= d, torch.tensor(inside, dtype=torch.float64),
                       torch.tensor(outside, dtype=torch.float64))
    return (d, inside, outside) if torch.equal(want, m) else None


# ----------------------------------------------------------------------------- op mapping

def _dim(d, rank):
    return d + rank if d < 0 else d


def _scalar(x):
    """x as a Python float when it is a scalar (a number, or a one-element constant)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if isinstance(x, Const) and x.tensor.numel() == 1:
        return float(x.tensor.reshape(()).item())
    return None


def _suffix_shape(small, big):
    """small, leading 1s dropped, when it is big's trailing dims (the suffix broadcast); else
    None."""
    s = list(small)
    while s and s[0] == 1:
        s.pop(0)
    if len(s) > len(big) or tuple(s) != tuple(big[len(big) - len(s):]):
        return None
    return s


def _broadcast_shape(a, b):
    r = max(len(a), len(b))
    a = (1,) * (r - len(a)) + tuple(a)
    b = (1,) * (r - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


def _binary_operand(e, x, out_shape):
    """Operand x of a broadcasting binary op as a V the suffix-broadcast kernels read: x itself
    when its shape is out's or a suffix of it, else x broadcast (tdag.broadcast) to out's
    shape from the first dim it does not have as 1 on."""
    v = e.value(x)
    if v.shape == tuple(out_shape) or _suffix_shape(v.shape, out_shape) is not None:
        return v
    r = len(out_shape)
    padded = (1,) * (r - len(v.shape)) + v.shape
    lead = 0
    while lead < r and padded[lead] == 1:
        lead += 1
    target = tuple(out_shape[lead:])
    src = padded[lead:]
    src_v = v if v.shape == src else e.emit("reshape", [v], [(src, "f32")])
    return e.emit("broadcast", [src_v], [(target, "f32")])


def _binary(e, op, a, b):
    sa, sb = _scalar(a), _scalar(b)
    if sb is not None and sa is None:
        av = e.value(a)
        if op == "add":
            return e.emit("add_scalar", [av], [(av.shape, "f32")], f"value = {_fattr(sb)}")
        if op == "sub":
            return e.emit("add_scalar", [av], [(av.shape, "f32")], f"value = {_fattr(-sb)}")
        if op == "mul":
            return e.emit("mul_scalar", [av], [(av.shape, "f32")], f"value = {_fattr(sb)}")
        return e.emit("mul_scalar", [av], [(av.shape, "f32")], f"value = {_fattr(1.0 / sb)}")
    if sa is not None and sb is None:
        bv = e.value(b)
        if op in ("add", "mul"):
            return _binary(e, op, b, a)
        if op == "sub":  # s - b = -b + s
            nb = e.emit("mul_scalar", [bv], [(bv.shape, "f32")], f"value = {_fattr(-1.0)}")
            return e.emit("add_scalar", [nb], [(bv.shape, "f32")], f"value = {_fattr(sa)}")
        e.fail("a scalar divided by a tensor is not mapped (write it as x ** -1 * s)")
    out = _broadcast_shape(a.shape, b.shape)
    av, bv = _binary_operand(e, a, out), _binary_operand(e, b, out)
    if av.shape != out and bv.shape != out:  # neither is the whole result: widen one
        av = e.emit("broadcast", [av], [(out, "f32")])
    if op == "add" and av.shape == bv.shape:
        return e.emit("add", [av, bv], [(out, "f32")])
    name = {"add": "add_bcast", "sub": "sub", "mul": "mul", "div": "div"}[op]
    return e.emit(name, [av, bv], [(out, "f32")])


def _out_shape(node):
    val = node.meta.get("val")
    return tuple(val.shape) if val is not None and hasattr(val, "shape") else None


def h_view(e, node, x, shape, *rest):
    out = _out_shape(node)
    if isinstance(x, View):
        x = x.base
    if isinstance(x, Const):
        return Const(x.tensor.reshape(out), None)
    if tuple(x.shape) == out:
        return x
    return View(x, out, node)


def h_identity(e, node, x, *rest, **kw):
    return x


def h_to_copy(e, node, x, *args, **kw):
    dtype = kw.get("dtype")
    if dtype not in (None, torch.float32) and not (isinstance(x, Const)):
        e.fail(f"a cast to {dtype}: Piper trains in float32 (only casts that are identities in "
               f"fp32, .float() and .type_as on float32 tensors, are mapped)")
    return x


def h_dropout(e, node, x, p, train=True, *rest):
    if p and train:
        e.fail(f"dropout with p = {p} > 0 is refused: set p = 0 for export (Piper has no "
               f"dropout yet)")
    return (x, None) if "native_dropout" in str(node.target) else x


def h_transpose(e, node, x, d0, d1):
    r = len(x.shape)
    d0, d1 = _dim(d0, r), _dim(d1, r)
    if d0 == d1:
        return x
    if r == 2 and isinstance(x, V) and x.name in {p.name for p in e.params.values()}:
        return Transposed(x, node)
    if isinstance(x, Transposed):
        return x.base
    perm = list(range(r))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return _permute(e, x, perm)


def h_t(e, node, x):
    return h_transpose(e, node, x, 0, 1) if len(x.shape) == 2 else x


def _permute(e, x, perm):
    if list(perm) == list(range(len(perm))):
        return x
    v = e.value(x)
    shape = tuple(v.shape[p] for p in perm)
    return e.emit("permute", [v], [(shape, "f32")],
                  "perm = array<i64: " + ", ".join(str(p) for p in perm) + ">")


def h_permute(e, node, x, perm):
    r = len(x.shape)
    return _permute(e, x, [_dim(p, r) for p in perm])


def h_expand(e, node, x, sizes, *rest):
    out = _out_shape(node)
    if tuple(x.shape) == out:
        return x
    v = e.value(x)
    return e.emit("broadcast", [v], [(out, "f32")])


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
    out = tuple(_out_shape(node))
    return _slice_lazy(e, node, x, dim, start, out)


def _slice_lazy(e, node, x, dim, start, out):
    def thunk():
        v = e.value(x)
        return e.emit("slice", [v], [(out, "f32")], f"dim = {dim} : i64, start = {start} : i64")
    return Lazy(thunk, out)


def h_select(e, node, x, dim, index):
    r = len(x.shape)
    dim = _dim(dim, r)
    index = index + x.shape[dim] if index < 0 else index
    shape = list(x.shape)
    shape[dim] = 1
    piece = _slice_lazy(e, node, x, dim, index, tuple(shape)) if x.shape[dim] > 1 else x
    return View(piece, _out_shape(node), node)


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
        pieces.append(_slice_lazy(e, node, x, dim, start, tuple(shape)) if s != n else x)
        start += s
    return pieces


def h_unbind(e, node, x, dim=0):
    r = len(x.shape)
    dim = _dim(dim, r)
    out = [list(x.shape[:dim]) + list(x.shape[dim + 1:])] * x.shape[dim]
    pieces = h_split(e, node, x, 1, dim)
    return [View(p, tuple(s), node) for p, s in zip(pieces, out)]


def h_cat(e, node, xs, dim=0):
    out = _out_shape(node)
    dim = _dim(dim, len(out))
    vs = [e.value(x) for x in xs if _numel(x.shape) > 0]
    if len(vs) == 1:
        return vs[0]
    return e.emit("concat", vs, [(out, "f32")], f"dim = {dim} : i64")


def h_stack(e, node, xs, dim=0):
    out = _out_shape(node)
    dim = _dim(dim, len(out))
    pieces = []
    for x in xs:
        shape = list(x.shape)
        shape.insert(dim, 1)
        pieces.append(e.value(View(x, tuple(shape), node)))
    return e.emit("concat", pieces, [(out, "f32")], f"dim = {dim} : i64")


def h_add(e, node, a, b, alpha=1):
    if alpha != 1:
        b = _binary(e, "mul", b, alpha)
    return _binary(e, "add", a, b)


def h_sub(e, node, a, b, alpha=1):
    if alpha != 1:
        b = _binary(e, "mul", b, alpha)
    return _binary(e, "sub", a, b)


def h_rsub(e, node, a, b, alpha=1):
    return h_sub(e, node, b, a, alpha)


def h_mul(e, node, a, b):
    return _binary(e, "mul", a, b)


def h_div(e, node, a, b, rounding_mode=None):
    if rounding_mode is not None:
        e.fail(f"division with rounding_mode={rounding_mode!r} is not mapped")
    return _binary(e, "div", a, b)


def h_neg(e, node, x):
    return _binary(e, "mul", x, -1.0)


def h_pow(e, node, x, exponent):
    p = _scalar(exponent)
    if p is None:
        e.fail("pow with a tensor exponent is not mapped (use a Python number)")
    v = e.value(x)
    return e.emit("pow_scalar", [v], [(v.shape, "f32")], f"exponent = {_fattr(p)}")


def _unary(name):
    def h(e, node, x, *rest):
        v = e.value(x)
        return e.emit(name, [v], [(v.shape, "f32")])
    return h


def h_sqrt(e, node, x):
    v = e.value(x)
    return e.emit("pow_scalar", [v], [(v.shape, "f32")], f"exponent = {_fattr(0.5)}")


def h_gelu(e, node, x, approximate="none"):
    v = e.value(x)
    return e.emit("gelu" if approximate == "tanh" else "gelu_erf", [v], [(v.shape, "f32")])


def _reduce(e, node, x, dims, keepdim, mean):
    v = e.value(x)
    r = len(v.shape)
    dims = list(range(r)) if dims is None or dims == [] else [_dim(d, r) for d in dims]
    kept = tuple(1 if i in dims else s for i, s in enumerate(v.shape))
    out = e.emit("sum_to", [v], [(kept, "f32")])
    if mean:
        n = _numel([v.shape[d] for d in dims])
        out = e.emit("mul_scalar", [out], [(kept, "f32")], f"value = {_fattr(1.0 / n)}")
    final = _out_shape(node)
    return out if kept == final else View(out, final, node)


def h_mean(e, node, x, dims=None, keepdim=False, dtype=None):
    return _reduce(e, node, x, dims, keepdim, True)


def h_sum(e, node, x, dims=None, keepdim=False, dtype=None):
    return _reduce(e, node, x, dims, keepdim, False)


def h_softmax(e, node, x, dim, half=False):
    v = e.value(x)
    return e.emit("softmax", [v], [(v.shape, "f32")], f"dim = {_dim(dim, len(v.shape))} : i64")


def h_log_softmax(e, node, x, dim, half=False):
    if _dim(dim, len(x.shape)) == len(x.shape) - 1:
        return LogSoftmax(x, node)
    v = e.value(x)
    return e.emit("log_softmax", [v], [(v.shape, "f32")], f"dim = {_dim(dim, len(v.shape))} : i64")


def _mask(e, mask, shape):
    if not isinstance(mask, Const):
        e.fail("the mask must be a constant (a buffer, or computed from constants): a mask that "
               "depends on the data is not mapped")
    m = Const(mask.tensor.to(torch.float32))
    if _suffix_shape(m.shape, shape) is None:
        full = torch.broadcast_to(m.tensor, shape)
        lead = 0
        while lead < len(shape) and all(
                bool((full.select(lead, 0) == full.select(lead, i)).all())
                for i in range(shape[lead])):
            lead += 1
        m = Const(full[(0,) * lead].contiguous())
    return e.value(m)


def h_masked_fill(e, node, x, mask, value):
    v = e.value(x)
    s = _scalar(value)
    if s is None:
        e.fail("masked_fill with a tensor value is not mapped (use a Python number)")
    return e.emit("masked_fill", [v, _mask(e, mask, v.shape)], [(v.shape, "f32")],
                  f"value = {_fattr(s)}")


def h_compare(e, node, *args):
    e.fail("a comparison of values computed from the data (a mask that depends on the data): "
           "only constant masks (buffers, tril/triu) are mapped")


def h_where(e, node, cond, a, b):
    if not isinstance(cond, Const):
        e.fail("torch.where with a condition that depends on the data is not mapped")
    sa, sb = _scalar(a), _scalar(b)
    if sb is not None and sa is None:  # where(c, x, s) = masked_fill(x, ~c, s)
        return h_masked_fill(e, node, a, Const(~cond.tensor.to(torch.bool)), sb)
    if sa is not None and sb is None:
        return h_masked_fill(e, node, b, cond, sa)
    e.fail("torch.where maps only with one side a scalar (masked_fill)")


def h_embedding(e, node, weight, indices, *rest):
    w = e.value(weight)
    if isinstance(indices, Const):
        idx = indices.tensor.reshape(-1)
        n = idx.numel()
        if n and torch.equal(idx, torch.arange(int(idx[0]), int(idx[0]) + n, dtype=idx.dtype)):
            out = e.emit("slice", [w], [((n, w.shape[1]), "f32")],
                         f"dim = 0 : i64, start = {int(idx[0])} : i64") \
                if (n, w.shape[1]) != w.shape else w
            return View(out, _out_shape(node), node) if _out_shape(node) != out.shape else out
        e.fail("an embedding lookup at constant indices other than a range is not mapped")
    tok = e.value(indices)
    if tok.elem != "i32":
        e.fail("embedding indices must be the token input")
    return e.emit("embed", [tok, w], [(tok.shape + (w.shape[1],), "f32")])


def h_layer_norm(e, node, x, shape, w, b, eps):
    if len(shape) != 1:
        e.fail("layer_norm over more than the last dim is not mapped")
    v = e.value(x)
    C = v.shape[-1]
    wv = e.value(w) if w is not None else e.emit("full", [], [((C,), "f32")], f"value = {_fattr(1.0)}")
    bv = e.value(b) if b is not None else e.emit("full", [], [((C,), "f32")], f"value = {_fattr(0.0)}")
    out = e.emit("layernorm", [v, wv, bv], [(v.shape, "f32"), (v.shape[:-1], "f32"),
                                           (v.shape[:-1], "f32")], f"eps = {_fattr(eps)}")
    return (out[0], None, None)


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


def h_addmm(e, node, bias, x, w, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        e.fail("addmm with beta or alpha other than 1 is not mapped")
    if not isinstance(w, Transposed):
        e.fail("addmm maps as a linear layer: x @ W.t() + b with W a parameter")
    xv = _as_rows(e, x)
    W = e.value(w.base)
    out = e.emit("linear", [xv, W, e.value(bias)], [(xv.shape[:-1] + (W.shape[0],), "f32")])
    return View(out, _out_shape(node), node) if out.shape != _out_shape(node) else out


def h_mm(e, node, a, b):
    if isinstance(b, Transposed):
        xv = _as_rows(e, a)
        W = e.value(b.base)
        out = e.emit("matmul_nt", [xv, W], [(xv.shape[:-1] + (W.shape[0],), "f32")])
        return View(out, _out_shape(node), node) if out.shape != _out_shape(node) else out
    bv = e.value(b)
    if bv.name in {p.name for p in e.params.values()}:  # x @ W: W^T is the linear's weight
        Wt = e.emit("permute", [bv], [((bv.shape[1], bv.shape[0]), "f32")],
                    "perm = array<i64: 1, 0>")
        xv = _as_rows(e, a)
        out = e.emit("matmul_nt", [xv, Wt], [(xv.shape[:-1] + (Wt.shape[0],), "f32")])
        return View(out, _out_shape(node), node) if out.shape != _out_shape(node) else out
    e.fail("a 2-D matmul of two activations is not mapped (batched matmuls are)")


def h_bmm(e, node, a, b):
    av, bv = e.value(a), e.value(b)
    return e.emit("bmm", [av, bv], [(_out_shape(node), "f32")],
                  "transpose_a = 0 : i64, transpose_b = 0 : i64")


def h_nll_loss(e, node, logp, target, weight, reduction, ignore_index):
    if not isinstance(logp, LogSoftmax):
        e.fail("nll_loss maps only after log_softmax over the last dim (F.cross_entropy)")
    if weight is not None or reduction != 1:
        e.fail("cross entropy maps only with no class weights and reduction='mean'")
    if ignore_index >= 0:
        e.fail(f"cross entropy with ignore_index={ignore_index}: the runtime's targets are "
               f"token ids >= 0, so only a negative ignore_index (-1, -100) is exact")
    tgt = target.base if isinstance(target, View) else target
    tv = e.value(tgt)
    if tv.elem != "i32" or tgt is not e.inputs.get("targets"):
        e.fail("the loss's targets must be the targets input (reshaped at most)")
    x = e.value(View(logp.x, tv.shape + (logp.shape[-1],), logp.node))
    loss = e.emit("cross_entropy", [x, tv], [((), "f32"), (x.shape, "f32")])
    e.loss = loss[0]
    return (loss[0], None)


def h_sdpa_fused(e, node, q, k, v, *args, **kw):
    """The fused kernels torch 2 dispatches scaled_dot_product_attention to, whose signature is
    (q, k, v, [attn_bias,] dropout_p, is_causal, ...) with scale a keyword: as h_sdpa, and
    their second result (the log-sum-exp) unused."""
    args = list(args)
    if "efficient" in str(node.target) or "cudnn" in str(node.target):
        mask = args.pop(0) if args and not isinstance(args[0], (int, float, bool)) else None
        if len(args) >= 2:  # compute_log_sumexp comes first in the efficient kernel
            args = args[1:]
    else:
        mask = kw.get("attn_mask")
    dropout_p = args[0] if args else kw.get("dropout_p", 0.0)
    is_causal = args[1] if len(args) > 1 else kw.get("is_causal", False)
    out = h_sdpa(e, node, q, k, v, mask, dropout_p, is_causal, scale=kw.get("scale"))
    return (out,) + (None,) * 8


def h_sdpa(e, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *rest, **kw):
    """torch 2's scaled_dot_product_attention, causal with the default scale: q (B,H,T,D),
    k, v (B,KV,T,D) -> tdag.gqa_attention on (B,T,H*D) layouts (--piper-fuse turns it into
    tdag.attention when q, k, v are the thirds of one projection)."""
    scale = kw.get("scale")
    if attn_mask is not None or not is_causal or dropout_p:
        e.fail("scaled_dot_product_attention maps only with is_causal=True, no attn_mask and "
               "dropout_p = 0")
    qv, kv, vv = e.value(q), e.value(k), e.value(v)
    B, H, T, D = qv.shape
    KV = kv.shape[1]
    if scale is not None and abs(scale - 1 / math.sqrt(D)) > 1e-12:
        e.fail("scaled_dot_product_attention with a scale other than 1/sqrt(head dim)")

    def packed(x, heads):
        p = e.emit("permute", [x], [((B, T, heads, D), "f32")], "perm = array<i64: 0, 2, 1, 3>")
        return e.emit("reshape", [p], [((B, T, heads * D), "f32")])
    out, _ = e.emit("gqa_attention", [packed(qv, H), packed(kv, KV), packed(vv, KV)],
                    [((B, T, H * D), "f32"), ((B, H, T), "f32")],
                    f"heads = {H} : i64, kv_heads = {KV} : i64")
    o = e.emit("reshape", [out], [((B, T, H, D), "f32")])
    return e.emit("permute", [o], [((B, H, T, D), "f32")], "perm = array<i64: 0, 2, 1, 3>")


_HANDLERS = {
    "view": h_view, "_unsafe_view": h_view, "_reshape_alias": h_view, "reshape": h_view,
    "unsqueeze": h_view, "squeeze": h_view, "flatten": h_view, "alias": h_identity,
    "clone": h_identity, "contiguous": h_identity, "detach": h_identity,
    "lift_fresh_copy": h_identity, "lift_fresh": h_identity, "_to_copy": h_to_copy,
    "to": h_to_copy, "type_as": h_identity, "dropout": h_dropout, "native_dropout": h_dropout,
    "transpose": h_transpose, "t": h_t, "permute": h_permute, "expand": h_expand,
    "slice": h_slice, "select": h_select, "split": h_split, "split_with_sizes": h_split,
    "unbind": h_unbind, "cat": h_cat, "stack": h_stack,
    "add": h_add, "sub": h_sub, "rsub": h_rsub, "mul": h_mul, "div": h_div, "neg": h_neg,
    "pow": h_pow, "rsqrt": _unary("rsqrt"), "sqrt": h_sqrt, "tanh": _unary("tanh"),
    "exp": _unary("exp"), "silu": _unary("silu"), "relu": _unary("relu"), "gelu": h_gelu,
    "mean": h_mean, "sum": h_sum, "_softmax": h_softmax, "softmax": h_softmax,
    "_log_softmax": h_log_softmax, "log_softmax": h_log_softmax,
    "masked_fill": h_masked_fill, "where": h_where, "embedding": h_embedding,
    "gt": h_compare, "lt": h_compare, "ge": h_compare, "le": h_compare, "eq": h_compare,
    "ne": h_compare,
    "native_layer_norm": h_layer_norm, "addmm": h_addmm, "mm": h_mm, "bmm": h_bmm,
    "nll_loss_forward": h_nll_loss,
    "scaled_dot_product_attention": h_sdpa,
    "_scaled_dot_product_flash_attention_for_cpu": h_sdpa_fused,
    "_scaled_dot_product_flash_attention": h_sdpa_fused,
    "_scaled_dot_product_efficient_attention": h_sdpa_fused,
    "_scaled_dot_product_cudnn_attention": h_sdpa_fused,
}


def _packet(target):
    s = str(target)  # "aten.view.default"
    parts = s.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else s


# ----------------------------------------------------------------------------- driver

def _map_arg(env, a):
    if isinstance(a, torch.fx.Node):
        return env[a]
    if isinstance(a, (list, tuple)):
        return type(a)(_map_arg(env, x) for x in a)
    return a


def _is_const(a):
    if isinstance(a, (list, tuple)):
        return all(_is_const(x) for x in a)
    return not isinstance(a, (V, View, Transposed, Lazy, LogSoftmax))


def _const_value(a):
    if isinstance(a, Const):
        return a.tensor
    if isinstance(a, (list, tuple)):
        return type(a)(_const_value(x) for x in a)
    return a


def _wrap_const(r):
    if isinstance(r, torch.Tensor):
        return Const(r)
    if isinstance(r, (list, tuple)):
        return type(r)(_wrap_const(x) for x in r)
    return r


def all_parameters(model):
    """{name: parameter} under every name, tied ones included (named_parameters'
    remove_duplicate=False, which torch 1.13 lacks), in named_parameters' order."""
    out = {}
    for prefix, mod in model.named_modules(remove_duplicate=False):
        for n, p in mod._parameters.items():
            if p is not None:
                out[f"{prefix}.{n}" if prefix else n] = p
    return out


def trace(model, tokens, targets, loss_fn):
    """The ATen graph of loss_fn(model, tokens, targets) and its placeholders' meaning."""
    named = all_parameters(model)
    canonical = {}  # alias -> canonical name (the first name of each parameter)
    first = {}
    for name, p in named.items():
        canonical[name] = first.setdefault(id(p), name)
    buffers = dict(model.named_buffers())
    state = {**named, **buffers}

    def traced(state, tokens, targets):
        if loss_fn is None:
            out = functional_call(model, state, (tokens, targets))
        else:
            # loss(model, tokens, targets) calls the module, whose parameters functional_call
            # swaps in for the duration of the call
            out = _call_with_state(model, state, lambda: loss_fn(model, tokens, targets))
        return _pick_loss(out)

    with _annotate.tracing(model), _Recorder():
        try:
            g = make_fx(traced, tracing_mode="fake")(state, tokens, targets)
        except ExportError:
            raise
        except Exception as err:  # data-dependent control flow and the like
            src = _user_frame_of(err)
            path = _annotate.current()[1] or "(the root module)"
            raise ExportError(f"{src[0]}:{src[1]}: piper.export: the model could not be traced: "
                              f"{type(err).__name__}: {err} (op: reading a tensor's value, "
                              f"module {path}); data-dependent control flow (an `if` on a "
                              f"tensor's value, .item(), .tolist()) is refused: make the "
                              f"forward depend on shapes only") from None
    leaves, _ = pytree.tree_flatten((state, tokens, targets))
    names = list(state) + ["tokens", "targets"]
    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    return g, dict(zip(placeholders, names)), canonical, buffers, named


def _user_frame_of(err):
    import traceback
    frames = traceback.extract_tb(err.__traceback__)
    for fr in reversed(frames):
        fn = os.path.abspath(fr.filename)
        if not fn.startswith(_TORCH_DIR) and not fn.startswith(_PIPER_DIR):
            return fn, fr.lineno
    return "<unknown>", 0


def _call_with_state(model, state, thunk):
    from torch.nn.utils import stateless
    with stateless._reparametrize_module(model, state):
        return thunk()


def _pick_loss(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        scalars = [o for o in out if isinstance(o, torch.Tensor) and o.dim() == 0]
        if len(scalars) == 1:
            return scalars[0]
    raise ExportError("piper.export: the forward must return the scalar loss, or a tuple "
                      "holding exactly one scalar tensor (nanoGPT's (logits, loss)); pass "
                      "loss=fn(model, tokens, targets) otherwise")


def export(model, example, path, weights=None, loss=None):
    tokens, targets = example
    src = _user_frame()
    if tokens.dtype not in (torch.int64, torch.int32) or targets.dtype not in (torch.int64, torch.int32):
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: tokens and targets must be integer "
                          f"tensors of token ids, got {tokens.dtype} and {targets.dtype} (the "
                          f"example inputs of this call: the runtime feeds int32 token ids)")
    if tokens.dim() != 2 or tokens.shape != targets.shape:
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: tokens and targets must both be "
                          f"(B, T), got {tuple(tokens.shape)} and {tuple(targets.shape)}")
    B, T = tokens.shape
    if targets is tokens:  # one tensor would trace as one input
        targets = targets.clone()
    g, placeholder_names, canonical, buffers, named = trace(model, tokens, targets, loss)
    e = Emitter(B, T)
    env = {}
    for node in g.graph.nodes:
        e.node = node
        if node.op == "placeholder":
            name = placeholder_names[node]
            if name in ("tokens", "targets"):
                env[node] = e.input(name, (B, T))
            elif name in buffers:
                env[node] = Const(buffers[name], buffer=name)
            else:
                cname = canonical[name]
                env[node] = _LazyParam(e, cname, named[cname], node)
            continue
        if node.op == "output":
            continue
        if node.op != "call_function":
            e.fail(f"graph node kind {node.op} is not mapped")
        args = _map_arg(env, node.args)
        kwargs = {k: _map_arg(env, v) for k, v in node.kwargs.items()}
        if node.target is _getitem:
            env[node] = args[0][args[1]] if args[0] is not None else None
            continue
        args = tuple(_resolve_params(a) for a in args)
        kwargs = {k: _resolve_params(v) for k, v in kwargs.items()}
        if _is_const(args) and _is_const(list(kwargs.values())):
            try:
                env[node] = _wrap_const(node.target(*_const_value(args),
                                                   **{k: _const_value(v) for k, v in kwargs.items()}))
            except Exception as err:
                e.fail(f"folding a computation on constants failed: {err}")
            continue
        handler = _HANDLERS.get(_packet(node.target))
        if handler is None:
            hint = (" (F.dropout with p > 0 traces to it: Piper has no dropout; export with "
                    "p = 0 or the module in eval mode)"
                    if _packet(node.target) in ("bernoulli", "bernoulli_", "empty_like", "rand_like")
                    else "")
            e.fail(f"no tdag mapping for {node.target}{hint}")
        env[node] = handler(e, node, *args, **kwargs)
    if e.loss is None:
        raise ExportError("piper.export: no loss found: the traced function must end in "
                          "F.cross_entropy (log_softmax + nll_loss)")
    text = _module_text(e, B, T)
    with open(path, "w") as f:
        f.write(text)
    if weights is not None:
        _safetensors.write(weights, e.state,
                           metadata=_record.metadata(model, canonical, e.state, e.buffers))
    return e


import operator  # noqa: E402
_getitem = operator.getitem


class _LazyParam:
    """A parameter placeholder: declared (tdag.param) at its first use."""

    def __init__(self, e, name, tensor, node):
        self.e, self.name, self.tensor, self.node = e, name, tensor, node
        self.shape = tuple(tensor.shape)


def _resolve_params(a):
    """A parameter placeholder as its tdag.param, declared at the node that first reads it
    (whose module and source line a refusal names)."""
    if isinstance(a, _LazyParam):
        return a.e.param(a.name, a.tensor)
    if isinstance(a, (list, tuple)):
        return type(a)(_resolve_params(x) for x in a)
    return a


# ----------------------------------------------------------------------------- tags and text

def _module_text(e, B, T):
    """The tdag module: every op's tags resolved (annotated scope; else the operand computed
    last; leaves, constants and ops with no tagged operand from their first user; PP = 0 on
    every op where no op has a PP tag)."""
    final = {}
    users = {}
    for idx, outs, operands, tags in e.ops:
        for o in operands:
            users.setdefault(o.name, idx)
    # forward: annotated tags, else the operand computed last (among those with tags)
    for idx, outs, operands, tags in e.ops:
        if not operands:  # leaves and constants: their first user's, below
            tags = None
        elif tags is None:
            tagged = [o for o in operands if final.get(o.name) is not None]
            if tagged:
                tags = final[max(tagged, key=lambda o: o.index).name]
        for o in outs:
            final[o.name] = tags
    # leaves, constants and what is computed from them alone: their first user's tags (users
    # come later in the program, so a reverse walk settles whole chains)
    by_line = {idx: (outs, operands) for idx, outs, operands, tags in e.ops}
    for idx, outs, operands, tags in reversed(e.ops):
        for o in outs:
            if final.get(o.name) is None and o.name in users:
                u_outs, _ = by_line[users[o.name]]
                final[o.name] = final.get(u_outs[0].name) if u_outs else None
    uses_pp = any(t and "PP" in t for t in final.values())
    out = [f"// Exported by piper.export (python/piper): B={B} T={T}.", "module {",
           "  func.func @model() {"]
    for idx, (lhs, op, attrs, types, loc) in enumerate(e.lines):
        outs = next(o for i, o, _, _ in e.ops if i == idx)
        tags = dict(final.get(outs[0].name) or {}) if outs else {}
        if not outs:  # tdag.output: the loss's tags
            tags = dict(final.get(e.loss.name) or {})
        if not uses_pp:
            tags["PP"] = 0
        tag_text = "tags = {" + ", ".join(f"{k} = {v} : i64" for k, v in tags.items()) + "}"
        a = ", ".join(x for x in (attrs, tag_text) if x)
        out.append(f"    {lhs}{op} {{{a}}} : {types} {loc}")
    loss_line = f'    "tdag.output"({e.loss.name}) {{name = "loss", tags = {{' + ", ".join(
        f"{k} = {v} : i64" for k, v in (dict(final.get(e.loss.name) or {}, **({} if uses_pp else {"PP": 0}))).items()) + "}}" \
        + f" : (tensor<f32>) -> ()"
    out.append(loss_line)
    out += ["    return", "  }", "}", ""]
    return "\n".join(out)
