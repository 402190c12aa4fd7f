"""Constant recognition: which tdag op regenerates a tensor known at export time, so the IR
holds the op (tdag.rope_table, tdag.triangle) rather than the numbers and --piper-fuse can
match it."""
import math

import torch

# RoPE bases tried first (exactly representable in fp32, as tdag.rope passes theta)
_ROPE_THETAS = (10000.0, 500000.0, 1000000.0, 100000.0, 50000.0, 20000.0, 1000.0)


def rope_table(t):
    """(head_dim, theta, sin) when t, dims of 1 aside, is a (T, N) RoPE table: cos or sin of
    pos * theta^(-2 (j mod D/2) / D), N = D (rotate-half: the D/2 angles twice) or D/2 (one
    column per pair), within the rounding of an fp32 table (1e-6 + 5e-7 T); else None."""
    rows = [d for d in t.shape if d != 1]
    if len(rows) != 2 or not t.is_floating_point() or rows[0] < 2 or rows[1] < 2:
        return None
    T, N = rows
    m = t.reshape(T, N).to(torch.float64)
    if torch.allclose(m[0], torch.ones(N, dtype=torch.float64), atol=1e-6):
        sn = 0
    elif torch.allclose(m[0], torch.zeros(N, dtype=torch.float64), atol=1e-6):
        sn = 1
    else:
        return None
    D = N if N % 2 == 0 and torch.equal(m[:, : N // 2], m[:, N // 2:]) else 2 * N
    half = D // 2
    if half < 2:
        return None
    v = float(m[1, 1])
    a1 = math.asin(max(-1.0, min(1.0, v))) if sn else math.acos(max(-1.0, min(1.0, v)))
    guesses = list(_ROPE_THETAS)
    if 0 < a1 < 1:
        guesses.append(float(torch.tensor(a1 ** (-D / 2), dtype=torch.float32)))
    pos = torch.arange(T, dtype=torch.float64).view(T, 1)
    j = (torch.arange(N) % half).to(torch.float64).view(1, N)
    tol = 1e-6 + 5e-7 * T
    for theta in guesses:
        ang = pos * theta ** (-2.0 * j / D)
        ref = torch.sin(ang) if sn else torch.cos(ang)
        if float((ref - m).abs().max()) <= tol:
            return D, theta, sn
    return None


def triangle(t):
    """(diagonal, inside, outside) when t (leading dims, then R x C) is
    where(j - i <= diagonal, inside, outside) with inside != outside, the same R x C in every
    leading index (Hugging Face's (B, 1, T, T) mask is one (T, T) triangle expanded over the
    batch); else None."""
    if t.dim() < 2:
        return None
    slices = t.reshape(-1, t.shape[-2], t.shape[-1])
    if not bool((slices == slices[:1]).all()):
        return None
    m = slices[0].to(torch.float64)
    R, C = m.shape
    if R < 2 or C < 2:
        return None
    inside, outside = float(m[0, 0]), float(m[0, C - 1])
    if inside == outside or (math.isnan(inside) or math.isnan(outside)):
        return None
    # the diagonal: the last column j of row 0 that holds `inside`
    row0 = (m[0] == inside).nonzero()
    d = int(row0.max())
    i = torch.arange(R).view(R, 1)
    j = torch.arange(C).view(1, C)
    want = torch.where(j - i <= d, torch.tensor(inside, dtype=torch.float64),
                       torch.tensor(outside, dtype=torch.float64))
    return (d, inside, outside) if torch.equal(want, m) else None
