"""Tags: what `piper.annotate` records and how the exporter reads it back while tracing.

Two forms give an op its tags:
  * `piper.annotate(module, **tags)` tags every op the module's forward creates. Tags nest: an
    inner annotated module's tags are added to its parents' and override them key by key.
  * `with piper.annotate("PP"):` inside a forward opens a region whose ops get {"PP": i}, i
    counting the regions of that name in trace order from 0 (auto-indexed; the count restarts at
    each export). It nests with the module tags as an inner module would.
An op created outside every annotated module and region takes the tags of its operand computed
last (the exporter applies that rule, python/piper/_text.py), so glue code between modules
stays with its data: `tok_emb + pos_emb` goes with the embeddings, a loss after the head goes
with the head. Leaves (parameters, inputs), constants, and ops none of whose operands has tags
(computed from parameters and constants alone: wpe's rows) take the tags of their first user.
"""
import contextlib

import torch

from ._errors import ExportError, user_frame

_ATTR = "_piper_tags"


class _TraceState:
    """The tag and module-path stacks while one export traces (None outside an export)."""

    def __init__(self):
        self.tags = [{}]          # merged tags of the innermost annotated scope, outermost first
        self.annotated = [False]  # whether that scope (or one around it) is annotated
        self.paths = [""]         # module path of the module running now ("" = the root)
        self.counters = {}        # name -> regions opened so far (the auto-index)


_state = None


def current():
    """(tags dict or None when no annotated scope is open, module path) of the op being traced."""
    if _state is None:
        return None, ""
    return (dict(_state.tags[-1]) if _state.annotated[-1] else None), _state.paths[-1]


@contextlib.contextmanager
def _region(name):
    if _state is None:  # outside an export: nothing to record (plain PyTorch runs)
        yield
        return
    index = _state.counters.get(name, 0)
    _state.counters[name] = index + 1
    _state.tags.append({**_state.tags[-1], name: index})
    _state.annotated.append(True)
    try:
        yield
    finally:
        _state.tags.pop()
        _state.annotated.pop()


def annotate(target, **tags):
    """annotate(module, **tags) -> module, tagged; annotate("NAME") -> a context manager whose
    ops get {NAME: i}, i auto-indexed per name in trace order. annotate(block, moe=True | False |
    {...}) says whether a mixture-of-experts block is exported as tdag.moe (_moe.py)."""
    if isinstance(target, str):
        if tags:
            raise TypeError('annotate("NAME") takes no tag values: its index is counted')
        return _region(target)
    if "moe" in tags:  # not a tag: how the exporter treats a mixture-of-experts block
        from . import _moe
        _moe.hint(target, tags.pop("moe"))
    for k, v in tags.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"piper.annotate: tag {k}={v!r} must be an int (strategies filter "
                            f"tags by integer index)")
    setattr(target, _ATTR, {**getattr(target, _ATTR, {}), **tags})
    return target


def _refuse_dropout(mod, path):
    """nn.Dropout (any of its kinds) with p > 0 in training mode: refused where it is called.
    Piper has no dropout yet (its runtime RNG is deterministic, but no kernel draws masks)."""
    if isinstance(mod, torch.nn.modules.dropout._DropoutNd) and mod.p > 0 and mod.training:
        src = user_frame()
        raise ExportError(f"{src[0]}:{src[1]}: piper.export: dropout with p = {mod.p} > 0 is "
                          f"refused: Piper has no dropout yet; export with p = 0 or the model "
                          f"in eval mode (op {type(mod).__name__}, module {path})")


@contextlib.contextmanager
def tracing(model):
    """Installs the hooks that keep the stacks while `model` is traced; removes them after."""
    global _state
    _state = _TraceState()
    handles = []
    for path, m in model.named_modules():
        own = getattr(m, _ATTR, None)

        def pre(mod, args, path=path, own=own):
            _refuse_dropout(mod, path)
            _state.paths.append(path)
            if own is not None:
                _state.tags.append({**_state.tags[-1], **own})
                _state.annotated.append(True)
            else:
                _state.tags.append(_state.tags[-1])
                _state.annotated.append(_state.annotated[-1])

        def post(mod, args, out):
            _state.paths.pop()
            _state.tags.pop()
            _state.annotated.pop()

        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        _state = None
