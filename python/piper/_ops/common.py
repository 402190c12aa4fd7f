"""Helpers the handlers share: dims, shapes, scalars."""
from .._values import Const


def dim(d, rank):
    """d as a non-negative dim of a rank-`rank` tensor."""
    return d + rank if d < 0 else d


def scalar(x):
    """x as a Python float when it is a scalar (a number, or a one-element constant)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if isinstance(x, Const) and x.tensor.numel() == 1:
        return float(x.tensor.reshape(()).item())
    return None


def out_shape(node):
    """The shape of fx node `node`'s result (its fake tensor's), or None."""
    val = node.meta.get("val")
    return tuple(val.shape) if val is not None and hasattr(val, "shape") else None


def suffix_shape(small, big):
    """small, leading 1s dropped, when it is big's trailing dims (the suffix broadcast); else
    None."""
    s = list(small)
    while s and s[0] == 1:
        s.pop(0)
    if len(s) > len(big) or tuple(s) != tuple(big[len(big) - len(s):]):
        return None
    return s


def broadcast_shape(a, b):
    r = max(len(a), len(b))
    a = (1,) * (r - len(a)) + tuple(a)
    b = (1,) * (r - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))
