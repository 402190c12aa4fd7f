"""What an fx node maps to while the exporter walks the graph.

V is an emitted tdag SSA value. The others are kept lazy so the IR reads as the model does: a
reshape (View) until an op needs it materialised, the transpose of a 2-D parameter
(Transposed) until a matmul takes it as a linear's weight, split pieces (Lazy) until used,
log_softmax (LogSoftmax) until nll_loss makes it a cross entropy. Const is a tensor known at
export time (a buffer, or a value folded from constants). Emitter.value materialises any of
them as a V."""
import math


class V:
    """A tdag SSA value: its name, shape, element type ("f32" | "i32"), the tags of the op that
    made it, and its emission index (the operand-computed-last rule compares them)."""

    def __init__(self, name, shape, elem, tags, index):
        self.name, self.shape, self.elem, self.tags, self.index = name, tuple(shape), elem, tags, index

    @property
    def type(self):
        return ttype(self.shape, self.elem)


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


class Unusable:
    """A result the exporter cannot give a use (a MoE block's router logits: what would use
    them is an auxiliary loss tdag.moe does not compute): mapping a node that reads it fails
    with `why`."""

    def __init__(self, why, shape):
        self.why, self.shape = why, tuple(shape)


# The kinds that stand for a value computed from the data (not a constant, not a Python value).
COMPUTED = (V, View, Transposed, Lazy, LogSoftmax, Unusable)


def ttype(shape, elem):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


def fattr(v):
    """v as an f64 attribute, infinities as their bit patterns."""
    if math.isinf(v):
        return ("0xFFF0000000000000" if v < 0 else "0x7FF0000000000000") + " : f64"
    if math.isnan(v):
        raise ValueError("NaN attribute")
    return "%.17e : f64" % v


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n
