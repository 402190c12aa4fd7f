"""Small models written in the idioms of Hugging Face transformers' modeling files, for the
fusion tests (issue 35): each family covers what its modeling file does to the tensors, not
one public file (unmodified public models are checked separately). Written for torch 1.13
and torch 2 alike (no SDPA: torch 1.13 has none).

hf-llama (LlamaForCausalLM; Qwen2 with --qkv-bias, Qwen3 with --qk-norm; Mistral is Llama's
  dense decoder): q/k/v_proj(x).view(B, T, -1, D).transpose(1, 2); RoPE applied after the
  transpose by apply_rotary_pos_emb with cos.unsqueeze(1), cos/sin computed in forward from
  the inv_freq buffer as (inv_freq[None, :, None] @ position_ids[:, None, :]).transpose(1, 2)
  then cat((freqs, freqs)); GQA by repeat_kv after the transpose
  (x[:, :, None].expand(...).reshape(...)); the additive causal mask of torch.finfo.min
  built in forward (full, triu, [None, None] expanded to the batch); softmax in fp32
  (dtype=torch.float32) and .to(q.dtype); RMSNorm in fp32 with the weight applied after
  .to(input_dtype); SwiGLU down(act(gate(x)) * up(x)).
hf-gemma: Llama's attention with one kv head (multi-query), (1 + w) RMSNorm computed in
  fp32, the embedding scaled by a sqrt(hidden) tensor made in forward, GeGLU
  down(gelu_tanh(gate(x)) * up(x)), a tied head.
hf-neox (GPT-NeoX / Pythia): per-head packed qkv (query_key_value(x).view(B, T, H, 3D)
  .transpose(1, 2).chunk(3, -1)), partial rotary (rotary on the first `rotary_pct` of each
  head, cat with the rest), the parallel residual x + attn(ln1(x)) + mlp(ln2(x)), exact GELU,
  the causal mask as a bool buffer applied by torch.where with finfo.min (its 4.4x _attn);
  hf-neox-rot1 the same with rotary_pct 1.0 (rotary on whole heads), hf-neox-half with 0.5
  (the rotated and passed parts of a head of equal size; hf-neox's quarter is a cat of
  unequal ones) and attention_bias=False.
hf-gpt2: Conv1D layers (torch.addmm(b, x.view(-1, nx), W) with W (nx, nf): the transpose of
  nn.Linear's weight), c_attn(x).split(C, dim=2), the causal mask as a bool buffer used by
  torch.where(mask, w, finfo.min), attention scaled by / torch.full([], sqrt(D)), gelu_new
  written out, wte(ids) + wpe(position_ids) with position_ids (1, T), a tied head.
meta-llama: Meta's reference Llama layout: RoPE by complex pairs (x_2j, x_2j+1) written with
  reshape(..., -1, 2) and the real/imaginary parts, applied before the heads' transpose.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

FAMILIES = ("hf-llama", "hf-qwen2", "hf-qwen3", "hf-gemma", "hf-neox", "hf-neox-rot1",
            "hf-neox-half", "hf-gpt2", "meta-llama")


def _seeded_init(model, seed, ones_for_vectors=True):
    """Deterministic weights (N(0, 0.1) matrices, vectors near 1 or 0) so that a test's torch
    run and its export start alike, and nothing is trivially zero."""
    g = torch.Generator().manual_seed(seed)
    for n, p in model.named_parameters():
        with torch.no_grad():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            elif n.endswith("bias") or not ones_for_vectors:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
            else:
                p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)


def _loss(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-100)


# ---------------------------------------------------------------- Llama / Qwen2 / Qwen3 / Gemma

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        # Llama does x.to(float16) * w whilst Gemma is (x * w).to(float16)
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class RotaryEmbedding(nn.Module):
    """LlamaRotaryEmbedding: the tables computed in forward from the inv_freq buffer."""

    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen,
                                                           head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(query, key, value, attention_mask, scaling, n_rep):
    key_states = repeat_kv(key, n_rep)
    value_states = repeat_kv(value, n_rep)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=0.0, training=False)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous()


class LlamaAttention(nn.Module):
    def __init__(self, C, H, KV, D, bias, qk_norm, eps):
        super().__init__()
        self.head_dim, self.n_rep = D, H // KV
        self.scaling = D ** -0.5
        self.q_proj = nn.Linear(C, H * D, bias=bias)
        self.k_proj = nn.Linear(C, KV * D, bias=bias)
        self.v_proj = nn.Linear(C, KV * D, bias=bias)
        self.o_proj = nn.Linear(H * D, C, bias=False)
        if qk_norm:  # Qwen3: an RMSNorm of each head, before the transpose
            self.q_norm, self.k_norm = LlamaRMSNorm(D, eps), LlamaRMSNorm(D, eps)
        self.qk_norm = qk_norm

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        if self.qk_norm:
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        else:
            query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output = eager_attention_forward(query_states, key_states, value_states,
                                              attention_mask, self.scaling, self.n_rep)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class GatedMLP(nn.Module):
    """LlamaMLP (silu: SwiGLU) and GemmaMLP (gelu_pytorch_tanh: GeGLU)."""

    def __init__(self, C, F_, act):
        super().__init__()
        self.gate_proj = nn.Linear(C, F_, bias=False)
        self.up_proj = nn.Linear(C, F_, bias=False)
        self.down_proj = nn.Linear(F_, C, bias=False)
        self.act_fn = act

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def gelu_pytorch_tanh(x):
    return F.gelu(x, approximate="tanh")


class DecoderLayer(nn.Module):
    def __init__(self, C, H, KV, D, F_, norm, act, bias, qk_norm, eps):
        super().__init__()
        self.self_attn = LlamaAttention(C, H, KV, D, bias, qk_norm, eps)
        self.mlp = GatedMLP(C, F_, act)
        self.input_layernorm = norm(C, eps)
        self.post_attention_layernorm = norm(C, eps)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


def causal_mask_4d(B, T, dtype):
    """HF's eager causal mask: (B, 1, T, T), 0 where a key is visible, finfo.min elsewhere."""
    min_dtype = torch.finfo(dtype).min
    causal_mask = torch.full((T, T), fill_value=min_dtype, dtype=dtype)
    causal_mask = torch.triu(causal_mask, diagonal=1)
    cache_position = torch.arange(T)
    causal_mask *= torch.arange(T) > cache_position.reshape(-1, 1)
    return causal_mask[None, None, :, :].expand(B, 1, -1, -1)


