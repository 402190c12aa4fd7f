"""Capture: the ATen graph of a module's training forward and loss.

make_fx over a functional_call of the module (parameters and buffers as inputs) gives a graph
with concrete shapes (fake tensors: nothing is computed). While it traces, every fx node gets
the tags, the module path and the user's source line current when the model created it
(node.meta["piper"]); _annotate.py keeps the tag and path stacks."""
import contextlib

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call

from . import _annotate
from . import _library  # noqa: F401  (defines torch.ops.piper.*)
from . import _moe
from ._errors import ExportError, user_frame, user_frame_of


class _Recorder:
    """Wraps fx's Tracer.create_node while tracing: every node gets the tags, module path and
    user source line current when the model created it (node.meta["piper"])."""

    def __enter__(self):
        self.orig = torch.fx.Tracer.create_node

        def create_node(tracer, *args, **kwargs):
            node = self.orig(tracer, *args, **kwargs)
            tags, path = _annotate.current()
            node.meta["piper"] = {"tags": tags, "path": path, "src": user_frame()}
            return node

        torch.fx.Tracer.create_node = create_node
        return self

    def __exit__(self, *exc):
        torch.fx.Tracer.create_node = self.orig


def _refuse_here(what, op):
    """An ExportError at the user's line and the module running now."""
    src = user_frame()
    path = _annotate.current()[1] or "(the root module)"
    return ExportError(f"{src[0]}:{src[1]}: piper.export: {what} (op {op}, module {path})")


def _cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                   reduce=None, reduction="mean", label_smoothing=0.0):
    """F.cross_entropy while tracing: torch's own, but with label smoothing the op
    piper.cross_entropy (_library.py), which the exporter maps to tdag.cross_entropy
    {label_smoothing}."""
    if not label_smoothing:
        return _ORIGINAL_CROSS_ENTROPY(input, target, weight, size_average, ignore_index, reduce,
                                       reduction)
    if weight is not None or size_average is not None or reduce is not None or \
            reduction != "mean" or input.dim() != 2:
        raise _refuse_here(f"cross entropy with label_smoothing={label_smoothing} maps only on "
                           f"(rows, classes) logits, with no class weights and reduction='mean'",
                           "F.cross_entropy")
    return torch.ops.piper.cross_entropy(input, target, ignore_index, float(label_smoothing))


_ORIGINAL_CROSS_ENTROPY = F.cross_entropy


@contextlib.contextmanager
def _intercepted():
    """Replaces the Python functions the exporter maps whole (_library.py) while it traces."""
    F.cross_entropy = _cross_entropy
    try:
        yield
    finally:
        F.cross_entropy = _ORIGINAL_CROSS_ENTROPY


def all_parameters(model):
    """{name: parameter} under every name, tied ones included (named_parameters'
    remove_duplicate=False, which torch 1.13 lacks), in named_parameters' order."""
    out = {}
    for prefix, mod in model.named_modules(remove_duplicate=False):
        for n, p in mod._parameters.items():
            if p is not None:
                out[f"{prefix}.{n}" if prefix else n] = p
    return out


class Traced:
    """A captured graph: `graph` (fx.GraphModule), `placeholders` (placeholder node -> state
    name, "tokens" or "targets"), `canonical` (every parameter name -> its first name),
    `buffers` and `params` ({name: tensor}, params under every name)."""

    def __init__(self, graph, placeholders, canonical, buffers, params):
        self.graph, self.placeholders, self.canonical = graph, placeholders, canonical
        self.buffers, self.params = buffers, params


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

    # MoE blocks are found (and their forwards probed) before the tracing hooks go in
    with _moe.exported_as_moe(model), _annotate.tracing(model), _Recorder(), _intercepted():
        try:
            g = make_fx(traced, tracing_mode="fake")(state, tokens, targets)
        except ExportError:
            raise
        except Exception as err:
            raise _tracing_error(err) from None
    names = list(state) + ["tokens", "targets"]
    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    return Traced(g, dict(zip(placeholders, names)), canonical, buffers, named)


# What torch raises when a trace reads a tensor's value (an `if` on it, .item(), .tolist()):
# torch 1.13's proxy tensors say the first, torch 2's fake tensors raise the classes named.
_VALUE_READ_MESSAGES = ("get value out of a tracing tensor",)
_VALUE_READ_CLASSES = ("DataDependentOutputException", "GuardOnDataDependentSymNode")
# ... and when an op's result shape depends on values (nonzero, boolean-mask indexing).
_DYNAMIC_SHAPE_CLASSES = ("DynamicOutputShapeException",)


def _failed_op(err):
    """The ATen op that was running when `err` was raised (the innermost traceback frame whose
    `func` local is an op overload: torch's dispatch modes all name it so), or None."""
    found = None
    tb = err.__traceback__
    while tb is not None:
        func = tb.tb_frame.f_locals.get("func")
        if isinstance(func, torch._ops.OpOverload):
            found = func
        tb = tb.tb_next
    return found


def _tracing_error(err):
    """The ExportError for an exception make_fx raised: the user's line, the module path, the
    op and torch's own message; the data-dependent hint only where a value or a shape depended
    on the data."""
    src = user_frame_of(err)
    path = _annotate.current()[1] or "(the root module)"
    kind = type(err).__name__
    op = _failed_op(err)
    if kind in _VALUE_READ_CLASSES or any(m in str(err) for m in _VALUE_READ_MESSAGES):
        what = (f"the model could not be traced: {kind}: {err} (op: reading a tensor's value, "
                f"module {path}); data-dependent control flow (an `if` on a tensor's value, "
                f".item(), .tolist()) is refused: make the forward depend on shapes only")
    elif kind in _DYNAMIC_SHAPE_CLASSES:
        what = (f"the model could not be traced: {kind}: {err} (op {op or err}, module {path}); "
                f"a result whose shape depends on the data (nonzero, torch.where with one "
                f"argument, indexing by a boolean mask) is refused: Piper's shapes are static. "
                f"A mixture-of-experts block that gathers its tokens this way is exported as "
                f"tdag.moe when piper.export recognises it (docs/frontend.md, MoE)")
    else:
        what = (f"the model could not be traced: torch raised {kind}: {err} (op "
                f"{op if op is not None else 'unknown'}, module {path})")
    return ExportError(f"{src[0]}:{src[1]}: piper.export: {what}")


def _call_with_state(model, state, thunk):
    from torch.nn.utils import stateless
    with stateless._reparametrize_module(model, state):
        return thunk()


def _pick_loss(out):
    if isinstance(out, torch.Tensor) and out.dim() == 0:
        return out
    if isinstance(out, (tuple, list)):
        scalars = [o for o in out if isinstance(o, torch.Tensor) and o.dim() == 0]
        if len(scalars) == 1:
            return scalars[0]
    src = user_frame()  # the export call's line (the traced function is piper's)
    got = f"a {tuple(out.shape)} tensor" if isinstance(out, torch.Tensor) else type(out).__name__
    raise ExportError(f"{src[0]}:{src[1]}: piper.export: the forward returned {got}; it must "
                      f"return the scalar loss, or a tuple holding exactly one scalar tensor "
                      f"(nanoGPT's (logits, loss)); pass loss=fn(model, tokens, targets) "
                      f"otherwise (op the forward's result, module (the root module))")
