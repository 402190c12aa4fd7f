"""Piper's own ATen ops (namespace `piper`), for what the exporter maps whole rather than
trace through: torch's label-smoothed cross entropy (torch 1.13 cannot trace it with fake
tensors, and its decomposition would read the targets as a mask). While piper.export traces,
the Python function the model calls is replaced by one that calls the op (_capture.py,
`intercepted`); the graph then holds one node, which a handler maps (_ops/nn.py). Each op has
a CPU kernel (torch's own computation: the op also runs eagerly) and a Meta kernel (the shapes
fake tensors need)."""
import torch
import torch.nn.functional as F

_lib = torch.library.Library("piper", "DEF")

_lib.define("cross_entropy(Tensor logits, Tensor target, int ignore_index, float label_smoothing)"
            " -> Tensor")


def _cross_entropy_cpu(logits, target, ignore_index, label_smoothing):
    return F.cross_entropy(logits, target, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)


def _cross_entropy_meta(logits, target, ignore_index, label_smoothing):
    return logits.new_empty(())


_lib.impl("cross_entropy", _cross_entropy_cpu, "CPU")
_lib.impl("cross_entropy", _cross_entropy_meta, "Meta")


# A top-k routed mixture of experts, as tdag.moe computes it (docs/models.md, Qwen3-MoE):
# p = softmax(x router^T) over the E experts, the top_k largest (ties: the lower index), their
# weights p_k (renormalised to sum 1 when `normalize`), y = sum_k w_k down_k(silu(gate_k x) *
# up_k x). Returns y (x's shape) and the router logits (x's leading dims, E).
_lib.define("moe(Tensor x, Tensor router, Tensor[] gates, Tensor[] ups, Tensor[] downs, "
            "int top_k, bool normalize) -> (Tensor, Tensor)")


def moe_reference(x, router, gates, ups, downs, top_k, normalize, route=None, act=F.silu):
    """The op's meaning in torch (its CPU kernel, and what the exporter's probe compares a
    module against); `route` (the router's activation, softmax by default) and `act` (the
    experts', SiLU) name what a refused block computes instead (_moe.py)."""
    logits = x @ router.t()
    p = torch.softmax(logits, dim=-1) if route is None else route(logits)
    order = torch.sort(p, dim=-1, descending=True, stable=True).indices[..., :top_k]
    w = torch.gather(p, -1, order)
    if normalize:
        w = w / w.sum(dim=-1, keepdim=True)
    y = torch.zeros_like(x)
    for e, (g, u, d) in enumerate(zip(gates, ups, downs)):
        hit = (order == e).to(x.dtype) * w  # the token's weight for expert e, 0 if not chosen
        y = y + hit.sum(-1, keepdim=True) * ((act(x @ g.t()) * (x @ u.t())) @ d.t())
    return y, logits


def _moe_meta(x, router, gates, ups, downs, top_k, normalize):
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1] + (router.shape[0],))


_lib.impl("moe", moe_reference, "CPU")
_lib.impl("moe", _moe_meta, "Meta")