class HFDecoder(nn.Module):
    """LlamaForCausalLM and its relatives (the `kind` picks the family's differences)."""

    def __init__(self, kind="llama", V=64, C=32, H=4, KV=2, D=None, F_=48, L=2, theta=10000.0,
                 eps=1e-6):
        super().__init__()
        D = D or C // H
        gemma = kind == "gemma"
        norm = GemmaRMSNorm if gemma else LlamaRMSNorm
        act = gelu_pytorch_tanh if gemma else F.silu
        self.kind, self.C = kind, C
        self.embed_tokens = nn.Embedding(V, C)
        self.layers = nn.ModuleList(
            DecoderLayer(C, H, KV, D, F_, norm, act, kind == "qwen2", kind == "qwen3", eps)
            for _ in range(L))
        self.norm = norm(C, eps)
        self.rotary_emb = RotaryEmbedding(D, theta)
        self.lm_head = nn.Linear(C, V, bias=False)
        if gemma:
            self.lm_head.weight = self.embed_tokens.weight  # tied
        _seeded_init(self, 1, ones_for_vectors=not gemma)

    def forward(self, input_ids, labels):
        B, T = input_ids.shape
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, T)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = causal_mask_4d(B, T, inputs_embeds.dtype)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        if self.kind == "gemma":
            normalizer = torch.tensor(self.C ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal_mask, position_embeddings)
        hidden_states = self.norm(hidden_states)
        logits = self.lm_head(hidden_states).float()
        return _loss(logits, labels)


# ---------------------------------------------------------------- GPT-NeoX / Pythia

