"""A mixture-of-experts block (the op piper.moe the exporter traces for it, _moe.py) as tdag's
MoE ops, as piper-gen's qwen3-moe writes them: router logits (tdag.matmul_nt), moe_topk,
moe_dispatch and moe_experts (tagged EP = 0, the expert-parallel region piper-sched --ep
shards), moe_combine.

Weights that are not renormalised (OLMoE's norm_topk_prob = False) are the top-k softmax
probabilities themselves. tdag.moe_topk renormalises over its top k; over all E it
renormalises the whole softmax, a no-op (sum 1, to rounding), largest first in the order a
top-k call chooses. So a second moe_topk {top_k = E} gives every probability in that order,
and its first k (tdag.slice) are the weights, with their exact gradient (the softmax's, zero
beyond the k), while the top-k call still gives the experts."""
from .._values import Unusable
from .registry import handles


@handles("piper.moe")
def h_moe(e, node, x, router, gates, ups, downs, top_k, normalize):
    xv = e.value(x)
    W = e.value(router)
    E = W.shape[0]
    lead, C = xv.shape[:-1], xv.shape[-1]
    N = 1
    for d in lead:
        N *= d
    gs, us, ds = ([e.value(w) for w in ws] for ws in (gates, ups, downs))
    Fe = gs[0].shape[0]
    R = N * min(top_k, E)
    logits = e.emit("matmul_nt", [xv, W], [(lead + (E,), "f32")])
    w, ex = e.emit("moe_topk", [logits], [(lead + (top_k,), "f32"), (lead + (top_k,), "i32")],
                   f"top_k = {top_k} : i64")
    if not normalize and top_k < E:  # the probabilities themselves (above)
        p, _ = e.emit("moe_topk", [logits], [(lead + (E,), "f32"), (lead + (E,), "i32")],
                      f"top_k = {E} : i64")
        w = e.emit("slice", [p], [(lead + (top_k,), "f32")],
                   f"dim = {len(lead)} : i64, start = 0 : i64")
    rows, counts = e.emit("moe_dispatch", [xv, ex], [((R, C), "f32"), ((E,), "i32")],
                          f"num_experts = {E} : i64", own_tags={"EP": 0})
    out, _ = e.emit("moe_experts", [rows, counts] + gs + us + ds,
                    [((R, C), "f32"), ((R, 2 * Fe), "f32")],
                    f"operandSegmentSizes = array<i32: 1, 1, {E}, {E}, {E}>", own_tags={"EP": 0})
    y = e.emit("moe_combine", [out, w, ex], [(xv.shape, "f32")], f"num_experts = {E} : i64")
    why = ("the router logits of a mixture-of-experts block are used (an auxiliary "
           "load-balancing or z-loss?): tdag.moe computes no auxiliary loss, so only the "
           "block's output may be used")
    return (y, Unusable(why, lead + (E,)))
