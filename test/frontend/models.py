"""Small single-file models written the way public GPT-2 and Llama code is, for the frontend's
tests (python/piper): each covers the idioms issue 26 lists, not one public file.

GPT2 (nanoGPT style): nn.Linear / nn.LayerNorm / nn.Embedding, a fused c_attn split into q, k,
v with heads by view + transpose, manual causal attention with a `tril` buffer and
masked_fill(mask == 0, -inf) (or F.layer_norm without bias, or the tanh-GELU formula written out,
by flags), a tied head (wte.weight = lm_head.weight), F.cross_entropy(ignore_index=-1).

NeoX (GPT-NeoX/Pythia style): a per-head packed query_key_value (view(B, T, H, 3D) then chunk),
partial rotary (RoPE on the first quarter of each head, cat with the rest: operands of unequal
sizes), its cos/sin computed in forward from a non-persistent float64 inv_freq buffer through
.float(), the causal mask by torch.where with finfo.min, parallel residual, Gemma's embedding
scale torch.tensor(sqrt(C), dtype=...) made in forward and a bf16 buffer used through .float()
(tensor constants), and optionally F.cross_entropy(label_smoothing=...).

Llama: RMSNorm written out, RoPE from precomputed cos/sin buffers by rotate-half with cat (or
the interleaved reshape(..., -1, 2).unbind(-1) + stack form), GQA by expand + reshape, SwiGLU
as w2(F.silu(w1(x)) * w3(x)), an additive -inf mask from torch.triu, untied head.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias (F.layer_norm without one)."""

    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPTAttention(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.H = H
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.H, C // self.H).transpose(1, 2)
        q = q.view(B, T, self.H, C // self.H).transpose(1, 2)
        v = v.view(B, T, self.H, C // self.H).transpose(1, 2)
        if hasattr(F, "scaled_dot_product_attention") and getattr(self, "use_sdpa", False):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTMLP(nn.Module):
    def __init__(self, C, tanh_gelu):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)
        self.gelu = gelu_tanh if tanh_gelu else nn.GELU()

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class GPTBlock(nn.Module):
    def __init__(self, C, H, T, bias, tanh_gelu):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C) if bias else LayerNorm(C, False)
        self.attn = GPTAttention(C, H, T)
        self.ln_2 = nn.LayerNorm(C) if bias else LayerNorm(C, False)
        self.mlp = GPTMLP(C, tanh_gelu)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, V=64, C=32, H=4, L=2, T=16, bias=True, tanh_gelu=False, label_smoothing=0.0):
        super().__init__()
        self.label_smoothing = label_smoothing
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
            h=nn.ModuleList([GPTBlock(C, H, T, bias, tanh_gelu) for _ in range(L)]),
            ln_f=nn.LayerNorm(C)))
        self.lm_head = nn.Linear(C, V, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied
        g = torch.Generator().manual_seed(0)
        for n, p in self.named_parameters():
            with torch.no_grad():
                if n.endswith("weight") and p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.1)
                elif n.endswith("bias"):
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)

    def forward(self, idx, targets):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1,
                               label_smoothing=self.label_smoothing)
        return logits, loss


class NeoXAttention(nn.Module):
    def __init__(self, C, H, T, rotary_pct, base=10000.0):
        super().__init__()
        self.H, self.D = H, C // H
        self.rotary_ndims = int(self.D * rotary_pct)
        # no bias: a key bias has a zero true gradient, which AdamW turns into noise-driven
        # steps; the comparison's allowance for it knows GPT-2's [q|k|v] c_attn layout, not
        # NeoX's per-head one (GPT-2's models cover a qkv bias)
        self.query_key_value = nn.Linear(C, 3 * C, bias=False)
        self.dense = nn.Linear(C, C)
        self.register_buffer("bias", torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T),
                             persistent=False)
        inv_freq = 1.0 / (base ** (torch.arange(0, self.rotary_ndims, 2, dtype=torch.float64)
                                   / self.rotary_ndims))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.query_key_value(x).view(B, T, self.H, 3 * self.D)
        q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)          # (B, H, T, D) each
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq.float())
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]     # (1, 1, T, rotary_ndims)
        rd = self.rotary_ndims
        q_rot, q_pass = q[..., :rd], q[..., rd:]
        k_rot, k_pass = k[..., :rd], k[..., rd:]
        q = torch.cat((q_rot * cos + rotate_half(q_rot) * sin, q_pass), dim=-1)
        k = torch.cat((k_rot * cos + rotate_half(k_rot) * sin, k_pass), dim=-1)
        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.D))
        att = torch.where(self.bias[:, :, :T, :T], att, torch.finfo(att.dtype).min)
        att = F.softmax(att, dim=-1)
        out = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        return self.dense(out)


class NeoXMLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(C, 4 * C)
        self.dense_4h_to_h = nn.Linear(4 * C, C)
        self.act = nn.GELU()

    def forward(self, x):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(x)))


class NeoXLayer(nn.Module):
    def __init__(self, C, H, T, rotary_pct):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(C)
        self.post_attention_layernorm = nn.LayerNorm(C)
        self.attention = NeoXAttention(C, H, T, rotary_pct)
        self.mlp = NeoXMLP(C)

    def forward(self, x):  # parallel residual
        return x + self.attention(self.input_layernorm(x)) + self.mlp(self.post_attention_layernorm(x))


class NeoX(nn.Module):
    def __init__(self, V=64, C=32, H=2, L=2, T=16, rotary_pct=0.25, label_smoothing=0.0):
        super().__init__()
        self.gpt_neox = nn.ModuleDict(dict(
            embed_in=nn.Embedding(V, C),
            layers=nn.ModuleList([NeoXLayer(C, H, T, rotary_pct) for _ in range(L)]),
            final_layer_norm=nn.LayerNorm(C)))
        self.embed_out = nn.Linear(C, V, bias=False)
        self.label_smoothing = label_smoothing
        self.register_buffer("embed_gain", torch.linspace(0.75, 1.25, C).to(torch.bfloat16))
        g = torch.Generator().manual_seed(3)
        for n, p in self.named_parameters():
            with torch.no_grad():
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.1)
                elif n.endswith("bias"):
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)

    @property
    def layers(self):
        return self.gpt_neox.layers

    def forward(self, tokens, targets):
        h = self.gpt_neox.embed_in(tokens)
        normalizer = torch.tensor(h.shape[-1] ** 0.5, dtype=h.dtype)  # Gemma's, made in forward
        h = h * normalizer * self.embed_gain.float()
        for layer in self.gpt_neox.layers:
            h = layer(h)
        logits = self.embed_out(self.gpt_neox.final_layer_norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               label_smoothing=self.label_smoothing)


class RMSNorm(nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def rope_tables(D, T, theta):
    inv = 1.0 / (theta ** (torch.arange(0, D, 2).float() / D))
    ang = torch.outer(torch.arange(T).float(), inv)
    return ang.cos(), ang.sin()  # (T, D/2)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, C, H, KV, T, interleaved):
        super().__init__()
        self.H, self.KV, self.D = H, KV, C // H
        self.wq = nn.Linear(C, H * self.D, bias=False)
        self.wk = nn.Linear(C, KV * self.D, bias=False)
        self.wv = nn.Linear(C, KV * self.D, bias=False)
        self.wo = nn.Linear(H * self.D, C, bias=False)
        self.interleaved = interleaved

    def rope(self, x, cos, sin):
        T = x.shape[1]
        if self.interleaved:  # Meta's layout: pairs (x_2j, x_2j+1)
            xr, xi = x.float().reshape(*x.shape[:-1], -1, 2).unbind(-1)
            c, s = cos[:T].view(1, T, 1, -1), sin[:T].view(1, T, 1, -1)
            return torch.stack((xr * c - xi * s, xr * s + xi * c), dim=-1).flatten(3).type_as(x)
        c = torch.cat((cos[:T], cos[:T]), dim=-1).view(1, T, 1, -1)
        s = torch.cat((sin[:T], sin[:T]), dim=-1).view(1, T, 1, -1)
        return x * c + rotate_half(x) * s

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.H, self.D)
        k = self.wk(x).view(B, T, self.KV, self.D)
        v = self.wv(x).view(B, T, self.KV, self.D)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        rep = self.H // self.KV
        if rep > 1:  # GQA: repeat_kv by expand + reshape
            k = k[:, :, :, None, :].expand(B, T, self.KV, rep, self.D).reshape(B, T, self.H, self.D)
            v = v[:, :, :, None, :].expand(B, T, self.KV, rep, self.D).reshape(B, T, self.H, self.D)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.D)
        scores = scores + mask[:T, :T]
        p = F.softmax(scores.float(), dim=-1).type_as(q)
        out = torch.matmul(p, v).transpose(1, 2).contiguous().view(B, T, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, C, F_):
        super().__init__()
        self.w1 = nn.Linear(C, F_, bias=False)
        self.w2 = nn.Linear(F_, C, bias=False)
        self.w3 = nn.Linear(C, F_, bias=False)

    def forward(self, y):
        return self.w2(F.silu(self.w1(y)) * self.w3(y))


