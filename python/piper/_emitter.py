"""The emitter: tdag ops as text lines, the parameters, inputs and constants they read, and
the weights file's tensors. Handlers (_ops/) call emit() and value(); the driver (_export.py)
sets `node` to the fx node being mapped, whose tags and source line every op it emits gets."""
import torch

from . import _constants
from ._errors import refusal
from ._values import V, View, Transposed, Lazy, Const, LogSoftmax, fattr


# The ops that take an int32 operand (token ids, expert ids, expert counts).
_READS_TOKENS = ("embed", "embedding", "cross_entropy", "reshape", "moe_dispatch", "moe_experts",
                 "moe_combine")


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
        self.own_tags = {}     # line index -> tags of that op alone (emit's own_tags)

    # -- locations and errors
    def loc(self, node=None):
        node = node or self.node
        src = node.meta.get("piper", {}).get("src") if node is not None else None
        if not src:
            return "loc(unknown)"
        return f'loc("{src[0]}":{src[1]}:0)'

    def fail(self, what, node=None):
        raise refusal(what, node or self.node)

    # -- emission
    def emit(self, op, operands, results, attrs="", leaf_tags=None, own_tags=None):
        """Emits "tdag.<op>"(operands) {attrs} and returns its result V(s); results are
        (shape, elem) pairs. own_tags are added to this op's tags alone (no other op inherits
        them: the EP = 0 piper-gen puts on the MoE dispatch and experts)."""
        if op not in _READS_TOKENS and any(o.elem == "i32" for o in operands):
            self.fail(f"the token ids (int32) reach tdag.{op}: only embeddings and the loss read "
                      f"them, so arithmetic on token ids is not mapped")
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
        if own_tags:
            self.own_tags[len(self.lines) - 1] = own_tags
        return outs[0] if len(outs) == 1 else outs

    def param(self, name, tensor, buffer=False):
        if name in self.params:
            return self.params[name]
        if buffer and tensor.dtype in (torch.bfloat16, torch.float16):
            tensor = tensor.float()  # exact; torch promotes it so against float32 operands
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

    def is_param(self, v):
        """Whether V v is a declared tdag.param."""
        return isinstance(v, V) and v.name in {p.name for p in self.params.values()}

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
        if t.dtype != torch.float64:  # bool, integers, bf16 and f16 are exact in float32
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
            return self.emit("full", [], [(c.shape, "f32")], f"value = {fattr(float(flat[0]))}")
        rope = _constants.rope_table(t)
        if rope is not None:
            D, theta, sn = rope
            rows = [d for d in c.shape if d != 1]
            m = self.emit("rope_table", [], [(tuple(rows), "f32")],
                          f"head_dim = {D} : i64, theta = {fattr(theta)}, sin = {sn} : i64")
            return m if tuple(rows) == c.shape else self.emit("reshape", [m], [(c.shape, "f32")])
        tri = _constants.triangle(t)
        if tri is not None:
            d, inside, outside = tri
            R, C = t.shape[-2], t.shape[-1]
            m = self.emit("triangle", [], [((R, C), "f32")],
                          f"diagonal = {d} : i64, inside = {fattr(inside)}, outside = "
                          f"{fattr(outside)}")
            if (R, C) == c.shape:
                return m
            if all(d == 1 for d in c.shape[:-2]):
                return self.emit("reshape", [m], [(c.shape, "f32")])
            # expanded over the batch (or heads): the one triangle broadcast, so the graph
            # holds no batch-sized constant a replica's or a microbatch's rows cannot meet
            return self.emit("broadcast", [m], [(c.shape, "f32")])
        self.consts += 1
        return self.param(f"piper.const.{self.consts}", t.contiguous(), buffer=True)
