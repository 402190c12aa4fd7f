"""piper.export: a PyTorch module's training forward -> a tdag module piper-compile takes, and its
weights -> a safetensors file --init-checkpoint loads.

The exporter is layered as torch-mlir's fx_importer is:
  _errors.py     ExportError and the user's source line
  _capture.py    make_fx over a functional_call: the ATen graph, each node with its tags,
                 module path and source line
  _values.py     what a node maps to (an emitted value, or a lazy view, transpose, split piece,
                 log_softmax; a constant)
  _constants.py  which tdag op regenerates a constant (RoPE tables, causal masks)
  _emitter.py    the tdag ops as text, the parameters, inputs and constants they read
  _ops/          the handlers, one module per family, registered with @handles beside their code
  _text.py       the module's text, every op's tags resolved
  _export.py     this driver: walks the graph, folds computations on constants alone with real
                 values, calls each op's handler, writes the files
What cannot be mapped stops with the op, the module's path and the user's source line
(ExportError).
"""
import operator
import os

import torch

from . import _record
from . import _safetensors
from ._capture import all_parameters, trace  # noqa: F401  (all_parameters: piper.load's)
from ._emitter import Emitter
from ._errors import ExportError, user_frame
from ._ops import handler_for, packet
from ._text import module_text
from ._values import Const, COMPUTED, Unusable


def _map_arg(env, a):
    if isinstance(a, torch.fx.Node):
        return env[a]
    if isinstance(a, (list, tuple)):
        return type(a)(_map_arg(env, x) for x in a)
    return a


def _is_const(a):
    if isinstance(a, (list, tuple)):
        return all(_is_const(x) for x in a)
    return not isinstance(a, COMPUTED)


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


# Ops that only view their operand (a view of an Unusable value is Unusable: not yet a use).
_VIEWS = ("view", "_unsafe_view", "_reshape_alias", "reshape", "alias", "detach", "clone",
          "t", "transpose", "permute", "unsqueeze", "squeeze", "flatten")


def _find_unusable(a):
    if isinstance(a, Unusable):
        return a
    if isinstance(a, (list, tuple)):
        return next((u for u in map(_find_unusable, a) if u is not None), None)
    return None


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


def _graph_attr(gm, target):
    """The tensor a get_attr node names in GraphModule gm (dotted targets walk submodules)."""
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj.detach()


def _check_example(tokens, targets, src):
    if tokens.dtype not in (torch.int64, torch.int32) or targets.dtype not in (torch.int64, torch.int32):
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: tokens and targets must be integer "
                          f"tensors of token ids, got {tokens.dtype} and {targets.dtype} (the "
                          f"example inputs of this call: the runtime feeds int32 token ids)")
    if tokens.dim() != 2 or tokens.shape != targets.shape:
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: tokens and targets must both be "
                          f"(B, T), got {tuple(tokens.shape)} and {tuple(targets.shape)}")


def _map_graph(e, traced):
    """Walks the captured graph in order, mapping every node (env: node -> its value)."""
    B, T = e.B, e.T
    env = {}
    for node in traced.graph.graph.nodes:
        e.node = node
        if node.op == "placeholder":
            name = traced.placeholders[node]
            if name in ("tokens", "targets"):
                env[node] = e.input(name, (B, T))
            elif name in traced.buffers:
                env[node] = Const(traced.buffers[name], buffer=name)
            else:
                cname = traced.canonical[name]
                env[node] = _LazyParam(e, cname, traced.params[cname], node)
            continue
        if node.op == "output":
            continue
        if node.op == "get_attr":  # a tensor the forward made from numbers: torch.tensor(...)
            env[node] = Const(_graph_attr(traced.graph, node.target))
            continue
        if node.op != "call_function":
            e.fail(f"graph node kind {node.op} is not mapped")
        args = _map_arg(env, node.args)
        kwargs = {k: _map_arg(env, v) for k, v in node.kwargs.items()}
        if node.target is operator.getitem:
            env[node] = args[0][args[1]] if args[0] is not None else None
            continue
        unusable = _find_unusable((args, list(kwargs.values())))
        if unusable is not None:
            if packet(node.target) not in _VIEWS:  # a view of it is as unusable
                e.fail(unusable.why)
            env[node] = Unusable(unusable.why, node.meta["val"].shape)
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
        handler = handler_for(node.target)
        if handler is None:
            hint = (" (F.dropout with p > 0 traces to it: Piper has no dropout; export with "
                    "p = 0 or the module in eval mode)"
                    if packet(node.target) in ("bernoulli", "bernoulli_", "empty_like", "rand_like")
                    else "")
            e.fail(f"no tdag mapping for {node.target}{hint}")
        env[node] = handler(e, node, *args, **kwargs)


def default_weights_path(path):
    """Where piper.export writes the weights by default: model.mlir -> model.init.safetensors."""
    stem, ext = os.path.splitext(path)
    return (stem if ext == ".mlir" else path) + ".init.safetensors"


def export(model, example, path, weights=True, loss=None):
    tokens, targets = example
    if weights is True:
        weights = default_weights_path(path)
    elif weights is False:
        weights = None
    src = user_frame()  # the export call's line
    _check_example(tokens, targets, src)
    B, T = tokens.shape
    if targets is tokens:  # one tensor would trace as one input
        targets = targets.clone()
    traced = trace(model, tokens, targets, loss)
    e = Emitter(B, T)
    _map_graph(e, traced)
    if e.loss is None:
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: no loss found: the traced function "
                          f"must end in F.cross_entropy (log_softmax + nll_loss) (op the "
                          f"forward's result, module (the root module))")
    text = module_text(e, B, T, os.path.abspath(weights) if weights is not None else None)
    with open(path, "w") as f:
        f.write(text)
    if weights is not None:
        _safetensors.write(weights, e.state,
                           metadata=_record.metadata(model, traced.canonical, e.state, e.buffers))
    return e
