"""Capture: the ATen graph of a module's training forward and loss.

make_fx over a functional_call of the module (parameters and buffers as inputs) gives a graph
with concrete shapes (fake tensors: nothing is computed). While it traces, every fx node gets
the tags, the module path and the user's source line current when the model created it
(node.meta["piper"]); _annotate.py keeps the tag and path stacks."""
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call

from . import _annotate
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

    with _annotate.tracing(model), _Recorder():
        try:
            g = make_fx(traced, tracing_mode="fake")(state, tokens, targets)
        except ExportError:
            raise
        except Exception as err:  # data-dependent control flow and the like
            src = user_frame_of(err)
            path = _annotate.current()[1] or "(the root module)"
            raise ExportError(f"{src[0]}:{src[1]}: piper.export: the model could not be traced: "
                              f"{type(err).__name__}: {err} (op: reading a tensor's value, "
                              f"module {path}); data-dependent control flow (an `if` on a "
                              f"tensor's value, .item(), .tolist()) is refused: make the "
                              f"forward depend on shapes only") from None
    names = list(state) + ["tokens", "targets"]
    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    return Traced(g, dict(zip(placeholders, names)), canonical, buffers, named)


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
