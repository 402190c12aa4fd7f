#!/usr/bin/python3
"""PyTorch oracle (ground truth) for Piper's Llama 3 training (`piper-gen llama3`), written from
Hugging Face transformers' LlamaForCausalLM (models/llama/modeling_llama.py, rope_type
"default"), not from Piper's C. transformers is not installed here, so the modules below
restate its math; the names in comments are HF's.

Model: fp32, no dropout, no biases (attention_bias = mlp_bias = False), hidden_act silu.
Letters as in qwen3_torch.py: V vocab, T sequence, C channels (hidden_size), H query heads,
KV key/value heads (divides H), D head dim (default C/H), F FFN dim (intermediate_size).
  x = embed_tokens[tok]
  block i (LlamaDecoderLayer):  h = x + o_proj(attn(input_layernorm(x)))
                                x = h + mlp(post_attention_layernorm(h))
  LlamaRMSNorm: w * (x * rsqrt(mean(x^2) + 1e-5)) over the last dim (rms_norm_eps 1e-5)
  LlamaRotaryEmbedding: inv_freq = 1 / theta^(arange(0, D, 2) / D), theta = rope_theta
        (500000 in Llama 3); emb = cat(t inv_freq, t inv_freq); cos, sin = emb.cos(), emb.sin()
  apply_rotary_pos_emb: q * cos + rotate_half(q) * sin (same for k), with
        rotate_half(x) = cat(-x[D/2:], x[:D/2])
  LlamaAttention: q = q_proj(h) (H*D), k = k_proj(h), v = v_proj(h) (KV*D), RoPE on q and k
        (no q_norm/k_norm: that is Qwen3's), repeat_kv (kv head j serves query heads
        j*H/KV .. (j+1)*H/KV - 1), softmax(q k^T * D^-0.5 + causal mask) v, o_proj.
  LlamaMLP: down_proj(silu(gate_proj(h)) * up_proj(h))
  logits = lm_head(norm(x)) (or embed_tokens^T with --tie-embeddings, tie_word_embeddings);
  loss = mean cross-entropy over all B*T targets (the data already gives the next token, so
  HF's internal label shift is not applied).
Not modelled: Llama 3.1's rope_scaling (rope_type "llama3"); this is Llama 3's default RoPE.

Parameter names are LlamaForCausalLM's: model.embed_tokens.weight,
model.layers.N.self_attn.{q,k,v,o}_proj.weight, model.layers.N.mlp.{gate,up,down}_proj.weight,
model.layers.N.{input,post_attention}_layernorm.weight, model.norm.weight, lm_head.weight.
They are Qwen3's less q_norm/k_norm, so the parameter list, the initialisation, the flags and
the init/train/compare subcommands are qwen3_torch.py's (Model record LLAMA3 below); only the
forward pass is this file's. Optimizer, data and lr schedule: gpt_torch.py's.

Subcommands: init, train, compare (as qwen3_torch.py's).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import precision  # noqa: E402  (--precision: where bf16 rounds)
import qwen3_torch as qw  # noqa: E402  (parameter list, flags, init/train/compare)

RMS_NORM_EPS = 1e-5  # LlamaConfig.rms_norm_eps as Llama 3 ships it
ROPE_THETA = 500000.0  # LlamaConfig.rope_theta of Llama 3


def rms_norm(x, weight):
    """LlamaRMSNorm.forward (in the compute dtype: HF upcasts to fp32, which these already are)"""
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + RMS_NORM_EPS))


def rotary_cos_sin(T, D, theta, dtype):
    """LlamaRotaryEmbedding (default rope) at positions 0..T-1: cos, sin of shape (T, D). HF
    computes inv_freq and the angles in fp32; --dtype float64 computes them in float64."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).to(dtype) / D))
    freqs = torch.outer(torch.arange(T, dtype=dtype), inv_freq)  # (T, D/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """q (B, H, T, D), k (B, KV, T, D); cos, sin (T, D) broadcast over batch and heads."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def repeat_kv(hidden, n_rep):
    """(B, KV, T, D) -> (B, KV*n_rep, T, D): each kv head repeated for its n_rep query heads."""
    B, KV, T, D = hidden.shape
    if n_rep == 1:
        return hidden
    return hidden[:, :, None, :, :].expand(B, KV, n_rep, T, D).reshape(B, KV * n_rep, T, D)


def self_attn(P, p, h, cfg, cos, sin):
    """LlamaAttention.forward with eager_attention_forward (no dropout, causal mask). bf16
    (precision.py): q, k, v and the rotary outputs stored, scores and softmax fp32 in one op."""
    B, T, _ = h.shape
    D = cfg.D
    pc = precision.current()
    q = pc.linear(h, P[p + "self_attn.q_proj.weight"]).view(B, T, -1, D).transpose(1, 2)
    k = pc.linear(h, P[p + "self_attn.k_proj.weight"]).view(B, T, -1, D).transpose(1, 2)
    v = pc.linear(h, P[p + "self_attn.v_proj.weight"]).view(B, T, -1, D).transpose(1, 2)
    if pc.bf16:  # one rope op per tensor, as Piper's graph has them
        q = pc.op(lambda t: apply_rotary_pos_emb(t, t, cos, sin)[0], q)
        k = pc.op(lambda t: apply_rotary_pos_emb(t, t, cos, sin)[0], k)
    else:  # the fp32 expression as it always was
        q, k = apply_rotary_pos_emb(q, k, cos, sin)

    def core(q, k, v):
        k, v = repeat_kv(k, cfg.H // cfg.KV), repeat_kv(v, cfg.H // cfg.KV)
        # HF's causal mask adds the dtype's most negative value above the diagonal
        mask = torch.full((T, T), torch.finfo(q.dtype).min, dtype=q.dtype).triu(1)
        weights = torch.matmul(q, k.transpose(2, 3)) * D ** -0.5 + mask
        weights = torch.softmax(weights, dim=-1)
        return torch.matmul(weights, v).transpose(1, 2).reshape(B, T, -1)

    return pc.linear(pc.op(core, q, k, v), P[p + "self_attn.o_proj.weight"])


def forward(P, idx, targets, cfg):
    """LlamaForCausalLM.forward; idx, targets: (B, T) int64. Returns (mean loss, logits)."""
    pc = precision.current()  # fp32: every pc.* below is the plain expression
    x = pc.out(F.embedding(idx, P["model.embed_tokens.weight"]))
    cos, sin = rotary_cos_sin(idx.shape[1], cfg.D, cfg.theta, x.dtype)
    for i in range(cfg.L):
        p = f"model.layers.{i}."
        h = pc.op(lambda t: rms_norm(t, P[p + "input_layernorm.weight"]), x)
        x = pc.op(qw.add, x, self_attn(P, p, h, cfg, cos, sin))
        # LlamaMLP is Qwen3MLP (HF copies one from the other): qwen3_torch's dense mlp
        h = pc.op(lambda t: rms_norm(t, P[p + "post_attention_layernorm.weight"]), x)
        x = pc.op(qw.add, x, qw.dense_mlp(P, p, h, cfg))
    x = pc.op(lambda t: rms_norm(t, P["model.norm.weight"]), x)
    head = P["model.embed_tokens.weight"] if cfg.tie else P["lm_head.weight"]
    logits = pc.act(pc.linear(x, head))  # the loss is fp32; the logits' gradient is not
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return loss, logits


LLAMA3 = qw.Model("llama3", __doc__, ROPE_THETA, moe=False, qk_norm=False, forward=forward)

if __name__ == "__main__":
    sys.exit(qw.main(model=LLAMA3))
