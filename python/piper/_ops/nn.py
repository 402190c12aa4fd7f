"""The layers ATen keeps whole: layer norm, cross entropy (log_softmax + nll_loss), and torch
2's scaled_dot_product_attention."""
import math

from .._values import View, LogSoftmax, fattr
from .registry import handles


@handles("native_layer_norm")
def h_layer_norm(e, node, x, shape, w, b, eps):
    if len(shape) != 1:
        e.fail("layer_norm over more than the last dim is not mapped")
    v = e.value(x)
    C = v.shape[-1]
    wv = e.value(w) if w is not None else e.emit("full", [], [((C,), "f32")], f"value = {fattr(1.0)}")
    bv = e.value(b) if b is not None else e.emit("full", [], [((C,), "f32")], f"value = {fattr(0.0)}")
    out = e.emit("layernorm", [v, wv, bv], [(v.shape, "f32"), (v.shape[:-1], "f32"),
                                           (v.shape[:-1], "f32")], f"eps = {fattr(eps)}")
    return (out[0], None, None)


def _cross_entropy(e, logits, lnode, target, ignore_index, smoothing):
    """tdag.cross_entropy of `logits` (rows, V) against the targets input; the loss."""
    if ignore_index >= 0:
        e.fail(f"cross entropy with ignore_index={ignore_index}: the runtime's targets are "
               f"token ids >= 0, so only a negative ignore_index (-1, -100) is exact")
    tgt = target.base if isinstance(target, View) else target
    tv = e.value(tgt)
    if tv.elem != "i32" or tgt is not e.inputs.get("targets"):
        e.fail("the loss's targets must be the targets input (reshaped at most)")
    if isinstance(logits, View):  # logits.view(-1, V): view the (B, T, V) it came from
        logits = logits.base
    x = e.value(View(logits, tv.shape + (logits.shape[-1],), lnode))
    attrs = f"label_smoothing = {fattr(smoothing)}" if smoothing else ""
    loss = e.emit("cross_entropy", [x, tv], [((), "f32"), (x.shape, "f32")], attrs)
    e.loss = loss[0]
    return loss[0]


@handles("nll_loss_forward")
def h_nll_loss(e, node, logp, target, weight, reduction, ignore_index):
    if not isinstance(logp, LogSoftmax):
        e.fail("nll_loss maps only after log_softmax over the last dim (F.cross_entropy)")
    if weight is not None or reduction != 1:
        e.fail("cross entropy maps only with no class weights and reduction='mean'")
    return (_cross_entropy(e, logp.x, logp.node, target, ignore_index, 0.0), None)


@handles("piper.cross_entropy")
def h_cross_entropy(e, node, logits, target, ignore_index, label_smoothing):
    """F.cross_entropy with label smoothing (_library.py): torch's smoothed loss, exactly."""
    return _cross_entropy(e, logits, node, target, ignore_index, label_smoothing)


@handles("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
         "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention")
def h_sdpa_fused(e, node, q, k, v, *args, **kw):
    """The fused kernels torch 2 dispatches scaled_dot_product_attention to, whose signature is
    (q, k, v, [attn_bias,] dropout_p, is_causal, ...) with scale a keyword: as h_sdpa, and
    their second result (the log-sum-exp) unused."""
    args = list(args)
    if "efficient" in str(node.target) or "cudnn" in str(node.target):
        mask = args.pop(0) if args and not isinstance(args[0], (int, float, bool)) else None
        if len(args) >= 2:  # compute_log_sumexp comes first in the efficient kernel
            args = args[1:]
    else:
        mask = kw.get("attn_mask")
    dropout_p = args[0] if args else kw.get("dropout_p", 0.0)
    is_causal = args[1] if len(args) > 1 else kw.get("is_causal", False)
    out = h_sdpa(e, node, q, k, v, mask, dropout_p, is_causal, scale=kw.get("scale"))
    return (out,) + (None,) * 8


@handles("scaled_dot_product_attention")
def h_sdpa(e, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *rest, **kw):
    """torch 2's scaled_dot_product_attention, causal with the default scale: q (B,H,T,D),
    k, v (B,KV,T,D) -> tdag.gqa_attention on (B,T,H*D) layouts (--piper-fuse turns it into
    tdag.attention when q, k, v are the thirds of one projection)."""
    scale = kw.get("scale")
    if attn_mask is not None or not is_causal or dropout_p:
        e.fail("scaled_dot_product_attention maps only with is_causal=True, no attn_mask and "
               "dropout_p = 0")
    qv, kv, vv = e.value(q), e.value(k), e.value(v)
    B, H, T, D = qv.shape
    KV = kv.shape[1]
    if scale is not None and abs(scale - 1 / math.sqrt(D)) > 1e-12:
        e.fail("scaled_dot_product_attention with a scale other than 1/sqrt(head dim)")

    def packed(x, heads):
        p = e.emit("permute", [x], [((B, T, heads, D), "f32")], "perm = array<i64: 0, 2, 1, 3>")
        return e.emit("reshape", [p], [((B, T, heads * D), "f32")])
    out, _ = e.emit("gqa_attention", [packed(qv, H), packed(kv, KV), packed(vv, KV)],
                    [((B, T, H * D), "f32"), ((B, H, T), "f32")],
                    f"heads = {H} : i64, kv_heads = {KV} : i64")
    o = e.emit("reshape", [out], [((B, T, H, D), "f32")])
    return e.emit("permute", [o], [((B, H, T, D), "f32")], "perm = array<i64: 0, 2, 1, 3>")