def neox_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """GPT-NeoX's: rotary on the first cos.shape[-1] features of each head only."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class GPTNeoXAttention(nn.Module):
    """GPTNeoXAttention as transformers 4.4x wrote it: the causal mask a bool `bias` buffer
    applied by torch.where with finfo.min (its _attn), the scores scaled by 1/sqrt(head_size)."""

    def __init__(self, C, H, T, bias=True):
        super().__init__()
        self.head_size = C // H
        self.norm_factor = self.head_size ** -0.5
        self.query_key_value = nn.Linear(C, 3 * C, bias=bias)
        self.dense = nn.Linear(C, C, bias=bias)
        self.register_buffer("bias", torch.tril(torch.ones((T, T), dtype=torch.bool)).view(1, 1, T, T),
                             persistent=False)

    def _attn(self, query, key, value):
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        attn_scores = torch.matmul(query, key.transpose(2, 3)) * self.norm_factor
        mask_value = torch.finfo(attn_scores.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_scores.dtype)
        attn_scores = torch.where(causal_mask, attn_scores, mask_value)
        attn_weights = F.softmax(attn_scores, dim=-1).to(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states, position_embeddings):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, 3 * self.head_size)
        qkv = self.query_key_value(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        query_states, key_states = neox_apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output = self._attn(query_states, key_states, value_states).transpose(1, 2)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class GPTNeoXMLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(C, 4 * C)
        self.dense_4h_to_h = nn.Linear(4 * C, C)
        self.act = nn.GELU()

    def forward(self, hidden_states):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(hidden_states)))


class GPTNeoXLayer(nn.Module):
    def __init__(self, C, H, T, parallel, bias):
        super().__init__()
        self.use_parallel_residual = parallel
        self.input_layernorm = nn.LayerNorm(C, eps=1e-5)
        self.post_attention_layernorm = nn.LayerNorm(C, eps=1e-5)
        self.attention = GPTNeoXAttention(C, H, T, bias)
        self.mlp = GPTNeoXMLP(C)

    def forward(self, hidden_states, position_embeddings):
        attn_output = self.attention(self.input_layernorm(hidden_states), position_embeddings)
        if self.use_parallel_residual:
            # x = x + attn(ln1(x)) + mlp(ln2(x))
            mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
            return mlp_output + attn_output + hidden_states
        attn_output = attn_output + hidden_states
        return self.mlp(self.post_attention_layernorm(attn_output)) + attn_output


class GPTNeoX(nn.Module):
    def __init__(self, V=64, C=32, H=4, L=2, T=16, rotary_pct=0.25, theta=10000.0, parallel=True,
                 attention_bias=True):
        super().__init__()
        self.embed_in = nn.Embedding(V, C)
        self.layers = nn.ModuleList(GPTNeoXLayer(C, H, T, parallel, attention_bias)
                                    for _ in range(L))
        self.final_layer_norm = nn.LayerNorm(C, eps=1e-5)
        self.rotary_emb = RotaryEmbedding(int(C // H * rotary_pct), theta)
        self.embed_out = nn.Linear(C, V, bias=False)
        _seeded_init(self, 2)

    def forward(self, input_ids, labels):
        B, T = input_ids.shape
        hidden_states = self.embed_in(input_ids)
        position_ids = torch.arange(0, T).unsqueeze(0)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, position_embeddings)
        logits = self.embed_out(self.final_layer_norm(hidden_states))
        return _loss(logits, labels)


# ---------------------------------------------------------------- GPT-2

class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer whose weight is stored transposed,
    (nx, nf)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = C, H, C // H
        self.split_size = C
        self.register_buffer("bias", torch.tril(torch.ones((T, T), dtype=torch.bool)).view(1, 1, T, T),
                             persistent=False)
        self.c_attn = Conv1D(3 * C, C)
        self.c_proj = Conv1D(C, C)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5,
                                                 dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)
        attn_output = self._attn(query_states, key_states, value_states)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        return self.c_proj(attn_output)


class GPT2MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = Conv1D(4 * C, C)
        self.c_proj = Conv1D(C, 4 * C)

    def forward(self, hidden_states):
        return self.c_proj(gelu_new(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.attn = GPT2Attention(C, H, T)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.mlp = GPT2MLP(C)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = residual + self.attn(self.ln_1(hidden_states))
        residual = hidden_states
        return residual + self.mlp(self.ln_2(hidden_states))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, V=64, C=32, H=4, L=2, T=16):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(GPT2Block(C, H, T) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=1e-5)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        _seeded_init(self, 3)

    def forward(self, input_ids, labels):
        B, T = input_ids.shape
        position_ids = torch.arange(0, T, dtype=torch.long).unsqueeze(0)
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            hidden_states = block(hidden_states)
        logits = self.lm_head(self.ln_f(hidden_states))
        return _loss(logits, labels)


# ---------------------------------------------------------------- Meta's reference Llama

def precompute_freqs(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return freqs.cos(), freqs.sin()  # the real and imaginary parts of polar(1, freqs)


def apply_rotary_emb_meta(xq, xk, cos, sin):
    """llama/model.py's apply_rotary_emb without complex dtypes (torch.view_as_complex does not
    trace to real ops): pairs (x_2j, x_2j+1) rotated by the angle of column j."""
    def rot(x):
        xr, xi = x.float().reshape(*x.shape[:-1], -1, 2).unbind(-1)
        c, s = cos.view(1, x.shape[1], 1, -1), sin.view(1, x.shape[1], 1, -1)
        return torch.stack((xr * c - xi * s, xr * s + xi * c), dim=-1).flatten(3).type_as(x)
    return rot(xq), rot(xk)


class MetaAttention(nn.Module):
    def __init__(self, C, H, KV):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = H, KV, C // H
        self.n_rep = H // KV
        self.wq = nn.Linear(C, H * self.head_dim, bias=False)
        self.wk = nn.Linear(C, KV * self.head_dim, bias=False)
        self.wv = nn.Linear(C, KV * self.head_dim, bias=False)
        self.wo = nn.Linear(H * self.head_dim, C, bias=False)

    def forward(self, x, cos, sin, mask):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb_meta(xq, xk, cos, sin)
        # repeat_kv before the transpose, as llama/model.py
        keys = xk[:, :, :, None, :].expand(bsz, seqlen, self.n_kv_heads, self.n_rep,
                                           self.head_dim).reshape(bsz, seqlen, -1, self.head_dim)
        values = xv[:, :, :, None, :].expand(bsz, seqlen, self.n_kv_heads, self.n_rep,
                                             self.head_dim).reshape(bsz, seqlen, -1, self.head_dim)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class MetaBlock(nn.Module):
    def __init__(self, C, H, KV, F_):
        super().__init__()
        self.attention = MetaAttention(C, H, KV)
        self.feed_forward = GatedMLP(C, F_, F.silu)
        self.attention_norm = LlamaRMSNorm(C, 1e-5)
        self.ffn_norm = LlamaRMSNorm(C, 1e-5)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class MetaLlama(nn.Module):
    def __init__(self, V=64, C=32, H=4, KV=2, F_=48, L=2, T=16):
        super().__init__()
        self.tok_embeddings = nn.Embedding(V, C)
        self.layers = nn.ModuleList(MetaBlock(C, H, KV, F_) for _ in range(L))
        self.norm = LlamaRMSNorm(C, 1e-5)
        self.output = nn.Linear(C, V, bias=False)
        cos, sin = precompute_freqs(C // H, T)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)
        _seeded_init(self, 4)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        h = self.tok_embeddings(tokens)
        mask = torch.full((T, T), float("-inf"))
        mask = torch.triu(mask, diagonal=1)
        for layer in self.layers:
            h = layer(h, self.freqs_cos[:T], self.freqs_sin[:T], mask)
        return _loss(self.output(self.norm(h)).float(), targets)


# ---------------------------------------------------------------- the test driver's view

def make(name, V, C, H, KV, F_, L, T):
    """The model `name` (one of FAMILIES) of the given sizes."""
    if name in ("hf-llama", "hf-qwen2", "hf-qwen3"):
        return HFDecoder(name[3:], V=V, C=C, H=H, KV=KV, F_=F_, L=L)
    if name == "hf-gemma":
        return HFDecoder("gemma", V=V, C=C, H=H, KV=1, F_=F_, L=L)
    if name == "hf-neox":  # Pythia's rotary_pct 0.25
        return GPTNeoX(V=V, C=C, H=H, L=L, T=T)
    if name == "hf-neox-rot1":  # rotary on whole heads (rotary_pct 1.0)
        return GPTNeoX(V=V, C=C, H=H, L=L, T=T, rotary_pct=1.0)
    if name == "hf-neox-half":  # rotary on half of each head: a cat of equal parts
        # attention_bias=False (GPTNeoXConfig's option): the key bias of the features rotary
        # passes through has a zero true gradient (it shifts every key's score alike), which
        # AdamW would turn into step-sized moves of noise
        return GPTNeoX(V=V, C=C, H=H, L=L, T=T, rotary_pct=0.5, attention_bias=False)
    if name == "hf-gpt2":
        return GPT2LMHeadModel(V=V, C=C, H=H, L=L, T=T)
    if name == "meta-llama":
        return MetaLlama(V=V, C=C, H=H, KV=KV, F_=F_, L=L, T=T)
    raise SystemExit(f"unknown model {name}; hf_idioms has {', '.join(FAMILIES)}")


def blocks(model):
    """The decoder blocks, for pipeline stages."""
    return model.h if isinstance(model, GPT2LMHeadModel) else model.layers


def tp_parts(block):
    """A block's tensor-parallel regions: its attention and its MLP."""
    for part in ("self_attn", "attention", "attn", "mlp", "feed_forward"):
        if hasattr(block, part):
            yield getattr(block, part)


def first_module(model):
    """The embedding, which goes with the first pipeline stage."""
    for n in ("embed_tokens", "embed_in", "wte", "tok_embeddings"):
        if hasattr(model, n):
            return getattr(model, n)
