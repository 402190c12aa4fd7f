"""Elementwise ops: arithmetic with broadcasting and with Python scalars, powers, the
activations, and masks (masked_fill, torch.where with a constant condition)."""
import torch

from .._values import Const, fattr
from .common import broadcast_shape, scalar, suffix_shape
from .registry import handles


def _binary_operand(e, x, out_shape):
    """Operand x of a broadcasting binary op as a V the suffix-broadcast kernels read: x itself
    when its shape is out's or a suffix of it, else x broadcast (tdag.broadcast) to out's
    shape from the first dim it does not have as 1 on."""
    v = e.value(x)
    if v.shape == tuple(out_shape) or suffix_shape(v.shape, out_shape) is not None:
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


def binary(e, op, a, b):
    """a <op> b for op in add, sub, mul, div, with torch's broadcasting, either side maybe a
    scalar."""
    sa, sb = scalar(a), scalar(b)
    if sb is not None and sa is None:
        av = e.value(a)
        if op == "add":
            return e.emit("add_scalar", [av], [(av.shape, "f32")], f"value = {fattr(sb)}")
        if op == "sub":
            return e.emit("add_scalar", [av], [(av.shape, "f32")], f"value = {fattr(-sb)}")
        if op == "mul":
            return e.emit("mul_scalar", [av], [(av.shape, "f32")], f"value = {fattr(sb)}")
        return e.emit("mul_scalar", [av], [(av.shape, "f32")], f"value = {fattr(1.0 / sb)}")
    if sa is not None and sb is None:
        bv = e.value(b)
        if op in ("add", "mul"):
            return binary(e, op, b, a)
        if op == "sub":  # s - b = -b + s
            nb = e.emit("mul_scalar", [bv], [(bv.shape, "f32")], f"value = {fattr(-1.0)}")
            return e.emit("add_scalar", [nb], [(bv.shape, "f32")], f"value = {fattr(sa)}")
        inv = e.emit("pow_scalar", [bv], [(bv.shape, "f32")], f"exponent = {fattr(-1.0)}")
        return inv if sa == 1.0 else e.emit("mul_scalar", [inv], [(bv.shape, "f32")],
                                            f"value = {fattr(sa)}")
    out = broadcast_shape(a.shape, b.shape)
    av, bv = _binary_operand(e, a, out), _binary_operand(e, b, out)
    if av.shape != out and bv.shape != out:  # neither is the whole result: widen one
        av = e.emit("broadcast", [av], [(out, "f32")])
    if op == "add" and av.shape == bv.shape:
        return e.emit("add", [av, bv], [(out, "f32")])
    name = {"add": "add_bcast", "sub": "sub", "mul": "mul", "div": "div"}[op]
    return e.emit(name, [av, bv], [(out, "f32")])


@handles("add")
def h_add(e, node, a, b, alpha=1):
    if alpha != 1:
        b = binary(e, "mul", b, alpha)
    return binary(e, "add", a, b)


@handles("sub")
def h_sub(e, node, a, b, alpha=1):
    if alpha != 1:
        b = binary(e, "mul", b, alpha)
    return binary(e, "sub", a, b)


@handles("rsub")
def h_rsub(e, node, a, b, alpha=1):
    return h_sub(e, node, b, a, alpha)


@handles("mul")
def h_mul(e, node, a, b):
    return binary(e, "mul", a, b)


@handles("div")
def h_div(e, node, a, b, rounding_mode=None):
    if rounding_mode is not None:
        e.fail(f"division with rounding_mode={rounding_mode!r} is not mapped")
    return binary(e, "div", a, b)


@handles("neg")
def h_neg(e, node, x):
    return binary(e, "mul", x, -1.0)


@handles("pow")
def h_pow(e, node, x, exponent):
    p = scalar(exponent)
    if p is None:
        e.fail("pow with a tensor exponent is not mapped (use a Python number)")
    v = e.value(x)
    return e.emit("pow_scalar", [v], [(v.shape, "f32")], f"exponent = {fattr(p)}")


def _unary(name):
    def h(e, node, x, *rest):
        v = e.value(x)
        return e.emit(name, [v], [(v.shape, "f32")])
    h.__name__ = f"h_{name}"
    return h


for _name in ("rsqrt", "tanh", "exp", "silu", "relu"):
    handles(_name)(_unary(_name))


@handles("reciprocal")
def h_reciprocal(e, node, x):
    return binary(e, "div", 1.0, x)


@handles("sqrt")
def h_sqrt(e, node, x):
    v = e.value(x)
    return e.emit("pow_scalar", [v], [(v.shape, "f32")], f"exponent = {fattr(0.5)}")


@handles("gelu")
def h_gelu(e, node, x, approximate="none"):
    v = e.value(x)
    return e.emit("gelu" if approximate == "tanh" else "gelu_erf", [v], [(v.shape, "f32")])


def _mask(e, mask, shape):
    if not isinstance(mask, Const):
        e.fail("the mask must be a constant (a buffer, or computed from constants): a mask that "
               "depends on the data is not mapped")
    m = Const(mask.tensor.to(torch.float32))
    if suffix_shape(m.shape, shape) is None:
        full = torch.broadcast_to(m.tensor, shape)
        lead = 0
        while lead < len(shape) and all(
                bool((full.select(lead, 0) == full.select(lead, i)).all())
                for i in range(shape[lead])):
            lead += 1
        m = Const(full[(0,) * lead].contiguous())
    return e.value(m)


@handles("masked_fill")
def h_masked_fill(e, node, x, mask, value):
    v = e.value(x)
    s = scalar(value)
    if s is None:
        e.fail("masked_fill with a tensor value is not mapped (use a Python number)")
    return e.emit("masked_fill", [v, _mask(e, mask, v.shape)], [(v.shape, "f32")],
                  f"value = {fattr(s)}")


@handles("gt", "lt", "ge", "le", "eq", "ne")
def h_compare(e, node, *args):
    e.fail("a comparison of values computed from the data (a mask that depends on the data): "
           "only constant masks (buffers, tril/triu) are mapped")


@handles("where")
def h_where(e, node, cond, a, b):
    if not isinstance(cond, Const):
        e.fail("torch.where with a condition that depends on the data is not mapped")
    sa, sb = scalar(a), scalar(b)
    if sb is not None and sa is None:  # where(c, x, s) = masked_fill(x, ~c, s)
        return h_masked_fill(e, node, a, Const(~cond.tensor.to(torch.bool)), sb)
    if sa is not None and sb is None:
        return h_masked_fill(e, node, b, cond, sa)
    e.fail("torch.where maps only with one side a scalar (masked_fill)")