class LlamaBlock(nn.Module):
    def __init__(self, C, H, KV, F_, T, interleaved):
        super().__init__()
        self.attention_norm = RMSNorm(C)
        self.attention = LlamaAttention(C, H, KV, T, interleaved)
        self.ffn_norm = RMSNorm(C)
        self.feed_forward = FeedForward(C, F_)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, V=64, C=32, H=4, KV=2, F_=48, L=2, T=16, theta=10000.0, interleaved=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(V, C)
        self.layers = nn.ModuleList([LlamaBlock(C, H, KV, F_, T, interleaved) for _ in range(L)])
        self.norm = RMSNorm(C)
        self.output = nn.Linear(C, V, bias=False)
        cos, sin = rope_tables(C // H, T, theta)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)
        g = torch.Generator().manual_seed(1)
        for n, p in self.named_parameters():
            with torch.no_grad():
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.1)
                else:
                    p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        h = self.tok_embeddings(tokens)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        for layer in self.layers:
            h = layer(h, self.freqs_cos, self.freqs_sin, mask)
        logits = self.output(self.norm(h)).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


class Qwen3MoeMLP(nn.Module):
    def __init__(self, C, Fe):
        super().__init__()
        self.gate_proj = nn.Linear(C, Fe, bias=False)
        self.up_proj = nn.Linear(C, Fe, bias=False)
        self.down_proj = nn.Linear(Fe, C, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Qwen3MoeSparseMoeBlock(nn.Module):
    """Hugging Face's Qwen3-MoE block as modeling_qwen3_moe.py writes it (and OLMoE, whose
    norm_topk_prob is False): softmax in fp32, topk, optional renormalisation, a loop over all
    experts with one_hot / torch.where / index_add_; returns (hidden, router_logits)."""

    def __init__(self, C, E, K, Fe, norm_topk_prob=True):
        super().__init__()
        self.num_experts = E
        self.top_k = K
        self.norm_topk_prob = norm_topk_prob
        self.gate = nn.Linear(C, E, bias=False)
        self.experts = nn.ModuleList([Qwen3MoeMLP(C, Fe) for _ in range(E)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, C, Fe):
        super().__init__()
        self.w1 = nn.Linear(C, Fe, bias=False)
        self.w2 = nn.Linear(Fe, C, bias=False)
        self.w3 = nn.Linear(C, Fe, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


class MixtralSparseMoeBlock(nn.Module):
    """Hugging Face's Mixtral block as modeling_mixtral.py writes it: always renormalised,
    router jitter (0 here: Piper refuses it in training), the expert loop as Qwen3-MoE's."""

    def __init__(self, C, E, K, Fe, jitter_noise=0.0):
        super().__init__()
        self.hidden_dim, self.ffn_dim = C, Fe
        self.num_experts, self.top_k = E, K
        self.gate = nn.Linear(C, E, bias=False)
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(C, Fe) for _ in range(E)])
        self.jitter_noise = jitter_noise

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise,
                                                                      1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class MoEBlock(nn.Module):
    def __init__(self, C, H, KV, T, E, K, Fe, style):
        super().__init__()
        self.attention_norm = RMSNorm(C)
        self.attention = LlamaAttention(C, H, KV, T, False)
        self.ffn_norm = RMSNorm(C)
        self.feed_forward = (MixtralSparseMoeBlock(C, E, K, Fe) if style == "mixtral"
                             else Qwen3MoeSparseMoeBlock(C, E, K, Fe,
                                                         norm_topk_prob=style != "olmoe"))

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        out, router_logits = self.feed_forward(self.ffn_norm(h))
        return h + out


class MoE(nn.Module):
    """The Llama model above with a mixture-of-experts MLP in every block, written as Hugging
    Face's Qwen3-MoE (style "qwen3"), OLMoE (style "olmoe": Qwen3-MoE's block without
    renormalising the top-k weights) or Mixtral (style "mixtral") write theirs."""

    def __init__(self, V=64, C=32, H=4, KV=2, E=4, K=2, Fe=32, L=2, T=16, theta=10000.0,
                 style="qwen3"):
        super().__init__()
        self.tok_embeddings = nn.Embedding(V, C)
        self.layers = nn.ModuleList([MoEBlock(C, H, KV, T, E, K, Fe, style) for _ in range(L)])
        self.norm = RMSNorm(C)
        self.output = nn.Linear(C, V, bias=False)
        cos, sin = rope_tables(C // H, T, theta)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)
        g = torch.Generator().manual_seed(4)
        for n, p in self.named_parameters():
            with torch.no_grad():
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.1)
                else:
                    p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        h = self.tok_embeddings(tokens)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        for layer in self.layers:
            h = layer(h, self.freqs_cos, self.freqs_sin, mask)
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class OpsMix(nn.Module):
    """The general ops no fused op covers, each on the way to the loss so its gradient is
    checked: exp, division and subtraction with broadcasting, 1 - x, sqrt, tanh, silu alone,
    sum and mean with and without keepdim, unbind + stack, chunk, select, a batched matmul with
    a transposed operand, torch.where with a constant mask, log_softmax over a dim that is not
    the last, masked_fill with a finite value; and a buffer that is not a mask or a table (gain:
    exported as non-trained state, tdag.param {init = "buffer"})."""

    def __init__(self, V=64, C=32, T=16):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.proj = nn.Linear(C, C)
        self.head = nn.Linear(C, V, bias=False)
        self.scale = nn.Parameter(torch.ones(C))
        self.register_buffer("keep", torch.tril(torch.ones(T, T, dtype=torch.bool)))
        self.register_buffer("gain", torch.linspace(0.5, 1.5, C))  # non-trained state
        g = torch.Generator().manual_seed(2)
        for p in self.parameters():
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * 0.2 + (1.0 if p.dim() == 1 else 0.0))

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.proj(self.wte(tokens)) * self.gain                    # (B,T,C), a buffer
        a = torch.exp(x * 0.5)
        b = x / (1.0 + a)                                              # div, broadcast-free
        c = x - a.mean(-1, keepdim=True)                               # sub, (B,T,1) broadcast
        d = torch.stack(x.unbind(1), dim=1) * self.scale               # unbind + stack, param
        s = torch.bmm(x, x.transpose(1, 2)) / x.size(-1)               # (B,T,T)
        s = torch.where(self.keep[:T, :T], s, -30.0)                   # where, constant mask
        ls = F.log_softmax(s, dim=1)                                   # not the last dim
        m = s.masked_fill(~self.keep[:T, :T], 2.0).sum(-1)             # (B,T) no keepdim
        e = (1 - torch.tanh(x)) * torch.sqrt(x * x + 1.0)              # rsub, tanh, sqrt
        half = x.chunk(2, dim=-1)[1]
        f = F.silu(x) + torch.cat((half, -half), dim=-1) * 0.5         # silu; chunk, cat
        g = ls.mean(-1, keepdim=True) + m.unsqueeze(-1) * 0.01 + x[:, :, 0:1]  # select-like
        h = b + c + d + e + f + g
        logits = self.head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
